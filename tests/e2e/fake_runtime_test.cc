// Test tier 2 (docs/TESTING.md): the whole supervisor end to end with real
// processes, against the fake OCI runtime, no root needed. Ordering is read
// from the test helper's timestamped event log; times are asserted only
// with margins a loaded 2-core machine keeps.
#include <signal.h>

#include <fstream>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::AnyOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

class FakeRuntime : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
};

std::string Header(const std::string& name, const std::string& restart_policy, int grace = 5) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         "}\nspec:\n  restartPolicy: " + restart_policy +
         "\n  terminationGracePeriodSeconds: " + std::to_string(grace) + "\n";
}

// One list entry: "  - {name: N, image: img, command: CMD<extra>}".
std::string Entry(const std::string& name, const std::string& command,
                  const std::string& extra = "") {
  return "  - {name: " + name + ", image: img, command: " + command + extra + "}\n";
}
// A sidecar is started, and the next entry may start, once its runtime
// start returns (S1.3); whether its process has run by then is up to the
// scheduler. Tests assert on what the helper logs, so unless a test brings
// its own, each sidecar gets a startup probe that passes once the helper has
// logged "Started" (for trap-sigterm: once its handler is in place). On a
// loaded machine a sidecar could otherwise be stopped before it ever ran.
std::string Sidecar(const std::string& name, const std::string& command,
                    const std::string& extra = "") {
  std::string probe;
  if (extra.find("startupProbe") == std::string::npos) {
    probe =
        ", startupProbe: {exec: {command: " + ShCmd("grep -q ' " + name + " Started$' {{LOG}}") +
        "}, periodSeconds: 1, failureThreshold: 60}";
  }
  return Entry(name, command, ", restartPolicy: Always" + extra + probe);
}

// Asserts that `keys` occur in this order in the sorted event log.
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

TEST_F(FakeRuntime, S1_1_InitContainersRunOneAtATimeInSpecOrder) {
  WritePod(Header("inits", "Never") + "  initContainers:\n" +
           Entry("init-1", HelperCmd("init-1", "sleep 100")) +
           Entry("init-2", HelperCmd("init-2", "sleep 100")) +
           Entry("init-3", HelperCmd("init-3", "exit 0")) + "  containers:\n" +
           Entry("app", HelperCmd("app", "exit 0")));
  EXPECT_EQ(Run(), 0) << RunStderr();
  auto events = HelperEvents();
  ExpectOrder(events, {"init-1 Started", "init-1 Exiting", "init-2 Started", "init-2 Exiting",
                       "init-3 Started", "init-3 Exiting", "app Started", "app Exiting"});
  EXPECT_EQ(events.size(), 8u) << Describe(events);
}

TEST_F(FakeRuntime, S2_1_InitFailureUnderNeverFailsPodStopsSidecarsAndNeverStartsRegulars) {
  WritePod(Header("init-fails", "Never") + "  initContainers:\n" +
           Sidecar("side", HelperCmd("side", "trap-sigterm 50 0")) +
           Entry("bad-init", HelperCmd("bad-init", "exit 3")) + "  containers:\n" +
           Entry("app", HelperCmd("app", "exit 0")));
  EXPECT_EQ(Run(), 1) << RunStderr();
  auto events = HelperEvents();
  ExpectOrder(events, {"side Started", "bad-init Started", "bad-init Exiting", "side Exiting"});
  EXPECT_EQ(IndexOf(events, "app Started"), -1) << Describe(events);
  EXPECT_EQ(CountOf(events, "bad-init Started"), 1) << "restarted under Never:" << Describe(events);
}

TEST_F(FakeRuntime, S2_1_InitFailureUnderOnFailureIsRetriedUntilItSucceeds) {
  // Fails on its first run, succeeds once the marker file exists.
  std::string flaky = ShCmd(
      "if [ -e {{DIR}}/ran ]; then exec {{H}} --log flaky --log-file {{LOG}} exit 0; fi; "
      "touch {{DIR}}/ran; exec {{H}} --log flaky --log-file {{LOG}} exit 1");
  WritePod(Header("init-retry", "OnFailure") + "  initContainers:\n" + Entry("flaky", flaky) +
           "  containers:\n" + Entry("app", HelperCmd("app", "exit 0")));
  EXPECT_EQ(Run({"--backoff-initial", "200ms"}), 0) << RunStderr();
  auto events = HelperEvents();
  EXPECT_EQ(CountOf(events, "flaky Started"), 2) << Describe(events);
  ExpectOrder(events, {"flaky Started", "flaky Exiting", "app Started", "app Exiting"});
  EXPECT_EQ(EventsNamed(events, "app", "Started").size(), 1u);
  EXPECT_GT(IndexOf(events, "app Started"), 3)
      << "app started before the retry:" << Describe(events);
}

