#include "common/log.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>

#include "common/clock.h"
#include "common/terminal_text.h"

namespace podvisor::log {
namespace {

// Plain globals, no constructors: a client that never logs touches
// nothing here (issue: nothing the client doesn't need before main).
std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
std::atomic<int> g_style{static_cast<int>(Style::kText)};

constexpr std::array<std::string_view, 7> kNames = {"trace", "debug",    "info", "warning",
                                                    "error", "critical", "off"};

// "2026-11-24T05:12:03.123Z" (digits 3) or ".123456Z" (digits 6).
void AppendTime(std::string& out, long long unix_ns, int digits) {
  long fraction = static_cast<long>(unix_ns % 1000000000LL);
  const UtcFields t = ToUtcFields(WallTime(std::chrono::seconds(unix_ns / 1000000000LL)));
  char buf[48];
  long shown = digits == 3 ? fraction / 1000000 : fraction / 1000;
  int n = std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02u:%02u:%02u.%0*ldZ", t.year, t.month,
                        t.day, t.hour, t.minute, t.second, digits, shown);
  out.append(buf, static_cast<std::size_t>(n));
}

}  // namespace

std::optional<Level> ParseLevel(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (name == kNames[i]) return static_cast<Level>(i);
  }
  if (name == "warn") return Level::kWarning;
  if (name == "err") return Level::kError;
  return std::nullopt;
}

std::string_view LevelName(Level level) {
  return kNames[static_cast<std::size_t>(level)];
}

void Configure(Style style, Level level) {
  g_style.store(static_cast<int>(style), std::memory_order_relaxed);
  SetLevel(level);
}

void SetLevel(Level level) {
  g_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

bool Enabled(Level level) {
  return level != Level::kOff && static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

std::string FormatLine(Style style, Level level, std::string_view message, long long unix_ns) {
  std::string line;
  line.reserve(message.size() + 96);
  switch (style) {
    case Style::kText:
      AppendTime(line, unix_ns, 3);
      line += " podvisor ";
      line += LevelName(level);
      line += ": ";
      line += TerminalSafe(message);
      break;
    case Style::kJson:
      line += "{\"time\":\"";
      AppendTime(line, unix_ns, 6);
      line += "\",\"level\":\"";
      line += LevelName(level);
      line += "\",\"logger\":\"podvisor\",\"msg\":";
      line += TerminalSafeJson(message);
      line += '}';
      break;
    case Style::kShim:
      AppendTime(line, unix_ns, 6);
      line += ' ';
      line += LevelName(level);
      line += " containerd-shim-podvisor-v1 ";
      line += TerminalSafe(message);
      break;
  }
  return line;
}

void Write(Level level, std::string_view message) {
  if (!Enabled(level)) return;
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  auto style = static_cast<Style>(g_style.load(std::memory_order_relaxed));
  std::string line = FormatLine(style, level, message, now.tv_sec * 1000000000LL + now.tv_nsec);
  line += '\n';
  // One write; a short write (a full pipe, a signal) finishes the line.
  std::string_view rest = line;
  while (!rest.empty()) {
    ssize_t n = ::write(STDERR_FILENO, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // stderr is gone: nowhere left to say so
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace podvisor::log
