// The CLI's side of pod loading (loading/pod_loading.h does the work):
// prints what the loader says on stderr and chooses the docs/INTERFACE.md
// exit status; the --configmap/--secret options; durations.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "common/clock.h"
#include "common/result.h"
#include "loading/pod_loading.h"

namespace podvisor::cli {

using loading::CheckPodNetwork;
using loading::ConfigFiles;

struct LoadedPod {
  pod::Pod pod;
  // loading::LoadedPod's images, for `run` to hand down.
  std::map<std::string, image::Image> images;
  int exit_code = 0;  // 0, kExitUsage (invalid), kExitHost (unreadable)
  bool ok() const { return exit_code == 0; }
};

// --configmap FILE and --secret FILE, repeatable and comma-separated as
// in `podman kube play`.
void AddConfigFileOptions(CLI::App& cmd, ConfigFiles& files);

// loading::LoadPod and LoadPodForRun, their lines printed on stderr.
LoadedPod LoadPod(const std::filesystem::path& path, bool check_images,
                  const ConfigFiles& config_files = {});
LoadedPod LoadPodForRun(const std::filesystem::path& path, bool manifest = false,
                        const ConfigFiles& config_files = {});

// loading::OpenBundle, its error printed; exit_code as LoadedPod's.
struct OpenedBundle {
  std::filesystem::path dir;
  std::optional<image::UnpackedBundle> unpacked;
  int exit_code = 0;
};
OpenedBundle OpenBundle(const std::filesystem::path& path,
                        const std::filesystem::path& unpack_parent);

// --cni-bin-dir's default, whose existence makes cni the default mode.
inline constexpr const char* kDefaultCniBinDirs = "/usr/lib/cni:/opt/cni/bin";

// "10s", "1.5s", "500ms", "5m", "2h", or a plain number of seconds.
Result<Duration> ParseDuration(std::string_view text);

}  // namespace podvisor::cli
