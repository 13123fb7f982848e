// packaging/systemd/podvisor@.service agrees with the exit statuses `run`
// uses (src/cli/commands.h, docs/INTERFACE.md "Exit status"): a stop the
// user asked for is clean, a pod that failed on its own and an invalid
// bundle fail the unit without a restart, and a supervisor that died or
// was failed by its host is restarted (S14.40), and the restarted one
// adopts the pod the dead one left running (S15.7); `systemctl reload`
// upgrades podvisor in place (S15.2). The tier-2 side, with a
// real `run`, is tests/reliability/systemd_contract_test.cc.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/commands.h"
#include "cli/default_dirs.h"

namespace podvisor::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::Not;

// The [Service] section's keys; the last assignment wins, as in systemd.
std::map<std::string, std::string> ServiceKeys() {
  const char* root = std::getenv("PODVISOR_SOURCE_ROOT");
  EXPECT_NE(root, nullptr) << "run through meson (PODVISOR_SOURCE_ROOT)";
  std::ifstream in(fs::path(root ? root : ".") / "packaging" / "systemd" / "podvisor@.service");
  std::map<std::string, std::string> keys;
  bool service = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      service = line == "[Service]";
      continue;
    }
    auto eq = line.find('=');
    if (service && eq != std::string::npos) keys[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return keys;
}

std::vector<int> Codes(const std::string& list) {
  std::istringstream in(list);
  std::vector<int> out;
  for (int c; in >> c;) out.push_back(c);
  return out;
}

TEST(SystemdUnit, S14_40_ExitStatusesAgreeWithRun) {
  auto unit = ServiceKeys();
  ASSERT_FALSE(unit.empty());
  std::vector<int> success = Codes(unit["SuccessExitStatus"]);
  std::vector<int> prevent = Codes(unit["RestartPreventExitStatus"]);
  // on-failure: an unclean exit or a death by signal (a crashed or
  // SIGKILLed supervisor) restarts; a clean one never does.
  EXPECT_EQ(unit["Restart"], "on-failure");
  EXPECT_THAT(success, Contains(cli::kExitStopped));
  for (int failed : {cli::kExitFailed, cli::kExitUsage, cli::kExitHost}) {
    EXPECT_THAT(success, Not(Contains(failed))) << failed;
  }
  EXPECT_THAT(prevent, Contains(cli::kExitFailed)) << "a Failed pod is not run again";
  EXPECT_THAT(prevent, Contains(cli::kExitUsage)) << "an invalid bundle stays invalid";
  EXPECT_THAT(prevent, Not(Contains(cli::kExitHost))) << "a host error may pass";
  EXPECT_THAT(prevent, Not(Contains(cli::kExitStopped)));
}

TEST(SystemdUnit, ThePodNestsInTheUnitWherePossible) {
  auto unit = ServiceKeys();
  EXPECT_EQ(unit["Delegate"], "yes");
  EXPECT_NE(unit["ExecStart"].find(" run --cgroup-parent=auto "), std::string::npos)
      << unit["ExecStart"];
}

// S15.7: a supervisor that dies takes no container with it (systemd
// signals podvisor alone, also after TimeoutStopSec), and the restarted
// one adopts its pod.
TEST(SystemdUnit, S15_7_ADeadSupervisorLeavesItsPodToTheNext) {
  auto unit = ServiceKeys();
  EXPECT_EQ(unit["KillMode"], "process");
  EXPECT_EQ(unit["KillSignal"], "SIGTERM");
  EXPECT_EQ(unit["Restart"], "on-failure");
}

// S15.2: `systemctl reload` is `podvisor upgrade` of the unit's pod, under
// the state directory ExecStart's run uses (its default), so that a
// refused upgrade fails the reload.
TEST(SystemdUnit, S15_2_ReloadUpgradesThePodOfTheUnit) {
  auto unit = ServiceKeys();
  const std::string reload = unit["ExecReload"];
  EXPECT_EQ(reload, std::string("/usr/bin/podvisor upgrade --state-dir ") + cli::kDefaultStateDir +
                        " -f /etc/podvisor/pods/%i");
  EXPECT_EQ(unit["ExecStart"].find("--state-dir"), std::string::npos)
      << "run uses the default state directory: " << unit["ExecStart"];
}

}  // namespace
}  // namespace podvisor::testing
