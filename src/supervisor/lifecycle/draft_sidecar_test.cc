// The 2018–2020 sidecar draft: containers with lifecycle.type Sidecar
// (SEMANTICS S12), alone and next to KEP-753 sidecars.

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

TEST(LifecycleDraftSidecar, S12_1_StandardContainersWaitForTheSidecarsReadinessProbe) {
  // The app comes first in the spec; the draft sidecar still starts first.
  Harness h(MakePod({}, {C("app"), WithReadiness(DraftSidecar(C("proxy")))}));
  h.Start();
  EXPECT_THAT(h.Take(), ElementsAre("0s Create(app#0)", "0s Create(proxy#0)", "0s Start(proxy#0)",
                                    "0s StartProbes(proxy#0, readiness)"));
  EXPECT_EQ(h.lc().StateOf("app"), RunState::kCreated);
  h.Advance(3s);
  h.Probe("proxy", ProbeKind::kReadiness, false);
  EXPECT_THAT(h.Take(), IsEmpty());
  h.Advance(2s);
  h.Probe("proxy", ProbeKind::kReadiness, true);
  EXPECT_THAT(h.Take(), ElementsAre("5s Start(app#0)"));
  EXPECT_EQ(h.lc().StateOf("app"), RunState::kRunning);
}

TEST(LifecycleDraftSidecar, S12_1_WithoutReadinessProbeReadyIsRunningWithPostStartDone) {
  Harness h(MakePod({}, {WithPostStart(DraftSidecar(C("proxy"))), C("app")}));
  h.manual_post_start.insert("proxy");
  h.Start();
  EXPECT_THAT(h.Take(), ElementsAre("0s Create(proxy#0)", "0s Create(app#0)", "0s Start(proxy#0)",
                                    "0s RunHook(proxy#0, postStart)"));
  h.Advance(2s);
  h.HookDone("proxy", HookKind::kPostStart);
  EXPECT_THAT(h.Take(), ElementsAre("2s Start(app#0)"));
}

TEST(LifecycleDraftSidecar, S12_1_EverySidecarMustBeReadyAndAStartupProbeCounts) {
  Harness h(MakePod(
      {}, {WithStartupProbe(DraftSidecar(C("a"))), WithReadiness(DraftSidecar(C("b"))), C("app")}));
  h.Start();
  h.Take();
  h.Probe("b", ProbeKind::kReadiness, true);
  EXPECT_THAT(h.Take(), IsEmpty());  // a has not started yet
  h.Advance(1s);
  h.Probe("a", ProbeKind::kStartup, true);
  EXPECT_THAT(h.Take(), Contains("1s Start(app#0)"));
}

TEST(LifecycleDraftSidecar, S12_1_SidecarsStartAfterInitContainersAndKep753Sidecars) {
  Harness h(MakePod({C("init"), Sidecar(C("mesh"))}, {C("app"), DraftSidecar(C("proxy"))}));
  h.Start();
  EXPECT_THAT(h.Take(), ElementsAre("0s Create(init#0)", "0s Create(mesh#0)", "0s Start(init#0)"));
  h.Advance(1s);
  h.Exit("init", 0);
  EXPECT_THAT(h.Take(), ElementsAre("1s Delete(init#0)", "1s Start(mesh#0)", "1s Create(app#0)",
                                    "1s Create(proxy#0)", "1s Start(proxy#0)", "1s Start(app#0)"));
}

TEST(LifecycleDraftSidecar, S12_1_TheGateIsPassedOnceRestartsAreNotHeld) {
  Harness h(MakePod({}, {WithReadiness(DraftSidecar(C("proxy"))), C("app")}));
  h.Start();
  h.Probe("proxy", ProbeKind::kReadiness, true);
  h.Take();
  h.Probe("proxy", ProbeKind::kReadiness, false);
  h.Advance(1s);
  h.Exit("app", 1);
  EXPECT_THAT(h.Take(), ElementsAre("1s Delete(app#0)", "1s Create(app#1)", "1s Start(app#1)"));
}

