// Test tier 3 (docs/TESTING.md): `podvisor run` with runc on this host, busybox
// rootfs bundles with the static test helper at /podvisor-test-helper.
// Containers append their timestamped events to /shared/events.log, a
// hostPath volume in the test's temp dir (an emptyDir would be gone by
// the time the pod ended), and the test sorts and asserts the order.
// Needs root; skipped otherwise.
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;

using Runc = RuncE2eTest;

constexpr const char* kSharedMount = ", volumeMounts: [{name: shared, mountPath: /shared}]";

std::string Header(const std::string& name, const std::string& restart_policy, int grace = 5) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         "}\nspec:\n  restartPolicy: " + restart_policy +
         "\n  terminationGracePeriodSeconds: " + std::to_string(grace) +
         "\n  volumes: [{name: shared, hostPath: {path: \"{{HOSTDIR}}\", type: "
         "DirectoryOrCreate}}]\n";
}

std::string Entry(const std::string& name, const std::string& command,
                  const std::string& extra = "") {
  return "  - {name: " + name + ", image: img, command: " + command + kSharedMount + extra + "}\n";
}
std::string Sidecar(const std::string& name, const std::string& command,
                    const std::string& extra = "") {
  return Entry(name, command, ", restartPolicy: Always" + extra);
}

void ExpectOrder(const std::vector<HelperEvent>& events, const std::vector<std::string>& keys) {
  int last = -1;
  std::string last_key;
  for (const auto& k : keys) {
    int at = IndexOf(events, k);
    ASSERT_GE(at, 0) << "missing \"" << k << "\" in" << Describe(events);
    EXPECT_GT(at, last) << "\"" << k << "\" came before \"" << last_key << "\" in"
                        << Describe(events);
    last = at;
    last_key = k;
  }
}

TEST_F(Runc, S1_S3_4_InitsAndSidecarsStartInOrderAndCompletionStopsSidecarsInReverse) {
  WritePod(Header("runc-order", "Never") + "  initContainers:\n" +
           Entry("init-1", HelperCmd("init-1", "sleep 50")) +
           Sidecar("side-1", HelperCmd("side-1", "trap-sigterm 20 0")) +
           Entry("init-2", HelperCmd("init-2", "exit 0")) +
           Sidecar("side-2", HelperCmd("side-2", "trap-sigterm 300 0")) + "  containers:\n" +
           Entry("app", HelperCmd("app", "sleep 200")));
  EXPECT_EQ(Run(), 0) << RunStderr();
  ExpectOrder(HelperEvents(), {"init-1 Started", "init-1 Exiting", "side-1 Started",
                               "init-2 Started", "init-2 Exiting", "side-2 Started", "app Started",
                               "app Exiting", "side-2 Exiting", "side-1 Exiting"});
}

