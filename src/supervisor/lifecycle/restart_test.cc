// A running pod: restarts, kills on probe failure, completion, the active
// deadline and crash-loop backoff (SEMANTICS S3, S4), and stale events.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "supervisor/lifecycle/test_harness.h"

namespace podvisor::supervisor::lifecycle {
namespace {

using namespace harness;
using pod::PodPhase;
using pod::RestartPolicy;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(LifecycleRestart, S3_1_StartedSidecarRestartsOnAnyExitUnderNever) {
  Harness h(MakePod({Sidecar(C("proxy"))}, {C("app")}, RestartPolicy::kNever));
  h.Start();
  h.Take();
  h.Advance(5s);
  h.Exit("proxy", 0);
  EXPECT_THAT(h.Take(),
              ElementsAre("5s Delete(proxy#0)", "5s Create(proxy#1)", "5s Start(proxy#1)"));
  h.Advance(5s);
  h.Exit("proxy", 2);
  EXPECT_THAT(h.Take(), ElementsAre("10s Delete(proxy#1)"));
  h.Advance(10s);
  EXPECT_THAT(h.Take(), ElementsAre("20s Create(proxy#2)", "20s Start(proxy#2)"));
  EXPECT_EQ(h.lc().StateOf("app"), RunState::kRunning);
}

TEST(LifecycleRestart, S3_1_CrashingSidecarUnderNeverLeavesThePodSucceeded) {
  Harness h(MakePod({Sidecar(C("proxy"))}, {C("app")}, RestartPolicy::kNever));
  h.Start();
  h.Exit("proxy", 1);
  h.Exit("proxy", 139, 11);
  h.Advance(10s);
  h.Take();
  h.Exit("app", 0);
  EXPECT_THAT(h.Take(), ElementsAre("10s Delete(app#0)", "10s Signal(proxy#2, SIGTERM)"));
  h.ExitBySignal("proxy", 15);
  EXPECT_THAT(h.Take(), ElementsAre("10s Delete(proxy#2)", "10s PodEnded(Succeeded)"));
  EXPECT_EQ(h.lc().Phase(), PodPhase::kSucceeded);
}

TEST(LifecycleRestart, S3_2_AlwaysRestartsOnAnyExit) {
  Harness h(MakePod({}, {C("app")}, RestartPolicy::kAlways));
  h.Start();
  h.Take();
  h.Exit("app", 0);
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(app#0)", "0s Create(app#1)", "0s Start(app#1)"));
}

TEST(LifecycleRestart, S3_2_OnFailureRestartsOnNonZeroAndOomOnly) {
  Harness h(MakePod({}, {C("app"), C("job")}, RestartPolicy::kOnFailure));
  h.Start();
  h.Take();
  h.Exit("app", 1);
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(app#0)", "0s Create(app#1)", "0s Start(app#1)"));
  h.Exit("job", 0, 0, /*oom=*/true);
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(job#0)", "0s Create(job#1)", "0s Start(job#1)"));
  h.Exit("job", 0);
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(job#1)"));
  EXPECT_EQ(h.lc().StateOf("job"), RunState::kExited);
  EXPECT_EQ(h.lc().Phase(), PodPhase::kRunning);
}

TEST(LifecycleRestart, S3_2_NeverDoesNotRestartAndAnyFailureFailsThePod) {
  Harness h(MakePod({}, {C("app"), C("job")}, RestartPolicy::kNever));
  h.Start();
  h.Take();
  h.Exit("app", 0);
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(app#0)"));
  h.Advance(1s);
  h.Exit("job", 2);
  EXPECT_THAT(h.Take(), ElementsAre("1s Delete(job#0)", "1s PodEnded(Failed)"));
}

TEST(LifecycleRestart, S3_3_LivenessFailureKillsThroughPreStopWithTheProbesGrace) {
  Harness h(MakePod({}, {WithPreStop(WithLiveness(C("app"), /*grace=*/5))}));
  h.Start();
  h.Take();
  h.Advance(10s);
  h.Probe("app", ProbeKind::kLiveness, false, "HTTP 500");
  EXPECT_THAT(h.Take(), ElementsAre("10s RunHook(app#0, preStop)"));
  // The preStop hangs: the probe's own 5 s budget ends at 15 s (S5.5 for
  // one container): stop signal then, SIGKILL 2 s later.
  h.Advance(10s);
  EXPECT_THAT(h.Take(), ElementsAre("15s Signal(app#0, SIGTERM)", "17s Signal(app#0, SIGKILL)"));
  h.Advance(1s);  // 21 s
  h.ExitBySignal("app", 9);
  // The liveness probe paused at its failure (S7.4); the new instance
  // gets its own.
  EXPECT_THAT(h.Take(), ElementsAre("21s CancelHook(app#0, preStop)", "21s Delete(app#0)",
                                    "21s Create(app#1)", "21s Start(app#1)",
                                    "21s StartProbes(app#1, liveness)"));
  // A termination cause is written once: our SIGKILL did not replace it.
  const pod::ContainerStatus st = h.lc().Status().container_statuses[0];
  EXPECT_EQ(st.last_state.terminated->reason, "Error");
  EXPECT_EQ(st.last_state.terminated->signal, 9);
  EXPECT_EQ(st.last_state.terminated->message, "Container failed liveness probe");
}

TEST(LifecycleRestart, S3_3_LivenessKillRestartsUnderOnFailureEvenWithExitZero) {
  Harness h(MakePod({}, {WithLiveness(C("app"))}, RestartPolicy::kOnFailure));
  h.Start();
  h.Take();
  h.Probe("app", ProbeKind::kLiveness, false);
  EXPECT_THAT(h.Take(), ElementsAre("0s Signal(app#0, SIGTERM)"));
  h.Exit("app", 0);
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(app#0)", "0s Create(app#1)", "0s Start(app#1)",
                                    "0s StartProbes(app#1, liveness)"));
}

TEST(LifecycleRestart, S3_3_LivenessKillUsesPodGraceWithoutProbeGrace) {
  Harness h(MakePod({}, {WithLiveness(C("app"))}, RestartPolicy::kAlways, /*grace=*/20));
  h.Start();
  h.Take();
  h.Probe("app", ProbeKind::kLiveness, false);
  h.Advance(25s);
  EXPECT_THAT(h.Take(), ElementsAre("0s Signal(app#0, SIGTERM)", "20s Signal(app#0, SIGKILL)"));
}

TEST(LifecycleRestart, S3_4_CompletionStopsSidecarsInReverseOrderWithoutReason) {
  Harness h(MakePod({Sidecar(C("sc-a")), Sidecar(C("sc-b"))}, {C("app")}, RestartPolicy::kNever));
  h.Start();
  h.Take();
  h.TakeEvents();
  h.Advance(5s);
  h.Exit("app", 0);
  EXPECT_THAT(h.Take(), ElementsAre("5s Delete(app#0)", "5s Signal(sc-b#0, SIGTERM)"));
  EXPECT_THAT(h.TakeEvents(), Contains("5s PodCompleted pod"));
  EXPECT_EQ(h.lc().Phase(), PodPhase::kRunning);  // terminal only once all stopped
  h.Advance(1s);
  h.ExitBySignal("sc-b", 15);
  EXPECT_THAT(h.Take(), ElementsAre("6s Delete(sc-b#0)", "6s Signal(sc-a#0, SIGTERM)"));
  h.Advance(1s);
  h.Exit("sc-a", 0);
  EXPECT_THAT(h.Take(), ElementsAre("7s Delete(sc-a#0)", "7s PodEnded(Succeeded)"));
  EXPECT_EQ(h.lc().Status().stop_reason, std::nullopt);
  EXPECT_EQ(h.lc().termination_cause(), TerminationCause::kCompleted);
}

TEST(LifecycleRestart, S3_4_OnFailureCompletesWhenAllExitedZero) {
  Harness h(MakePod({}, {C("a"), C("b")}, RestartPolicy::kOnFailure));
  h.Start();
  h.Take();
  h.Exit("a", 1);
  h.Exit("a", 0);
  h.Exit("b", 0);
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(a#0)", "0s Create(a#1)", "0s Start(a#1)",
                                    "0s Delete(a#1)", "0s Delete(b#0)", "0s PodEnded(Succeeded)"));
}

pod::Pod JobPod(int32_t backoff_limit, RestartPolicy policy,
                std::vector<pod::Container> inits = {}) {
  pod::Pod p = MakePod(std::move(inits), {C("migrate")}, policy);
  p.job = pod::JobLimits{backoff_limit};
  return p;
}

TEST(LifecycleRestart, S3_6_JobUnderOnFailureFailsWhenARestartWouldExceedBackoffLimit) {
  Harness h(JobPod(2, RestartPolicy::kOnFailure));
  h.Start();
  h.Take();
  h.Exit("migrate", 1);  // restart 1, at once
  h.Exit("migrate", 1);  // restart 2, after 10 s
  h.Advance(10s);
  EXPECT_THAT(h.Take(),
              ElementsAre("0s Delete(migrate#0)", "0s Create(migrate#1)", "0s Start(migrate#1)",
                          "0s Delete(migrate#1)", "10s Create(migrate#2)", "10s Start(migrate#2)"));
  h.TakeEvents();
  h.Exit("migrate", 1);  // a third restart would exceed 2
  EXPECT_THAT(h.Take(), ElementsAre("10s Delete(migrate#2)", "10s PodEnded(Failed)"));
  EXPECT_THAT(h.TakeEvents(), Contains("10s BackoffLimitExceeded pod"));
  pod::PodStatus st = h.lc().Status();
  EXPECT_EQ(st.phase, PodPhase::kFailed);
  EXPECT_EQ(st.reason, "BackoffLimitExceeded");
  EXPECT_EQ(st.container_statuses.at(0).restart_count, 2);
  EXPECT_EQ(pod::SummarizePod(h.lc().pod().spec, st).status, "BackoffLimitExceeded");
}

TEST(LifecycleRestart, S3_6_InitContainerRestartsCountTowardTheJobsLimit) {
  Harness h(JobPod(1, RestartPolicy::kOnFailure, {C("setup")}));
  h.Start();
  h.Exit("setup", 1);  // restart 1 of the init
  h.Exit("setup", 0);
  h.Take();
  h.Exit("migrate", 1);  // 1 restart already: a second would exceed 1
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(migrate#0)", "0s PodEnded(Failed)"));
  EXPECT_EQ(h.lc().Status().reason, "BackoffLimitExceeded");
}

TEST(LifecycleRestart, S3_6_JobUnderNeverEndsOnItsOneFailureOnlyWithLimitZero) {
  Harness zero(JobPod(0, RestartPolicy::kNever));
  zero.Start();
  zero.Exit("migrate", 1);
  EXPECT_EQ(zero.lc().Phase(), PodPhase::kFailed);
  EXPECT_EQ(zero.lc().Status().reason, "BackoffLimitExceeded");
  // A higher limit would have the controller make a new pod: this one
  // fails the ordinary way.
  Harness six(JobPod(6, RestartPolicy::kNever));
  six.Start();
  six.Exit("migrate", 1);
  EXPECT_EQ(six.lc().Phase(), PodPhase::kFailed);
  EXPECT_EQ(six.lc().Status().reason, "");
}

TEST(LifecycleRestart, S3_6_APodThatIsNoJobRestartsWithoutLimit) {
  Harness h(MakePod({}, {C("migrate")}, RestartPolicy::kOnFailure));
  h.Start();
  for (int i = 0; i < 8; ++i) {
    h.Exit("migrate", 1);
    h.Advance(300s);
  }
  EXPECT_EQ(h.lc().Phase(), PodPhase::kRunning);
  EXPECT_EQ(h.lc().Status().container_statuses.at(0).restart_count, 8);
}

TEST(LifecycleRestart, S3_5_ActiveDeadlineCountsFromPodStartAndFailsThePod) {
  pod::Pod p = MakePod({C("init")}, {WithPreStop(C("app"))});
  p.spec.active_deadline_seconds = 60;
  Harness h(p);
  h.Start();
  h.Advance(20s);  // the init's time counts
  h.Exit("init", 0);
  h.Take();
  h.TakeEvents();
  h.Advance(40s);
  EXPECT_THAT(h.Take(), ElementsAre("60s RunHook(app#0, preStop, reason=DeadlineExceeded)"));
  EXPECT_THAT(h.TakeEvents(), ElementsAre("60s DeadlineExceeded pod", "60s PodStopping pod",
                                          "60s Killing container/app"));
  pod::PodStatus st = h.lc().Status();
  EXPECT_EQ(st.phase, PodPhase::kFailed);
  EXPECT_EQ(st.reason, "DeadlineExceeded");
  EXPECT_EQ(st.stop_reason, "DeadlineExceeded");
  EXPECT_EQ(pod::SummarizePod(h.lc().pod().spec, st).status, "DeadlineExceeded");
  h.HookDone("app", HookKind::kPreStop);
  h.ExitBySignal("app", 15);
  EXPECT_THAT(h.Take(), ElementsAre("60s Signal(app#0, SIGTERM)", "60s Delete(app#0)",
                                    "60s PodEnded(Failed)"));
}

TEST(LifecycleRestart, S4_1_BackoffDoublesFromTenSecondsMeasuredFromThePreviousExit) {
  Harness h(MakePod({}, {C("app")}));
  h.Start();
  h.Take();
  h.Exit("app", 1);  // first restart: immediate
  h.Advance(3s);
  h.Exit("app", 1);  // 10 s from this exit
  h.Advance(10s);
  h.Advance(2s);
  h.Exit("app", 1);  // exit at 15 s: 20 s
  h.Advance(20s);
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(app#0)", "0s Create(app#1)", "0s Start(app#1)",
                                    "3s Delete(app#1)", "13s Create(app#2)", "13s Start(app#2)",
                                    "15s Delete(app#2)", "35s Create(app#3)", "35s Start(app#3)"));
}

TEST(LifecycleRestart, S4_1_BackoffIsCappedAt300Seconds) {
  Harness h(MakePod({}, {C("app")}));
  h.Start();
  for (int i = 0; i < 7; ++i) {
    h.Exit("app", 1);
    h.Advance(400s);
  }
  h.Take();
  h.Exit("app", 1);
  EXPECT_EQ(h.TimerDeadline(TimerId{TimerKind::kRestart, "app", 8}), h.mono() + 300s);
}

TEST(LifecycleRestart, S4_2_AnInstanceThatRanTenMinutesResetsTheBackoff) {
  Harness h(MakePod({}, {C("app")}));
  h.Start();
  h.Exit("app", 1);
  h.Exit("app", 1);
  h.Advance(10s);  // app#2 starts
  h.Advance(10min);
  h.Take();
  h.Exit("app", 1);
  EXPECT_THAT(h.Take(),
              ElementsAre("610s Delete(app#2)", "610s Create(app#3)", "610s Start(app#3)"));
}

TEST(LifecycleRestart, S4_3_StatusIsCrashLoopBackOffWhileWaiting) {
  Harness h(MakePod({}, {C("app")}));
  h.Start();
  h.Exit("app", 1);
  h.Advance(2s);
  h.Exit("app", 3);
  h.Advance(5s);
  const pod::ContainerStatus st = h.lc().Status().container_statuses[0];
  ASSERT_TRUE(st.state.waiting);
  EXPECT_EQ(st.state.waiting->reason, "CrashLoopBackOff");
  EXPECT_EQ(st.state.waiting->message, "back-off 10s restarting failed container=app pod=web");
  EXPECT_EQ(st.last_state.terminated->exit_code, 3);
  EXPECT_EQ(st.restart_count, 1);
  EXPECT_EQ(pod::SummarizePod(h.lc().pod().spec, h.lc().Status()).status, "CrashLoopBackOff");
}

TEST(LifecycleRestart, S4_4_InitialCapAndResetAreOptions) {
  LifecycleOptions options;
  options.backoff = BackoffOptions{1s, 2s, 1min};
  Harness h(MakePod({}, {C("app")}), options);
  h.Start();
  h.Exit("app", 1);
  h.Exit("app", 1);
  EXPECT_EQ(h.TimerDeadline(TimerId{TimerKind::kRestart, "app", 2}), h.mono() + 1s);
  h.Advance(1s);
  h.Exit("app", 1);
  EXPECT_EQ(h.TimerDeadline(TimerId{TimerKind::kRestart, "app", 3}), h.mono() + 2s);
  h.Advance(2s);
  h.Exit("app", 1);
  EXPECT_EQ(h.TimerDeadline(TimerId{TimerKind::kRestart, "app", 4}), h.mono() + 2s);
}

TEST(LifecycleRestart, StaleInstanceEventsAreIgnored) {
  Harness h(MakePod({}, {WithPreStop(WithReadiness(WithLiveness(C("app"))))}));
  h.Start();
  h.Exit("app", 1);  // app#1 runs now
  h.Take();
  h.TakeEvents();
  h.Feed(ContainerExited{"app", 0, 1, 0, false, "", ""});
  h.Feed(ProbeResult{"app", 0, ProbeKind::kLiveness, false, ""});
  h.Feed(ProbeResult{"app", 0, ProbeKind::kReadiness, true, ""});
  h.Feed(HookFinished{"app", 0, HookKind::kPreStop, false, ""});
  h.Feed(TimerFired{TimerId{TimerKind::kSigkill, "app", 0}});
  h.Feed(TimerFired{TimerId{TimerKind::kRestart, "app", 1}});
  h.Feed(RuntimeStarted{"app", 0});
  EXPECT_THAT(h.Take(), IsEmpty());
  EXPECT_THAT(h.TakeEvents(), IsEmpty());
  EXPECT_FALSE(h.lc().Status().container_statuses[0].ready);
}

TEST(LifecycleRestart, ExitRacingTheSigkillTimerIsHarmless) {
  Harness h(MakePod({}, {C("app")}, RestartPolicy::kNever));
  h.Start();
  h.Stop();
  h.ExitBySignal("app", 15);
  h.Take();
  // The timer's cancellation crossed with its firing.
  h.Feed(TimerFired{TimerId{TimerKind::kSigkill, "app", 0}});
  h.Feed(TimerFired{TimerId{TimerKind::kGraceBudget, "", 0}});
  EXPECT_THAT(h.Take(), IsEmpty());
  EXPECT_TRUE(h.lc().Ended());
}

// S17.3: a resize under resizePolicy RestartContainer stops the running
// instance (the pod's grace) and creates the next one at once, with no
// backoff, even where restartPolicy would not restart it.
TEST(LifecycleRestart, S17_3_ResizeRestartReplacesTheInstanceAtOnce) {
  Harness h(MakePod({}, {C("app")}, RestartPolicy::kOnFailure));
  h.Start();
  h.Take();
  h.TakeEvents();
  h.Advance(3s);
  h.Feed(ResizeRestart{"app", 0});
  EXPECT_THAT(h.Take(), ElementsAre("3s Signal(app#0, SIGTERM)"));
  EXPECT_THAT(h.TakeEvents(), Contains("3s Killing container/app"));
  h.ExitBySignal("app", 15);  // a success or not, it is not a crash
  EXPECT_THAT(h.Take(), ElementsAre("3s Delete(app#0)", "3s Create(app#1)", "3s Start(app#1)"));
  EXPECT_EQ(h.lc().StateOf("app"), RunState::kRunning);
  // A stale request (an instance already replaced) does nothing.
  h.Feed(ResizeRestart{"app", 0});
  EXPECT_THAT(h.Take(), IsEmpty());
}

}  // namespace
}  // namespace podvisor::supervisor::lifecycle
