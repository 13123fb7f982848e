// Pod termination: SEMANTICS S5 and the stop reason of S6.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>

#include "supervisor/lifecycle/test_harness.h"

namespace podvisor::supervisor::lifecycle {
namespace {

using namespace harness;
using pod::PodPhase;
using pod::RestartPolicy;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(LifecycleTermination, S5_1_GraceNeverBelowOneSecond) {
  Harness h(MakePod({}, {C("app")}));
  h.Start();
  h.Take();
  h.Stop(std::nullopt, 0s);
  h.Advance(5s);
  // Budget 1 s; SIGKILL never sooner than 2 s after the stop signal.
  EXPECT_THAT(h.Take(), ElementsAre("0s Signal(app#0, SIGTERM)", "2s Signal(app#0, SIGKILL)"));
}

TEST(LifecycleTermination, S5_1_GraceFromSpecThenOptionThenRequest) {
  {
    Harness h(MakePod({}, {C("app")}, RestartPolicy::kAlways, /*grace=*/30));
    h.Start();
    h.Take();
    h.Stop();
    h.Advance(40s);
    EXPECT_THAT(h.Take(), ElementsAre("0s Signal(app#0, SIGTERM)", "30s Signal(app#0, SIGKILL)"));
  }
  {
    LifecycleOptions options;
    options.grace_override = 7s;
    Harness h(MakePod({}, {C("app")}), options);
    h.Start();
    h.Take();
    h.Stop();
    h.Advance(40s);
    EXPECT_THAT(h.Take(), ElementsAre("0s Signal(app#0, SIGTERM)", "7s Signal(app#0, SIGKILL)"));
  }
  {
    Harness h(MakePod({}, {C("app")}));
    h.Start();
    h.Take();
    h.Stop(std::nullopt, 4s);
    h.Advance(40s);
    EXPECT_THAT(h.Take(), ElementsAre("0s Signal(app#0, SIGTERM)", "4s Signal(app#0, SIGKILL)"));
  }
}

TEST(LifecycleTermination, S5_1_ALaterRequestOnlyShortensTheBudget) {
  Harness h(MakePod({}, {WithPreStop(C("app")), C("worker")}));
  h.Start();
  h.Take();
  h.Stop(std::nullopt, 30s);
  EXPECT_EQ(h.lc().Status().deletion_timestamp, h.now().wall + 30s);
  h.Advance(5s);
  h.Stop(std::nullopt, 10s);  // budget now ends at 15 s
  h.Stop(std::nullopt, 60s);  // cannot lengthen it
  EXPECT_EQ(h.lc().Status().deletion_timestamp, h.now().wall + 10s);
  h.Advance(20s);
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(app#0, preStop)", "0s Signal(worker#0, SIGTERM)",
                                    "15s Signal(app#0, SIGTERM)", "15s Signal(worker#0, SIGKILL)",
                                    "17s Signal(app#0, SIGKILL)"));
}

TEST(LifecycleTermination, S5_2_PreStopsStartConcurrentlyForRegularsAndSidecars) {
  Harness h(MakePod({WithPreStop(Sidecar(C("proxy")))},
                    {WithPreStop(C("a")), WithPreStop(C("b")), C("c")}));
  h.Start();
  h.Take();
  h.Stop();
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(proxy#0, preStop)", "0s RunHook(a#0, preStop)",
                                    "0s RunHook(b#0, preStop)", "0s Signal(c#0, SIGTERM)"));
  EXPECT_EQ(h.lc().StopStepOf("a"), StopStep::kPreStop);
  EXPECT_EQ(h.lc().StopStepOf("c"), StopStep::kSignalled);
}

TEST(LifecycleTermination, S5_3_StopSignalAfterOwnPreStopSigkillAtBudgetEndButNotWithin2s) {
  Harness h(MakePod({}, {WithPreStop(C("a")), C("b")}, RestartPolicy::kAlways, /*grace=*/10));
  h.Start();
  h.Take();
  h.Stop();
  h.Advance(9500ms);
  h.HookDone("a", HookKind::kPreStop);
  h.Advance(10s);
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(a#0, preStop)", "0s Signal(b#0, SIGTERM)",
                                    "9.500s Signal(a#0, SIGTERM)", "10s Signal(b#0, SIGKILL)",
                                    "11.500s Signal(a#0, SIGKILL)"));
  EXPECT_EQ(h.lc().StopStepOf("a"), StopStep::kKilled);
}

