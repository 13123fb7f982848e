#include "image/image.h"

#include <csignal>
#include <fstream>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "common/signal_names.h"
#include "image/image_cache.h"
#include "image/oci_layout.h"
#include "pod/bundle.h"

namespace podvisor::image {
namespace {

using nlohmann::json;

// Image configs in the wild write `null` for an absent list (Docker does
// for Entrypoint), so null and missing both mean "empty".
Status ReadStringList(const json& config, const char* key, std::vector<std::string>& out) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return Ok();
  if (!it->is_array()) return Error(std::string("config.") + key + ": must be an array of strings");
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& item = (*it)[i];
    if (!item.is_string()) {
      return Error(std::string("config.") + key + "[" + std::to_string(i) + "]: must be a string");
    }
    out.push_back(item.get<std::string>());
  }
  return Ok();
}

Status ReadString(const json& config, const char* key, std::string& out) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return Ok();
  if (!it->is_string()) return Error(std::string("config.") + key + ": must be a string");
  out = it->get<std::string>();
  return Ok();
}

Status DecodeConfig(const json& doc, ImageConfig& out) {
  if (!doc.is_object()) return Error("must be a JSON object");
  auto it = doc.find("config");
  if (it == doc.end() || it->is_null()) return Ok();
  if (!it->is_object()) return Error("config: must be an object");
  const json& config = *it;
  for (auto status :
       {ReadStringList(config, "Entrypoint", out.entrypoint),
        ReadStringList(config, "Cmd", out.cmd), ReadStringList(config, "Env", out.env),
        ReadString(config, "WorkingDir", out.working_dir), ReadString(config, "User", out.user),
        ReadString(config, "StopSignal", out.stop_signal)}) {
    if (!status) return status;
  }
  for (std::size_t i = 0; i < out.env.size(); ++i) {
    std::size_t eq = out.env[i].find('=');
    if (eq == std::string::npos || eq == 0) {
      return Error("config.Env[" + std::to_string(i) + "]: \"" + out.env[i] +
                   "\" is not NAME=value");
    }
  }
  if (!out.stop_signal.empty() && !ParseSignal(out.stop_signal)) {
    return Error("config.StopSignal: unknown signal \"" + out.stop_signal + "\"");
  }
  return Ok();
}

}  // namespace

Result<ImageConfig> ParseImageConfig(std::string_view json_text,
                                     const std::filesystem::path& file) {
  json doc = json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error(file.string() + ": not valid JSON");
  ImageConfig config;
  Status status = DecodeConfig(doc, config);
  if (!status) return status.error().Wrap(file.string());
  return config;
}

Result<Image> LoadImage(const std::filesystem::path& bundle, std::string_view reference,
                        const ImageLoadOptions& options) {
  auto dir = pod::ResolveImageDir(bundle, reference);
  if (!dir) return dir.error().Wrap("image \"" + std::string(reference) + "\"");
  if (IsOciLayout(*dir)) return LoadOciLayoutImage(*dir, reference, options.cache_dir);
  Image image;
  image.reference = std::string(reference);
  image.dir = *dir;
  image.rootfs = *dir / "rootfs";
  std::error_code ec;
  if (!std::filesystem::is_directory(image.rootfs, ec)) {
    return Error(
        "image \"" + image.reference + "\": " + image.rootfs.string() + " is not a directory",
        ec ? ec.value() : ENOENT);
  }
  std::filesystem::path config_file = *dir / "image.json";
  if (!std::filesystem::exists(config_file, ec)) return image;
  std::ifstream in(config_file);
  if (!in)
    return Error::FromErrno("image \"" + image.reference + "\": reading " + config_file.string());
  std::stringstream text;
  text << in.rdbuf();
  auto config = ParseImageConfig(text.str(), config_file);
  if (!config) return config.error().Wrap("image \"" + image.reference + "\"");
  image.config = std::move(*config);
  return image;
}

Result<int> EffectiveStopSignal(const pod::Container& container, const ImageConfig& image) {
  if (container.lifecycle && container.lifecycle->stop_signal) {
    auto signo = ParseKubernetesSignalName(*container.lifecycle->stop_signal);
    if (!signo)
      return Error("lifecycle.stopSignal: unknown signal \"" + *container.lifecycle->stop_signal +
                   "\"");
    return *signo;
  }
  if (!image.stop_signal.empty()) {
    auto signo = ParseSignal(image.stop_signal);
    if (!signo) return Error("image StopSignal: unknown signal \"" + image.stop_signal + "\"");
    return *signo;
  }
  return SIGTERM;
}

}  // namespace podvisor::image
