// Follows the pod's events.jsonl (docs/INTERFACE.md, "Events") while the
// pod runs, event-driven through inotify: the shim publishes /tasks/oom
// the moment the supervisor records an OOMKilled container, as runc's shim
// does from its cgroup's memory.events, and not only when the pod ends.
// The file is the supervisor's own record, so this works the same on a
// cgroup v1, hybrid or v2 host.
//
// The pod's directory does not exist before `run` makes it, so the state
// directory is watched for it first; `run` replaces an old events.jsonl
// with a new file, which a changed inode shows.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>

#include "common/fd.h"
#include "common/result.h"
#include "supervisor/loop/event_loop.h"

namespace podvisor::shim {

class EventsFollower {
 public:
  using LineHandler = std::function<void(const std::string& line)>;

  // Watches `state_dir`/`pod`/events.jsonl; `on_line` gets each complete
  // line once, in order. `state_dir` is created when missing.
  static Result<std::unique_ptr<EventsFollower>> Start(supervisor::loop::EventLoop& loop,
                                                       const std::filesystem::path& state_dir,
                                                       const std::string& pod, LineHandler on_line);
  ~EventsFollower();
  EventsFollower(const EventsFollower&) = delete;
  EventsFollower& operator=(const EventsFollower&) = delete;

  // Reads what has been appended since the last read (the loop calls it on
  // every change; the task's end calls it once more).
  void Drain();

 private:
  EventsFollower(supervisor::loop::EventLoop& loop, std::filesystem::path state_dir,
                 std::string pod, LineHandler on_line);
  void OnInotify();
  void WatchPodDir();

  supervisor::loop::EventLoop& loop_;
  std::filesystem::path state_dir_;
  std::string pod_;
  LineHandler on_line_;
  Fd inotify_;
  int pod_watch_ = -1;
  ino_t inode_ = 0;
  off_t offset_ = 0;
  std::string partial_;  // a line not yet ended by '\n'
};

}  // namespace podvisor::shim