TEST(LifecycleTermination, S5_4_SidecarsStopInReverseOrder) {
  Harness h(
      MakePod({Sidecar(C("s1")), WithPreStop(Sidecar(C("s2"))), Sidecar(C("s3"))}, {C("app")}));
  h.Start();
  h.Take();
  h.Stop();
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(s2#0, preStop)", "0s Signal(app#0, SIGTERM)"));
  EXPECT_EQ(h.lc().StopStepOf("s3"), StopStep::kWaitingForTurn);
  h.Advance(1s);
  h.ExitBySignal("app", 15);
  EXPECT_THAT(h.Take(), ElementsAre("1s Delete(app#0)", "1s Signal(s3#0, SIGTERM)"));
  h.Advance(1s);
  h.ExitBySignal("s3", 15);
  // s2's own preStop still runs: s2 and s1 wait.
  EXPECT_THAT(h.Take(), ElementsAre("2s Delete(s3#0)"));
  h.Advance(1s);
  h.HookDone("s2", HookKind::kPreStop);
  EXPECT_THAT(h.Take(), ElementsAre("3s Signal(s2#0, SIGTERM)"));
  h.Advance(1s);
  h.Exit("s2", 0);
  EXPECT_THAT(h.Take(), ElementsAre("4s Delete(s2#0)", "4s Signal(s1#0, SIGTERM)"));
  h.Exit("s1", 0);
  // app exited 143 on its stop signal: under Always that is a failure (S9.1).
  EXPECT_THAT(h.Take(), ElementsAre("4s Delete(s1#0)", "4s PodEnded(Failed)"));
}

TEST(LifecycleTermination, S5_4_LastSidecarWaitsForItsPreStopAndEveryRegularContainer) {
  Harness h(MakePod({WithPreStop(Sidecar(C("proxy")))}, {C("a"), C("b")}));
  h.Start();
  h.Take();
  h.Stop();
  h.HookDone("proxy", HookKind::kPreStop);
  h.ExitBySignal("a", 15);
  EXPECT_EQ(h.lc().StopStepOf("proxy"), StopStep::kWaitingForTurn);
  h.Advance(1s);
  h.ExitBySignal("b", 15);
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(proxy#0, preStop)", "0s Signal(a#0, SIGTERM)",
                                    "0s Signal(b#0, SIGTERM)", "0s Delete(a#0)", "1s Delete(b#0)",
                                    "1s Signal(proxy#0, SIGTERM)"));
}

TEST(LifecycleTermination, S5_5_BudgetEndSignalsEveryoneAtOnceAndSigkills2sLater) {
  Harness h(MakePod({Sidecar(C("s1")), Sidecar(C("s2"))}, {WithPreStop(C("app"))},
                    RestartPolicy::kAlways,
                    /*grace=*/10));
  h.Start();
  h.Take();
  h.Stop();
  // app's preStop hangs; at the budget end app and both sidecars, still
  // waiting for their turn, get the stop signal; SIGKILL 2 s later.
  h.Advance(12s);
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(app#0, preStop)", "10s Signal(s1#0, SIGTERM)",
                                    "10s Signal(s2#0, SIGTERM)", "10s Signal(app#0, SIGTERM)",
                                    "12s Signal(s1#0, SIGKILL)", "12s Signal(s2#0, SIGKILL)",
                                    "12s Signal(app#0, SIGKILL)"));
  h.ExitBySignal("app", 9);
  h.ExitBySignal("s1", 9);
  h.ExitBySignal("s2", 9);
  EXPECT_THAT(h.Take(),
              ElementsAre("12s CancelHook(app#0, preStop)", "12s Delete(app#0)", "12s Delete(s1#0)",
                          "12s Delete(s2#0)", "12s PodEnded(Failed)"));
}

TEST(LifecycleTermination, S5_5_GraceExpiryKeepsThe2sFloorAndSidecarsStillGetTheirTurn) {
  Harness h(MakePod({Sidecar(C("proxy"))}, {WithPreStop(C("app"))}, RestartPolicy::kAlways,
                    /*grace=*/10));
  h.Start();
  h.Take();
  h.Stop();
  h.Advance(9s);
  h.HookDone("app", HookKind::kPreStop);
  h.Advance(1500ms);  // budget end at 10 s; app's SIGKILL waits for 11 s
  h.ExitBySignal("app", 15);
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(app#0, preStop)", "9s Signal(app#0, SIGTERM)",
                                    "10s Signal(proxy#0, SIGTERM)", "10.500s Delete(app#0)"));
  h.Advance(1500ms);
  EXPECT_THAT(h.Take(), ElementsAre("12s Signal(proxy#0, SIGKILL)"));
  h.ExitBySignal("proxy", 9);
  EXPECT_THAT(h.Take(), ElementsAre("12s Delete(proxy#0)", "12s PodEnded(Failed)"));
}