TEST_F(FakeRuntime, S1_3_SidecarsInterleavedWithInitsStartInSpecOrder) {
  WritePod(Header("interleaved", "Never") + "  initContainers:\n" +
           Entry("init-1", HelperCmd("init-1", "sleep 50")) +
           Sidecar("side-1", HelperCmd("side-1", "trap-sigterm 20 0")) +
           Entry("init-2", HelperCmd("init-2", "sleep 50")) +
           Sidecar("side-2", HelperCmd("side-2", "trap-sigterm 20 0")) + "  containers:\n" +
           Entry("app", HelperCmd("app", "sleep 100")));
  EXPECT_EQ(Run(), 0) << RunStderr();
  ExpectOrder(HelperEvents(),
              {"init-1 Started", "init-1 Exiting", "side-1 Started", "init-2 Started",
               "init-2 Exiting", "side-2 Started", "app Started", "app Exiting"});
}

TEST_F(FakeRuntime, S1_3_SidecarPostStartGatesTheNextEntry) {
  std::string post_start = ", lifecycle: {postStart: {exec: {command: " +
                           ShCmd("sleep 0.3; {{H}} --log-file {{LOG}} log side-postStart Done") +
                           "}}}";
  WritePod(Header("sidecar-poststart", "Never") + "  initContainers:\n" +
           Sidecar("side", HelperCmd("side", "trap-sigterm 20 0"), post_start) +
           Entry("init-after", HelperCmd("init-after", "exit 0")) + "  containers:\n" +
           Entry("app", HelperCmd("app", "exit 0")));
  EXPECT_EQ(Run(), 0) << RunStderr();
  auto events = HelperEvents();
  ExpectOrder(events, {"side Started", "side-postStart Done", "init-after Started", "app Started"});
  if (!HasFailure()) {
    EXPECT_GE(MsBetween(events[IndexOf(events, "side Started")].time,
                        events[IndexOf(events, "init-after Started")].time),
              280)
        << Describe(events);
  }
}

TEST_F(FakeRuntime, S1_4_RegularContainersStartInOrderAroundPostStart) {
  std::string post_start = ", lifecycle: {postStart: {exec: {command: " +
                           ShCmd("sleep 0.3; {{H}} --log-file {{LOG}} log app-1-postStart Done") +
                           "}}}";
  WritePod(Header("poststart", "Never") + "  containers:\n" +
           Entry("app-1", HelperCmd("app-1", "sleep 600"), post_start) +
           Entry("app-2", HelperCmd("app-2", "sleep 100")));
  EXPECT_EQ(Run(), 0) << RunStderr();
  auto events = HelperEvents();
  ExpectOrder(events, {"app-1 Started", "app-1-postStart Done", "app-2 Started"});
  if (!HasFailure()) {
    EXPECT_GE(MsBetween(events[IndexOf(events, "app-1 Started")].time,
                        events[IndexOf(events, "app-2 Started")].time),
              280)
        << Describe(events);
  }
}

TEST_F(FakeRuntime, S3_4_CompletionStopsSidecarsInReverseOrderAndRunExitsZero) {
  // The last sidecar takes longest to stop: signalled all at once, side-1
  // and side-2 would exit first.
  WritePod(Header("completion", "Never") + "  initContainers:\n" +
           Sidecar("side-1", HelperCmd("side-1", "trap-sigterm 20 0")) +
           Sidecar("side-2", HelperCmd("side-2", "trap-sigterm 20 0")) +
           Sidecar("side-3", HelperCmd("side-3", "trap-sigterm 300 0")) + "  containers:\n" +
           Entry("app", HelperCmd("app", "sleep 100")));
  EXPECT_EQ(Run(), 0) << RunStderr();
  ExpectOrder(HelperEvents(), {"side-3 Started", "app Started", "app Exiting", "side-3 Exiting",
                               "side-2 Exiting", "side-1 Exiting"});
}

TEST_F(FakeRuntime, S3_1_CrashingSidecarIsRestartedUnderNeverAndPodSucceeds) {
  // The first instance crashes (exit 1) once the app has started, however
  // long that takes on a loaded machine; later ones run until signalled.
  std::string side = ShCmd(
      "if [ -e {{DIR}}/crashed ]; then exec {{H}} --log side --log-file {{LOG}} trap-sigterm 20 0; "
      "fi; "
      "touch {{DIR}}/crashed; {{H}} --log side --log-file {{LOG}} trap-sigterm 0 0 & helper=$!; "
      "until grep -q ' app Started' {{LOG}}; do sleep 0.02; done; "
      "kill -TERM $helper; wait $helper; exit 1");
  WritePod(Header("sidecar-crash", "Never") + "  initContainers:\n" + Sidecar("side", side) +
           "  containers:\n" + Entry("app", HelperCmd("app", "sleep 1500")));
  StartRun({"--backoff-initial", "200ms"});
  auto pod = WaitForStatus(
      [](const nlohmann::json& p) {
        const auto* c = FindContainerStatus(p, "side");
        return c && c->value("restartCount", 0) == 1 && StateOf(p, "side") == "running";
      },
      "sidecar restarted once and running");
  if (const auto* c = FindContainerStatus(pod, "side")) {
    EXPECT_EQ((*c)["lastState"]["terminated"].value("exitCode", -1), 1) << pod.dump(2);
  }
  EXPECT_EQ(StateOf(pod, "app"), "running");
  EXPECT_EQ(Phase(pod), "Running");
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  auto events = HelperEvents();
  EXPECT_EQ(CountOf(events, "side Started"), 2) << Describe(events);
  ExpectOrder(events, {"side Started", "app Started", "side Exiting", "app Exiting"});
  EXPECT_EQ(events.back().Key(), "side Exiting") << Describe(events);
}

