// S16.5-S16.6: a container whose image cannot be had waits, Pending, and
// its pull is retried with the kubelet's image backoff under every
// restartPolicy; nothing counts as a restart.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "supervisor/lifecycle/test_harness.h"

namespace podvisor::supervisor::lifecycle {
namespace {

using namespace harness;
using pod::PodPhase;
using pod::RestartPolicy;
using ::testing::ElementsAre;

const pod::ContainerStatus& StatusOf(const pod::PodStatus& status, const std::string& name) {
  for (const auto* list : {&status.init_container_statuses, &status.container_statuses}) {
    for (const auto& s : *list) {
      if (s.name == name) return s;
    }
  }
  ADD_FAILURE() << "no status for " << name;
  static pod::ContainerStatus none;
  return none;
}

std::string WaitingReason(Harness& h, const std::string& name) {
  const pod::PodStatus status = h.lc().Status();
  const auto& s = StatusOf(status, name);
  return s.state.waiting ? s.state.waiting->reason : "";
}

ImagePullFailed PullFailed(Harness& h, const std::string& name,
                           std::string reason = "ErrImagePull") {
  (void)h;
  return ImagePullFailed{name, 0, std::move(reason), "unauthorized: authentication required"};
}

TEST(LifecycleImagePull, S16_6_FailedPullWaitsWithBackoffUnderNeverAndCountsNoRestart) {
  Harness h(MakePod({}, {C("app")}, RestartPolicy::kNever));
  h.manual_runtime.insert("app");
  h.Start();
  EXPECT_THAT(h.Take(), ElementsAre("0s Create(app#0)"));
  EXPECT_EQ(WaitingReason(h, "app"), "ContainerCreating");
  EXPECT_EQ(h.lc().Phase(), PodPhase::kRunning) << "a create in flight is not an image wait";
  h.Feed(ImagePulling{"app", 0});
  EXPECT_EQ(WaitingReason(h, "app"), "ContainerCreating");
  EXPECT_EQ(h.lc().Phase(), PodPhase::kPending);

  h.Feed(PullFailed(h, "app"));
  EXPECT_EQ(WaitingReason(h, "app"), "ErrImagePull");
  EXPECT_THAT(h.TakeEvents(), ElementsAre("0s Failed container/app", "0s Failed container/app"));
  EXPECT_EQ(h.lc().Phase(), PodPhase::kPending);

  h.Advance(2s);
  EXPECT_EQ(WaitingReason(h, "app"), "ImagePullBackOff");
  EXPECT_THAT(h.TakeEvents(), ElementsAre("2s BackOff container/app", "2s Failed container/app"));
  EXPECT_THAT(h.Take(), ElementsAre());

  h.Advance(8s);  // the first retry waits 10 s
  EXPECT_THAT(h.Take(), ElementsAre("10s Create(app#0)"));
  h.Feed(PullFailed(h, "app"));
  h.Advance(19s);
  EXPECT_THAT(h.Take(), ElementsAre());
  h.Advance(1s);  // then 20 s
  EXPECT_THAT(h.Take(), ElementsAre("30s Create(app#0)"));

  h.Feed(RuntimeCreated{"app", 0, "web-app-0"});
  h.Feed(RuntimeStarted{"app", 0});
  EXPECT_EQ(h.lc().Phase(), PodPhase::kRunning);
  const pod::PodStatus status = h.lc().Status();
  EXPECT_EQ(StatusOf(status, "app").restart_count, 0);
  EXPECT_TRUE(StatusOf(status, "app").state.running.has_value());
}

TEST(LifecycleImagePull, S16_6_InitImageFailureDoesNotFailThePodUnderNever) {
  Harness h(MakePod({C("init")}, {C("app")}, RestartPolicy::kNever));
  h.manual_runtime.insert("init");
  h.Start();
  h.Take();
  h.Feed(PullFailed(h, "init"));
  EXPECT_EQ(h.lc().Phase(), PodPhase::kPending);
  EXPECT_EQ(WaitingReason(h, "init"), "ErrImagePull");
  EXPECT_EQ(WaitingReason(h, "app"), "PodInitializing");
  h.Advance(10s);
  EXPECT_THAT(h.Take(), ElementsAre("10s Create(init#0)"));
}

TEST(LifecycleImagePull, S16_5_NeverPullKeepsItsReasonAndChecksAgain) {
  Harness h(MakePod({}, {C("app")}, RestartPolicy::kAlways));
  h.manual_runtime.insert("app");
  h.Start();
  h.Take();
  h.Feed(PullFailed(h, "app", "ErrImageNeverPull"));
  EXPECT_THAT(h.TakeEvents(),
              ElementsAre("0s ErrImageNeverPull container/app", "0s Failed container/app"));
  h.Advance(5s);
  EXPECT_EQ(WaitingReason(h, "app"), "ErrImageNeverPull");
  h.Advance(5s);
  EXPECT_THAT(h.Take(), ElementsAre("10s Create(app#0)"));
}

TEST(LifecycleImagePull, S16_6_BackoffDoublesToTheCap) {
  LifecycleOptions options;
  options.backoff.initial = 1s;
  options.backoff.max = 4s;
  Harness h(MakePod({}, {C("app")}), options);
  h.manual_runtime.insert("app");
  h.Start();
  h.Take();
  std::vector<std::string> creates;
  for (int i = 0; i < 5; ++i) {
    h.Feed(PullFailed(h, "app"));
    h.Advance(10s);
    for (auto& line : h.Take()) creates.push_back(line);
  }
  // Retries after 1, 2, 4, 4, 4 s: each failure is fed when the test's
  // 10 s step ends, so the creates land 1, 2, 4, 4 and 4 s into a step.
  EXPECT_THAT(creates, ElementsAre("1s Create(app#0)", "12s Create(app#0)", "24s Create(app#0)",
                                   "34s Create(app#0)", "44s Create(app#0)"));
}

TEST(LifecycleImagePull, S16_6_StopDuringBackoffEndsThePod) {
  Harness h(MakePod({}, {C("app")}, RestartPolicy::kAlways));
  h.manual_runtime.insert("app");
  h.Start();
  h.Take();
  h.Feed(PullFailed(h, "app"));
  h.Stop();
  EXPECT_TRUE(h.lc().Ended());
}

TEST(LifecycleImagePull, S16_6_AStopDuringThePullEndsThePodWithoutWaitingForIt) {
  Harness h(MakePod({}, {C("app")}, RestartPolicy::kAlways));
  h.manual_runtime.insert("app");
  h.Start();
  h.Take();
  h.Stop();
  EXPECT_TRUE(h.lc().Ended());
  h.Feed(PullFailed(h, "app"));  // the shell's late answer changes nothing
  EXPECT_TRUE(h.lc().Ended());
}

}  // namespace
}  // namespace podvisor::supervisor::lifecycle