TEST(LifecycleTermination, S5_6_PreStopEndsWithItsContainerAndItsFailureIsOnlyAnEvent) {
  Harness h(MakePod({}, {WithPreStop(C("a")), WithPreStop(C("b"))}, RestartPolicy::kNever));
  h.Start();
  h.Take();
  h.TakeEvents();
  h.Stop();
  h.HookDone("a", HookKind::kPreStop, false, "exit status 7");
  h.Exit("b", 0);  // b exits during its preStop
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(a#0, preStop)", "0s RunHook(b#0, preStop)",
                                    "0s Signal(a#0, SIGTERM)", "0s CancelHook(b#0, preStop)",
                                    "0s Delete(b#0)"));
  EXPECT_THAT(h.TakeEvents(), Contains("0s FailedPreStopHook container/a"));
}

TEST(LifecycleTermination, S5_7_NoRegularOrInitRestartDuringTermination) {
  Harness h(MakePod({}, {WithPreStop(C("app")), C("worker")}, RestartPolicy::kAlways));
  h.Start();
  h.Exit("worker", 1);
  h.Exit("worker", 1);  // worker#1 backing off 10 s
  h.Take();
  h.Stop();
  h.Exit("app", 1);  // exits during its preStop
  h.Advance(20s);
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(app#0, preStop)", "0s CancelHook(app#0, preStop)",
                                    "0s Delete(app#0)", "0s PodEnded(Failed)"));
}

TEST(LifecycleTermination, S5_7_PendingRestartAfterACreateErrorIsCancelled) {
  Harness h(MakePod({}, {C("app")}));
  h.manual_runtime = {"app"};
  h.Start();
  h.Feed(RuntimeFailed{"app", 0, RuntimeStep::kCreate, "no image"});  // immediate retry
  h.Feed(RuntimeFailed{"app", 0, RuntimeStep::kCreate, "no image"});  // 10 s backoff
  ASSERT_TRUE(h.TimerDeadline(TimerId{TimerKind::kRestart, "app", 0}));
  h.Stop();
  EXPECT_FALSE(h.TimerDeadline(TimerId{TimerKind::kRestart, "app", 0}));
  EXPECT_TRUE(h.lc().Ended());
}

TEST(LifecycleTermination, S5_7_SidecarExitingBeforeItsStopSignalIsRestarted) {
  Harness h(MakePod({Sidecar(C("proxy"))}, {WithPreStop(C("app"))}, RestartPolicy::kAlways,
                    /*grace=*/10));
  h.Start();
  h.Take();
  h.Stop();
  h.Advance(1s);
  h.Exit("proxy", 1);  // first restart: immediate
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(app#0, preStop)", "1s Delete(proxy#0)",
                                    "1s Create(proxy#1)", "1s Start(proxy#1)"));
  EXPECT_EQ(h.lc().StopStepOf("proxy"), StopStep::kWaitingForTurn);
  h.Advance(1s);
  h.HookDone("app", HookKind::kPreStop);
  h.ExitBySignal("app", 15);
  EXPECT_THAT(h.Take(), ElementsAre("2s Signal(app#0, SIGTERM)", "2s Delete(app#0)",
                                    "2s Signal(proxy#1, SIGTERM)"));
  h.ExitBySignal("proxy", 15);  // after its stop signal: not restarted
  EXPECT_THAT(h.Take(), ElementsAre("2s Delete(proxy#1)", "2s PodEnded(Failed)"));
}

TEST(LifecycleTermination, S5_7_SidecarRestartOnlyIfTheBackoffFitsTheBudget) {
  Harness h(MakePod({Sidecar(C("proxy"))}, {WithPreStop(C("app"))}, RestartPolicy::kAlways,
                    /*grace=*/10));
  h.Start();
  h.Take();
  h.Stop();
  h.Exit("proxy", 1);  // immediate restart
  h.Advance(1s);
  h.Exit("proxy", 1);  // 10 s backoff ends at 11 s, after the budget (10 s)
  EXPECT_THAT(h.Take(),
              ElementsAre("0s RunHook(app#0, preStop)", "0s Delete(proxy#0)", "0s Create(proxy#1)",
                          "0s Start(proxy#1)", "1s Delete(proxy#1)"));
  EXPECT_EQ(h.lc().StateOf("proxy"), RunState::kExited);
}

