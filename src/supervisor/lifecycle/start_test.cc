// The start plan: SEMANTICS S1, S2, S7.4, S8.2, S8.3.

#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "supervisor/lifecycle/test_harness.h"

namespace podvisor::supervisor::lifecycle {
namespace {

using namespace harness;
using pod::RestartPolicy;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

TEST(LifecycleStart, S1_1_InitEntriesStartOneAtATimeInSpecOrder) {
  Harness h(MakePod({C("init-1"), C("init-2")}, {C("app")}));
  h.Start();
  // init-2 is created ahead, while init-1 runs; only the starts are ordered.
  EXPECT_THAT(h.Take(),
              ElementsAre("0s Create(init-1#0)", "0s Create(init-2#0)", "0s Start(init-1#0)"));
  h.Advance(1s);
  h.Exit("init-1", 0);
  EXPECT_THAT(h.Take(), ElementsAre("1s Delete(init-1#0)", "1s Start(init-2#0)"));
  h.Advance(1s);
  h.Exit("init-2", 0);
  EXPECT_THAT(h.Take(), ElementsAre("2s Delete(init-2#0)", "2s Create(app#0)", "2s Start(app#0)"));
  EXPECT_EQ(h.lc().Phase(), pod::PodPhase::kRunning);
}

// The creates the shell may turn into one create-and-start runtime call
// (CreateContainer::start_when_created): "name#instance" -> the hint. The
// harness checks every hint given is kept; these check where it is given.
std::map<std::string, bool> StartHints(const std::vector<Action>& actions) {
  std::map<std::string, bool> hints;
  for (const Action& a : actions) {
    if (const auto* c = std::get_if<CreateContainer>(&a)) {
      hints[c->container + "#" + std::to_string(c->instance)] = c->start_when_created;
    }
  }
  return hints;
}

TEST(LifecycleStart, S1_1_StartWhenCreatedOnlyForAnEntryInItsTurn) {
  Harness h(MakePod({C("init-1"), Sidecar(C("proxy")), C("init-2")}, {C("app")}));
  h.manual_runtime = {"init-2"};
  h.Start();
  // proxy and init-2 are created ahead of their turns: their starts wait.
  EXPECT_THAT(StartHints(h.TakeAll()),
              ElementsAre(Pair("init-1#0", true), Pair("init-2#0", false), Pair("proxy#0", false)));
  h.Exit("init-1", 0);
  h.Feed(RuntimeCreated{"init-2", 0, "id"});
  h.Feed(RuntimeStarted{"init-2", 0});
  h.TakeAll();
  h.Exit("init-2", 0);
  EXPECT_THAT(StartHints(h.TakeAll()), ElementsAre(Pair("app#0", true)));
}

TEST(LifecycleStart, S1_4_StartWhenCreatedOnlyForTheFirstOfTheRegularChain) {
  Harness h(MakePod({}, {WithPostStart(C("mesh")), C("app"), C("worker")}));
  h.manual_post_start = {"mesh"};
  h.Start();
  EXPECT_THAT(StartHints(h.TakeAll()),
              ElementsAre(Pair("app#0", false), Pair("mesh#0", true), Pair("worker#0", false)));
  // A restart is started as soon as it is created: its first start attempt
  // finished long ago.
  h.HookDone("mesh", HookKind::kPostStart);
  h.Exit("app", 1);
  EXPECT_THAT(StartHints(h.TakeAll()), ElementsAre(Pair("app#1", true)));
}

TEST(LifecycleStart, S12_1_StartWhenCreatedNotForStandardContainersBehindTheDraftGate) {
  Harness h(MakePod({}, {DraftSidecar(C("mesh")), C("app")}));
  h.manual_runtime = {"mesh"};
  h.Start();
  EXPECT_THAT(StartHints(h.TakeAll()), ElementsAre(Pair("app#0", false), Pair("mesh#0", true)));
}

TEST(LifecycleStart, S5_8_AStartWhenCreatedInstanceIsDeletedIfThePodStopsFirst) {
  Harness h(MakePod({}, {C("app")}));
  h.manual_runtime = {"app"};
  h.Start();
  EXPECT_THAT(StartHints(h.TakeAll()), ElementsAre(Pair("app#0", true)));
  h.Stop();
  h.Take();
  // The shell may have started it with its create; the delete stops it.
  h.Feed(RuntimeCreated{"app", 0, "id"});
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(app#0)"));
}

TEST(LifecycleStart, S1_2_OomKilledInitCountsAsFailedEvenWithExitZero) {
  Harness h(MakePod({C("init-1"), C("init-2")}, {C("app")}, RestartPolicy::kOnFailure));
  h.Start();
  h.Take();
  h.Exit("init-1", 0, 0, /*oom=*/true);
  // Restarted (first restart immediate, S4.1), init-2 does not begin: it
  // stays created ahead, not started, and is not created a second time.
  EXPECT_THAT(h.Take(),
              ElementsAre("0s Delete(init-1#0)", "0s Create(init-1#1)", "0s Start(init-1#1)"));
  EXPECT_EQ(h.lc().StateOf("init-2"), RunState::kCreated);
  EXPECT_EQ(h.lc().Status().init_container_statuses[1].state.waiting->reason, "PodInitializing");
}

TEST(LifecycleStart, S1_3_SidecarGatesTheNextEntryOnPostStartAndStartupProbe) {
  Harness h(
      MakePod({WithReadiness(WithStartupProbe(WithPostStart(Sidecar(C("proxy"))))), C("init")},
              {C("app")}));
  h.manual_post_start = {"proxy"};
  h.Start();
  EXPECT_THAT(h.Take(),
              ElementsAre("0s Create(proxy#0)", "0s Create(init#0)", "0s Start(proxy#0)",
                          "0s StartProbes(proxy#0, startup)", "0s RunHook(proxy#0, postStart)"));
  h.Advance(1s);
  h.Probe("proxy", ProbeKind::kStartup, true);
  // Started by its probe, but its postStart still runs: init waits.
  EXPECT_THAT(h.Take(), ElementsAre("1s StartProbes(proxy#0, readiness)"));
  h.Advance(1s);
  h.HookDone("proxy", HookKind::kPostStart);
  // Readiness never gates the sequence (it is still failure here).
  EXPECT_THAT(h.Take(), ElementsAre("2s Start(init#0)"));
}

TEST(LifecycleStart, S1_3_SidecarWithoutHooksOrProbesIsStartedWhenRunning) {
  Harness h(MakePod({Sidecar(C("proxy"))}, {C("app")}));
  h.Start();
  EXPECT_THAT(h.Take(), ElementsAre("0s Create(proxy#0)", "0s Start(proxy#0)", "0s Create(app#0)",
                                    "0s Start(app#0)"));
}

TEST(LifecycleStart, S1_4_RegularsCreatedConcurrentlyStartedInOrderAroundPostStart) {
  Harness h(MakePod({}, {WithPostStart(C("mesh")), C("app"), C("worker")}));
  h.manual_post_start = {"mesh"};
  h.Start();
  EXPECT_THAT(h.Take(), ElementsAre("0s Create(mesh#0)", "0s Create(app#0)", "0s Create(worker#0)",
                                    "0s Start(mesh#0)", "0s RunHook(mesh#0, postStart)"));
  EXPECT_EQ(h.lc().StateOf("app"), RunState::kCreated);
  h.Advance(3s);
  h.HookDone("mesh", HookKind::kPostStart);
  EXPECT_THAT(h.Take(), ElementsAre("3s Start(app#0)", "3s Start(worker#0)"));
}

TEST(LifecycleStart, S1_4_SlowCreateOfAnEarlierContainerHoldsLaterStarts) {
  Harness h(MakePod({}, {C("a"), C("b")}));
  h.manual_runtime = {"a"};
  h.Start();
  EXPECT_THAT(h.Take(), ElementsAre("0s Create(a#0)", "0s Create(b#0)"));
  h.Advance(1s);
  h.Feed(RuntimeCreated{"a", 0, "id-a"});
  EXPECT_THAT(h.Take(), ElementsAre("1s Start(a#0)"));
  h.Feed(RuntimeStarted{"a", 0});
  EXPECT_THAT(h.Take(), ElementsAre("1s Start(b#0)"));
}

TEST(LifecycleStart, S1_1_EntryCreatedAheadIsStartedAndReportedOnlyInItsTurn) {
  Harness h(MakePod({C("init-1"), Sidecar(C("proxy")), C("init-2"), C("init-3")}, {C("app")}));
  h.manual_runtime = {"init-1", "proxy", "init-2", "init-3"};
  h.Start();
  // Two entries ahead: proxy and init-2, not init-3, and never a regular
  // container.
  EXPECT_THAT(h.Take(),
              ElementsAre("0s Create(init-1#0)", "0s Create(proxy#0)", "0s Create(init-2#0)"));
  h.Feed(RuntimeCreated{"proxy", 0, "id-proxy"});
  h.Feed(RuntimeCreated{"init-2", 0, "id-2"});
  EXPECT_THAT(h.Take(), IsEmpty());
  EXPECT_THAT(h.TakeEvents(), IsEmpty());
  pod::PodStatus st = h.lc().Status();
  for (int i : {1, 2}) {
    EXPECT_EQ(st.init_container_statuses[i].state.waiting->reason, "PodInitializing");
    EXPECT_EQ(st.init_container_statuses[i].container_id, "");
  }
  h.Feed(RuntimeCreated{"init-1", 0, "id-1"});
  h.Feed(RuntimeStarted{"init-1", 0});
  EXPECT_THAT(h.Take(), ElementsAre("0s Start(init-1#0)"));
  EXPECT_THAT(h.TakeEvents(),
              ElementsAre("0s Created container/init-1", "0s Started container/init-1"));
  h.Advance(1s);
  h.Exit("init-1", 0);
  // proxy starts at once; init-3 is created ahead in turn.
  EXPECT_THAT(h.Take(),
              ElementsAre("1s Delete(init-1#0)", "1s Start(proxy#0)", "1s Create(init-3#0)"));
  EXPECT_THAT(h.TakeEvents(),
              ElementsAre("1s Exited container/init-1", "1s Created container/proxy"));
  EXPECT_EQ(h.lc().Status().init_container_statuses[1].container_id, "id-proxy");
  EXPECT_EQ(h.lc().Status().init_container_statuses[2].container_id, "");
  EXPECT_EQ(h.lc().StateOf("app"), RunState::kWaiting);
  // proxy started: init-2, created long ago, starts at once and only now
  // is reported Created.
  h.Advance(1s);
  h.Feed(RuntimeStarted{"proxy", 0});
  EXPECT_THAT(h.Take(), ElementsAre("2s Start(init-2#0)"));
  EXPECT_THAT(h.TakeEvents(),
              ElementsAre("2s Started container/proxy", "2s Created container/init-2"));
}

// The init before it may write the file a subPath names; the kubelet
// makes the subPath when the container is created.
TEST(LifecycleStart, S1_1_EntryMountingASubPathIsCreatedOnlyInItsTurn) {
  pod::Container reader = C("init-2");
  reader.volume_mounts.push_back(pod::VolumeMount{});
  reader.volume_mounts.back().name = "config";
  reader.volume_mounts.back().mount_path = "/etc/app.conf";
  reader.volume_mounts.back().sub_path = "app.conf";
  Harness h(MakePod({C("init-1"), reader}, {C("app")}));
  h.Start();
  EXPECT_THAT(h.Take(), ElementsAre("0s Create(init-1#0)", "0s Start(init-1#0)"));
  h.Advance(1s);
  h.Exit("init-1", 0);
  EXPECT_THAT(h.Take(),
              ElementsAre("1s Delete(init-1#0)", "1s Create(init-2#0)", "1s Start(init-2#0)"));
}

TEST(LifecycleStart, S1_1_FailedCreateAheadIsRetriedInItsTurnAndOnlyThenReported) {
  Harness h(MakePod({C("init-1"), C("init-2")}, {C("app")}));
  h.manual_runtime = {"init-2"};
  h.Start();
  EXPECT_THAT(h.Take(),
              ElementsAre("0s Create(init-1#0)", "0s Create(init-2#0)", "0s Start(init-1#0)"));
  h.TakeEvents();
  h.Feed(RuntimeFailed{"init-2", 0, RuntimeStep::kCreate, "rootfs missing"});
  EXPECT_THAT(h.Take(), IsEmpty());
  EXPECT_THAT(h.TakeEvents(), IsEmpty());
  EXPECT_EQ(h.lc().StateOf("init-2"), RunState::kWaiting);
  EXPECT_EQ(h.lc().Status().init_container_statuses[1].state.waiting->reason, "PodInitializing");
  h.Advance(1s);
  h.Exit("init-1", 0);
  EXPECT_THAT(h.Take(), ElementsAre("1s Delete(init-1#0)", "1s Create(init-2#0)"));
  h.Feed(RuntimeFailed{"init-2", 0, RuntimeStep::kCreate, "rootfs missing"});
  EXPECT_EQ(h.lc().Status().init_container_statuses[1].state.waiting->reason,
            "CreateContainerError");
  EXPECT_THAT(h.TakeEvents(), Contains("1s Failed container/init-2"));
}

TEST(LifecycleStart, S1_1_TurnReachedWhileTheCreateAheadIsInFlight) {
  Harness h(MakePod({C("init-1"), C("init-2")}, {C("app")}));
  h.manual_runtime = {"init-2"};
  h.Start();
  h.Take();
  h.Exit("init-1", 0);
  // Its create is still running: nothing to issue until it returns.
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(init-1#0)"));
  h.TakeEvents();
  h.Advance(1s);
  h.Feed(RuntimeCreated{"init-2", 0, "id-2"});
  EXPECT_THAT(h.Take(), ElementsAre("1s Start(init-2#0)"));
  EXPECT_THAT(h.TakeEvents(), ElementsAre("1s Created container/init-2"));
}

TEST(LifecycleStart, S1_5_RegularContainersAreNeverCreatedAhead) {
  Harness h(MakePod({Sidecar(C("proxy"))}, {C("app")}));
  h.manual_runtime = {"proxy"};
  h.Start();
  EXPECT_THAT(h.Take(), ElementsAre("0s Create(proxy#0)"));
  EXPECT_EQ(h.lc().StateOf("app"), RunState::kWaiting);
  EXPECT_EQ(h.lc().Status().FindCondition("Initialized")->status, pod::ConditionStatus::kFalse);
}

TEST(LifecycleStart, S1_5_CompletedInitsNeverRunAgain) {
  Harness h(MakePod({C("init")}, {C("app")}));
  h.Start();
  h.Exit("init", 0);
  h.Take();
  h.Advance(5s);
  h.Exit("app", 1);
  EXPECT_THAT(h.Take(), ElementsAre("5s Delete(app#0)", "5s Create(app#1)", "5s Start(app#1)"));
  EXPECT_EQ(h.lc().StateOf("init"), RunState::kExited);
}

TEST(LifecycleStart, S1_6_PodWithoutInitEntriesIsInitializedAtOnce) {
  Harness h(MakePod({}, {C("app")}));
  h.Start();
  EXPECT_THAT(h.Take(), ElementsAre("0s Create(app#0)", "0s Start(app#0)"));
  const pod::PodStatus st = h.lc().Status();
  ASSERT_NE(st.FindCondition("Initialized"), nullptr);
  EXPECT_EQ(st.FindCondition("Initialized")->status, pod::ConditionStatus::kTrue);
}

TEST(LifecycleStart, S2_1_InitFailureUnderNeverFailsThePodAndStopsSidecars) {
  Harness h(MakePod({Sidecar(C("proxy")), C("init")}, {C("app")}, RestartPolicy::kNever));
  h.Start();
  h.Take();
  h.Advance(2s);
  h.Exit("init", 3);
  EXPECT_EQ(h.lc().Phase(), pod::PodPhase::kFailed);
  // No regular container runs, so the sidecar is signalled at once (S5.4).
  EXPECT_THAT(h.Take(), ElementsAre("2s Delete(init#0)", "2s Signal(proxy#0, SIGTERM)"));
  h.Advance(1s);
  h.ExitBySignal("proxy", 15);
  EXPECT_THAT(h.Take(), ElementsAre("3s Delete(proxy#0)", "3s PodEnded(Failed)"));
  EXPECT_EQ(h.lc().StateOf("app"), RunState::kWaiting);
  EXPECT_TRUE(h.lc().Ended());
}

TEST(LifecycleStart, S2_1_InitFailureUnderOnFailureRetriesWithBackoffSidecarsKeepRunning) {
  Harness h(MakePod({Sidecar(C("proxy")), C("init")}, {C("app")}, RestartPolicy::kOnFailure));
  h.Start();
  h.Take();
  h.Exit("init", 1);
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(init#0)", "0s Create(init#1)", "0s Start(init#1)"));
  h.Advance(1s);
  h.Exit("init", 1);
  EXPECT_THAT(h.Take(), ElementsAre("1s Delete(init#1)"));
  EXPECT_THAT(h.TakeEvents(), Contains("1s BackOff container/init"));
  h.Advance(5s);
  EXPECT_EQ(h.lc().Status().init_container_statuses[1].state.waiting->reason, "CrashLoopBackOff");
  EXPECT_EQ(h.lc().Phase(), pod::PodPhase::kPending);
  EXPECT_EQ(h.lc().StateOf("proxy"), RunState::kRunning);
  h.Advance(5s);  // 10 s after the exit at 1 s
  EXPECT_THAT(h.Take(), ElementsAre("11s Create(init#2)", "11s Start(init#2)"));
  h.Exit("init", 0);
  EXPECT_THAT(h.Take(), ElementsAre("11s Delete(init#2)", "11s Create(app#0)", "11s Start(app#0)"));
}

TEST(LifecycleStart, S2_2_SidecarExitingBeforeStartedIsRestartedEvenUnderNever) {
  Harness h(MakePod({WithStartupProbe(Sidecar(C("proxy"))), C("init")}, {C("app")},
                    RestartPolicy::kNever));
  h.Start();
  h.Take();
  h.Advance(1s);
  h.Exit("proxy", 0);
  EXPECT_THAT(h.Take(), ElementsAre("1s StopProbes(proxy#0, startup)", "1s Delete(proxy#0)",
                                    "1s Create(proxy#1)", "1s Start(proxy#1)",
                                    "1s StartProbes(proxy#1, startup)"));
  EXPECT_EQ(h.lc().StateOf("init"), RunState::kCreated);  // ahead, waiting for its turn
  h.Probe("proxy", ProbeKind::kStartup, true);
  EXPECT_THAT(h.Take(), ElementsAre("1s Start(init#0)"));
}

TEST(LifecycleStart, S2_2_StartupFailureKillsThroughPreStopThenRestarts) {
  Harness h(MakePod({WithPreStop(WithStartupProbe(Sidecar(C("proxy"))))}, {C("app")},
                    RestartPolicy::kNever));
  h.Start();
  h.Take();
  h.TakeEvents();
  h.Advance(4s);
  h.Probe("proxy", ProbeKind::kStartup, false, "timeout");
  EXPECT_THAT(h.Take(), ElementsAre("4s RunHook(proxy#0, preStop)"));
  // Unhealthy events come from the probe runner, one per failed run.
  EXPECT_THAT(h.TakeEvents(), ElementsAre("4s Killing container/proxy"));
  h.Advance(1s);
  h.HookDone("proxy", HookKind::kPreStop);
  EXPECT_THAT(h.Take(), ElementsAre("5s Signal(proxy#0, SIGTERM)"));
  h.ExitBySignal("proxy", 15);
  EXPECT_THAT(h.Take(), ElementsAre("5s Delete(proxy#0)", "5s Create(proxy#1)", "5s Start(proxy#1)",
                                    "5s StartProbes(proxy#1, startup)"));
  EXPECT_EQ(h.lc().StateOf("app"), RunState::kWaiting);
}

TEST(LifecycleStart, S2_3_CreateErrorIsRetriedWithBackoffUnderTheSameInstance) {
  Harness h(MakePod({}, {C("app")}));
  h.manual_runtime = {"app"};
  h.Start();
  h.Take();
  h.Feed(RuntimeFailed{"app", 0, RuntimeStep::kCreate, "no such image"});
  EXPECT_THAT(h.Take(), ElementsAre("0s Create(app#0)"));  // first retry immediate
  pod::ContainerStatus st = h.lc().Status().container_statuses[0];
  EXPECT_EQ(st.state.waiting->reason, "CreateContainerError");
  EXPECT_EQ(st.state.waiting->message, "no such image");
  EXPECT_EQ(st.restart_count, 0);
  h.Feed(RuntimeFailed{"app", 0, RuntimeStep::kCreate, "no such image"});
  EXPECT_THAT(h.Take(), IsEmpty());
  h.Advance(10s);
  EXPECT_THAT(h.Take(), ElementsAre("10s Create(app#0)"));
}

TEST(LifecycleStart, S2_3_StartErrorIsAStartErrorRunAndRetried) {
  Harness h(MakePod({}, {C("app")}));
  h.manual_runtime = {"app"};
  h.Start();
  h.Feed(RuntimeCreated{"app", 0, "id0"});
  h.Take();
  h.Feed(RuntimeFailed{"app", 0, RuntimeStep::kStart, "exec: not found"});
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(app#0)", "0s Create(app#1)"));
  const pod::ContainerStatus st = h.lc().Status().container_statuses[0];
  EXPECT_EQ(st.state.waiting->reason, "RunContainerError");
  ASSERT_TRUE(st.last_state.terminated);
  EXPECT_EQ(st.last_state.terminated->reason, "StartError");
  EXPECT_EQ(st.last_state.terminated->exit_code, 128);
  EXPECT_EQ(st.restart_count, 1);
}

TEST(LifecycleStart, S7_4_LivenessAndReadinessWaitForTheStartupProbe) {
  Harness h(MakePod({}, {WithReadiness(WithLiveness(WithStartupProbe(C("app"))))}));
  h.Start();
  EXPECT_THAT(h.Take(),
              ElementsAre("0s Create(app#0)", "0s Start(app#0)", "0s StartProbes(app#0, startup)"));
  h.Advance(7s);
  h.Probe("app", ProbeKind::kStartup, true);
  EXPECT_THAT(h.Take(),
              ElementsAre("7s StartProbes(app#0, readiness)", "7s StartProbes(app#0, liveness)"));
  // The startup probe paused after its result: a late report changes nothing.
  h.Probe("app", ProbeKind::kStartup, false);
  EXPECT_THAT(h.Take(), IsEmpty());
}

TEST(LifecycleStart, S8_2_FailedPostStartKillsCountsAsFailedStartAndLetsTheNextStart) {
  Harness h(
      MakePod({}, {WithPreStop(WithPostStart(C("mesh"))), C("app")}, RestartPolicy::kOnFailure));
  h.manual_post_start = {"mesh"};
  h.Start();
  h.Take();
  h.TakeEvents();
  h.Advance(1s);
  h.HookDone("mesh", HookKind::kPostStart, false, "exit 1");
  // The next container's start waited for the hook; a failed one ends it.
  // The kill goes through S5.3: preStop first (S8.3).
  EXPECT_THAT(h.Take(), ElementsAre("1s Start(app#0)", "1s RunHook(mesh#0, preStop)"));
  EXPECT_THAT(h.TakeEvents(), ElementsAre("1s FailedPostStartHook container/mesh",
                                          "1s Killing container/mesh", "1s Started container/app"));
  h.HookDone("mesh", HookKind::kPreStop);
  h.ExitBySignal("mesh", 15);
  // Restarted under OnFailure as a failed start.
  EXPECT_THAT(h.Take(),
              ElementsAre("1s Signal(mesh#0, SIGTERM)", "1s Delete(mesh#0)", "1s Create(mesh#1)",
                          "1s Start(mesh#1)", "1s RunHook(mesh#1, postStart)"));
  EXPECT_EQ(h.lc().Status().container_statuses[0].state.waiting, std::nullopt);
}

TEST(LifecycleStart, S8_2_PostStartFailureShowsPostStartHookErrorWhileBackingOff) {
  Harness h(MakePod({}, {WithPostStart(C("app"))}));
  h.manual_post_start = {"app"};
  h.Start();
  h.HookDone("app", HookKind::kPostStart, false, "boom");
  h.ExitBySignal("app", 15);  // first restart: immediate
  h.HookDone("app", HookKind::kPostStart, false, "boom");
  h.ExitBySignal("app", 15);
  const pod::ContainerStatus st = h.lc().Status().container_statuses[0];
  EXPECT_EQ(h.lc().StateOf("app"), RunState::kBackOff);
  EXPECT_EQ(st.state.waiting->reason, "PostStartHookError");
  EXPECT_EQ(st.state.waiting->message, "boom");
  EXPECT_EQ(st.last_state.terminated->message, "PostStartHook failed");
}

TEST(LifecycleStart, S8_3_NoPreStopWhenTheContainerExitsByItself) {
  Harness h(MakePod({}, {WithPreStop(C("app"))}, RestartPolicy::kNever));
  h.Start();
  h.Take();
  h.Exit("app", 0);
  EXPECT_THAT(h.Take(), ElementsAre("0s Delete(app#0)", "0s PodEnded(Succeeded)"));
}

}  // namespace
}  // namespace podvisor::supervisor::lifecycle
