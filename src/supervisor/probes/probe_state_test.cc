// S7.3: thresholds and initial results.
#include "supervisor/probes/probe_state.h"

#include <gtest/gtest.h>

namespace podvisor::supervisor {
namespace {

pod::Probe WithThresholds(int success, int failure) {
  pod::Probe p;
  p.success_threshold = success;
  p.failure_threshold = failure;
  return p;
}

TEST(ProbeState, S7_3_InitialResults) {
  pod::Probe p;
  EXPECT_EQ(ProbeState(ProbeKind::kReadiness, p).result(), false);
  EXPECT_EQ(ProbeState(ProbeKind::kLiveness, p).result(), true);
  EXPECT_EQ(ProbeState(ProbeKind::kStartup, p).result(), std::nullopt);
}

TEST(ProbeState, S7_3_FailureNeedsThresholdConsecutiveFailures) {
  ProbeState s(ProbeKind::kLiveness, WithThresholds(1, 3));
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
  ProbeState s(ProbeKind::kReadiness, WithThresholds(2, 1));
  EXPECT_EQ(s.Record(ProbeOutcome::kSuccess), std::nullopt);
  EXPECT_EQ(s.Record(ProbeOutcome::kSuccess), true);
  EXPECT_EQ(s.Record(ProbeOutcome::kFailure), false);
  EXPECT_EQ(s.Record(ProbeOutcome::kSuccess), std::nullopt);
  EXPECT_EQ(s.Record(ProbeOutcome::kSuccess), true);
}

TEST(ProbeState, S7_3_StartupLeavesUnknownOnFirstDecision) {
  ProbeState ok(ProbeKind::kStartup, WithThresholds(1, 3));
  EXPECT_EQ(ok.Record(ProbeOutcome::kSuccess), true);
  ProbeState failing(ProbeKind::kStartup, WithThresholds(1, 2));
  EXPECT_EQ(failing.Record(ProbeOutcome::kFailure), std::nullopt);
  EXPECT_EQ(failing.result(), std::nullopt);
  EXPECT_EQ(failing.Record(ProbeOutcome::kFailure), false);
}

}  // namespace
}  // namespace podvisor::supervisor
