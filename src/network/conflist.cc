#include "network/conflist.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>
#include <system_error>

namespace podvisor::network {
namespace {

Error ConfError(const std::filesystem::path& source, const std::string& what) {
  std::string where = source.empty() ? std::string("network configuration") : source.string();
  return Error(where + ": " + what, EINVAL);
}

bool IsNonEmptyString(const nlohmann::json& doc, const char* key) {
  auto it = doc.find(key);
  return it != doc.end() && it->is_string() && !it->get<std::string>().empty();
}

Status CheckPlugin(const nlohmann::json& plugin, const std::string& where,
                   const std::filesystem::path& source) {
  if (!plugin.is_object()) return ConfError(source, where + ": must be an object");
  if (!IsNonEmptyString(plugin, "type")) {
    return ConfError(source, where + ": \"type\" must be a non-empty string");
  }
  std::string type = plugin["type"].get<std::string>();
  // The type is a file name in the plugin directories, never a path.
  if (type.find('/') != std::string::npos || type == "." || type == "..") {
    return ConfError(source, where + ": \"type\" " + type + " is not a plugin name");
  }
  auto caps = plugin.find("capabilities");
  if (caps != plugin.end() && !caps->is_object()) {
    return ConfError(source, where + ": \"capabilities\" must be an object");
  }
  return Ok();
}

}  // namespace

bool SupportedCniVersion(std::string_view version) {
  static constexpr std::array<std::string_view, 5> kVersions = {"0.3.0", "0.3.1", "0.4.0", "1.0.0",
                                                                "1.1.0"};
  return std::find(kVersions.begin(), kVersions.end(), version) != kVersions.end();
}

nlohmann::json NetworkConfigList::ToJson() const {
  return nlohmann::json{{"cniVersion", cni_version}, {"name", name}, {"plugins", plugins}};
}

Result<NetworkConfigList> ParseConfList(std::string_view text, const std::filesystem::path& source,
                                        bool single_conf) {
  auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return ConfError(source, "not valid JSON");
  if (!doc.is_object()) return ConfError(source, "must be a JSON object");

  NetworkConfigList list;
  list.source = source;
  if (!IsNonEmptyString(doc, "name")) {
    return ConfError(source, "\"name\" must be a non-empty string");
  }
  list.name = doc["name"].get<std::string>();
  if (!IsNonEmptyString(doc, "cniVersion")) {
    return ConfError(source, "\"cniVersion\" must be a non-empty string");
  }
  list.cni_version = doc["cniVersion"].get<std::string>();
  if (!SupportedCniVersion(list.cni_version)) {
    return ConfError(source, "\"cniVersion\" " + list.cni_version +
                                 " is not supported (0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0)");
  }

  if (single_conf && !doc.contains("plugins")) {
    if (Status s = CheckPlugin(doc, "plugin", source); !s) return s.take_error();
    nlohmann::json plugin = doc;
    plugin.erase("name");
    plugin.erase("cniVersion");
    list.plugins.push_back(std::move(plugin));
    return list;
  }
  auto plugins = doc.find("plugins");
  if (plugins == doc.end() || !plugins->is_array() || plugins->empty()) {
    return ConfError(source, "\"plugins\" must be a non-empty array");
  }
  for (size_t i = 0; i < plugins->size(); ++i) {
    const auto& plugin = (*plugins)[i];
    if (Status s = CheckPlugin(plugin, "plugins[" + std::to_string(i) + "]", source); !s) {
      return s.take_error();
    }
    list.plugins.push_back(plugin);
  }
  return list;
}

Result<NetworkConfigList> LoadConfFile(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return Error::FromErrno("reading " + file.string());
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return Error::FromErrno("reading " + file.string());
  return ParseConfList(text.str(), file, file.extension() != ".conflist");
}

Result<std::vector<std::filesystem::path>> ConfFiles(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec == std::errc::no_such_file_or_directory) return files;
  if (ec) return Error("listing " + dir.string() + ": " + ec.message(), ec.value());
  for (const auto& entry : it) {
    auto ext = entry.path().extension();
    if (ext != ".conf" && ext != ".conflist" && ext != ".json") continue;
    if (!entry.is_regular_file(ec)) continue;
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

Result<std::optional<NetworkConfigList>> SelectNetwork(const std::filesystem::path& dir,
                                                       const std::optional<std::string>& name) {
  auto files = ConfFiles(dir);
  if (!files) return files.take_error();
  std::string rejected;
  for (const auto& file : *files) {
    auto list = LoadConfFile(file);
    if (!list) {
      rejected += "\n  " + list.error().message();
      continue;
    }
    if (!name || list->name == *name) return std::optional<NetworkConfigList>(std::move(*list));
  }
  if (name) {
    return Error("no CNI network named " + *name + " in " + dir.string() + rejected, ENOENT);
  }
  if (!rejected.empty()) {
    return Error("no valid CNI network configuration in " + dir.string() + ":" + rejected, EINVAL);
  }
  return std::optional<NetworkConfigList>();
}

}  // namespace podvisor::network
