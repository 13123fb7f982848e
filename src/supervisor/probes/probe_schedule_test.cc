// S7.4 and S7.6: when probes run and when they pause, driven by a fake
// clock as the prober drives the schedule (FirstRun, then per run
// BeginRun at the due time and RecordOutcome when the outcome is in).
#include "supervisor/probes/probe_schedule.h"

#include <gtest/gtest.h>

namespace podvisor::supervisor::probes {
namespace {

using namespace std::chrono_literals;

pod::Probe MakeProbe(int initial_delay, int period, int failure_threshold = 3) {
  pod::Probe p;
  p.initial_delay_seconds = initial_delay;
  p.period_seconds = period;
  p.failure_threshold = failure_threshold;
  return p;
}

// A clock a little off the grid, as real start times are.
class ProbeScheduleTest : public ::testing::Test {
 protected:
  ProbeScheduleTest() { clock.Set(MonoTime(1000s + 1234ms)); }
  MonoTime At(Duration since_origin) const { return MonoTime(1000s) + since_origin; }
  FakeClock clock;
};

TEST(ProbeTick, S7_6_RoundsUpToTheNextTenthOfASecond) {
  EXPECT_EQ(OnProbeTick(MonoTime(5s + 1ns)), MonoTime(5s + 100ms));
  EXPECT_EQ(OnProbeTick(MonoTime(5s + 99ms)), MonoTime(5s + 100ms));
  EXPECT_EQ(OnProbeTick(MonoTime(5s + 100ms)), MonoTime(5s + 100ms));  // on the grid
  EXPECT_EQ(OnProbeTick(MonoTime(5s)), MonoTime(5s));
}

TEST_F(ProbeScheduleTest, S7_6_FirstRunAfterInitialDelay) {
  ProbeSchedule s(lifecycle::ProbeKind::kReadiness, MakeProbe(5, 10));
  MonoTime started = clock.Now();
  clock.Advance(30ms);  // the probes start a moment after the container
  EXPECT_EQ(s.FirstRun(clock.Now(), started), At(6s + 300ms));  // 1.234 + 5 on the grid
  EXPECT_EQ(s.next_run(), At(6s + 300ms));
}

TEST_F(ProbeScheduleTest, S7_6_FirstRunWithoutInitialDelayIsAtOnceNotAtAPeriodBoundary) {
  ProbeSchedule s(lifecycle::ProbeKind::kLiveness, MakeProbe(0, 10));
  EXPECT_EQ(s.FirstRun(clock.Now(), clock.Now()), At(1s + 300ms));
}

TEST_F(ProbeScheduleTest, S7_6_FirstRunCountsFromNowWhenTheStartIsUnknown) {
  ProbeSchedule s(lifecycle::ProbeKind::kReadiness, MakeProbe(3, 10));
  EXPECT_EQ(s.FirstRun(clock.Now(), MonoTime{}), At(4s + 300ms));
}

TEST_F(ProbeScheduleTest, S7_6_HeldBackProbeRunsAtOnceWhenItsDelayHasPassed) {
  ProbeSchedule s(lifecycle::ProbeKind::kReadiness, MakeProbe(5, 10));
  MonoTime started = clock.Now();
  clock.Advance(20s);  // the startup probe succeeded only now
  EXPECT_EQ(s.FirstRun(clock.Now(), started), At(21s + 300ms));
}

TEST_F(ProbeScheduleTest, S7_6_HeldBackProbeWaitsForTheRestOfItsDelay) {
  ProbeSchedule s(lifecycle::ProbeKind::kLiveness, MakeProbe(30, 10));
  MonoTime started = clock.Now();
  clock.Advance(20s);
  EXPECT_EQ(s.FirstRun(clock.Now(), started), At(31s + 300ms));
}

TEST_F(ProbeScheduleTest, AResumedProbeRunsAtOnceOnTheGrid) {
  ProbeSchedule s(lifecycle::ProbeKind::kReadiness, MakeProbe(5, 10, 1));
  MonoTime started = clock.Now();
  clock.Advance(3600s);  // the new supervisor took over an hour later
  s.Resume(true);
  EXPECT_EQ(s.FirstRun(clock.Now(), started), At(3601s + 300ms));
  EXPECT_EQ(s.state().result(), true);
  s.BeginRun();
  EXPECT_FALSE(s.RecordOutcome(ProbeOutcome::kSuccess, clock.Now()).changed);
  s.BeginRun();
  EXPECT_EQ(s.RecordOutcome(ProbeOutcome::kFailure, clock.Now()).changed, false);
}

TEST_F(ProbeScheduleTest, AResumedProbeStillWaitsForTheRestOfItsDelay) {
  ProbeSchedule s(lifecycle::ProbeKind::kLiveness, MakeProbe(30, 10));
  MonoTime started = clock.Now();
  clock.Advance(2s);
  s.Resume(true);
  EXPECT_EQ(s.FirstRun(clock.Now(), started), At(31s + 300ms));
}

TEST_F(ProbeScheduleTest, S7_6_LaterRunsFollowThePeriodFromWhenTheRunWasDue) {
  ProbeSchedule s(lifecycle::ProbeKind::kReadiness, MakeProbe(0, 10));
  MonoTime due = s.FirstRun(clock.Now(), clock.Now());
  clock.Set(due + 40ms);  // the loop came round a little late
  EXPECT_EQ(s.BeginRun(), 1s);
  clock.Advance(200ms);  // the run took a while
  ProbeNext next = s.RecordOutcome(ProbeOutcome::kSuccess, clock.Now());
  EXPECT_FALSE(next.paused);
  EXPECT_EQ(next.next_run, due + 10s);
  EXPECT_EQ(s.next_run(), due + 10s);
  clock.Set(next.next_run);
  s.BeginRun();
  EXPECT_EQ(s.RecordOutcome(ProbeOutcome::kSuccess, clock.Now()).next_run, due + 20s);
}

TEST_F(ProbeScheduleTest, S7_6_AnOutcomeAfterTheNextDueTimeRunsAgainAtOnceOnTheGrid) {
  pod::Probe p = MakeProbe(0, 1);
  p.timeout_seconds = 5;
  ProbeSchedule s(lifecycle::ProbeKind::kReadiness, p);
  MonoTime due = s.FirstRun(clock.Now(), clock.Now());
  clock.Set(due);
  EXPECT_EQ(s.BeginRun(), 5s);
  clock.Advance(3s + 450ms);  // past due + 1s: never schedule in the past
  ProbeNext next = s.RecordOutcome(ProbeOutcome::kFailure, clock.Now());
  EXPECT_EQ(next.next_run, OnProbeTick(clock.Now()));
  EXPECT_GE(next.next_run, clock.Now());
  EXPECT_LT(next.next_run, clock.Now() + kProbeTick);
}

TEST_F(ProbeScheduleTest, S7_6_PeriodAndTimeoutAreAtLeastOneSecond) {
  pod::Probe p = MakeProbe(0, 0);
  p.timeout_seconds = 0;
  ProbeSchedule s(lifecycle::ProbeKind::kReadiness, p);
  MonoTime due = s.FirstRun(clock.Now(), clock.Now());
  EXPECT_EQ(s.BeginRun(), 1s);
  EXPECT_EQ(s.RecordOutcome(ProbeOutcome::kSuccess, due).next_run, due + 1s);
}

TEST_F(ProbeScheduleTest, S7_4_StartupProbePausesAfterSucceeding) {
  ProbeSchedule s(lifecycle::ProbeKind::kStartup, MakeProbe(0, 1));
  s.FirstRun(clock.Now(), clock.Now());
  s.BeginRun();
  ProbeNext next = s.RecordOutcome(ProbeOutcome::kSuccess, clock.Now());
  EXPECT_EQ(next.changed, true);
  EXPECT_TRUE(next.paused);
}

TEST_F(ProbeScheduleTest, S7_4_StartupProbeRunsUntilItsFailureThresholdThenPauses) {
  ProbeSchedule s(lifecycle::ProbeKind::kStartup, MakeProbe(0, 1, 3));
  s.FirstRun(clock.Now(), clock.Now());
  for (int run = 1; run <= 2; ++run) {
    clock.Set(s.next_run());
    s.BeginRun();
    ProbeNext next = s.RecordOutcome(ProbeOutcome::kFailure, clock.Now());
    EXPECT_EQ(next.changed, std::nullopt) << "run " << run;
    EXPECT_FALSE(next.paused) << "run " << run;
  }
  clock.Set(s.next_run());
  s.BeginRun();
  ProbeNext next = s.RecordOutcome(ProbeOutcome::kFailure, clock.Now());
  EXPECT_EQ(next.changed, false);
  EXPECT_TRUE(next.paused);
}

TEST_F(ProbeScheduleTest, S7_4_LivenessPausesAfterAFailureOnly) {
  ProbeSchedule s(lifecycle::ProbeKind::kLiveness, MakeProbe(0, 1, 2));
  s.FirstRun(clock.Now(), clock.Now());
  s.BeginRun();
  EXPECT_FALSE(s.RecordOutcome(ProbeOutcome::kSuccess, clock.Now()).paused);
  s.BeginRun();
  ProbeNext first = s.RecordOutcome(ProbeOutcome::kFailure, clock.Now());
  EXPECT_EQ(first.changed, std::nullopt);  // below the threshold
  EXPECT_FALSE(first.paused);
  s.BeginRun();
  ProbeNext second = s.RecordOutcome(ProbeOutcome::kFailure, clock.Now());
  EXPECT_EQ(second.changed, false);
  EXPECT_TRUE(second.paused);
}

TEST_F(ProbeScheduleTest, S7_4_ReadinessNeverPauses) {
  ProbeSchedule s(lifecycle::ProbeKind::kReadiness, MakeProbe(0, 1, 1));
  s.FirstRun(clock.Now(), clock.Now());
  s.BeginRun();
  ProbeNext ready = s.RecordOutcome(ProbeOutcome::kSuccess, clock.Now());
  EXPECT_EQ(ready.changed, true);
  EXPECT_FALSE(ready.paused);
  s.BeginRun();
  ProbeNext unready = s.RecordOutcome(ProbeOutcome::kFailure, clock.Now());
  EXPECT_EQ(unready.changed, false);
  EXPECT_FALSE(unready.paused);
  EXPECT_EQ(s.state().result(), false);
}

}  // namespace
}  // namespace podvisor::supervisor::probes
