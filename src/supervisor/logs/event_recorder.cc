#include "supervisor/logs/event_recorder.h"

#include <fcntl.h>
#include <unistd.h>

namespace podvisor::supervisor::logs {

nlohmann::json EventToJson(const lifecycle::Publish& event, WallTime time) {
  return {{"time", FormatRfc3339(time, TimePrecision::kNanos)},
          {"type", std::string(lifecycle::EventTypeName(event.type))},
          {"reason", event.reason},
          {"object", event.object},
          {"message", event.message}};
}

Result<EventRecorder> EventRecorder::Open(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Error::FromErrno("opening " + path.string());
  return EventRecorder(path, Fd(fd));
}

Status EventRecorder::Record(const lifecycle::Publish& event, WallTime time) {
  // Hook output in messages may hold any bytes; replace invalid UTF-8
  // rather than refuse the event.
  std::string line =
      EventToJson(event, time).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line += '\n';
  ssize_t n;
  do {
    n = ::write(fd_.get(), line.data(), line.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) return Error::FromErrno("appending to " + path_.string());
  if (static_cast<std::size_t>(n) != line.size()) return Error("short write to " + path_.string());
  return Ok();
}

}  // namespace podvisor::supervisor::logs