TEST(LifecycleTermination, S5_7_SidecarLivenessRunsUntilItsStopSignalAndRestartsIt) {
  Harness h(MakePod({WithLiveness(Sidecar(C("proxy")))}, {WithPreStop(WithLiveness(C("app")))}));
  h.Start();
  h.Take();
  h.Stop();
  // The regular container's liveness stops now, the sidecar's does not.
  EXPECT_THAT(h.Take(),
              ElementsAre("0s StopProbes(app#0, liveness)", "0s RunHook(app#0, preStop)"));
  h.Advance(1s);
  h.Probe("proxy", ProbeKind::kLiveness, false);
  EXPECT_THAT(h.Take(), ElementsAre("1s Signal(proxy#0, SIGTERM)"));
  h.ExitBySignal("proxy", 15);
  EXPECT_THAT(h.Take(), ElementsAre("1s Delete(proxy#0)", "1s Create(proxy#1)", "1s Start(proxy#1)",
                                    "1s StartProbes(proxy#1, liveness)"));
  h.HookDone("app", HookKind::kPreStop);
  h.ExitBySignal("app", 15);
  EXPECT_THAT(h.Take(),
              ElementsAre("1s Signal(app#0, SIGTERM)", "1s Delete(app#0)",
                          "1s Signal(proxy#1, SIGTERM)", "1s StopProbes(proxy#1, liveness)"));
}

TEST(LifecycleTermination, S5_7_ReadinessRunsUntilExit) {
  Harness h(MakePod({}, {WithReadiness(C("app"))}));
  h.Start();
  h.Probe("app", ProbeKind::kReadiness, true);
  h.Take();
  h.Stop();
  EXPECT_THAT(h.Take(), ElementsAre("0s Signal(app#0, SIGTERM)"));
  h.Probe("app", ProbeKind::kReadiness, false);
  EXPECT_FALSE(h.lc().Status().container_statuses[0].ready);
  h.ExitBySignal("app", 15);
  EXPECT_THAT(h.Take(), ElementsAre("0s StopProbes(app#0, readiness)", "0s Delete(app#0)",
                                    "0s PodEnded(Failed)"));
}

