#include "process/proc_stat.h"

#include <cerrno>
#include <charconv>
#include <string>

#include "common/file_io.h"

namespace podvisor::process {

Result<uint64_t> ParseStartTime(std::string_view stat) {
  auto close = stat.rfind(')');
  if (close == std::string_view::npos) return Error("no command name in a stat line", EINVAL);
  // After ") " comes field 3 (the state); the start time is field 22.
  constexpr int kFieldsToSkip = 22 - 3;
  std::string_view rest = stat.substr(close + 1);
  for (int field = 0; field <= kFieldsToSkip; ++field) {
    auto begin = rest.find_first_not_of(' ');
    if (begin == std::string_view::npos) return Error("a stat line too short", EINVAL);
    rest.remove_prefix(begin);
    auto end = rest.find_first_of(" \n");
    std::string_view word = rest.substr(0, end);
    if (field == kFieldsToSkip) {
      uint64_t value = 0;
      auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
      if (ec != std::errc() || ptr != word.data() + word.size() || word.empty()) {
        return Error("a stat line's start time is not a number", EINVAL);
      }
      return value;
    }
    rest.remove_prefix(word.size());
  }
  return Error("a stat line too short", EINVAL);
}

Result<uint64_t> ProcessStartTime(pid_t pid) {
  std::string what = "the start time of pid " + std::to_string(pid);
  if (pid <= 0) return Error(what + ": not a process id", EINVAL);
  auto text = ReadFileBounded("/proc/" + std::to_string(pid) + "/stat");
  if (!text) {
    // /proc/PID missing: the process is gone (or never was).
    int code = text.error().code() == ENOENT ? ESRCH : text.error().code();
    return Error(text.error().message(), code).Wrap(what);
  }
  auto start = ParseStartTime(*text);
  if (!start) return start.take_error().Wrap(what);
  return start;
}

}  // namespace podvisor::process
