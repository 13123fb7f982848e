#include "common/clock.h"

#include <ctime>

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

TEST(Clock, UtcFieldsAgreeWithGmtimeAcrossCenturiesAndLeapDays) {
  // Against the C library, every 9,999,999 s (about 116 days) from 1900 to
  // 2200, and around leap days.
  for (int64_t s = -2'208'988'800; s < 7'258'118'400; s += 9'999'999) {
    for (int64_t probe : {s, s + 86'399}) {
      time_t tt = static_cast<time_t>(probe);
      std::tm tm{};
      ASSERT_NE(gmtime_r(&tt, &tm), nullptr);
      UtcFields f = ToUtcFields(WallTime(std::chrono::seconds(probe)));
      ASSERT_EQ(f.year, tm.tm_year + 1900) << probe;
      ASSERT_EQ(f.month, static_cast<unsigned>(tm.tm_mon + 1)) << probe;
      ASSERT_EQ(f.day, static_cast<unsigned>(tm.tm_mday)) << probe;
      ASSERT_EQ(f.hour, static_cast<unsigned>(tm.tm_hour)) << probe;
      ASSERT_EQ(f.minute, static_cast<unsigned>(tm.tm_min)) << probe;
      ASSERT_EQ(f.second, static_cast<unsigned>(tm.tm_sec)) << probe;
      ASSERT_EQ(f.weekday, static_cast<unsigned>(tm.tm_wday)) << probe;
      ASSERT_EQ(FromUtcFields(f), WallTime(std::chrono::seconds(probe))) << probe;
    }
  }
  UtcFields leap{.year = 2024, .month = 2, .day = 29, .hour = 23, .minute = 59, .second = 59};
  EXPECT_EQ(FormatRfc3339(*FromUtcFields(leap)), "2024-02-29T23:59:59Z");
  EXPECT_EQ(FromUtcFields({.year = 2023, .month = 2, .day = 29}), std::nullopt);
  EXPECT_EQ(FromUtcFields({.year = 2023, .month = 13, .day = 1}), std::nullopt);
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
