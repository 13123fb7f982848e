// Publishing task events to containerd the way containerd 1.6's own shims
// can: by running its `-publish-binary` (containerd itself) as
//   containerd --address ADDR publish --topic /tasks/exit --namespace NS
// with the event, a protobuf Any (type URL "containerd.events.TaskExit"),
// on stdin. Events go one at a time, in order: containerd's clients rely
// on /tasks/create coming before /tasks/start before /tasks/exit. A failed
// publish (containerd restarting) is retried up to 5 times, 1 s apart,
// on the loop's timers, as containerd's RemoteEventsPublisher does.
#pragma once

#include <deque>
#include <string>

#include "process/child_process.h"
#include "supervisor/loop/event_loop.h"

namespace google::protobuf {
class Message;
}

namespace podvisor::shim {

class Publisher {
 public:
  Publisher(supervisor::loop::EventLoop& loop, std::string publish_binary, std::string address,
            std::string ns)
      : loop_(loop),
        binary_(std::move(publish_binary)),
        address_(std::move(address)),
        namespace_(std::move(ns)) {}
  ~Publisher();
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  // Queues `event` under `topic` ("/tasks/exit"); the type URL is the
  // message's full protobuf name.
  void Publish(const std::string& topic, const google::protobuf::Message& event);

  // True when nothing is queued or being sent (the shim waits for this
  // before it exits, so /tasks/delete is not lost).
  bool idle() const { return queue_.empty() && !running_.valid(); }
  std::size_t published() const { return published_; }

 private:
  struct Item {
    std::string topic;
    std::string any;  // serialized google.protobuf.Any
    int attempts = 0;
  };
  void Next();
  void OnExit();

  supervisor::loop::EventLoop& loop_;
  std::string binary_;
  std::string address_;
  std::string namespace_;
  std::deque<Item> queue_;
  process::ChildProcess running_;
  bool waiting_retry_ = false;
  std::size_t published_ = 0;
};

}  // namespace podvisor::shim
