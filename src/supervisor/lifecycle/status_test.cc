// The status the Lifecycle reports: SEMANTICS S7.5 and S9.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "supervisor/lifecycle/test_harness.h"

namespace podvisor::supervisor::lifecycle {
namespace {

using namespace harness;
using pod::ConditionStatus;
using pod::PodPhase;
using pod::RestartPolicy;
using ::testing::Contains;

ConditionStatus ConditionOf(const pod::PodStatus& st, std::string_view type) {
  const pod::PodCondition* c = st.FindCondition(type);
  return c ? c->status : ConditionStatus::kUnknown;
}

std::string Line(Harness& h) {
  return pod::SummarizePod(h.lc().pod().spec, h.lc().Status()).status;
}
std::string ReadyColumn(Harness& h) {
  return pod::SummarizePod(h.lc().pod().spec, h.lc().Status()).ReadyColumn();
}

TEST(LifecycleStatus, S9_1_And_S9_4_PhaseAndStatusLineThroughALife) {
  Harness h(MakePod({WithStartupProbe(Sidecar(C("proxy"))), C("init")}, {WithReadiness(C("app"))},
                    RestartPolicy::kNever));
  h.manual_runtime = {"app"};
  h.Start();
  EXPECT_EQ(h.lc().Phase(), PodPhase::kPending);
  EXPECT_EQ(Line(h), "Init:0/2");
  h.Probe("proxy", ProbeKind::kStartup, true);
  EXPECT_EQ(Line(h), "Init:1/2");
  EXPECT_EQ(ReadyColumn(h), "1/2");
  h.Exit("init", 0);
  EXPECT_EQ(h.lc().Phase(), PodPhase::kRunning);
  EXPECT_EQ(Line(h), "ContainerCreating");
  h.Feed(RuntimeCreated{"app", 0, "id"});
  h.Feed(RuntimeStarted{"app", 0});
  EXPECT_EQ(h.lc().Phase(), PodPhase::kRunning);
  EXPECT_EQ(Line(h), "Running");
  EXPECT_EQ(ReadyColumn(h), "1/2");
  h.Probe("app", ProbeKind::kReadiness, true);
  EXPECT_EQ(ReadyColumn(h), "2/2");
  h.Exit("app", 0);
  // Completion: the sidecar stops; the phase turns terminal at the end.
  EXPECT_EQ(h.lc().Phase(), PodPhase::kRunning);
  h.ExitBySignal("proxy", 15);
  EXPECT_EQ(h.lc().Phase(), PodPhase::kSucceeded);
  EXPECT_EQ(Line(h), "Completed");
}

TEST(LifecycleStatus, S9_1_FailedUnderNeverWhenARegularContainerFailed) {
  Harness h(MakePod({}, {C("a"), C("b")}, RestartPolicy::kNever));
  h.Start();
  h.Exit("a", 0);
  EXPECT_EQ(h.lc().Phase(), PodPhase::kRunning);
  h.Exit("b", 1);
  EXPECT_EQ(h.lc().Phase(), PodPhase::kFailed);
  // S9.4 departs: kubectl's last-to-first scan let a's "Completed" win;
  // a Failed pod shows the failed container's reason.
  EXPECT_EQ(Line(h), "Error");
}

TEST(LifecycleStatus, S9_1_SidecarExitCodesNeverAffectThePhase) {
  Harness h(MakePod({Sidecar(C("proxy"))}, {C("app")}, RestartPolicy::kNever));
  h.Start();
  h.Exit("app", 0);
  h.Exit("proxy", 1);
  EXPECT_EQ(h.lc().Phase(), PodPhase::kSucceeded);
}

TEST(LifecycleStatus, S9_2_RunningTerminatedLastStateAndRestartCount) {
  Harness h(MakePod({C("init")}, {C("app")}));
  h.Start();
  const WallTime init_started = h.now().wall;
  h.Advance(2s);
  h.Exit("init", 0);
  h.Advance(3s);
  h.Exit("app", 1);  // immediate restart at 5 s
  h.Advance(1s);
  pod::PodStatus st = h.lc().Status();

  const pod::ContainerStatus& init = st.init_container_statuses[0];
  ASSERT_TRUE(init.state.terminated);
  EXPECT_EQ(init.state.terminated->reason, "Completed");
  EXPECT_EQ(init.state.terminated->started_at, init_started);
  EXPECT_EQ(init.state.terminated->finished_at, init_started + 2s);
  EXPECT_TRUE(init.ready);  // S7.5: an init is ready once it exited 0
  EXPECT_EQ(init.container_id, "web-init-0");

  const pod::ContainerStatus& app = st.container_statuses[0];
  ASSERT_TRUE(app.state.running);
  EXPECT_EQ(app.state.running->started_at, init_started + 5s);
  EXPECT_EQ(app.restart_count, 1);
  ASSERT_TRUE(app.last_state.terminated);
  EXPECT_EQ(app.last_state.terminated->exit_code, 1);
  EXPECT_EQ(app.last_state.terminated->reason, "Error");
  EXPECT_EQ(app.last_state.terminated->started_at, init_started + 2s);
  EXPECT_EQ(app.container_id, "web-app-1");
}

TEST(LifecycleStatus, S9_2_WaitingReasonsBeforeTheStart) {
  Harness h(MakePod({C("init")}, {C("app")}));
  h.manual_runtime = {"init"};
  h.Start();
  pod::PodStatus st = h.lc().Status();
  EXPECT_EQ(st.init_container_statuses[0].state.waiting->reason, "ContainerCreating");
  EXPECT_EQ(st.container_statuses[0].state.waiting->reason, "PodInitializing");
  EXPECT_EQ(st.container_statuses[0].last_state, pod::ContainerState{});
}

TEST(LifecycleStatus, S9_3_ConditionsAndTheirTransitionTimes) {
  pod::Pod p = MakePod({Sidecar(WithReadiness(C("proxy"))), C("init")}, {WithReadiness(C("app"))});
  Harness h(p);
  h.manual_runtime = {"init"};
  const WallTime t0 = h.now().wall;
  h.Start();
  pod::PodStatus st = h.lc().Status();
  EXPECT_EQ(ConditionOf(st, "PodReadyToStartContainers"), ConditionStatus::kTrue);
  const pod::PodCondition* initialized = st.FindCondition("Initialized");
  EXPECT_EQ(initialized->status, ConditionStatus::kFalse);
  EXPECT_EQ(initialized->reason, "ContainersNotInitialized");
  EXPECT_EQ(initialized->message, "containers with incomplete status: [init]");
  EXPECT_EQ(st.FindCondition("Ready")->message, "containers with unready status: [proxy app]");

  h.Advance(3s);
  h.Feed(RuntimeCreated{"init", 0, "id"});
  h.Feed(RuntimeStarted{"init", 0});
  h.Exit("init", 0);
  st = h.lc().Status();
  EXPECT_EQ(ConditionOf(st, "Initialized"), ConditionStatus::kTrue);
  EXPECT_EQ(st.FindCondition("Initialized")->last_transition_time, t0 + 3s);
  EXPECT_EQ(ConditionOf(st, "ContainersReady"), ConditionStatus::kFalse);

  h.Advance(2s);
  h.Probe("app", ProbeKind::kReadiness, true);
  EXPECT_EQ(ConditionOf(h.lc().Status(), "Ready"), ConditionStatus::kFalse);  // proxy not ready
  h.Probe("proxy", ProbeKind::kReadiness, true);
  st = h.lc().Status();
  EXPECT_EQ(ConditionOf(st, "ContainersReady"), ConditionStatus::kTrue);
  EXPECT_EQ(ConditionOf(st, "Ready"), ConditionStatus::kTrue);
  EXPECT_EQ(st.FindCondition("Ready")->last_transition_time, t0 + 5s);
  EXPECT_EQ(st.FindCondition("PodReadyToStartContainers")->last_transition_time, t0);
}

TEST(LifecycleStatus, S9_3_SucceededPodIsNotReadyWithReasonPodCompleted) {
  Harness h(MakePod({}, {C("app")}, RestartPolicy::kNever));
  h.Start();
  h.Exit("app", 0);
  const pod::PodStatus st = h.lc().Status();
  EXPECT_EQ(st.FindCondition("Ready")->reason, "PodCompleted");
  EXPECT_EQ(ConditionOf(st, "PodReadyToStartContainers"), ConditionStatus::kFalse);
}

TEST(LifecycleStatus, S9_3_ReadinessGatesKeepThePodUnready) {
  pod::Pod p = MakePod({}, {C("app")});
  p.spec.readiness_gates = {pod::PodReadinessGate{"example.com/feature"}};
  Harness h(p);
  h.Start();
  const pod::PodStatus st = h.lc().Status();
  EXPECT_EQ(ConditionOf(st, "ContainersReady"), ConditionStatus::kTrue);
  EXPECT_EQ(st.FindCondition("Ready")->reason, "ReadinessGatesNotReady");
}

TEST(LifecycleStatus, S9_5_OomKilledComesFromTheExitEventsFlag) {
  Harness h(MakePod({}, {C("app")}, RestartPolicy::kNever));
  h.Start();
  h.TakeEvents();
  h.ExitBySignal("app", 9);  // a plain SIGKILL is an Error
  EXPECT_EQ(h.lc().Status().container_statuses[0].state.terminated->reason, "Error");

  Harness oom(MakePod({}, {C("app")}, RestartPolicy::kNever));
  oom.Start();
  oom.TakeEvents();
  oom.Exit("app", 137, 9, /*oom=*/true);
  EXPECT_EQ(oom.lc().Status().container_statuses[0].state.terminated->reason, "OOMKilled");
  EXPECT_THAT(oom.TakeEvents(), Contains("0s OOMKilled container/app"));
  EXPECT_EQ(Line(oom), "OOMKilled");
  EXPECT_EQ(oom.lc().Phase(), PodPhase::kFailed);
}

TEST(LifecycleStatus, S7_5_StartedNeedsTheStartupProbeReadyNeedsReadiness) {
  Harness h(MakePod({}, {WithReadiness(WithStartupProbe(C("app")))}));
  h.Start();
  pod::ContainerStatus app = h.lc().Status().container_statuses[0];
  EXPECT_EQ(app.started, false);
  EXPECT_FALSE(app.ready);
  h.Probe("app", ProbeKind::kStartup, true);
  app = h.lc().Status().container_statuses[0];
  EXPECT_EQ(app.started, true);
  EXPECT_FALSE(app.ready);  // S7.3: readiness starts as failure
  h.Probe("app", ProbeKind::kReadiness, true);
  EXPECT_TRUE(h.lc().Status().container_statuses[0].ready);
}

TEST(LifecycleStatus, JsonRendersTheLifecycleStatus) {
  LifecycleOptions options;
  options.qos_class = "BestEffort";
  Harness h(MakePod({Sidecar(C("proxy"))}, {C("app")}), options);
  h.Start();
  const nlohmann::json j = pod::PodStatusToJson(h.lc().Status());
  EXPECT_EQ(j["phase"], "Running");
  EXPECT_EQ(j["qosClass"], "BestEffort");
  EXPECT_EQ(j["initContainerStatuses"][0]["name"], "proxy");
  EXPECT_EQ(j["containerStatuses"][0]["name"], "app");
  EXPECT_EQ(j["containerStatuses"][0]["state"]["running"]["startedAt"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(j["conditions"].size(), 4u);
}

}  // namespace
}  // namespace podvisor::supervisor::lifecycle
