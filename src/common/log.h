// The supervisor's own log on stderr (docs/INTERFACE.md, --log-level and
// --log-format): one line per message, UTC timestamps, written with one
// write(2) so lines of concurrent writers never interleave.
//
// Our own, not spdlog: podvisor needs three fixed line formats and a level,
// not sinks, registries or pattern strings. spdlog's pattern machinery
// and registry were 100 KB of the static binary, its JSON pattern could
// not escape a quote in a message, and an unknown level silently turned
// logging off. Formatting is fmt's, checked at compile time.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>

namespace podvisor::log {

enum class Level : int { kTrace, kDebug, kInfo, kWarning, kError, kCritical, kOff };

enum class Style {
  // 2026-11-24T05:12:03.123Z podvisor info: the message
  kText,
  // {"time":"2026-11-24T05:12:03.123456Z","level":"info","logger":"podvisor","msg":"..."}
  kJson,
  // 2026-11-24T05:12:03.123456Z info containerd-shim-podvisor-v1 the message
  kShim,
};

// "trace", "debug", "info", "warn"/"warning", "error"/"err", "critical",
// "off"; nullopt for anything else.
std::optional<Level> ParseLevel(std::string_view name);
// The name a log line carries: "trace", ..., "warning", ..., "off".
std::string_view LevelName(Level level);

// Before the first call: kText at kInfo.
void Configure(Style style, Level level);
void SetLevel(Level level);
bool Enabled(Level level);

// One line at `level`, if enabled. Messages quote what containers wrote
// (termination messages, hook output, runtime errors), so `message` is
// made safe for the terminal stderr may be (S14.22): TerminalSafe in kText
// and kShim (a newline in it is "\n", never a second line), a JSON string
// that is also terminal-safe in kJson.
void Write(Level level, std::string_view message);
// The line Write would write at `unix_ns`, without its newline: for tests.
std::string FormatLine(Style style, Level level, std::string_view message, long long unix_ns);

template <typename... Args>
void Log(Level level, fmt::format_string<Args...> format, Args&&... args) {
  if (Enabled(level)) Write(level, fmt::vformat(format, fmt::make_format_args(args...)));
}
template <typename... Args>
void Trace(fmt::format_string<Args...> format, Args&&... args) {
  Log(Level::kTrace, format, std::forward<Args>(args)...);
}
template <typename... Args>
void Debug(fmt::format_string<Args...> format, Args&&... args) {
  Log(Level::kDebug, format, std::forward<Args>(args)...);
}
template <typename... Args>
void Info(fmt::format_string<Args...> format, Args&&... args) {
  Log(Level::kInfo, format, std::forward<Args>(args)...);
}
template <typename... Args>
void Warn(fmt::format_string<Args...> format, Args&&... args) {
  Log(Level::kWarning, format, std::forward<Args>(args)...);
}
template <typename... Args>
void Error(fmt::format_string<Args...> format, Args&&... args) {
  Log(Level::kError, format, std::forward<Args>(args)...);
}
template <typename... Args>
void Critical(fmt::format_string<Args...> format, Args&&... args) {
  Log(Level::kCritical, format, std::forward<Args>(args)...);
}

}  // namespace podvisor::log
