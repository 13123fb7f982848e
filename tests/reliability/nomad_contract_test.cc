// Nomad's side of running a pod (examples/nomad/, README "More than one
// machine"), played by the test since Nomad is not installable here: the
// raw_exec driver sends the task kill_signal (SIGTERM), waits kill_timeout,
// then SIGKILLs every process of the task. With kill_timeout >= grace +
// 2 s + a margin for the runtime's deletes, podvisor must have stopped the
// pod in order (preStop, regular containers, then sidecars in reverse,
// S5.2-S5.4) and exited on its own before Nomad's SIGKILL, leaving nothing
// (the harness's leftovers check after each test).
//
// Nomad finds the task's processes through its cgroup; tier 2 has no
// cgroup v2 on the development hosts, so the test takes the process tree
// under `podvisor run`, which is the same set while podvisor lives: it is
// a child subreaper, so every container and hook stays below it.
#include <signal.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tiers.h"

namespace podvisor::e2e {
namespace {

constexpr int kGrace = 2;  // terminationGracePeriodSeconds of the pods below
// The job's arithmetic (examples/nomad/raw-exec.nomad.hcl), scaled down:
// grace + 2 s (S5.5's SIGKILL delay) + 3 s for runtime deletes and
// cleanup. preStop hooks run inside the grace (S5.1, S5.5).
constexpr std::chrono::milliseconds kKillTimeout{(kGrace + 2 + 3) * 1000};

// Every process below `root` (children of all its threads, recursively).
std::set<pid_t> Descendants(pid_t root) {
  std::set<pid_t> found;
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    std::error_code ec;
    for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(p) + "/task", ec)) {
      std::ifstream children(task.path() / "children");
      for (pid_t c; children >> c;) {
        if (found.insert(c).second) todo.push_back(c);
      }
    }
  }
  return found;
}

class NomadContract : public FakeRuntimeTier {
 protected:
  // Nomad stopping the task: SIGTERM, then SIGKILL to the whole task
  // after kill_timeout. Returns how long podvisor took to exit by itself,
  // or nullopt when Nomad had to kill it.
  std::optional<std::chrono::milliseconds> NomadStop() {
    auto t0 = std::chrono::steady_clock::now();
    ::kill(run_pid(), SIGTERM);
    while (std::chrono::steady_clock::now() - t0 < kKillTimeout) {
      if (!RunIsAlive()) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - t0);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // kill_timeout is over: every process of the task, podvisor first so
    // nothing is reparented to it meanwhile.
    std::set<pid_t> task = Descendants(run_pid());
    ::kill(run_pid(), SIGKILL);
    for (pid_t p : task) ::kill(p, SIGKILL);
    WaitRun();
    return std::nullopt;
  }
};

TEST_F(NomadContract, SigtermStopsThePodInOrderBeforeKillTimeout) {
  WritePod(PodHeader("nomad-task", "Always", kGrace) + "  initContainers:\n" +
           PodSidecar("proxy", HelperCmd("proxy", "trap-sigterm 200 0")) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "trap-sigterm 300 0"),
                    ", lifecycle: {preStop: {exec: {command: " + HelperCmd("drain", "sleep 500") +
                        "}}}"));
  StartRun();
  ASSERT_TRUE(WaitForHelperEvent("app Started")) << RunStderr();
  // Started as the runtime reports it, so the preStop hook applies (S5.2).
  WaitUntilRunning();
  auto took = NomadStop();
  ASSERT_TRUE(took) << "podvisor outlived kill_timeout " << kKillTimeout.count()
                    << " ms and Nomad SIGKILLed the task\n"
                    << RunStderr();
  RecordProperty("stop_ms", std::to_string(took->count()));
  EXPECT_LE(*took, std::chrono::milliseconds((kGrace + 2) * 1000));
  auto events = HelperEvents();
  int drain = IndexOf(events, "drain Exiting");
  int app = IndexOf(events, "app Exiting");
  int proxy = IndexOf(events, "proxy Exiting");
  ASSERT_GE(drain, 0) << Describe(events);
  ASSERT_GE(app, 0) << "app was SIGKILLed" << Describe(events);
  ASSERT_GE(proxy, 0) << "proxy was SIGKILLed" << Describe(events);
  // S5.2/S5.3: the preStop hook ends before the app's SIGTERM; S5.4: the
  // sidecar is stopped only after the regular container exited.
  EXPECT_LT(drain, app) << Describe(events);
  EXPECT_LT(app, proxy) << Describe(events);
  EXPECT_EQ(CountOf(events, "proxy Started"), 1) << Describe(events);
}

TEST_F(NomadContract, AContainerIgnoringSigtermIsKilledByPodvisorNotByNomad) {
  WritePod(PodHeader("nomad-stubborn", "Always", kGrace) + "  initContainers:\n" +
           PodSidecar("proxy", HelperCmd("proxy", "trap-sigterm 0 0")) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "ignore-sigterm")));
  StartRun();
  ASSERT_TRUE(WaitForHelperEvent("app Started")) << RunStderr();
  WaitUntilRunning();
  auto took = NomadStop();
  ASSERT_TRUE(took) << "podvisor outlived kill_timeout and Nomad SIGKILLed the task\n"
                    << RunStderr();
  RecordProperty("stop_ms", std::to_string(took->count()));
  // The budget ran out (S5.5): no earlier than the grace, within kill_timeout.
  EXPECT_GE(*took, std::chrono::milliseconds(kGrace * 1000 - 100));
  auto events = HelperEvents();
  EXPECT_EQ(CountOf(events, "app Exiting"), 0) << "app ignores SIGTERM" << Describe(events);
  EXPECT_GE(CountOf(events, "proxy Exiting"), 1) << Describe(events);
}

}  // namespace
}  // namespace podvisor::e2e
