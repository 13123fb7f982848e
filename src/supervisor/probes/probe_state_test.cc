// S7.3: thresholds and initial results.
#include "supervisor/probes/probe_state.h"

#include <gtest/gtest.h>

namespace podvisor::supervisor::probes {
namespace {

pod::Probe WithThresholds(int success, int failure) {
  pod::Probe p;
  p.success_threshold = success;
  p.failure_threshold = failure;
  return p;
}

TEST(ProbeState, S7_3_InitialResults) {
  pod::Probe p;
  EXPECT_EQ(ProbeState(lifecycle::ProbeKind::kReadiness, p).result(), false);
  EXPECT_EQ(ProbeState(lifecycle::ProbeKind::kLiveness, p).result(), true);
  EXPECT_EQ(ProbeState(lifecycle::ProbeKind::kStartup, p).result(), std::nullopt);
}

TEST(ProbeState, S7_3_FailureNeedsThresholdConsecutiveFailures) {
  ProbeState s(lifecycle::ProbeKind::kLiveness, WithThresholds(1, 3));
  EXPECT_EQ(s.Record(ProbeOutcome::kFailure), std::nullopt);
  EXPECT_EQ(s.Record(ProbeOutcome::kFailure), std::nullopt);
  EXPECT_EQ(s.Record(ProbeOutcome::kSuccess), std::nullopt);  // resets the count
  EXPECT_EQ(s.Record(ProbeOutcome::kFailure), std::nullopt);
  EXPECT_EQ(s.Record(ProbeOutcome::kFailure), std::nullopt);
  EXPECT_EQ(s.Record(ProbeOutcome::kFailure), false);
  EXPECT_EQ(s.result(), false);
  EXPECT_EQ(s.Record(ProbeOutcome::kFailure), std::nullopt);  // no change, no report
}

TEST(ProbeState, S7_3_ReadinessSuccessNeedsSuccessThreshold) {
  ProbeState s(lifecycle::ProbeKind::kReadiness, WithThresholds(2, 1));
  EXPECT_EQ(s.Record(ProbeOutcome::kSuccess), std::nullopt);
  EXPECT_EQ(s.Record(ProbeOutcome::kSuccess), true);
  EXPECT_EQ(s.Record(ProbeOutcome::kFailure), false);
  EXPECT_EQ(s.Record(ProbeOutcome::kSuccess), std::nullopt);
  EXPECT_EQ(s.Record(ProbeOutcome::kSuccess), true);
}

TEST(ProbeState, AResumedReadinessKeepsItsStoredResult) {
  ProbeState s(lifecycle::ProbeKind::kReadiness, WithThresholds(2, 2));
  s.Record(ProbeOutcome::kFailure);  // counts of the old process are gone
  s.Resume(true);
  EXPECT_EQ(s.result(), true);
  EXPECT_EQ(s.consecutive_failures(), 0);
  EXPECT_EQ(s.Record(ProbeOutcome::kSuccess), std::nullopt);  // no change
  EXPECT_EQ(s.Record(ProbeOutcome::kSuccess), std::nullopt);
  EXPECT_EQ(s.Record(ProbeOutcome::kFailure), std::nullopt);  // threshold 2
  EXPECT_EQ(s.Record(ProbeOutcome::kFailure), false);
}

TEST(ProbeState, AResumedUnreadyReadinessReportsItsFirstSuccess) {
  ProbeState s(lifecycle::ProbeKind::kReadiness, WithThresholds(1, 1));
  s.Resume(false);
  EXPECT_EQ(s.Record(ProbeOutcome::kFailure), std::nullopt);
  EXPECT_EQ(s.Record(ProbeOutcome::kSuccess), true);
}

TEST(ProbeState, S7_3_StartupLeavesUnknownOnFirstDecision) {
  ProbeState ok(lifecycle::ProbeKind::kStartup, WithThresholds(1, 3));
  EXPECT_EQ(ok.Record(ProbeOutcome::kSuccess), true);
  ProbeState failing(lifecycle::ProbeKind::kStartup, WithThresholds(1, 2));
  EXPECT_EQ(failing.Record(ProbeOutcome::kFailure), std::nullopt);
  EXPECT_EQ(failing.result(), std::nullopt);
  EXPECT_EQ(failing.Record(ProbeOutcome::kFailure), false);
}

}  // namespace
}  // namespace podvisor::supervisor::probes
