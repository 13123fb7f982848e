// Time for podvisor. Every duration in the lifecycle semantics is
// monotonic (MonoTime); wall-clock time (WallTime) only appears in what
// users read: status timestamps, events and log lines.
//
// The Clock interface is the shell's one seam for time: the EventLoop holds
// one (EventLoop::clock(), the executor's ExecutorOptions::clock), and the
// executor, the control server, probes and hooks read "now" from it, so
// tests drive them with a FakeClock. The pure Lifecycle core never reads a
// clock at all, it is handed `now` with every event. Blocking waits before
// a loop exists (recovery, CNI plugin calls, the control client) count
// real time against the kernel's own timeouts and read steady_clock.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace podvisor {

using MonoTime = std::chrono::steady_clock::time_point;
using WallTime = std::chrono::system_clock::time_point;
using Duration = std::chrono::nanoseconds;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual MonoTime Now() const = 0;
  virtual WallTime WallNow() const = 0;
};

class RealClock final : public Clock {
 public:
  MonoTime Now() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override { return std::chrono::system_clock::now(); }
};

// A clock that only moves when told to; wall time moves with it.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(WallTime wall_origin = WallTime(std::chrono::seconds(1'700'000'000)))
      : wall_origin_(wall_origin) {}
  MonoTime Now() const override { return now_; }
  WallTime WallNow() const override {
    return wall_origin_ + std::chrono::duration_cast<WallTime::duration>(now_.time_since_epoch());
  }
  void Advance(Duration d) { now_ += d; }
  void Set(MonoTime t) { now_ = t; }

 private:
  MonoTime now_{};
  WallTime wall_origin_;
};

// RFC 3339 in UTC: "2026-11-22T10:04:05Z" (seconds), with ".123Z" (millis)
// or ".123456789Z" (nanos, the CRI log and events format).
enum class TimePrecision { kSeconds, kMillis, kNanos };
std::string FormatRfc3339(WallTime t, TimePrecision precision = TimePrecision::kSeconds);

// The UTC calendar fields of a time, by <chrono>'s civil-calendar
// arithmetic. Unlike gmtime_r and timegm this takes no lock and never
// reads /etc/localtime, which glibc loads on the first call even for UTC:
// a client command would pay for that file on every run.
struct UtcFields {
  int year = 1970;
  unsigned month = 1, day = 1;  // 1-12, 1-31
  unsigned hour = 0, minute = 0, second = 0;
  unsigned weekday = 4;  // 0 = Sunday (1970-01-01 was a Thursday)
};
UtcFields ToUtcFields(WallTime t);
// The inverse, whole seconds; nullopt for a date that does not exist.
std::optional<WallTime> FromUtcFields(const UtcFields& f);

}  // namespace podvisor
