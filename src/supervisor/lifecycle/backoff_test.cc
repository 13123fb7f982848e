#include "supervisor/lifecycle/backoff.h"

#include <gtest/gtest.h>

namespace podvisor::supervisor::lifecycle {
namespace {

using namespace std::chrono_literals;

TEST(CrashLoopBackoff, S4_1_FirstRestartImmediateThenDoublingFromTenSecondsCappedAt300) {
  CrashLoopBackoff b;
  EXPECT_EQ(b.NextDelay(1s), Duration::zero());
  EXPECT_EQ(b.NextDelay(1s), Duration(10s));
  EXPECT_EQ(b.NextDelay(1s), Duration(20s));
  EXPECT_EQ(b.NextDelay(1s), Duration(40s));
  EXPECT_EQ(b.NextDelay(1s), Duration(80s));
  EXPECT_EQ(b.NextDelay(1s), Duration(160s));
  EXPECT_EQ(b.NextDelay(1s), Duration(300s));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(b.NextDelay(1s), Duration(300s));
}

TEST(CrashLoopBackoff, S4_2_AnInstanceThatRanTenMinutesResetsTheSequence) {
  CrashLoopBackoff b;
  b.NextDelay(0s);
  b.NextDelay(0s);
  EXPECT_EQ(b.NextDelay(9min + 59s), Duration(20s));
  EXPECT_EQ(b.NextDelay(10min), Duration::zero());
  EXPECT_EQ(b.NextDelay(1s), Duration(10s));
}

TEST(CrashLoopBackoff, S4_4_InitialCapAndResetAreOptions) {
  CrashLoopBackoff b(BackoffOptions{1s, 3s, 5s});
  EXPECT_EQ(b.NextDelay(0s), Duration::zero());
  EXPECT_EQ(b.NextDelay(0s), Duration(1s));
  EXPECT_EQ(b.NextDelay(0s), Duration(2s));
  EXPECT_EQ(b.NextDelay(0s), Duration(3s));
  EXPECT_EQ(b.NextDelay(5s), Duration::zero());
}

}  // namespace
}  // namespace podvisor::supervisor::lifecycle
