// HooksAndProbes driven in-process: a loop on a FakeClock, a fake exec into
// the instance, and the Lifecycle events and published events it answers
// with recorded in order.
#include "supervisor/executor/hooks_probes.h"

#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace podvisor::supervisor::executor {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// One exec the hooks or probes started.
struct ExecStart {
  std::string container;
  int instance = 0;
  std::string name;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::optional<Duration> timeout;
  InstanceExec::Done done;
  bool killed = false;
};

class FakeExec final : public InstanceExec {
 public:
  FakeExec(std::vector<ExecStart>& starts, std::string container, int instance)
      : starts_(starts), container_(std::move(container)), instance_(instance) {}
  pid_t Start(std::string_view name, const std::vector<std::string>& args,
              const std::vector<std::string>& extra_env, std::optional<Duration> timeout,
              Done done) override {
    starts_.push_back(
        {container_, instance_, std::string(name), args, extra_env, timeout, std::move(done)});
    index_ = starts_.size() - 1;
    return static_cast<pid_t>(1000 + index_);
  }
  void Kill(pid_t pid) override {
    if (pid == static_cast<pid_t>(1000 + index_)) starts_[index_].killed = true;
  }

 private:
  std::vector<ExecStart>& starts_;
  std::string container_;
  int instance_;
  std::size_t index_ = 0;
};

pod::Handler ExecHandler(std::vector<std::string> command) {
  pod::Handler handler;
  handler.exec = pod::ExecAction{std::move(command)};
  return handler;
}

class HooksAndProbesTest : public ::testing::Test {
 protected:
  HooksAndProbesTest() : loop_(std::move(loop::EventLoop::Create(clock_)).value()) {
    clock_.Set(MonoTime{} + 1000s);
    pod::Container app;
    app.name = "app";
    app.lifecycle.emplace();
    app.lifecycle->post_start = pod::LifecycleHandler{ExecHandler({"warm", "up"}), std::nullopt};
    app.lifecycle->pre_stop = pod::LifecycleHandler{ExecHandler({"drain"}), std::nullopt};
    pod::Probe readiness;
    readiness.handler = ExecHandler({"ready?"});
    readiness.initial_delay_seconds = 5;
    readiness.period_seconds = 10;
    readiness.timeout_seconds = 2;
    readiness.failure_threshold = 1;
    app.readiness_probe = readiness;
    pod_.spec.containers.push_back(app);

    HooksAndProbes::Seams seams;
    seams.feed = [this](lifecycle::Event e) { fed_.push_back(std::move(e)); };
    seams.publish = [this](const lifecycle::Publish& p) { published_.push_back(p); };
    seams.exec_in = [this](std::string_view container,
                           int instance) -> std::unique_ptr<InstanceExec> {
      if (gone_.count(instance)) return nullptr;
      return std::make_unique<FakeExec>(execs_, std::string(container), instance);
    };
    seams.netns_path = [] { return std::string(); };
    hooks_probes_.emplace(loop_, pod_, std::move(seams));
  }

  void Turn() { ASSERT_TRUE(loop_.RunOnce(0ms).ok()); }
  void Pass(Duration d) {
    clock_.Advance(d);
    Turn();
  }

  FakeClock clock_;
  loop::EventLoop loop_;
  pod::Pod pod_;
  std::set<int> gone_;  // instances the exec factory no longer finds
  std::vector<ExecStart> execs_;
  std::vector<lifecycle::Event> fed_;
  std::vector<lifecycle::Publish> published_;
  std::optional<HooksAndProbes> hooks_probes_;
};

TEST_F(HooksAndProbesTest, PostStartExecHookFeedsHookFinishedOnce) {
  hooks_probes_->RunHookAction(
      lifecycle::RunHook{"app", 1, lifecycle::HookKind::kPostStart, std::nullopt});
  ASSERT_EQ(execs_.size(), 1u);
  EXPECT_EQ(execs_[0].container, "app");
  EXPECT_EQ(execs_[0].instance, 1);
  EXPECT_EQ(execs_[0].name, "postStart");
  EXPECT_THAT(execs_[0].args, ElementsAre("warm", "up"));
  EXPECT_EQ(execs_[0].timeout, std::nullopt);  // hooks have no timeout of their own
  EXPECT_THAT(fed_, IsEmpty());
  InstanceExec::Done done = execs_[0].done;
  done(true, "warmed");
  done(true, "again");
  Pass(1s);
  EXPECT_THAT(fed_, ElementsAre(lifecycle::Event(lifecycle::HookFinished{
                        "app", 1, lifecycle::HookKind::kPostStart, true, "warmed"})));
}

