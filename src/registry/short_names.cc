#include "registry/short_names.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <system_error>

#include <toml.hpp>

namespace podvisor::registry {
namespace fs = std::filesystem;
namespace {

constexpr const char* kSystemFile = "/etc/containers/registries.conf";
constexpr const char* kSystemDropInDir = "/etc/containers/registries.conf.d";

// The short name as written, without tag and digest ("nginx", "team/app").
std::string ShortNameOf(std::string_view reference) {
  std::string_view name = reference.substr(0, reference.find('@'));
  std::size_t slash = name.rfind('/');
  std::size_t colon = name.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    name = name.substr(0, colon);
  }
  return std::string(name);
}

Status ReadAliases(const fs::path& file, ShortNameAliases& out) {
  toml::value data;
  try {
    data = toml::parse(file.string());
  } catch (const std::exception& e) {
    return Error("reading registries configuration " + file.string() + ": " + e.what());
  }
  if (!data.is_table() || !data.contains("aliases")) return Ok();
  const toml::value& table = data.at("aliases");
  if (!table.is_table()) {
    return Error(file.string() + ": [aliases] must be a table of short name = \"repository\"");
  }
  for (const auto& [key, value] : table.as_table()) {
    std::string where = file.string() + ": aliases: \"" + key + "\"";
    if (!value.is_string()) return Error(where + ": the value must be a string");
    const std::string target = value.as_string().str;
    auto short_name = ParseImageName(key);
    if (!short_name || !short_name->short_name || !short_name->tag.empty() ||
        !short_name->digest.empty()) {
      return Error(where + ": not a short name without tag or digest");
    }
    auto full = ParseImageName(target);
    if (!full || full->short_name || !full->tag.empty() || !full->digest.empty()) {
      std::string message = where;
      message += ": \"" + target + "\" is not a fully qualified repository without tag or digest";
      return Error(std::move(message));
    }
    out.aliases[key] = full->Repository();
    out.sources[key] = file;
  }
  return Ok();
}

}  // namespace

RegistriesConfLocation DefaultRegistriesConfLocation() {
  RegistriesConfLocation location{.main_file = kSystemFile, .drop_in_dir = kSystemDropInDir};
  if (const char* env = std::getenv("CONTAINERS_REGISTRIES_CONF"); env && *env) {
    location.main_file = env;
    location.from_environment = true;
    return location;
  }
  if (::geteuid() != 0) {
    if (const char* home = std::getenv("HOME"); home && *home) {
      fs::path user_file = fs::path(home) / ".config/containers/registries.conf";
      std::error_code ec;
      if (fs::exists(user_file, ec)) location.main_file = user_file;
    }
  }
  return location;
}

Result<ShortNameAliases> LoadShortNameAliases(const RegistriesConfLocation& location) {
  ShortNameAliases aliases;
  std::error_code ec;
  if (!location.main_file.empty() && fs::exists(location.main_file, ec)) {
    if (Status s = ReadAliases(location.main_file, aliases); !s) return s.take_error();
  }
  std::vector<fs::path> drop_ins;
  if (!location.drop_in_dir.empty() && fs::is_directory(location.drop_in_dir, ec)) {
    for (const auto& entry : fs::directory_iterator(location.drop_in_dir, ec)) {
      if (entry.path().extension() == ".conf" && entry.is_regular_file(ec)) {
        drop_ins.push_back(entry.path());
      }
    }
  }
  std::sort(drop_ins.begin(), drop_ins.end());
  for (const fs::path& file : drop_ins) {
    if (Status s = ReadAliases(file, aliases); !s) return s.take_error();
  }
  return aliases;
}

Result<ImageName> ResolveImageName(std::string_view reference, const ShortNameAliases& aliases) {
  auto name = ParseImageName(reference);
  if (!name || !name->short_name) return name;
  auto alias = aliases.aliases.find(ShortNameOf(reference));
  if (alias == aliases.aliases.end()) return name;
  auto target = ParseImageName(alias->second);
  if (!target) return target.take_error();
  target->tag = name->tag;
  target->digest = name->digest;
  return target;
}

}  // namespace podvisor::registry
