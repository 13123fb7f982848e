// events.jsonl (docs/INTERFACE.md "Events"): one JSON object a line,
//   {"time": RFC3339Nano, "type": "Normal"|"Warning", "reason": "...",
//    "object": "pod"|"container/<name>", "message": "..."}
// appended with one write() per event, so `podvisor events -f` and log
// shippers reading the file never see half a line.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/fd.h"
#include "common/result.h"
#include "supervisor/lifecycle/types.h"

namespace podvisor::supervisor::logs {

nlohmann::json EventToJson(const lifecycle::Publish& event, WallTime time);

class EventRecorder {
 public:
  static Result<EventRecorder> Open(const std::filesystem::path& path);
  Status Record(const lifecycle::Publish& event, WallTime time);
  const std::filesystem::path& path() const { return path_; }

 private:
  EventRecorder(std::filesystem::path path, Fd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  std::filesystem::path path_;
  Fd fd_;
};

}  // namespace podvisor::supervisor::logs