TEST_F(FakeRuntime, S4_1_CrashLoopBackoffFirstRestartImmediateThenDoubling) {
  WritePod(Header("crashloop", "Always", 1) + "  containers:\n" +
           Entry("crash", HelperCmd("crash", "exit 1")));
  // A backoff well above what a create and start take under the sanitizers
  // (~250 ms on 2 loaded cores), so "immediate" is told from "waited".
  StartRun({"--backoff-initial", "1s", "--backoff-max", "10s"});
  // S4.3: the wait shows as CrashLoopBackOff.
  auto pod = WaitForStatus(
      [](const nlohmann::json& p) {
        const auto* c = FindContainerStatus(p, "crash");
        return c && c->contains("state") && (*c)["state"].contains("waiting") &&
               (*c)["state"]["waiting"].value("reason", "") == "CrashLoopBackOff";
      },
      "crash waiting in CrashLoopBackOff");
  WaitForHelperEvent("crash Started", 4);
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  WaitRun();
  auto starts = EventsNamed(HelperEvents(), "crash", "Started");
  auto exits = EventsNamed(HelperEvents(), "crash", "Exiting");
  ASSERT_GE(starts.size(), 4u);
  ASSERT_GE(exits.size(), 3u);
  // Measured from the previous exit (S4.1); the helper's own timestamps
  // are truncated to ms, hence the 10 ms slack below the backoff.
  long long gap1 = MsBetween(exits[0].time, starts[1].time);
  long long gap2 = MsBetween(exits[1].time, starts[2].time);
  long long gap3 = MsBetween(exits[2].time, starts[3].time);
  std::string all = Describe(HelperEvents());
  EXPECT_LT(gap1, 700) << "first restart must be immediate" << all;
  EXPECT_GE(gap2, 990) << all;
  EXPECT_LT(gap2, 1000 + 700) << all;
  EXPECT_GE(gap3, 1990) << all;
  EXPECT_LT(gap3, 2000 + 900) << all;
}

// S5.4 with a stop request from `podvisor stop` or SIGTERM to the supervisor.
class StopOrder : public FakeRuntime, public ::testing::WithParamInterface<bool> {};

TEST_P(StopOrder, S5_4_StopSignalsSidecarsInReverseOrderAfterRegulars) {
  bool by_sigterm = GetParam();
  WritePod(Header("stop-order", "Never") + "  initContainers:\n" +
           Sidecar("side-1", HelperCmd("side-1", "trap-sigterm 20 0")) +
           Sidecar("side-2", HelperCmd("side-2", "trap-sigterm 300 0")) + "  containers:\n" +
           Entry("app", HelperCmd("app", "trap-sigterm 300 0")));
  StartRun();
  WaitUntilRunning();
  // Running is the runtime's word; the helpers say when their SIGTERM
  // handlers are in place (a SIGTERM before that kills them with 143).
  for (const char* name : {"side-1", "side-2", "app"}) {
    ASSERT_TRUE(WaitForHelperEvent(std::string(name) + " Started")) << name;
  }
  if (by_sigterm) {
    ASSERT_EQ(::kill(run_pid(), SIGTERM), 0);
  } else {
    auto stop = Client({"stop"});
    EXPECT_EQ(stop.exit_code, 0) << stop.err;
  }
  // Every regular container exited 0 on SIGTERM: S9.1 Succeeded.
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  ExpectOrder(HelperEvents(), {"app Started", "app Exiting", "side-2 Exiting", "side-1 Exiting"});
}

INSTANTIATE_TEST_SUITE_P(Process, StopOrder, ::testing::Values(false, true), [](const auto& info) {
  return info.param ? "BySigterm" : "ByStopCommand";
});

