// `podvisor version`: what this binary is and what it would run with here.
#include <cstdio>
#include <string>

#include "cgroups/mode.h"
#include "cli/commands.h"
#include "oci/runtime_locator.h"
#include "podvisor_version.h"

namespace podvisor::cli {
namespace {

int RunVersion(const std::string& runtime_choice) {
  std::printf("podvisor %s\n", PODVISOR_VERSION);
  cgroups::CgroupInfo cg = cgroups::DetectCgroups();
  auto rt = oci::LocateRuntime(runtime_choice, cgroups::CrunUnusableOn(cg));
  if (rt) {
    auto v = oci::RuntimeVersion(rt->path);
    std::printf("runtime: %s (%s)\n", rt->path.c_str(),
                v ? v->c_str() : ("version unknown: " + v.error().message()).c_str());
  } else {
    std::printf("runtime: none (%s)\n", rt.error().message().c_str());
  }
  std::printf("cgroup: %s\n", cgroups::DescribeCgroups(cg).c_str());
  return kExitSucceeded;
}

}  // namespace

void AddVersionCommand(CLI::App& app, int& exit_code) {
  auto runtime = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("version", "Print the version, the OCI runtime found and the cgroup mode");
  cmd->add_option("--runtime", *runtime, "crun, runc or a path (default: the first that works)");
  cmd->callback([runtime, &exit_code] { exit_code = RunVersion(*runtime); });
}

}  // namespace podvisor::cli
