// Tier 2 (fake runtime): a pod's life on a host over time (docs/SEMANTICS.md
// S14.30, S14.33, S14.34): one supervisor per pod, `stop` that returns once
// the pod is gone so `stop && run` and `stop && rm` always work, each run
// its own record, and a log directory the client commands remember.
#include <sys/wait.h>

#include <algorithm>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class PodOverTime : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }

  static std::string Pod(const std::string& name, const std::string& containers) {
    return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
           "}\nspec:\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 2\n"
           "  containers:\n" +
           containers;
  }

  // `run` as StartRun makes it, to completion.
  testing::CommandResult RunAgain(const fs::path& state_dir) {
    return testing::RunCommand({RequiredEnv("PODVISOR"), "run", "--state-dir", state_dir.string(),
                                "--log-dir", log_dir_.string(), "--runtime",
                                RequiredEnv("PODVISOR_FAKE_RUNTIME"), "--sandbox", "none",
                                "--network", "none", bundle_.string()});
  }
};

TEST_F(PodOverTime, ASecondRunRightBehindTheFirstTouchesNothing) {
  WritePod(Pod("twice",
               "  - {name: app, image: img, command: " + HelperCmd("app", "sleep 100000") + "}\n"));
  StartRun();
  // Well inside the window in which the first has not made its socket yet.
  std::this_thread::sleep_for(milliseconds(50));
  auto second = RunAgain(state_dir_);
  EXPECT_EQ(second.exit_code, 3) << second.err;
  EXPECT_THAT(second.err, HasSubstr("another supervisor is serving pod twice (pid " +
                                    std::to_string(run_pid()) + ", holding "));
  // The first pod is whole: its app started once and runs.
  auto pod = WaitUntilRunning();
  EXPECT_EQ(StateOf(pod, "app"), "running");
  EXPECT_EQ(CountOf(HelperEvents(), "app Started"), 1) << Describe(HelperEvents());
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 4) << RunStderr();  // sleep dies of SIGTERM: stopped on request (S14.40)
}

TEST_F(PodOverTime, StopAndRunAndStopAndRmWorkEveryTime) {
  WritePod(Pod("again",
               "  - {name: app, image: img, command: " + HelperCmd("app", "sleep 100000") + "}\n"));
  StartRun();
  WaitUntilRunning();
  for (int i = 0; i < 5; ++i) {
    auto stop = Client({"stop"});
    ASSERT_EQ(stop.exit_code, 0) << "round " << i << ": " << stop.err;
    // stop returned: nothing of the pod is left.
    EXPECT_FALSE(fs::exists(state_dir_ / "again" / "control.sock")) << "round " << i;
    EXPECT_FALSE(fs::exists(state_dir_ / "again" / "runtime")) << "round " << i;
    // `stop && run`: at once, not after reaping the one that stopped.
    const pid_t previous = run_pid();
    StartRun();
    WaitUntilRunning();
    int status = 0;
    ASSERT_EQ(::waitpid(previous, &status, 0), previous);
    EXPECT_TRUE(WIFEXITED(status)) << "round " << i;
  }
  ASSERT_EQ(Client({"stop"}).exit_code, 0);
  auto rm = Client({"rm", "again"}, /*with_log_dir=*/true);
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_FALSE(fs::exists(state_dir_ / "again"));
  EXPECT_FALSE(fs::exists(state_dir_ / "again.lock"));
  EXPECT_FALSE(fs::exists(log_dir_ / "again"));
  WaitRun();
}

TEST_F(PodOverTime, RmRefusesARunningPodByItsLock) {
  WritePod(Pod("busy",
               "  - {name: app, image: img, command: " + HelperCmd("app", "sleep 100000") + "}\n"));
  StartRun();
  WaitUntilRunning();
  auto rm = Client({"rm", "busy"}, /*with_log_dir=*/true);
  EXPECT_EQ(rm.exit_code, 1);
  EXPECT_THAT(rm.err, HasSubstr("pod busy is running"));
  EXPECT_TRUE(fs::exists(state_dir_ / "busy" / "status.json"));
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  WaitRun();
}

