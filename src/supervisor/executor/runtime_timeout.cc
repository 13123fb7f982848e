#include "supervisor/executor/runtime_timeout.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

namespace podvisor::supervisor::executor {

bool BoundedByRuntimeTimeout(std::string_view step) {
  return step == "create" || step == "start" || step == "delete" || step == "state";
}

std::optional<MonoTime> RuntimeCallDeadline(MonoTime now, Duration timeout,
                                            std::optional<MonoTime> termination_end) {
  std::optional<MonoTime> at;
  if (timeout.count() > 0) at = now + timeout;
  if (termination_end) {
    const MonoTime cut = std::max(*termination_end, now + kRuntimeCallFloor);
    at = at ? std::min(*at, cut) : cut;
  }
  return at;
}

std::string RuntimeTimeoutMessage(std::string_view step, Duration timeout) {
  auto total_s = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count() / 1000.0;
  long minutes = static_cast<long>(total_s) / 60;
  double seconds = total_s - static_cast<double>(minutes * 60);
  // Go's duration notation, as runc's and the kubelet's messages use.
  char text[64];
  if (minutes > 0) {
    std::snprintf(text, sizeof text, "%ldm%gs", minutes, seconds);
  } else {
    std::snprintf(text, sizeof text, "%gs", seconds);
  }
  return "runtime " + std::string(step) + " did not finish within " + text + ": killed";
}

void RecordRuntimeTimeout(const std::filesystem::path& log_file, std::string_view step,
                          Duration timeout) {
  if (log_file.empty()) return;
  std::ofstream out(log_file, std::ios::app);
  out << nlohmann::json{{"level", "error"}, {"msg", RuntimeTimeoutMessage(step, timeout)}}.dump()
      << "\n";
}

}  // namespace podvisor::supervisor::executor
