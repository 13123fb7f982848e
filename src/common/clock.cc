#include "common/clock.h"

#include <ctime>

#include <cstdio>

namespace podvisor {

std::string FormatRfc3339(WallTime t, TimePrecision precision) {
  using namespace std::chrono;
  auto since_epoch = duration_cast<nanoseconds>(t.time_since_epoch());
  auto secs = floor<seconds>(since_epoch);
  auto nanos = (since_epoch - secs).count();
  std::time_t tt = secs.count();
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                        tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
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
