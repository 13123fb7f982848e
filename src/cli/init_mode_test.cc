// VM init mode (docs/INTERFACE.md "Running as init inside a VM image"): the
// kernel command line, the run arguments and the final console line. The
// mounts and the power-off are exercised by test tier 4 in a VM.
#include "cli/init_mode.h"

#include <gtest/gtest.h>

namespace podvisor::cli {
namespace {

TEST(InitMode, DefaultsWithoutPodvisorParameters) {
  InitConfig c = ParseKernelCmdline("console=ttyS0 panic=-1 quiet\n");
  EXPECT_EQ(c.bundle, "/pod");
  EXPECT_EQ(c.runtime, "");
  EXPECT_FALSE(c.reboot);
}

TEST(InitMode, ReadsBundleRuntimeAndExit) {
  InitConfig c = ParseKernelCmdline(
      "console=ttyS0 podvisor.bundle=/srv/pod podvisor.runtime=crun podvisor.exit=reboot\n");
  EXPECT_EQ(c.bundle, "/srv/pod");
  EXPECT_EQ(c.runtime, "crun");
  EXPECT_TRUE(c.reboot);
}

TEST(InitMode, QuotesGroupAValueAndTheLastOccurrenceWins) {
  InitConfig c = ParseKernelCmdline(
      "podvisor.bundle=/a \"podvisor.bundle=/my pods/web\" podvisor.exit=reboot "
      "podvisor.exit=poweroff");
  EXPECT_EQ(c.bundle, "/my pods/web");
  EXPECT_FALSE(c.reboot);
}

TEST(InitMode, UnknownExitValuesAndEmptyBundleAreIgnored) {
  InitConfig c = ParseKernelCmdline("podvisor.exit=halt podvisor.bundle= podvisorx.bundle=/x");
  EXPECT_FALSE(c.reboot);
  EXPECT_EQ(c.bundle, "/pod");
}

TEST(InitMode, RunArgumentsAddNoPivotForAnInitramfs) {
  InitConfig c;
  c.runtime = "crun";
  std::vector<std::string> want = {"run", "--no-pivot", "--runtime", "crun", "/pod"};
  EXPECT_EQ(InitRunArgs(c, true), want);
  std::vector<std::string> plain = {"run", "/pod"};
  EXPECT_EQ(InitRunArgs(InitConfig{}, false), plain);
}

TEST(InitMode, CgroupParentIsPassedOn) {
  InitConfig c = ParseKernelCmdline("podvisor.cgroup-parent=self podvisor.bundle=/pods/x");
  EXPECT_EQ(c.cgroup_parent, "self");
  std::vector<std::string> want = {"run", "--cgroup-parent=self", "/pods/x"};
  EXPECT_EQ(InitRunArgs(c, false), want);
}

TEST(InitMode, FinalLineNamesPhaseAndExitStatus) {
  EXPECT_EQ(FinalConsoleLine("web", 0), "podvisor: pod web ended: phase=Succeeded exit=0");
  EXPECT_EQ(FinalConsoleLine("web", 1), "podvisor: pod web ended: phase=Failed exit=1");
  EXPECT_EQ(FinalConsoleLine("/pod", 3), "podvisor: pod /pod ended: phase=Pending exit=3");
  EXPECT_EQ(PhaseForExitCode(2), "Pending");
}

TEST(InitMode, OnlyPidOneWithoutASubcommandIsInit) {
  // This test process is not PID 1.
  EXPECT_FALSE(ShouldRunAsInit({}, {"run", "version"}));
}

}  // namespace
}  // namespace podvisor::cli
