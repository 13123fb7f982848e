#include "common/clock.h"

#include <cstdio>

namespace podvisor {

UtcFields ToUtcFields(WallTime t) {
  using namespace std::chrono;
  const auto secs = floor<seconds>(t);
  const auto days = floor<std::chrono::days>(secs);
  const year_month_day ymd{days};
  const hh_mm_ss<seconds> time{secs - days};
  UtcFields f;
  f.year = static_cast<int>(ymd.year());
  f.month = static_cast<unsigned>(ymd.month());
  f.day = static_cast<unsigned>(ymd.day());
  f.hour = static_cast<unsigned>(time.hours().count());
  f.minute = static_cast<unsigned>(time.minutes().count());
  f.second = static_cast<unsigned>(time.seconds().count());
  f.weekday = weekday{days}.c_encoding();
  return f;
}

std::optional<WallTime> FromUtcFields(const UtcFields& f) {
  using namespace std::chrono;
  const year_month_day ymd{year{f.year}, month{f.month}, day{f.day}};
  if (!ymd.ok()) return std::nullopt;
  return WallTime(sys_days{ymd}) + hours{f.hour} + minutes{f.minute} + seconds{f.second};
}

std::string FormatRfc3339(WallTime t, TimePrecision precision) {
  using namespace std::chrono;
  auto since_epoch = duration_cast<nanoseconds>(t.time_since_epoch());
  auto nanos = (since_epoch - floor<seconds>(since_epoch)).count();
  const UtcFields f = ToUtcFields(t);
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02u:%02u:%02u", f.year, f.month, f.day,
                        f.hour, f.minute, f.second);
  switch (precision) {
    case TimePrecision::kSeconds:
      break;
    case TimePrecision::kMillis:
      n += std::snprintf(buf + n, sizeof buf - n, ".%03lld",
                         static_cast<long long>(nanos / 1'000'000));
      break;
    case TimePrecision::kNanos:
      n += std::snprintf(buf + n, sizeof buf - n, ".%09lld", static_cast<long long>(nanos));
      break;
  }
  std::snprintf(buf + n, sizeof buf - n, "Z");
  return buf;
}

}  // namespace podvisor
