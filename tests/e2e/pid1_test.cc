// Test tier 2 (docs/TESTING.md), PID-1 duties: podvisor is a child subreaper
// here (PID 1 in tier 4), so every process orphaned below it is reparented
// to it and must be reaped, whoever started it, with no zombie left.
#include <signal.h>

#include <fstream>
#include <regex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

class Pid1Duties : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
};

struct Children {
  int total = 0;
  int zombies = 0;
};

// The processes whose parent is `parent`, from /proc/<pid>/stat
// ("pid (comm) S ppid ..."; comm may hold spaces, so parse after ')').
Children ChildrenOf(pid_t parent) {
  Children c;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) != 2) continue;
    if (ppid != parent) continue;
    ++c.total;
    if (state == 'Z') ++c.zombies;
  }
  return c;
}

TEST_F(Pid1Duties, OrphanStormOf10000IsReapedWithNoZombieLeftAndThePodEndsNormally) {
  // "orphans" leaves 10 000 sleepers (50 ms) behind and exits; "app" keeps
  // the pod running meanwhile and exits 0 on SIGTERM.
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: orphan-storm}\nspec:\n"
      "  restartPolicy: Never\n  terminationGracePeriodSeconds: 5\n  containers:\n"
      "  - {name: orphans, image: img, command: " +
      HelperCmd("orphans", "spawn-orphans 10000") +
      "}\n"
      "  - {name: app, image: img, command: " +
      HelperCmd("app", "trap-sigterm 10 0") + "}\n");
  StartRun();
  ASSERT_TRUE(WaitForHelperEvent("orphans Exiting", 1, std::chrono::seconds(120)));
  // Every sleeper ends 50 ms after its start; then only the app's process
  // is left below the supervisor. Polling /proc is the test's business.
  auto until = Clock::now() + std::chrono::seconds(60);
  Children kids = ChildrenOf(run_pid());
  while (kids.total > 1 && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kids = ChildrenOf(run_pid());
  }
  EXPECT_EQ(kids.zombies, 0);
  EXPECT_EQ(kids.total, 1) << "children of the supervisor besides the app container";
  EXPECT_TRUE(RunIsAlive()) << "the supervisor must keep running while a container runs";
  auto pod = Status();
  ASSERT_TRUE(pod.has_value());
  EXPECT_EQ(StateOf(*pod, "app"), "running");
  EXPECT_EQ(StateOf(*pod, "orphans"), "terminated");

  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  std::smatch m;
  std::string err = RunStderr();
  ASSERT_TRUE(std::regex_search(err, m, std::regex("(\\d+) orphaned processes reaped"))) << err;
  EXPECT_GE(std::stoll(m[1]), 10000);
}

TEST_F(Pid1Duties, SignalsOtherThanTermAndIntAreNotForwardedAndDoNotEndThePod) {
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: not-forwarded}\nspec:\n"
      "  restartPolicy: Never\n  terminationGracePeriodSeconds: 5\n  containers:\n"
      "  - {name: app, image: img, command: " +
      HelperCmd("app", "trap-sigterm 10 0") + "}\n");
  StartRun();
  ASSERT_TRUE(WaitForHelperEvent("app Started"));
  for (int signo : {SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT, SIGALRM}) ::kill(run_pid(), signo);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(RunIsAlive());
  EXPECT_EQ(CountOf(HelperEvents(), "app Exiting"), 0) << "a signal reached the container";
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
}

}  // namespace
}  // namespace podvisor::e2e