TEST_F(PodOverTime, EachRunIsItsOwnRecordAndTheLogDirectoryIsRemembered) {
  WritePod(Pod("runs", "  - {name: app, image: img, command: " +
                           ShCmd("echo line-$(cat /proc/sys/kernel/random/uuid)") + "}\n"));
  ASSERT_EQ(Run(), 0) << RunStderr();
  // Without --log-dir: the run remembered where its logs went.
  auto first = Client({"logs", "runs"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_THAT(first.out, HasSubstr("line-"));
  const std::string first_uid = Status().value()["metadata"].value("uid", "");
  ASSERT_EQ(Run(), 0) << RunStderr();

  auto second = Client({"logs", "runs"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_THAT(second.out, Not(HasSubstr(first.out))) << "the previous run's lines";
  EXPECT_EQ(std::count(second.out.begin(), second.out.end(), '\n'), 1) << second.out;
  // kubectl's TYPE/NAME form names the pod too (S14.25).
  EXPECT_EQ(Client({"logs", "pod/runs"}).out, second.out);
  EXPECT_EQ(Client({"status", "pod/runs", "-o", "name"}).out, "pod/runs\n");
  int started = 0;
  for (const auto& e : PodEvents()) {
    started += e.value("reason", "") == "Started";
    EXPECT_EQ(e.value("count", 1), 1) << e.dump();  // nothing folds across runs
  }
  EXPECT_EQ(started, 1);
  EXPECT_THAT(Client({"events", "runs"}).out, Not(HasSubstr("x2")));

  // The earlier run is reachable: by number and by its uid.
  auto earlier = Client({"logs", "runs", "--run", "1"});
  EXPECT_EQ(earlier.exit_code, 0) << earlier.err;
  EXPECT_EQ(earlier.out, first.out);
  EXPECT_EQ(Client({"logs", "runs", "--run", first_uid}).out, first.out);
  auto earlier_events = Client({"events", "runs", "--run", "1", "-o", "json"});
  EXPECT_EQ(earlier_events.exit_code, 0) << earlier_events.err;
  EXPECT_THAT(earlier_events.out, HasSubstr("\"Started\""));
  auto none = Client({"logs", "runs", "--run", "2"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_THAT(
      none.err,
      HasSubstr("--run 2: pod runs has no such earlier run (newest first: " + first_uid + ")"));

  // rm without --log-dir removes every run's logs.
  auto rm = Client({"rm", "runs"});
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_FALSE(fs::exists(log_dir_ / "runs"));
  EXPECT_FALSE(fs::exists(state_dir_ / "runs"));
}

TEST_F(PodOverTime, S14_35_ACapabilityTheHostCannotGrantIsRefusedBeforeAnyContainer) {
  if (::geteuid() != 0) GTEST_SKIP() << "dropping from the bounding set needs root";
  if (FindInPath("setpriv").empty()) GTEST_SKIP() << "setpriv (util-linux) not installed";
  WritePod(Pod("caps", "  - {name: app, image: img, command: " + HelperCmd("app", "exit 0") +
                           ", securityContext: {capabilities: {add: [SYS_TIME]}}}\n"));
  // podvisor started by a parent that dropped CAP_SYS_TIME from its
  // bounding set, as a container engine or a unit's CapabilityBoundingSet= does.
  const std::vector<std::string> lacking = {FindInPath("setpriv"), "--bounding-set", "-sys_time"};
  std::vector<std::string> run = lacking;
  for (const std::string& a :
       {RequiredEnv("PODVISOR"), std::string("run"), std::string("--state-dir"),
        state_dir_.string(), std::string("--log-dir"), log_dir_.string(), std::string("--runtime"),
        RequiredEnv("PODVISOR_FAKE_RUNTIME"), std::string("--sandbox"), std::string("none"),
        std::string("--network"), std::string("none"), bundle_.string()}) {
    run.push_back(a);
  }
  auto refused = testing::RunCommand(run);
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("spec.containers[0].securityContext.capabilities.add[0]: "
                                     "CAP_SYS_TIME is not in podvisor's own bounding set"));
  EXPECT_FALSE(fs::exists(state_dir_ / "caps"));
  EXPECT_TRUE(HelperEvents().empty());
  std::vector<std::string> validate = lacking;
  for (const std::string& a : {RequiredEnv("PODVISOR"), std::string("validate"), bundle_.string()})
    validate.push_back(a);
  auto told = testing::RunCommand(validate);
  EXPECT_EQ(told.exit_code, 3) << told.err;
  EXPECT_THAT(told.err, HasSubstr("CAP_SYS_TIME is not in podvisor's own bounding set"));
  // With the capability, the same pod runs.
  EXPECT_EQ(Run(), 0) << RunStderr();
}

}  // namespace
}  // namespace podvisor::e2e
