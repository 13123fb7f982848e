// Finding the OCI runtime binary (docs/INTERFACE.md `--runtime crun|runc|PATH`).
//
// Without a choice podvisor takes the first of crun, runc that works on
// this host. crun refuses a v1/v2 hybrid cgroup hierarchy outright, so the
// caller says whether crun can work here (it knows the cgroup mode; oci/
// does not look at cgroups itself: cgroups::CrunUnusableOn says it), and a
// choice of crun there, by name or by a path that is crun, is refused here
// before anything starts, for `run` and `validate` alike.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "common/result.h"

namespace podvisor::oci {

struct RuntimeBinary {
  std::string name;  // "crun", "runc", or the file name of a PATH choice
  std::filesystem::path path;
};

// `choice`: "" for automatic, "crun", "runc", or a path (anything with '/').
// `crun_unusable`: "" when crun can run here, else what it cannot run on
// ("this host's hybrid cgroups (cgroup v1/v2 hybrid)"). An explicit crun
// is then refused: "--runtime crun: crun cannot run on ...; use runc".
Result<RuntimeBinary> LocateRuntime(std::string_view choice, std::string_view crun_unusable);

// Looks a program up in $PATH (or `search_path`): an executable regular file.
Result<std::filesystem::path> FindInPath(std::string_view program,
                                         std::string_view search_path = {});

// The first line of `<runtime> --version`, e.g. "runc version 1.1.5".
// Runs the program synchronously: for `podvisor version`, not the loop.
Result<std::string> RuntimeVersion(const std::filesystem::path& runtime);

}  // namespace podvisor::oci
