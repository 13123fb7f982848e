// packaging/systemd/podvisor-applied@.service agrees with what `podvisor
// apply` assumes of it (src/cli/apply_pods.h, docs/SEMANTICS.md S18.10):
// it runs the bundle apply writes for the instance's pod, with the state
// and log directories apply compares against, run's extra words from the
// file apply writes, and the exit statuses of podvisor@.service (a stop
// through the control socket, exit 4, leaves the unit inactive).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/apply_pods.h"
#include "cli/commands.h"

namespace podvisor::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::map<std::string, std::string> UnitKeys(const std::string& unit) {
  const char* root = std::getenv("PODVISOR_SOURCE_ROOT");
  EXPECT_NE(root, nullptr) << "run through meson (PODVISOR_SOURCE_ROOT)";
  std::ifstream in(fs::path(root ? root : ".") / "packaging" / "systemd" / unit);
  std::map<std::string, std::string> keys;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line[0] == '[') continue;
    auto eq = line.find('=');
    if (eq != std::string::npos) keys[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return keys;
}

TEST(ApplyUnit, S18_10_RunsTheBundleApplyWritesWithItsDirectories) {
  auto unit = UnitKeys(cli::apply::kUnitTemplate);
  ASSERT_FALSE(unit.empty());
  const std::string state = cli::apply::kUnitStateDir;
  const std::string pod_dir = state + "/" + cli::apply::kApplyDirName + "/%i";
  EXPECT_THAT(unit["ExecStart"], HasSubstr(" run "));
  EXPECT_THAT(unit["ExecStart"], HasSubstr(" --state-dir " + state + " "));
  EXPECT_THAT(unit["ExecStart"], HasSubstr(" --log-dir " + std::string(cli::apply::kUnitLogDir)));
  EXPECT_THAT(unit["ExecStart"], HasSubstr(" $PODVISOR_RUN_ARGS "));
  // The last word is the instance's current bundle (ApplyDir::Current).
  EXPECT_TRUE(unit["ExecStart"].ends_with(" " + pod_dir + "/current")) << unit["ExecStart"];
  EXPECT_EQ(unit["EnvironmentFile"], "-" + pod_dir + "/run.env");  // ApplyDir::RunEnv
  EXPECT_EQ(unit["Type"], "notify");
  EXPECT_EQ(unit["KillMode"], "process");
  EXPECT_EQ(unit["SuccessExitStatus"], std::to_string(cli::kExitStopped));
  // The rest as podvisor@.service, whose own test checks them.
  auto plain = UnitKeys("podvisor@.service");
  for (const char* key : {"Restart", "RestartPreventExitStatus", "TimeoutStopSec", "Delegate",
                          "LimitNOFILE", "NotifyAccess"}) {
    EXPECT_EQ(unit[key], plain[key]) << key;
  }
}

}  // namespace
}  // namespace podvisor::testing
