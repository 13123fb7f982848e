#include "process/proc_stat.h"

#include <sys/wait.h>

#include <cerrno>
#include <charconv>
#include <string>

#include "common/file_io.h"

namespace podvisor::process {

pid_t ParentOf(pid_t pid) {
  auto status = ReadFlatKeyed("/proc/" + std::to_string(pid) + "/status");
  if (!status) return -1;
  auto ppid = status->FindUnsigned("PPid");
  return ppid ? static_cast<pid_t>(*ppid) : -1;
}

Result<std::string_view> StatField(std::string_view stat, int number) {
  auto close = stat.rfind(')');
  if (close == std::string_view::npos) return Error("no command name in a stat line", EINVAL);
  if (number < 3) return Error("stat fields 1 and 2 are not read here", EINVAL);
  // After ") " comes field 3 (the state).
  std::string_view rest = stat.substr(close + 1);
  for (int field = 3;; ++field) {
    auto begin = rest.find_first_not_of(' ');
    if (begin == std::string_view::npos) return Error("a stat line too short", EINVAL);
    rest.remove_prefix(begin);
    auto end = rest.find_first_of(" \n");
    std::string_view word = rest.substr(0, end);
    if (field == number) return word;
    rest.remove_prefix(word.size());
  }
}

namespace {

Result<uint64_t> NumberField(std::string_view stat, int number, const char* name) {
  auto word = StatField(stat, number);
  if (!word) return word.take_error();
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(word->data(), word->data() + word->size(), value);
  if (ec != std::errc() || ptr != word->data() + word->size() || word->empty()) {
    return Error(std::string("a stat line's ") + name + " is not a number", EINVAL);
  }
  return value;
}

}  // namespace

Result<uint64_t> ParseStartTime(std::string_view stat) {
  return NumberField(stat, 22, "start time");
}

Result<std::optional<ExitInfo>> ZombieExit(pid_t pid, uint64_t start_time) {
  auto text = ReadFileBounded("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!text) return std::optional<ExitInfo>();  // reaped (or never there)
  auto start = ParseStartTime(*text);
  auto state = StatField(*text, 3);
  if (!start || !state || *start != start_time || *state != "Z") return std::optional<ExitInfo>();
  auto status = NumberField(*text, 52, "exit code");
  if (!status) return status.take_error();
  const int wait_status = static_cast<int>(*status);
  if (WIFSIGNALED(wait_status)) {
    return std::optional<ExitInfo>(
        ExitInfo::Killed(pid, WTERMSIG(wait_status), WCOREDUMP(wait_status)));
  }
  return std::optional<ExitInfo>(ExitInfo::Exited(pid, WEXITSTATUS(wait_status)));
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