TEST(LifecycleDraftSidecar, S12_1_ASidecarThatEndsForGoodBeforeReadyFailsThePod) {
  Harness h(
      MakePod({}, {WithReadiness(DraftSidecar(C("proxy"))), C("app")}, RestartPolicy::kNever));
  h.Start();
  h.Take();
  h.TakeEvents();
  h.Advance(1s);
  h.Exit("proxy", 1);
  // The app was created and never started: it is removed, never started.
  EXPECT_THAT(h.Take(), ElementsAre("1s StopProbes(proxy#0, readiness)", "1s Delete(proxy#0)",
                                    "1s Delete(app#0)", "1s PodEnded(Failed)"));
  EXPECT_EQ(h.lc().StateOf("app"), RunState::kAbandoned);
  EXPECT_THAT(h.TakeEvents(), Contains("1s SidecarExited pod"));
  EXPECT_EQ(h.lc().Status().reason, "SidecarExited");
}

TEST(LifecycleDraftSidecar, S12_2_SidecarsFollowThePodsRestartPolicy) {
  {
    Harness h(MakePod({}, {DraftSidecar(C("proxy")), C("app")}, RestartPolicy::kAlways));
    h.Start();
    h.Take();
    h.Exit("proxy", 0);
    EXPECT_THAT(h.Take(),
                ElementsAre("0s Delete(proxy#0)", "0s Create(proxy#1)", "0s Start(proxy#1)"));
  }
  {
    Harness h(MakePod({}, {DraftSidecar(C("proxy")), C("app")}, RestartPolicy::kOnFailure));
    h.Start();
    h.Take();
    h.Exit("proxy", 2);
    EXPECT_THAT(h.Take(),
                ElementsAre("0s Delete(proxy#0)", "0s Create(proxy#1)", "0s Start(proxy#1)"));
    h.Exit("proxy", 0);
    EXPECT_THAT(h.Take(), ElementsAre("0s Delete(proxy#1)"));
    EXPECT_EQ(h.lc().StateOf("proxy"), RunState::kExited);
    EXPECT_EQ(h.lc().StateOf("app"), RunState::kRunning);
  }
  {
    // Unlike a KEP-753 sidecar (S3.1), not restarted under Never.
    Harness h(MakePod({}, {DraftSidecar(C("proxy")), C("app")}, RestartPolicy::kNever));
    h.Start();
    h.Take();
    h.Exit("proxy", 1);
    EXPECT_THAT(h.Take(), ElementsAre("0s Delete(proxy#0)"));
    EXPECT_EQ(h.lc().StateOf("app"), RunState::kRunning);
    EXPECT_FALSE(h.lc().Terminating());
  }
}

TEST(LifecycleDraftSidecar, S12_3_AJobCompletesWhenItsStandardContainersDid) {
  Harness h(MakePod({}, {DraftSidecar(C("proxy")), C("job")}, RestartPolicy::kOnFailure));
  h.Start();
  h.Take();
  h.Advance(1s);
  h.Exit("job", 1);  // OnFailure: restarted, no completion yet
  EXPECT_THAT(h.Take(), ElementsAre("1s Delete(job#0)", "1s Create(job#1)", "1s Start(job#1)"));
  h.Advance(1s);
  h.TakeEvents();
  h.Exit("job", 0);
  EXPECT_THAT(h.Take(), ElementsAre("2s Delete(job#1)", "2s Signal(proxy#0, SIGTERM)"));
  EXPECT_THAT(h.TakeEvents(), Contains("2s PodCompleted pod"));
  h.ExitBySignal("proxy", SIGTERM);
  EXPECT_THAT(h.Take(), ElementsAre("2s Delete(proxy#0)", "2s PodEnded(Succeeded)"));
}