TEST_F(HooksAndProbesTest, FailedHookFeedsItsOutput) {
  hooks_probes_->RunHookAction(
      lifecycle::RunHook{"app", 2, lifecycle::HookKind::kPostStart, std::nullopt});
  ASSERT_EQ(execs_.size(), 1u);
  execs_[0].done(false, "exit status 3");
  EXPECT_THAT(fed_, ElementsAre(lifecycle::Event(lifecycle::HookFinished{
                        "app", 2, lifecycle::HookKind::kPostStart, false, "exit status 3"})));
}

TEST_F(HooksAndProbesTest, PreStopHookLearnsTheStopReason) {
  hooks_probes_->RunHookAction(
      lifecycle::RunHook{"app", 1, lifecycle::HookKind::kPreStop, "Deleted"});
  ASSERT_EQ(execs_.size(), 1u);
  EXPECT_EQ(execs_[0].name, "preStop");
  EXPECT_THAT(execs_[0].env, ElementsAre("KUBE_POD_TERM_REASON=Deleted"));
}

TEST_F(HooksAndProbesTest, HookOfAnInstanceThatIsGoneSucceedsFromTheLoop) {
  gone_.insert(1);
  hooks_probes_->RunHookAction(
      lifecycle::RunHook{"app", 1, lifecycle::HookKind::kPostStart, std::nullopt});
  EXPECT_THAT(execs_, IsEmpty());
  EXPECT_THAT(fed_, IsEmpty());  // never from inside the action
  Turn();
  EXPECT_THAT(fed_, ElementsAre(lifecycle::Event(lifecycle::HookFinished{
                        "app", 1, lifecycle::HookKind::kPostStart, true, ""})));
}

TEST_F(HooksAndProbesTest, CancelHookKillsItsExecAndFeedsNothing) {
  hooks_probes_->RunHookAction(
      lifecycle::RunHook{"app", 1, lifecycle::HookKind::kPreStop, std::nullopt});
  ASSERT_EQ(execs_.size(), 1u);
  hooks_probes_->CancelHookAction(lifecycle::CancelHook{"app", 1, lifecycle::HookKind::kPreStop});
  EXPECT_TRUE(execs_[0].killed);
  execs_[0].done(false, "killed");
  Pass(1s);
  EXPECT_THAT(fed_, IsEmpty());
}

TEST_F(HooksAndProbesTest, ReadinessProbeRunsAfterItsInitialDelayAndFeedsChanges) {
  hooks_probes_->StartProbesAction(lifecycle::StartProbes{
      "app", 1, lifecycle::ProbeKind::kReadiness, clock_.Now(), std::nullopt});
  Pass(4900ms);
  EXPECT_THAT(execs_, IsEmpty());  // S7.6: initialDelaySeconds first
  Pass(100ms);
  ASSERT_EQ(execs_.size(), 1u);
  EXPECT_EQ(execs_[0].name, "readiness");
  EXPECT_THAT(execs_[0].args, ElementsAre("ready?"));
  EXPECT_EQ(execs_[0].timeout, std::optional<Duration>(2s));
  execs_[0].done(true, "");
  EXPECT_THAT(fed_, ElementsAre(lifecycle::Event(lifecycle::ProbeResult{
                        "app", 1, lifecycle::ProbeKind::kReadiness, true, ""})));

  Pass(9900ms);
  EXPECT_EQ(execs_.size(), 1u);  // periodSeconds after the first run was due
  Pass(100ms);
  ASSERT_EQ(execs_.size(), 2u);
  execs_[1].done(false, "not yet");
  EXPECT_THAT(fed_,
              ElementsAre(lifecycle::Event(lifecycle::ProbeResult{
                              "app", 1, lifecycle::ProbeKind::kReadiness, true, ""}),
                          lifecycle::Event(lifecycle::ProbeResult{
                              "app", 1, lifecycle::ProbeKind::kReadiness, false, "not yet"})));
  ASSERT_EQ(published_.size(), 1u);
  EXPECT_EQ(published_[0].reason, "Unhealthy");
  EXPECT_EQ(published_[0].object, "container/app");
  EXPECT_EQ(published_[0].message, "Readiness probe failed: not yet");
}