TEST_F(FakeRuntime, S5_5_GraceExpirySigkillsIgnoringContainerAndSidecarStillGetsItsTurn) {
  WritePod(Header("grace", "Never", 2) + "  initContainers:\n" +
           Sidecar("side", HelperCmd("side", "trap-sigterm 20 0")) + "  containers:\n" +
           Entry("stubborn", HelperCmd("stubborn", "ignore-sigterm")));
  StartRun();
  WaitUntilRunning();
  auto stop_at = Clock::now();
  auto stop = Client({"stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  // SIGKILLed: exit 137, the pod Failed.
  EXPECT_EQ(WaitRun(), 4) << RunStderr();
  auto ended = Clock::now();
  auto events = HelperEvents();
  EXPECT_EQ(IndexOf(events, "stubborn Exiting"), -1) << Describe(events);
  int side_exit = IndexOf(events, "side Exiting");
  ASSERT_GE(side_exit, 0) << "the sidecar never got its stop signal" << Describe(events);
  // The sidecar waits for the stubborn container until the 2 s budget ran
  // out (S5.4, S5.5), then is signalled at once.
  long long side_after = MsBetween(stop_at, events[side_exit].time);
  EXPECT_GE(side_after, 1900) << Describe(events);
  EXPECT_LE(side_after, 2000 + 1500) << Describe(events);
  // S5.5: the whole stop takes at most grace + 2 s (+ margin).
  EXPECT_LE(MsBetween(stop_at, ended), 2000 + 2000 + 2000);
}

// docs/INTERFACE.md "Signals to the supervisor" / the supervisor core issue: a
// first SIGINT stops the pod gracefully, a second one ends the grace period
// at once; S5.5 still gives every container its stop signal and 2 s.
TEST_F(FakeRuntime, SecondSigintShortensTheGraceToTheTwoSecondFloor) {
  WritePod(Header("impatient", "Never", 60) + "  containers:\n" +
           Entry("stubborn", HelperCmd("stubborn", "ignore-sigterm")));
  StartRun();
  WaitUntilRunning();
  auto first = Clock::now();
  ASSERT_EQ(kill(run_pid(), SIGINT), 0);
  WaitForStatus([](const nlohmann::json& p) { return p["metadata"].contains("deletionTimestamp"); },
                "the pod terminating");
  ASSERT_EQ(kill(run_pid(), SIGINT), 0);
  // Without the second SIGINT this pod would take 60 s + 2 s to stop.
  EXPECT_EQ(WaitRun(std::chrono::seconds(20)), 4) << RunStderr();
  long long took = MsBetween(first, Clock::now());
  EXPECT_GE(took, 1900) << "SIGKILL must not come before the 2 s floor";
  EXPECT_LE(took, 2000 + 3000) << RunStderr();
  EXPECT_NE(RunStderr().find("second SIGINT"), std::string::npos) << RunStderr();
}

TEST_F(FakeRuntime, S3_5_ActiveDeadlineFailsPodWithDeadlineExceededAndTellsPreStop) {
  std::string pre_stop = ", lifecycle: {preStop: {exec: {command: " +
                         ShCmd("echo \"$KUBE_POD_TERM_REASON\" > {{DIR}}/reason; sleep 1") + "}}}";
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: deadline}\nspec:\n"
      "  restartPolicy: Never\n  terminationGracePeriodSeconds: 5\n  activeDeadlineSeconds: 1\n"
      "  containers:\n" +
      Entry("app", HelperCmd("app", "trap-sigterm 20 0"), pre_stop));
  auto started = Clock::now();
  StartRun();
  // While the preStop hook runs, the pod reports why it is terminating.
  auto pod = WaitForStatus(
      [](const nlohmann::json& p) { return p["status"].value("reason", "") == "DeadlineExceeded"; },
      "status.reason DeadlineExceeded");
  EXPECT_EQ(Phase(pod), "Failed") << pod.dump(2);
  EXPECT_EQ(pod["status"].value("stopReason", ""), "DeadlineExceeded") << pod.dump(2);
  EXPECT_EQ(WaitRun(), 1) << RunStderr();
  EXPECT_EQ(ReadScratch("reason"), "DeadlineExceeded");
  auto events = HelperEvents();
  int app_exit = IndexOf(events, "app Exiting");
  ASSERT_GE(app_exit, 0) << Describe(events);
  // 1 s deadline + 1 s preStop.
  EXPECT_GE(MsBetween(started, events[app_exit].time), 1900) << Describe(events);
  bool recorded = false;
  for (const auto& e : PodEvents())
    recorded = recorded || e.value("reason", "") == "DeadlineExceeded";
  EXPECT_TRUE(recorded) << "no DeadlineExceeded event in events.jsonl";
}

