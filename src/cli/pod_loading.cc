#include "cli/pod_loading.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/commands.h"

namespace podvisor::cli {
namespace {

int ExitCodeOf(loading::LoadFailure failure) {
  switch (failure) {
    case loading::LoadFailure::kNone:
      return 0;
    case loading::LoadFailure::kInvalid:
      return kExitUsage;
    case loading::LoadFailure::kUnreadable:
      return kExitHost;
  }
  return kExitHost;
}

LoadedPod Printed(loading::LoadedPod loaded) {
  for (const std::string& line : loaded.messages) std::fprintf(stderr, "%s\n", line.c_str());
  return LoadedPod{std::move(loaded.pod), std::move(loaded.images), ExitCodeOf(loaded.failure)};
}

}  // namespace

LoadedPod LoadPod(const std::filesystem::path& path, bool check_images,
                  const ConfigFiles& config_files) {
  return Printed(loading::LoadPod(path, check_images, config_files));
}

LoadedPod LoadPodForRun(const std::filesystem::path& path, bool manifest,
                        const ConfigFiles& config_files) {
  return Printed(loading::LoadPodForRun(path, manifest, config_files));
}

OpenedBundle OpenBundle(const std::filesystem::path& path,
                        const std::filesystem::path& unpack_parent) {
  loading::OpenedBundle opened = loading::OpenBundle(path, unpack_parent);
  if (!opened.error.empty()) std::fprintf(stderr, "%s\n", opened.error.c_str());
  return OpenedBundle{std::move(opened.dir), std::move(opened.unpacked),
                      ExitCodeOf(opened.failure)};
}

void AddConfigFileOptions(CLI::App& cmd, ConfigFiles& files) {
  cmd.add_option("--configmap", files.config_maps,
                 "a YAML file of ConfigMaps the pod may use, besides the bundle's")
      ->delimiter(',')
      ->type_name("FILE");
  cmd.add_option("--secret", files.secrets,
                 "a YAML file of Secrets the pod may use, besides the bundle's")
      ->delimiter(',')
      ->type_name("FILE");
}

Result<Duration> ParseDuration(std::string_view text) {
  std::string s(text);
  char* end = nullptr;
  double value = std::strtod(s.c_str(), &end);
  std::string unit = end ? std::string(end) : "";
  if (end == s.c_str() || value < 0) {
    return Error("invalid duration \"" + s + "\": use e.g. 10s, 500ms, 5m, 2h");
  }
  double seconds;
  if (unit.empty() || unit == "s") {
    seconds = value;
  } else if (unit == "ms") {
    seconds = value / 1000;
  } else if (unit == "m") {
    seconds = value * 60;
  } else if (unit == "h") {
    seconds = value * 3600;
  } else {
    return Error("invalid duration \"" + s + "\": use e.g. 10s, 500ms, 5m, 2h");
  }
  if (seconds > 1e9) return Error("duration \"" + s + "\" is too long");
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
}

}  // namespace podvisor::cli