TEST(LifecycleTermination, S5_8_NeverStartedAreNotWaitedForRunningUnstartedSidecarSignalledAtOnce) {
  Harness h(MakePod({WithPreStop(WithStartupProbe(Sidecar(C("proxy")))), C("init")}, {C("app")}));
  h.Start();
  h.Take();
  h.Stop();
  // init was created ahead of its turn: removed, never started.
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(proxy#0, preStop)", "0s Delete(init#0)"));
  h.HookDone("proxy", HookKind::kPreStop);
  EXPECT_THAT(h.Take(),
              ElementsAre("0s Signal(proxy#0, SIGTERM)", "0s StopProbes(proxy#0, startup)"));
  h.ExitBySignal("proxy", 15);
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(proxy#0)", "0s PodEnded(Failed)"));
  EXPECT_EQ(h.lc().StateOf("init"), RunState::kAbandoned);
  EXPECT_EQ(h.lc().StateOf("app"), RunState::kWaiting);
}

TEST(LifecycleTermination, S5_8_CreatedButUnstartedRegularIsDeletedNotWaitedFor) {
  Harness h(MakePod({}, {WithPostStart(C("mesh")), C("app")}));
  h.manual_post_start = {"mesh"};
  h.Start();
  h.Take();
  h.Stop();
  EXPECT_THAT(h.Take(), ElementsAre("0s Signal(mesh#0, SIGTERM)", "0s Delete(app#0)"));
  EXPECT_EQ(h.lc().StateOf("app"), RunState::kAbandoned);
  h.ExitBySignal("mesh", 15);
  EXPECT_THAT(h.Take(), ElementsAre("0s CancelHook(mesh#0, postStart)", "0s Delete(mesh#0)",
                                    "0s PodEnded(Failed)"));
}

TEST(LifecycleTermination, S5_8_CreateInFlightIsDeletedWhenItLands) {
  Harness h(MakePod({}, {C("app")}));
  h.manual_runtime = {"app"};
  h.Start();
  h.Take();
  h.Stop();
  EXPECT_THAT(h.Take(), ElementsAre("0s PodEnded(Failed)"));
  h.Feed(RuntimeCreated{"app", 0, "id"});
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(app#0)"));
}

TEST(LifecycleTermination, S5_StartInFlightIsSignalledWhenItLands) {
  Harness h(MakePod({}, {C("app")}));
  h.manual_runtime = {"app"};
  h.Start();
  h.Feed(RuntimeCreated{"app", 0, "id"});
  h.Take();
  h.Stop();
  EXPECT_THAT(h.Take(), IsEmpty());
  h.Feed(RuntimeStarted{"app", 0});
  EXPECT_THAT(h.Take(), ElementsAre("0s Signal(app#0, SIGTERM)"));
}

TEST(LifecycleTermination, S6_ReasonGoesToPreStopStatusAndEvent) {
  Harness h(MakePod({WithPreStop(Sidecar(C("proxy")))}, {WithPreStop(C("app"))}));
  h.Start();
  h.Take();
  h.TakeEvents();
  h.Stop("Eviction", 20s);
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(proxy#0, preStop, reason=Eviction)",
                                    "0s RunHook(app#0, preStop, reason=Eviction)"));
  std::vector<Publish> published = h.Published();
  ASSERT_FALSE(published.empty());
  const Publish stopping = published[published.size() - 3];
  EXPECT_EQ(stopping, (Publish{EventType::kNormal, "PodStopping", "pod",
                               "Stopping pod (reason: Eviction), grace period 20s"}));
  const pod::PodStatus st = h.lc().Status();
  EXPECT_EQ(st.stop_reason, "Eviction");
  EXPECT_EQ(st.reason, "");  // S6.4: the phase reason stays apart
  EXPECT_EQ(st.phase, PodPhase::kRunning);
  EXPECT_EQ(pod::SummarizePod(h.lc().pod().spec, st).status, "Terminating");
}

TEST(LifecycleTermination, S6_1_ALaterReasonDoesNotReplaceTheFirst) {
  Harness h(MakePod({}, {WithPreStop(C("app"))}));
  h.Start();
  h.Stop();
  h.Stop("Decommissioned");
  EXPECT_EQ(h.lc().Status().stop_reason, std::nullopt);
}

TEST(LifecycleTermination, StopSignalFromSpecElseImageElseSigterm) {
  LifecycleOptions options;
  options.image_stop_signals = {{"b", SIGQUIT}, {"a", SIGINT}};
  Harness h(MakePod({}, {WithStopSignal(C("a"), "SIGUSR1"), C("b"), C("c")}), options);
  h.Start();
  h.Take();
  h.Stop();
  EXPECT_THAT(h.Take(), ElementsAre("0s Signal(a#0, SIGUSR1)", "0s Signal(b#0, SIGQUIT)",
                                    "0s Signal(c#0, SIGTERM)"));
}

TEST(LifecycleTermination, StopAfterTheEndChangesNothing) {
  Harness h(MakePod({}, {C("app")}, RestartPolicy::kNever));
  h.Start();
  h.Exit("app", 0);
  h.Take();
  h.Stop("Eviction");
  EXPECT_THAT(h.Take(), IsEmpty());
  EXPECT_EQ(h.lc().Phase(), PodPhase::kSucceeded);
}

// S14.14: seconds fields beyond what nanoseconds hold (1e10 s) are
// "effectively forever" (100 years), never wrapped into a short or
// negative time.
constexpr int64_t kHugeSeconds = 10'000'000'000;

TEST(LifecycleTermination, S14_14_HugeGraceIsClampedNotWrapped) {
  Harness h(MakePod({}, {C("app")}, RestartPolicy::kAlways, kHugeSeconds));
  h.Start();
  h.Take();
  h.Stop();
  h.Advance(24h);
  EXPECT_THAT(h.Take(), ElementsAre("0s Signal(app#0, SIGTERM)"));
  h.Advance(kForever - 24h);
  EXPECT_THAT(h.Take(), ElementsAre("3153600000s Signal(app#0, SIGKILL)"));
}

TEST(LifecycleTermination, S14_14_HugeProbeGraceIsClampedNotWrapped) {
  Harness h(MakePod({}, {WithLiveness(C("app"), kHugeSeconds)}));
  h.Start();
  h.Take();
  h.Probe("app", ProbeKind::kLiveness, false);
  h.Advance(24h);
  EXPECT_THAT(h.Take(), ElementsAre("0s Signal(app#0, SIGTERM)"));
}

TEST(LifecycleTermination, S14_14_HugeActiveDeadlineIsClampedNotWrapped) {
  pod::Pod p = MakePod({}, {C("app")});
  p.spec.active_deadline_seconds = kHugeSeconds;
  Harness h(p);
  h.Start();
  h.Take();
  h.Advance(24h);
  EXPECT_THAT(h.Take(), IsEmpty());
  EXPECT_EQ(h.lc().Phase(), PodPhase::kRunning);
}

}  // namespace
}  // namespace podvisor::supervisor::lifecycle
