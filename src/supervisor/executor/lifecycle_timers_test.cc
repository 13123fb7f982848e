// LifecycleTimers on a loop driven by a FakeClock: what fires, when, and
// what a re-arm or a cancel leaves.
#include "supervisor/executor/lifecycle_timers.h"

#include <optional>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace podvisor::supervisor::executor {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

class LifecycleTimersTest : public ::testing::Test {
 protected:
  LifecycleTimersTest() : loop_(std::move(loop::EventLoop::Create(clock_)).value()) {
    clock_.Set(MonoTime{} + 1000s);
    timers_.emplace(loop_, [this](lifecycle::Event e) { fed_.push_back(std::move(e)); });
  }
  void Pass(Duration d) {
    clock_.Advance(d);
    ASSERT_TRUE(loop_.RunOnce(0ms).ok());
  }
  MonoTime At(Duration d) const { return clock_.Now() + d; }

  FakeClock clock_;
  loop::EventLoop loop_;
  std::vector<lifecycle::Event> fed_;
  std::optional<LifecycleTimers> timers_;
};

const lifecycle::TimerId kRestartApp{lifecycle::TimerKind::kRestart, "app", 2};
const lifecycle::TimerId kGrace{lifecycle::TimerKind::kGraceBudget, "", 0};

TEST_F(LifecycleTimersTest, ArmedTimerFeedsTimerFiredAtItsDeadlineOnce) {
  timers_->Arm(lifecycle::ArmTimer{kRestartApp, At(10s)});
  Pass(9s);
  EXPECT_THAT(fed_, IsEmpty());
  Pass(1s);
  EXPECT_THAT(fed_, ElementsAre(lifecycle::Event(lifecycle::TimerFired{kRestartApp})));
  EXPECT_EQ(timers_->armed(), 0u);
  Pass(60s);
  EXPECT_EQ(fed_.size(), 1u);
}

TEST_F(LifecycleTimersTest, ArmingTheSameIdAgainMovesTheTimer) {
  timers_->Arm(lifecycle::ArmTimer{kRestartApp, At(10s)});
  timers_->Arm(lifecycle::ArmTimer{kRestartApp, At(20s)});
  EXPECT_EQ(timers_->armed(), 1u);
  Pass(15s);
  EXPECT_THAT(fed_, IsEmpty());
  Pass(5s);
  EXPECT_THAT(fed_, ElementsAre(lifecycle::Event(lifecycle::TimerFired{kRestartApp})));
}

TEST_F(LifecycleTimersTest, CancelledTimerNeverFiresAndOthersStillDo) {
  timers_->Arm(lifecycle::ArmTimer{kRestartApp, At(5s)});
  timers_->Arm(lifecycle::ArmTimer{kGrace, At(5s)});
  timers_->Cancel(lifecycle::CancelTimer{kRestartApp});
  timers_->Cancel(lifecycle::CancelTimer{
      lifecycle::TimerId{lifecycle::TimerKind::kSigkill, "app", 1}});  // never armed
  Pass(5s);
  EXPECT_THAT(fed_, ElementsAre(lifecycle::Event(lifecycle::TimerFired{kGrace})));
}

TEST_F(LifecycleTimersTest, AFiredTimerMayBeArmedAgainFromItsOwnEvent) {
  timers_.emplace(loop_, [this](lifecycle::Event e) {
    fed_.push_back(e);
    if (fed_.size() == 1) timers_->Arm(lifecycle::ArmTimer{kRestartApp, At(3s)});
  });
  timers_->Arm(lifecycle::ArmTimer{kRestartApp, At(1s)});
  Pass(1s);
  EXPECT_EQ(timers_->armed(), 1u);
  Pass(3s);
  EXPECT_THAT(fed_, ElementsAre(lifecycle::Event(lifecycle::TimerFired{kRestartApp}),
                                lifecycle::Event(lifecycle::TimerFired{kRestartApp})));
}

TEST_F(LifecycleTimersTest, ClearedTimersNeverFire) {
  timers_->Arm(lifecycle::ArmTimer{kRestartApp, At(1s)});
  timers_->Arm(lifecycle::ArmTimer{kGrace, At(2s)});
  timers_->Clear();
  Pass(5s);
  EXPECT_THAT(fed_, IsEmpty());
  EXPECT_EQ(timers_->armed(), 0u);
}

}  // namespace
}  // namespace podvisor::supervisor::executor
