// S19.3-S19.6: a pod with podvisor.io/after holds its start plan until the
// shell reports every named pod Ready; it is Pending meanwhile and says
// what it waits for; a stop or its deadline during the wait ends it with
// nothing created; the wait survives a handover.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "supervisor/lifecycle/test_harness.h"

namespace podvisor::supervisor::lifecycle {
namespace {

using namespace harness;
using pod::PodPhase;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

pod::Pod AfterPod(std::vector<pod::Container> inits, std::vector<pod::Container> regulars,
                  std::string after) {
  pod::Pod p = MakePod(std::move(inits), std::move(regulars));
  p.metadata.annotations["podvisor.io/after"] = std::move(after);
  return p;
}

const pod::PodCondition* Condition(const pod::PodStatus& s, std::string_view type) {
  for (const auto& c : s.conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

TEST(LifecycleAwaitedPods, S19_3_NothingIsCreatedUntilEveryNamedPodIsReady) {
  Harness h(AfterPod({C("init")}, {C("app")}, "db, cache"));
  h.Start();
  EXPECT_THAT(h.Take(), IsEmpty());
  EXPECT_THAT(h.TakeEvents(), ElementsAre("0s WaitingForPods pod"));
  EXPECT_TRUE(h.lc().AwaitingPods());

  h.Advance(1s);
  h.Feed(AwaitedPods{{"cache"}});
  EXPECT_THAT(h.Take(), IsEmpty()) << "db is Ready, cache is not";
  EXPECT_THAT(h.lc().awaited_pods(), ElementsAre("cache"));

  h.Advance(1s);
  h.Feed(AwaitedPods{{}});
  EXPECT_FALSE(h.lc().AwaitingPods());
  EXPECT_THAT(h.TakeEvents(), ::testing::Contains("2s AwaitedPodsReady pod"));
  // The start plan of S1.1 from here, as Start would have begun it.
  std::vector<std::string> log = h.Take();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.front(), "2s Create(init#0)");

  // A later report changes nothing: the wait is over for good.
  h.Feed(AwaitedPods{{"db"}});
  EXPECT_FALSE(h.lc().AwaitingPods());
}

TEST(LifecycleAwaitedPods, S19_3_APodWithoutInitContainersStartsItsContainers) {
  Harness h(AfterPod({}, {C("a"), C("b")}, "db"));
  h.Start();
  EXPECT_THAT(h.Take(), IsEmpty());
  h.Feed(AwaitedPods{{}});
  std::vector<std::string> log = h.Take();
  EXPECT_THAT(log, ::testing::Contains("0s Create(a#0)"));
  EXPECT_THAT(log, ::testing::Contains("0s Create(b#0)"));
  EXPECT_EQ(h.lc().Phase(), PodPhase::kRunning);
}

TEST(LifecycleAwaitedPods, S19_4_PendingWithWhatItWaitsFor) {
  Harness h(AfterPod({C("init")}, {C("app")}, "db,cache"));
  h.Start();
  h.Feed(AwaitedPods{{"cache", "db"}});
  const pod::PodStatus s = h.lc().Status();
  EXPECT_EQ(s.phase, PodPhase::kPending);
  const pod::PodCondition* initialized = Condition(s, pod::kConditionInitialized);
  ASSERT_NE(initialized, nullptr);
  EXPECT_EQ(initialized->status, pod::ConditionStatus::kFalse);
  EXPECT_EQ(initialized->reason, "WaitingForPods");
  EXPECT_EQ(initialized->message, "waiting for pods to be Ready (podvisor.io/after): [cache db]");
  const pod::PodCondition* sandbox = Condition(s, pod::kConditionPodReadyToStartContainers);
  ASSERT_NE(sandbox, nullptr);
  EXPECT_EQ(sandbox->status, pod::ConditionStatus::kTrue);
  for (const auto* list : {&s.init_container_statuses, &s.container_statuses}) {
    for (const auto& c : *list) {
      ASSERT_TRUE(c.state.waiting) << c.name;
      EXPECT_EQ(c.state.waiting->reason, "WaitingForPods") << c.name;
      EXPECT_EQ(c.state.waiting->message, initialized->message);
    }
  }
  ASSERT_TRUE(s.start_time.has_value()) << "the pod started: its supervisor runs it";

  h.Feed(AwaitedPods{{}});
  const pod::PodStatus after = h.lc().Status();
  EXPECT_TRUE(after.init_container_statuses[0].state.running) << "created and started";
  ASSERT_TRUE(after.container_statuses[0].state.waiting);
  EXPECT_EQ(after.container_statuses[0].state.waiting->reason, "PodInitializing");
  EXPECT_EQ(Condition(after, pod::kConditionInitialized)->reason, "ContainersNotInitialized");
}

TEST(LifecycleAwaitedPods, S19_6_AStopDuringTheWaitEndsThePodAtOnceWithNothingCreated) {
  Harness h(AfterPod({}, {C("app")}, "db"));
  h.Start();
  h.Advance(5s);
  h.Stop("test");
  std::vector<Action> all = h.TakeAll();
  bool ended = false;
  for (const Action& a : all) {
    EXPECT_FALSE(std::holds_alternative<CreateContainer>(a)) << ToString(a);
    if (std::holds_alternative<PodEnded>(a)) ended = true;
  }
  EXPECT_TRUE(ended);
  EXPECT_TRUE(h.lc().Ended());
  EXPECT_FALSE(h.lc().AwaitingPods());
  EXPECT_THAT(h.Take(), ElementsAre("5s PodEnded(Failed)"));
  // A report that arrives after the stop creates nothing either.
  h.Feed(AwaitedPods{{}});
  EXPECT_THAT(h.Take(), IsEmpty());
}

TEST(LifecycleAwaitedPods, S19_5_TheActiveDeadlineCountsDuringTheWait) {
  pod::Pod p = AfterPod({}, {C("app")}, "db");
  p.spec.active_deadline_seconds = 10;
  Harness h(p);
  h.Start();
  h.Advance(11s);
  EXPECT_TRUE(h.lc().Ended());
  EXPECT_EQ(h.lc().Phase(), PodPhase::kFailed);
  EXPECT_EQ(h.lc().Status().reason, "DeadlineExceeded");
  for (const Action& a : h.TakeAll()) {
    EXPECT_FALSE(std::holds_alternative<CreateContainer>(a))
        << "nothing is created: " << ToString(a);
  }
}

TEST(LifecycleAwaitedPods, S19_7_TheWaitIsHandedOverToTheNextSupervisor) {
  pod::Pod p = AfterPod({}, {C("app")}, "db,cache");
  Harness h(p);
  h.Start();
  h.Feed(AwaitedPods{{"cache"}});
  const nlohmann::json state = h.lc().SaveState();

  auto restored = Lifecycle::RestoreState(p, {}, state);
  ASSERT_TRUE(restored) << restored.error().message();
  Harness next(std::move(*restored), h.mono());
  next.Resume();
  EXPECT_TRUE(next.lc().AwaitingPods());
  EXPECT_THAT(next.lc().awaited_pods(), ElementsAre("cache"));
  next.Take();
  next.Feed(AwaitedPods{{}});
  EXPECT_THAT(next.Take(), ::testing::Contains(::testing::HasSubstr("Create(app#0)")));
}

}  // namespace
}  // namespace podvisor::supervisor::lifecycle