TEST_F(FakeRuntime, S6_2_StopReasonReachesExecPreStopsByEnvAndArgs) {
  std::string app_pre_stop = ", lifecycle: {preStop: {exec: {command: " +
                             ShCmd(
                                 "echo \"$KUBE_POD_TERM_REASON\" > {{DIR}}/app-env; echo \"$1\" > "
                                 "{{DIR}}/app-arg; sleep 0.5",
                                 {"sh", "$(KUBE_POD_TERM_REASON)"}) +
                             "}}}";
  std::string side_pre_stop =
      ", lifecycle: {preStop: {exec: {command: " + ShCmd("echo \"$STOP_WHY\" > {{DIR}}/side-env") +
      "}, reasonDelivery: {env: STOP_WHY}}}";
  WritePod(Header("reason", "Never") + "  initContainers:\n" +
           Sidecar("side", HelperCmd("side", "trap-sigterm 20 0"), side_pre_stop) +
           "  containers:\n" + Entry("app", HelperCmd("app", "trap-sigterm 20 0"), app_pre_stop));
  StartRun();
  WaitUntilRunning();
  auto stop = Client({"stop", "--reason", "Decommissioned", "--no-wait"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  // S6.4: the reason is in the status while the pod terminates.
  auto pod = WaitForStatus(
      [](const nlohmann::json& p) {
        return p["status"].value("stopReason", "") == "Decommissioned";
      },
      "status.stopReason Decommissioned");
  EXPECT_TRUE(pod["metadata"].contains("deletionTimestamp")) << pod["metadata"].dump(2);
  WaitRun();
  EXPECT_EQ(ReadScratch("app-env"), "Decommissioned");
  EXPECT_EQ(ReadScratch("app-arg"), "Decommissioned");
  EXPECT_EQ(ReadScratch("side-env"), "Decommissioned");
  bool recorded = false;
  for (const auto& e : PodEvents()) {
    recorded = recorded || (e.value("reason", "") == "PodStopping" &&
                            e.value("message", "").find("Decommissioned") != std::string::npos);
  }
  EXPECT_TRUE(recorded) << "no PodStopping event naming the reason";
}

TEST_F(FakeRuntime, S9_1_StatusJsonThroughPendingRunningTerminatingAndSucceeded) {
  // The test moves the pod along: the init waits for {{DIR}}/go, the app
  // for {{DIR}}/done; the sidecar's slow stop leaves time to look at the
  // completed pod before it ends.
  WritePod(Header("phases", "Never") + "  initContainers:\n" +
           Entry("gate", ShCmd("while [ ! -e {{DIR}}/go ]; do sleep 0.05; done")) +
           Sidecar("side", HelperCmd("side", "trap-sigterm 1500 0")) + "  containers:\n" +
           Entry("app", ShCmd("while [ ! -e {{DIR}}/done ]; do sleep 0.05; done")));
  StartRun();
  auto pending =
      WaitForStatus([](const nlohmann::json& p) { return StateOf(p, "gate") == "running"; },
                    "init container running");
  EXPECT_EQ(pending.value("apiVersion", ""), "v1");
  EXPECT_EQ(pending.value("kind", ""), "Pod");
  EXPECT_EQ(pending["metadata"].value("name", ""), "phases");
  EXPECT_EQ(Phase(pending), "Pending");
  EXPECT_EQ(ConditionStatus(pending, "Initialized"), "False");
  EXPECT_EQ(ConditionStatus(pending, "Ready"), "False");
  EXPECT_TRUE(pending["status"].contains("startTime"));
  EXPECT_EQ(StateOf(pending, "side"), "waiting");
  if (const auto* app = FindContainerStatus(pending, "app")) {
    EXPECT_EQ((*app)["state"]["waiting"].value("reason", ""), "PodInitializing");
  } else {
    ADD_FAILURE() << "no status for app: " << pending.dump(2);
  }

  std::ofstream(scratch_ / "go").close();
  auto running = WaitUntilRunning();
  EXPECT_EQ(ConditionStatus(running, "Initialized"), "True");
  EXPECT_EQ(ConditionStatus(running, "ContainersReady"), "True");
  EXPECT_EQ(ConditionStatus(running, "Ready"), "True");
  EXPECT_EQ(StateOf(running, "gate"), "terminated");
  EXPECT_EQ(StateOf(running, "side"), "running");
  EXPECT_EQ(StateOf(running, "app"), "running");
  if (const auto* app = FindContainerStatus(running, "app")) {
    EXPECT_TRUE(app->value("started", false));
    EXPECT_TRUE((*app)["state"]["running"].contains("startedAt"));
  }

  std::ofstream(scratch_ / "done").close();
  auto done =
      WaitForStatus([](const nlohmann::json& p) { return StateOf(p, "app") == "terminated"; },
                    "app terminated while the sidecar stops");
  // As the kubelet does, the phase turns terminal only once every
  // container stopped, sidecars included; the final phase is the exit
  // status of `run`.
  EXPECT_EQ(Phase(done), "Running");
  EXPECT_EQ(StateOf(done, "side"), "running");
  if (const auto* app = FindContainerStatus(done, "app")) {
    EXPECT_EQ((*app)["state"]["terminated"].value("reason", ""), "Completed");
    EXPECT_EQ((*app)["state"]["terminated"].value("exitCode", -1), 0);
  }
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
}

TEST_F(FakeRuntime, StatusJsonMetadataHasUid) {
  // docs/INTERFACE.md: metadata carries a uid, as the API server always assigns
  // one; a manifest without metadata.uid still gets one.
  WritePod(Header("uid", "Never") + "  containers:\n" +
           Entry("app", HelperCmd("app", "sleep 10000")));
  StartRun();
  auto pod = WaitUntilRunning();
  EXPECT_NE(pod["metadata"].value("uid", ""), "") << pod["metadata"].dump(2);
  EXPECT_TRUE(pod["metadata"].contains("creationTimestamp"));
  EXPECT_EQ(Client({"stop", "--grace", "1"}).exit_code, 0);
  WaitRun();
}

TEST_F(FakeRuntime, ControlSocketGarbageGetsErrorsAndPodKeepsRunning) {
  WritePod(Header("garbage", "Never") + "  containers:\n" +
           Entry("app", HelperCmd("app", "trap-sigterm 20 0")));
  StartRun();
  WaitUntilRunning();
  for (std::string request :
       {std::string("not json at all"), std::string("{\"op\":\"frobnicate\"}"),
        std::string("[1,2,3]"), std::string("{\"op\":42}"),
        std::string("{\"op\":\"stop\",\"reason\":\"\"}"),
        std::string("{\"op\":\"stop\",\"reason\":\"bad\\u0001reason\"}"),
        std::string("{\"op\":\"stop\",\"grace\":\"soon\"}"),
        std::string("{\"op\":\"kill\",\"container\":\"nope\",\"signal\":9}"),
        std::string(200000, '{')}) {
    std::string reply = RawControlRequest(request);
    EXPECT_THAT(reply, HasSubstr("\"error\"")) << "request: " << request.substr(0, 80);
    EXPECT_TRUE(RunIsAlive()) << "supervisor died of: " << request.substr(0, 80);
    if (!RunIsAlive()) return;
  }
  auto pod = Status();
  ASSERT_TRUE(pod) << "no status after bad requests";
  EXPECT_EQ(Phase(*pod), "Running");
  EXPECT_EQ(StateOf(*pod, "app"), "running");
  EXPECT_EQ(FindContainerStatus(*pod, "app")->value("restartCount", -1), 0);
  EXPECT_EQ(CountOf(HelperEvents(), "app Exiting"), 0);
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
}

TEST_F(FakeRuntime, KillDeliversSignalToContainer) {
  WritePod(Header("kill", "Never") + "  containers:\n" +
           Entry("app", HelperCmd("app", "trap-sigterm 0 7")));
  StartRun();
  WaitUntilRunning();
  auto missing = Client({"kill", "no-such-container", "SIGTERM"});
  EXPECT_NE(missing.exit_code, 0);
  auto r = Client({"kill", "app", "SIGTERM"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The trap exits 7: a failed regular container under Never fails the pod.
  EXPECT_EQ(WaitRun(), 1) << RunStderr();
  EXPECT_EQ(CountOf(HelperEvents(), "app Exiting"), 1) << Describe(HelperEvents());
}

TEST_F(FakeRuntime, S11_1_LogsAreCriFilesPerInstanceAndPodvisorLogsReadsThem) {
  std::string app = ShCmd(
      "if [ -e {{DIR}}/ran ]; then echo second; exit 0; fi; "
      "touch {{DIR}}/ran; echo first; echo oops >&2; exit 1");
  WritePod(Header("logs", "OnFailure") + "  containers:\n" + Entry("app", app));
  EXPECT_EQ(Run({"--backoff-initial", "100ms"}), 0) << RunStderr();

  std::ifstream first(log_dir_ / "logs" / "app" / "0.log");
  std::stringstream first_text;
  first_text << first.rdbuf();
  const std::string cri_time = "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?Z";
  EXPECT_THAT(first_text.str(), ContainsRegex(cri_time + " stdout F first\n"));
  EXPECT_THAT(first_text.str(), ContainsRegex(cri_time + " stderr F oops\n"));
  std::ifstream second(log_dir_ / "logs" / "app" / "1.log");
  std::stringstream second_text;
  second_text << second.rdbuf();
  EXPECT_THAT(second_text.str(), ContainsRegex(cri_time + " stdout F second\n"));
  EXPECT_THAT(second_text.str(), Not(HasSubstr("first")));

  // After the pod ended, as after `kubectl logs` of a finished pod.
  auto current = Client({"logs", "logs", "app"}, true);
  EXPECT_EQ(current.exit_code, 0) << current.err;
  EXPECT_EQ(current.out, "second\n");
  auto previous = Client({"logs", "logs", "app", "--previous"}, true);
  EXPECT_EQ(previous.exit_code, 0) << previous.err;
  EXPECT_THAT(previous.out, HasSubstr("first\n"));
  EXPECT_THAT(previous.out, HasSubstr("oops\n"));
  EXPECT_THAT(previous.out, Not(HasSubstr("second")));
}

TEST_F(FakeRuntime, EventsJsonlRecordsCreatedStartedKillingPodCompleted) {
  WritePod(Header("events", "Never") + "  initContainers:\n" +
           Sidecar("side", HelperCmd("side", "trap-sigterm 20 0")) + "  containers:\n" +
           Entry("app", HelperCmd("app", "sleep 100")));
  EXPECT_EQ(Run(), 0) << RunStderr();
  auto events = PodEvents();
  auto has = [&](const std::string& reason, const std::string& object) {
    for (const auto& e : events) {
      if (e.value("reason", "") == reason && e.value("object", "") == object) return true;
    }
    return false;
  };
  for (const auto& e : events) {
    for (const char* key : {"time", "type", "reason", "object", "message"}) {
      EXPECT_TRUE(e.contains(key)) << "event without " << key << ": " << e.dump();
    }
    EXPECT_THAT(e.value("type", ""), AnyOf("Normal", "Warning"));
  }
  EXPECT_TRUE(has("Created", "container/side"));
  EXPECT_TRUE(has("Started", "container/side"));
  EXPECT_TRUE(has("Created", "container/app"));
  EXPECT_TRUE(has("Started", "container/app"));
  EXPECT_TRUE(has("Killing", "container/side"));
  EXPECT_TRUE(has("PodCompleted", "pod"));
  // `podvisor events -o json` prints the same records after the pod ended.
  auto printed = Client({"events", "events", "-o", "json"});
  EXPECT_EQ(printed.exit_code, 0) << printed.err;
  std::istringstream lines(printed.out);
  std::size_t count = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    ASSERT_LT(count, events.size());
    EXPECT_EQ(nlohmann::json::parse(line, nullptr, false), events[count]) << line;
    ++count;
  }
  EXPECT_EQ(count, events.size());
}

TEST_F(FakeRuntime, S2_3_CreateFailureIsRetriedWithBackoffAndNeverKillsSupervisor) {
  WritePod(Header("create-fails", "Always", 1) + "  containers:\n" +
           Entry("app", HelperCmd("app", "sleep 10000")));
  StartRun({"--backoff-initial", "200ms"}, {"FAKE_RUNTIME_FAIL=create"});
  WaitForStatus(
      [](const nlohmann::json& p) {
        const auto* c = FindContainerStatus(p, "app");
        return c && c->contains("state") && (*c)["state"].contains("waiting") &&
               (*c)["state"]["waiting"].value("reason", "") == "CreateContainerError";
      },
      "app waiting with CreateContainerError");
  // Retried: at least three failed attempts, the later ones after a backoff.
  std::vector<nlohmann::json> failures;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    failures.clear();
    for (const auto& e : PodEvents()) {
      if (e.value("object", "") == "container/app" && e.value("type", "") == "Warning" &&
          e.value("reason", "") == "Failed") {
        failures.push_back(e);
      }
    }
    if (failures.size() >= 3) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_GE(failures.size(), 3u);
  EXPECT_TRUE(RunIsAlive());
  EXPECT_EQ(CountOf(HelperEvents(), "app Started"), 0);
  auto stop = Client({"stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_THAT(WaitRun(), AnyOf(0, 4)) << RunStderr();
}

// S16.4: an image the bundle lacks is pulled; one that is not even a
// registry reference is refused before anything starts.
TEST_F(FakeRuntime, BadBundleMissingImageExitsTwoAndStartsNothing) {
  WritePod(Header("bad-bundle", "Never") + "  containers:\n" +
           "  - {name: app, image: Missing, command: " + HelperCmd("app", "exit 0") + "}\n");
  EXPECT_EQ(Run(), 2) << RunStderr();
  EXPECT_THAT(RunStderr(), HasSubstr("Missing"));
  EXPECT_TRUE(HelperEvents().empty());
  EXPECT_FALSE(fs::exists(state_dir_ / "bad-bundle" / "control.sock"));
}

}  // namespace
}  // namespace podvisor::e2e

namespace podvisor::e2e {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

// Probes through the executor: exec probes run with the runtime's exec, and
// their results change the pod as S1.3, S3.3 and S7 say.

// A container spec fragment with one exec probe testing for a scratch file.
std::string FileProbe(const std::string& kind, const std::string& file, int failure_threshold) {
  return ", " + kind + ": {exec: {command: " + ShCmd("test -f {{DIR}}/" + file) +
         "}, periodSeconds: 1, failureThreshold: " + std::to_string(failure_threshold) + "}";
}

void Touch(const fs::path& p) {
  std::ofstream(p) << "";
}

TEST_F(FakeRuntime, S1_3_StartupProbeGatesTheNextEntry) {
  WritePod(
      Header("startup", "Never", 2) + "  initContainers:\n" +
      Sidecar("side", HelperCmd("side", "trap-sigterm 20 0"), FileProbe("startupProbe", "go", 60)) +
      "  containers:\n" + Entry("app", HelperCmd("app", "exit 0")));
  StartRun();
  ASSERT_TRUE(WaitForHelperEvent("side Started"));
  // The sidecar runs, but until its startup probe succeeds it is not
  // started, and the regular container waits (S1.3, S7.5).
  auto pod = WaitForStatus(
      [](const nlohmann::json& p) {
        const auto& s = p["status"]["initContainerStatuses"];
        return !s.empty() && s[0]["state"].contains("running");
      },
      "the sidecar running");
  EXPECT_FALSE(pod["status"]["initContainerStatuses"][0].value("started", true)) << pod.dump(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(IndexOf(HelperEvents(), "app Started"), -1) << Describe(HelperEvents());
  Touch(scratch_ / "go");
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  ExpectOrder(HelperEvents(), {"side Started", "app Started", "app Exiting", "side Exiting"});
}

TEST_F(FakeRuntime, S7_5_ReadinessProbeFlipsReadyAndThePodsReadyCondition) {
  Touch(scratch_ / "ready");
  WritePod(
      Header("ready", "Always", 2) + "  containers:\n" +
      Entry("app", HelperCmd("app", "trap-sigterm 20 0"), FileProbe("readinessProbe", "ready", 1)));
  StartRun();
  WaitForStatus([](const nlohmann::json& p) { return ConditionStatus(p, "Ready") == "True"; },
                "Ready=True");
  fs::remove(scratch_ / "ready");
  auto pod =
      WaitForStatus([](const nlohmann::json& p) { return ConditionStatus(p, "Ready") == "False"; },
                    "Ready=False after the readiness file went away");
  EXPECT_FALSE(pod["status"]["containerStatuses"][0]["ready"].get<bool>());
  EXPECT_EQ(ConditionStatus(pod, "ContainersReady"), "False");
  Touch(scratch_ / "ready");
  WaitForStatus([](const nlohmann::json& p) { return ConditionStatus(p, "Ready") == "True"; },
                "Ready=True again");
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
}

// S6.2 and S7.2 over HTTP: an httpGet preStop gets the stop reason as a
// header (default name and reasonDelivery.header), and an httpGet probe
// sends the kubelet's default headers.
TEST_F(FakeRuntime, S6_2_StopReasonReachesHttpGetPreStopsAsHeaderAndProbesSendDefaults) {
  int port = 20000 + static_cast<int>(getpid() % 20000);
  std::string p = std::to_string(port);
  WritePod(
      Header("http", "Always", 5) + "  initContainers:\n" +
      Sidecar("srv", HelperCmd("srv", "serve-http " + p + " 200 {{DIR}}/requests"),
              ", readinessProbe: {httpGet: {port: " + p + ", path: /ready}, periodSeconds: 1}") +
      "  containers:\n" +
      Entry("app", HelperCmd("app", "trap-sigterm 20 0"),
            ", lifecycle: {preStop: {httpGet: {port: " + p + ", path: /drain}}}") +
      Entry("api", HelperCmd("api", "trap-sigterm 20 0"),
            ", lifecycle: {preStop: {httpGet: {port: " + p +
                ", path: /drain-api}, reasonDelivery: {header: X-Why}}}"));
  StartRun();
  WaitForStatus([](const nlohmann::json& pod) { return ConditionStatus(pod, "Ready") == "True"; },
                "Ready=True (the sidecar's readiness probe over HTTP)");
  EXPECT_EQ(Client({"stop", "--reason", "Eviction"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  std::string requests = ReadScratch("requests");
  EXPECT_THAT(requests, HasSubstr("GET /ready HTTP/1.1"));
  EXPECT_THAT(requests, HasSubstr("User-Agent: kube-probe/1.33"));
  EXPECT_THAT(requests, HasSubstr("Accept: */*"));
  EXPECT_THAT(requests,
              ContainsRegex("GET /drain HTTP/1.1\r\n(.*\r\n)*KUBE-POD-TERM-REASON: Eviction"));
  EXPECT_THAT(requests, ContainsRegex("GET /drain-api HTTP/1.1\r\n(.*\r\n)*X-Why: Eviction"));
}

TEST_F(FakeRuntime, S3_3_LivenessFailureKillsThroughPreStopAndRestarts) {
  Touch(scratch_ / "alive");
  std::string pre_stop =
      ", lifecycle: {preStop: {exec: {command: " + ShCmd("echo stopped >> {{DIR}}/prestop") + "}}}";
  WritePod(Header("liveness", "Always", 2) + "  containers:\n" +
           Entry("app", HelperCmd("app", "trap-sigterm 20 0"),
                 FileProbe("livenessProbe", "alive", 1) + pre_stop));
  StartRun({"--backoff-initial", "100ms"});
  ASSERT_TRUE(WaitForHelperEvent("app Started"));
  fs::remove(scratch_ / "alive");
  // The preStop runs before the stop signal (S3.3). Restore the file as
  // soon as it ran: the restart is immediate (S4.1) and the new instance's
  // first probe must find the container alive.
  auto until = Clock::now() + std::chrono::seconds(15);
  while (!fs::exists(scratch_ / "prestop") && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Touch(scratch_ / "alive");
  ASSERT_TRUE(WaitForHelperEvent("app Exiting"));
  ASSERT_TRUE(WaitForHelperEvent("app Started", 2));
  EXPECT_EQ(ReadScratch("prestop"), "stopped");  // S3.3: preStop ran before the kill
  auto pod = WaitForStatus(
      [](const nlohmann::json& p) {
        return p["status"]["containerStatuses"][0].value("restartCount", 0) == 1;
      },
      "restartCount 1");
  auto events = PodEvents();
  bool unhealthy = false;
  for (const auto& e : events) unhealthy |= e.value("reason", "") == "Unhealthy";
  EXPECT_TRUE(unhealthy) << "no Unhealthy event";
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  WaitRun();
}

}  // namespace
}  // namespace podvisor::e2e
