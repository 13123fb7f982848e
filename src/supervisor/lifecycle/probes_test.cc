// Probes and hooks as the Lifecycle sees them: SEMANTICS S3.3, S7.3-S7.6,
// S8.1-S8.3 (the thresholds themselves are ProbeState's, in
// probes/probe_state_test.cc; the runs and their events are the shell's).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "supervisor/lifecycle/test_harness.h"

namespace podvisor::supervisor::lifecycle {
namespace {

using namespace harness;
using pod::RestartPolicy;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<StartProbes> StartedProbes(const std::vector<Action>& actions) {
  std::vector<StartProbes> out;
  for (const Action& a : actions) {
    if (auto* s = std::get_if<StartProbes>(&a)) out.push_back(*s);
  }
  return out;
}

TEST(LifecycleProbes, S7_6_ProbesCountTheirInitialDelayFromTheContainerStart) {
  Harness h(MakePod({}, {WithReadiness(WithLiveness(WithStartupProbe(C("app"))))}));
  const MonoTime t0 = h.mono();
  h.Start();
  auto first = StartedProbes(h.TakeAll());
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].container_started, t0);
  h.Advance(7s);
  h.Probe("app", ProbeKind::kStartup, true);
  // Liveness and readiness begin at 7 s, but their delay counts from 0 s.
  auto later = StartedProbes(h.TakeAll());
  ASSERT_EQ(later.size(), 2u);
  EXPECT_EQ(later[0].container_started, t0);
  EXPECT_EQ(later[1].container_started, t0);
}

TEST(LifecycleProbes, S7_6_ARestartedInstanceCountsFromItsOwnStart) {
  Harness h(MakePod({}, {WithLiveness(C("app"))}));
  h.Start();
  h.TakeAll();
  h.Advance(5s);
  h.Exit("app", 1);
  auto probes = StartedProbes(h.TakeAll());
  ASSERT_EQ(probes.size(), 1u);
  EXPECT_EQ(probes[0].instance, 1);
  EXPECT_EQ(probes[0].container_started, h.mono());
}

TEST(LifecycleProbes, S7_4_LivenessPausesAfterAFailureUntilTheNextInstance) {
  Harness h(MakePod({}, {WithPreStop(WithLiveness(C("app")))}));
  h.Start();
  h.Take();
  h.TakeEvents();
  h.Probe("app", ProbeKind::kLiveness, false, "exit 1");
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(app#0, preStop)"));
  EXPECT_THAT(h.TakeEvents(), ElementsAre("0s Killing container/app"));
  // A result still in flight changes nothing: one kill, one event.
  h.Probe("app", ProbeKind::kLiveness, false, "exit 1");
  h.Probe("app", ProbeKind::kLiveness, true);
  EXPECT_THAT(h.Take(), IsEmpty());
  EXPECT_THAT(h.TakeEvents(), IsEmpty());
}

TEST(LifecycleProbes, S7_3_ALivenessSuccessIsTheInitialResultAndChangesNothing) {
  Harness h(MakePod({}, {WithLiveness(C("app"))}));
  h.Start();
  h.Take();
  h.Probe("app", ProbeKind::kLiveness, true);
  EXPECT_THAT(h.Take(), IsEmpty());
  EXPECT_TRUE(h.lc().Status().container_statuses[0].ready);
}

TEST(LifecycleProbes, S3_3_StartupFailureKillUsesTheProbesOwnGrace) {
  Harness h(MakePod({}, {WithPreStop(WithStartupProbe(C("app"), /*grace=*/3))},
                    RestartPolicy::kAlways,
                    /*grace_seconds=*/30));
  h.Start();
  h.Take();
  h.Probe("app", ProbeKind::kStartup, false, "timeout");
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(app#0, preStop)"));
  // The preStop hangs: the probe's 3 s, not the pod's 30 s, bound it.
  h.Advance(6s);
  EXPECT_THAT(h.Take(), ElementsAre("3s Signal(app#0, SIGTERM)", "5s Signal(app#0, SIGKILL)"));
  const pod::ContainerStatus st = h.lc().Status().container_statuses[0];
  EXPECT_EQ(st.started, std::optional<bool>(false));
}

TEST(LifecycleProbes, S5_7_RegularContainerLivenessStopsAtTerminationReadinessKeepsRunning) {
  Harness h(MakePod({}, {WithPreStop(WithReadiness(WithLiveness(C("app"))))}));
  h.Start();
  h.Take();
  h.Probe("app", ProbeKind::kReadiness, true);
  h.Stop("Eviction");
  EXPECT_THAT(h.Take(), ElementsAre("0s StopProbes(app#0, liveness)",
                                    "0s RunHook(app#0, preStop, reason=Eviction)"));
  // A readiness failure while draining still makes it unready (S7.5).
  h.Probe("app", ProbeKind::kReadiness, false);
  EXPECT_FALSE(h.lc().Status().container_statuses[0].ready);
}

TEST(LifecycleProbes, S8_2_SidecarPostStartFailureRestartsItEvenUnderNever) {
  Harness h(MakePod({WithPostStart(Sidecar(C("proxy")))}, {C("app")}, RestartPolicy::kNever));
  h.manual_post_start = {"proxy"};
  h.Start();
  h.Take();
  h.TakeEvents();
  h.TakeAll();
  h.HookDone("proxy", HookKind::kPostStart, false, "mesh not configured");
  EXPECT_THAT(h.Take(), ElementsAre("0s Signal(proxy#0, SIGTERM)"));
  std::vector<Publish> events = h.Published();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].reason, "FailedPostStartHook");
  EXPECT_EQ(events[0].message, "mesh not configured");  // S8.4: the hook's output
  h.ExitBySignal("proxy", 15);
  // S2.2: restarted before it was ever started; app still waits for it.
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(proxy#0)", "0s Create(proxy#1)", "0s Start(proxy#1)",
                                    "0s RunHook(proxy#1, postStart)"));
  EXPECT_EQ(h.lc().StateOf("app"), RunState::kWaiting);
}

TEST(LifecycleProbes, S8_3_PreStopOnlyWhenTheSupervisorKills) {
  Harness h(MakePod({}, {WithPreStop(WithLiveness(C("app")))}));
  h.Start();
  h.Take();
  h.Exit("app", 1);  // exited by itself: no preStop
  EXPECT_THAT(h.Take(),
              ElementsAre("0s StopProbes(app#0, liveness)", "0s Delete(app#0)", "0s Create(app#1)",
                          "0s Start(app#1)", "0s StartProbes(app#1, liveness)"));
  h.Probe("app", ProbeKind::kLiveness, false);  // killed by us: preStop first
  EXPECT_THAT(h.Take(), ElementsAre("0s RunHook(app#1, preStop)"));
}

}  // namespace
}  // namespace podvisor::supervisor::lifecycle