TEST_F(Runc, S5_5_GraceExpirySigkillsIgnoringContainerAndSidecarStillGetsItsTurn) {
  WritePod(Header("runc-grace", "Never", 2) + "  initContainers:\n" +
           Sidecar("side", HelperCmd("side", "trap-sigterm 20 0")) + "  containers:\n" +
           Entry("stubborn", HelperCmd("stubborn", "ignore-sigterm")));
  StartRun();
  WaitUntilRunning();
  auto stop_at = Clock::now();
  auto stop = Client({"stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(WaitRun(), 4) << RunStderr();
  auto ended = Clock::now();
  auto events = HelperEvents();
  EXPECT_EQ(IndexOf(events, "stubborn Exiting"), -1) << Describe(events);
  int side_exit = IndexOf(events, "side Exiting");
  ASSERT_GE(side_exit, 0) << "the sidecar never got its stop signal" << Describe(events);
  long long side_after = MsBetween(stop_at, events[side_exit].time);
  EXPECT_GE(side_after, 1900) << Describe(events);
  EXPECT_LE(side_after, 2000 + 2000) << Describe(events);
  // grace + 2 s, plus runc's own delete time and a loaded machine.
  EXPECT_LE(MsBetween(stop_at, ended), 2000 + 2000 + 3000);
}

TEST_F(Runc, S6_2_StopReasonReachesExecPreStopByEnvAndArgs) {
  std::string pre_stop =
      ", lifecycle: {preStop: {exec: {command: " +
      ShCmd("echo \"$KUBE_POD_TERM_REASON\" > /shared/env; echo \"$1\" > /shared/arg",
            {"sh", "$(KUBE_POD_TERM_REASON)"}) +
      "}}}";
  WritePod(Header("runc-reason", "Never") + "  containers:\n" +
           Entry("app", HelperCmd("app", "trap-sigterm 20 0"), pre_stop));
  StartRun();
  WaitUntilRunning();
  auto stop = Client({"stop", "--reason", "Eviction"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("env"), "Eviction");
  EXPECT_EQ(ReadScratch("arg"), "Eviction");
  EXPECT_EQ(CountOf(HelperEvents(), "app Exiting"), 1) << Describe(HelperEvents());
}

TEST_F(Runc, S3_1_CrashingSidecarIsRestartedUnderNeverAndPodSucceeds) {
  std::string side = ShCmd(
      "if [ -e /shared/crashed ]; then exec {{H}} --log side --log-file {{LOG}} trap-sigterm 20 0; "
      "fi; "
      "touch /shared/crashed; {{H}} --log side --log-file {{LOG}} sleep 200; exit 1");
  WritePod(Header("runc-crash", "Never") + "  initContainers:\n" + Sidecar("side", side) +
           "  containers:\n" + Entry("app", HelperCmd("app", "sleep 2000")));
  StartRun({"--backoff-initial", "200ms"});
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  auto events = HelperEvents();
  EXPECT_EQ(CountOf(events, "side Started"), 2) << Describe(events);
  // Whether the sidecar's crash (200 ms after its start) comes before or
  // after the app's start depends on how fast runc creates the app on a
  // loaded machine; S3.1 orders only the start, and the restarted sidecar
  // must outlive the app.
  ExpectOrder(events, {"side Started", "app Started", "app Exiting"});
  EXPECT_EQ(events.back().Key(), "side Exiting") << Describe(events);
}

TEST_F(Runc, S9_5_ContainerOverItsMemoryLimitIsOomKilledAndRestartedUnderOnFailure) {
  // This host's memory controller is cgroup v1: the kill is counted in the
  // container's memory.oom_control. The second run finds the marker and
  // exits 0.
  std::string hog = ShCmd(
      "if [ -e /shared/hogged ]; then exec {{H}} --log hog --log-file {{LOG}} exit 0; fi; "
      "touch /shared/hogged; exec {{H}} --log hog --log-file {{LOG}} memhog 96");
  WritePod(Header("runc-oom", "OnFailure") + "  containers:\n" +
           Entry("hog", hog, ", resources: {limits: {memory: 32Mi}}"));
  StartRun();
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  EXPECT_EQ(CountOf(HelperEvents(), "hog Started"), 2) << Describe(HelperEvents());
  bool oom_event = false;
  for (const auto& e : PodEvents()) {
    oom_event |= e.value("reason", "") == "OOMKilled" && e.value("object", "") == "container/hog";
  }
  EXPECT_TRUE(oom_event) << "no OOMKilled event\n" << RunStderr();
}

// S10.3 with runc: a Guaranteed pod (-997) runs on a host whose root may
// lack CAP_SYS_RESOURCE (this one does). Without it runc could not lower
// the container's oom_score_adj below the supervisor's own and failed every
// create; now the value is raised to the supervisor's, with one event.
TEST_F(Runc, S10_3_GuaranteedPodRunsWhateverTheHostsCapSysResource) {
  WritePod(Header("runc-guaranteed", "Never") + "  containers:\n" +
           Entry("app", ShCmd("cat /proc/self/oom_score_adj > /shared/oom"),
                 ", resources: {limits: {cpu: 100m, memory: 64Mi}, "
                 "requests: {cpu: 100m, memory: 64Mi}}"));
  EXPECT_EQ(Run(), 0) << RunStderr();
  std::ifstream in(scratch_ / "oom");
  int oom = 1;
  ASSERT_TRUE(in >> oom) << RunStderr();
  bool clamped_event = false;
  for (const auto& e : PodEvents()) {
    clamped_event |= e.value("reason", "") == "OomScoreAdjClamped";
  }
  if (oom == -997) {
    EXPECT_FALSE(clamped_event);  // a host that lets podvisor lower it
  } else {
    EXPECT_TRUE(clamped_event) << RunStderr();
    EXPECT_GT(oom, -997);
  }
}

// S12.1, S12.3–S12.6 with runc: a job with a draft sidecar (preStop
// included) next to a KEP-753 sidecar. The draft sidecar starts before the
// job; when the job completed it gets its preStop, then its stop signal,
// and only once it exited does the KEP-753 sidecar get its own. Its exit 1
// on SIGTERM leaves the pod Succeeded.
TEST_F(Runc, S12_3_JobWithADraftSidecarCompletesAndItStopsBeforeTheKep753Sidecar) {
  const std::string proxy = ", lifecycle: {type: Sidecar, preStop: {exec: {command: " +
                            ShCmd("{{H}} --log-file {{LOG}} log proxy-preStop Start; sleep 0.2") +
                            "}}}";
  WritePod(Header("runc-draft", "Never") + "  initContainers:\n" +
           Sidecar("mesh", HelperCmd("mesh", "trap-sigterm 20 0")) + "  containers:\n" +
           Entry("job", HelperCmd("job", "sleep 300")) +
           Entry("proxy", HelperCmd("proxy", "trap-sigterm 100 1"), proxy));
  EXPECT_EQ(Run(), 0) << RunStderr();
  // The start gate (S12.1) orders the runtime starts; the helpers' own
  // "Started" lines are written once each process runs, which can lag by
  // a millisecond, so the start order is read from podvisor's events.
  std::vector<std::string> started;
  for (const auto& e : PodEvents()) {
    if (e.value("reason", "") == "Started") started.push_back(e.value("object", ""));
  }
  EXPECT_EQ(started,
            (std::vector<std::string>{"container/mesh", "container/proxy", "container/job"}));
  auto events = HelperEvents();
  ExpectOrder(events, {"mesh Started", "job Exiting", "proxy-preStop Start", "proxy Exiting",
                       "mesh Exiting"});
  EXPECT_EQ(CountOf(events, "proxy-preStop Start"), 1) << Describe(events);
}

// S16.4: an image the bundle lacks is pulled; one that is not even a
// registry reference is refused before anything starts.
TEST_F(Runc, BadBundleMissingImageExitsTwoAndStartsNothing) {
  WritePod(Header("runc-bad", "Never") + "  containers:\n" +
           "  - {name: app, image: Missing, command: " + HelperCmd("app", "exit 0") + kSharedMount +
           "}\n");
  EXPECT_EQ(Run(), 2) << RunStderr();
  EXPECT_THAT(RunStderr(), HasSubstr("Missing"));
  EXPECT_TRUE(HelperEvents().empty());
  EXPECT_FALSE(fs::exists(state_dir_ / "runc-bad" / "runtime"));
}

}  // namespace
}  // namespace podvisor::e2e