TEST_F(HooksAndProbesTest, AnUnchangedResultIsNotFed) {
  hooks_probes_->StartProbesAction(lifecycle::StartProbes{
      "app", 1, lifecycle::ProbeKind::kReadiness, clock_.Now(), std::nullopt});
  Pass(5s);
  ASSERT_EQ(execs_.size(), 1u);
  execs_[0].done(true, "");
  Pass(10s);
  ASSERT_EQ(execs_.size(), 2u);
  execs_[1].done(true, "");
  EXPECT_EQ(fed_.size(), 1u);  // S7.3: only changes reach the Lifecycle
}

TEST_F(HooksAndProbesTest, AResumedReadyProbeFeedsOnlyAChange) {
  const MonoTime started = clock_.Now() - 600s;  // under the old supervisor
  hooks_probes_->StartProbesAction(
      lifecycle::StartProbes{"app", 1, lifecycle::ProbeKind::kReadiness, started, true});
  Pass(100ms);  // at once, on the grid: not initialDelaySeconds from now
  ASSERT_EQ(execs_.size(), 1u);
  execs_[0].done(true, "");
  EXPECT_THAT(fed_, IsEmpty());  // still ready: no event, no flip
  Pass(10s);
  ASSERT_EQ(execs_.size(), 2u);
  execs_[1].done(false, "down");
  EXPECT_THAT(fed_, ElementsAre(lifecycle::Event(lifecycle::ProbeResult{
                        "app", 1, lifecycle::ProbeKind::kReadiness, false, "down"})));
}

TEST_F(HooksAndProbesTest, AResumedUnreadyProbeFeedsItsFirstSuccess) {
  hooks_probes_->StartProbesAction(lifecycle::StartProbes{
      "app", 1, lifecycle::ProbeKind::kReadiness, clock_.Now() - 600s, false});
  Pass(100ms);
  ASSERT_EQ(execs_.size(), 1u);
  execs_[0].done(true, "");
  EXPECT_THAT(fed_, ElementsAre(lifecycle::Event(lifecycle::ProbeResult{
                        "app", 1, lifecycle::ProbeKind::kReadiness, true, ""})));
}

TEST_F(HooksAndProbesTest, StopProbesCancelsTheRunInFlight) {
  hooks_probes_->StartProbesAction(lifecycle::StartProbes{
      "app", 1, lifecycle::ProbeKind::kReadiness, clock_.Now(), std::nullopt});
  Pass(5s);
  ASSERT_EQ(execs_.size(), 1u);
  hooks_probes_->StopProbesAction(
      lifecycle::StopProbes{"app", 1, lifecycle::ProbeKind::kReadiness});
  execs_[0].done(true, "late");
  Pass(30s);
  EXPECT_THAT(fed_, IsEmpty());
  EXPECT_EQ(execs_.size(), 1u);  // and no run after it
}

TEST_F(HooksAndProbesTest, ProbeOfAnInstanceThatIsGoneDoesNotRun) {
  gone_.insert(1);
  hooks_probes_->StartProbesAction(lifecycle::StartProbes{
      "app", 1, lifecycle::ProbeKind::kReadiness, clock_.Now(), std::nullopt});
  Pass(5s);
  Pass(10s);
  EXPECT_THAT(execs_, IsEmpty());
  EXPECT_THAT(fed_, IsEmpty());
}

TEST_F(HooksAndProbesTest, ContainerWithoutThatProbeStartsNone) {
  hooks_probes_->StartProbesAction(lifecycle::StartProbes{"app", 1, lifecycle::ProbeKind::kLiveness,
                                                          clock_.Now(), std::nullopt});
  hooks_probes_->StartProbesAction(lifecycle::StartProbes{
      "ghost", 1, lifecycle::ProbeKind::kReadiness, clock_.Now(), std::nullopt});
  Pass(60s);
  EXPECT_THAT(execs_, IsEmpty());
}

}  // namespace
}  // namespace podvisor::supervisor::executor
