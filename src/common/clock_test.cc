#include "common/clock.h"

#include <gtest/gtest.h>

namespace podvisor {
namespace {

using namespace std::chrono_literals;

TEST(Clock, FormatsRfc3339InUtc) {
  WallTime t{std::chrono::seconds(1'700'000'000) + 123'456'789ns};
  EXPECT_EQ(FormatRfc3339(t), "2023-11-14T22:13:20Z");
  EXPECT_EQ(FormatRfc3339(t, TimePrecision::kMillis), "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(FormatRfc3339(t, TimePrecision::kNanos), "2023-11-14T22:13:20.123456789Z");
}

TEST(Clock, FakeClockMovesOnlyWhenTold) {
  FakeClock clock;
  MonoTime start = clock.Now();
  WallTime wall = clock.WallNow();
  EXPECT_EQ(clock.Now(), start);
  clock.Advance(2500ms);
  EXPECT_EQ(clock.Now() - start, 2500ms);
  EXPECT_EQ(clock.WallNow() - wall, 2500ms);
}

TEST(Clock, RealClockIsMonotonic) {
  RealClock clock;
  MonoTime a = clock.Now();
  MonoTime b = clock.Now();
  EXPECT_LE(a, b);
}

}  // namespace
}  // namespace podvisor