TEST(LifecycleDraftSidecar, S12_3_UnderNeverAFailedStandardContainerIsTerminalToo) {
  Harness h(MakePod({}, {DraftSidecar(C("proxy")), C("a"), C("b")}, RestartPolicy::kNever));
  h.Start();
  h.Take();
  h.Exit("a", 3);
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(a#0)"));
  h.Advance(1s);
  h.Exit("b", 0);
  EXPECT_THAT(h.Take(), ElementsAre("1s Delete(b#0)", "1s Signal(proxy#0, SIGTERM)"));
  h.Exit("proxy", 0);
  EXPECT_THAT(h.Take(), ElementsAre("1s Delete(proxy#0)", "1s PodEnded(Failed)"));
}

TEST(LifecycleDraftSidecar, S12_4_ASidecarsExitCodeNeverFailsThePod) {
  Harness h(MakePod({}, {C("job"), DraftSidecar(C("proxy"))}, RestartPolicy::kNever));
  h.Start();
  h.Take();
  h.Exit("job", 0);
  EXPECT_EQ(h.lc().Phase(), PodPhase::kRunning);  // until every container stopped
  h.Exit("proxy", 1);                             // its stop signal made it fail
  EXPECT_EQ(h.lc().Phase(), PodPhase::kSucceeded);
  const pod::PodStatus status = h.lc().Status();
  ASSERT_EQ(status.container_statuses.size(), 2u);  // still reported, as any container
  EXPECT_EQ(status.container_statuses[1].name, "proxy");
  ASSERT_TRUE(status.container_statuses[1].state.terminated);
  EXPECT_EQ(status.container_statuses[1].state.terminated->exit_code, 1);
}

TEST(LifecycleDraftSidecar, S12_5_SidecarPreStopsFirstThenStandardThenSidecarSignals) {
  Harness h(
      MakePod({}, {WithPreStop(C("app")), C("worker"), WithPreStop(DraftSidecar(C("proxy")))}));
  h.Start();
  h.Take();
  h.Stop("Update");
  // Only the sidecar's preStop: the standard containers are held.
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(proxy#0, preStop, reason=Update)"));
  EXPECT_EQ(h.lc().StopStepOf("app"), StopStep::kHeld);
  h.Advance(2s);
  h.HookDone("proxy", HookKind::kPreStop);
  EXPECT_THAT(h.Take(), ElementsAre("2s RunHook(app#0, preStop, reason=Update)",
                                    "2s Signal(worker#0, SIGTERM)"));
  h.Advance(1s);
  h.HookDone("app", HookKind::kPreStop);
  EXPECT_THAT(h.Take(), ElementsAre("3s Signal(app#0, SIGTERM)"));
  h.Exit("worker", 0);                                        // both handle SIGTERM and exit 0
  EXPECT_THAT(h.Take(), ElementsAre("3s Delete(worker#0)"));  // app still runs
  h.Advance(1s);
  h.Exit("app", 0);
  // Every standard container exited: the sidecar's stop signal, and no
  // second preStop (S12.5: once per instance).
  EXPECT_THAT(h.Take(), ElementsAre("4s Delete(app#0)", "4s Signal(proxy#0, SIGTERM)"));
  h.ExitBySignal("proxy", SIGTERM);
  EXPECT_THAT(h.Take(), ElementsAre("4s Delete(proxy#0)", "4s PodEnded(Succeeded)"));
}

TEST(LifecycleDraftSidecar, S12_5_OneSharedGraceThenSidecarsGetTwoSeconds) {
  Harness h(
      MakePod({}, {C("app"), DraftSidecar(C("proxy"))}, RestartPolicy::kAlways, /*grace=*/10));
  h.Start();
  h.Take();
  h.Stop();
  EXPECT_THAT(h.Take(), ElementsAre("0s Signal(app#0, SIGTERM)"));
  h.Advance(15s);  // the app ignores SIGTERM
  // The pod's budget and the app's SIGKILL end together (S5.3); the
  // sidecar, still waiting for the app, gets its 2 s (S5.5).
  EXPECT_THAT(h.Take(), ElementsAre("10s Signal(proxy#0, SIGTERM)", "10s Signal(app#0, SIGKILL)",
                                    "12s Signal(proxy#0, SIGKILL)"));
}

TEST(LifecycleDraftSidecar, S12_5_ASidecarExitingDuringTerminationIsNotRestarted) {
  Harness h(MakePod({}, {C("app"), WithPreStop(DraftSidecar(C("proxy")))}));
  h.Start();
  h.Take();
  h.Stop();
  h.Take();
  h.Exit("proxy", 1);  // its preStop is cancelled with it; the app goes on
  EXPECT_THAT(h.Take(), ElementsAre("0s CancelHook(proxy#0, preStop)", "0s Delete(proxy#0)",
                                    "0s Signal(app#0, SIGTERM)"));
  EXPECT_EQ(h.lc().StateOf("proxy"), RunState::kExited);
}

TEST(LifecycleDraftSidecar, S12_5_ALivenessKillsPreStopAlsoHoldsTheStandardContainers) {
  Harness h(
      MakePod({}, {WithPreStop(C("app")), WithLiveness(WithPreStop(DraftSidecar(C("proxy"))))}));
  h.Start();
  h.Take();
  h.Probe("proxy", ProbeKind::kLiveness, false);
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(proxy#0, preStop)"));
  h.Advance(1s);
  h.Stop();
  EXPECT_THAT(h.Take(), IsEmpty());  // the app waits for the proxy's preStop
  EXPECT_EQ(h.lc().StopStepOf("app"), StopStep::kHeld);
  h.Advance(1s);
  h.HookDone("proxy", HookKind::kPreStop);
  // Killed for its liveness, the proxy gets its stop signal after its
  // preStop, as S3.3 says; the app goes on with its own preStop.
  EXPECT_THAT(h.Take(), ElementsAre("2s Signal(proxy#0, SIGTERM)", "2s RunHook(app#0, preStop)"));
  h.ExitBySignal("proxy", SIGTERM);
  EXPECT_THAT(h.Take(), ElementsAre("2s Delete(proxy#0)"));  // not restarted (S5.7)
}

TEST(LifecycleDraftSidecar, S12_6_DraftSidecarsStopBeforeKep753SidecarsInReverseOrder) {
  Harness h(MakePod({Sidecar(C("mesh")), Sidecar(C("log"))}, {C("app"), DraftSidecar(C("proxy"))}));
  h.Start();
  h.Take();
  h.Stop();
  EXPECT_THAT(h.Take(), ElementsAre("0s Signal(app#0, SIGTERM)"));
  h.Exit("app", 0);
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(app#0)", "0s Signal(proxy#0, SIGTERM)"));
  h.ExitBySignal("proxy", SIGTERM);
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(proxy#0)", "0s Signal(log#0, SIGTERM)"));
  h.ExitBySignal("log", SIGTERM);
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(log#0)", "0s Signal(mesh#0, SIGTERM)"));
  h.ExitBySignal("mesh", SIGTERM);
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(mesh#0)", "0s PodEnded(Succeeded)"));
}

TEST(LifecycleDraftSidecar, S12_6_Kep753PreStopsStillStartAtOnce) {
  Harness h(MakePod({WithPreStop(Sidecar(C("mesh")))},
                    {C("app"), WithPreStop(DraftSidecar(C("proxy")))}));
  h.Start();
  h.Take();
  h.Stop();
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(proxy#0, preStop)", "0s RunHook(mesh#0, preStop)"));
}

TEST(LifecycleDraftSidecar, S12_4_StatusListsDraftSidecarsWithTheContainers) {
  Harness h(MakePod({C("init")}, {C("app"), DraftSidecar(C("proxy"))}));
  h.Start();
  const pod::PodStatus status = h.lc().Status();
  ASSERT_EQ(status.init_container_statuses.size(), 1u);
  ASSERT_EQ(status.container_statuses.size(), 2u);
  EXPECT_EQ(status.container_statuses[1].name, "proxy");
}

}  // namespace
}  // namespace podvisor::supervisor::lifecycle
