// supervisor::LifecycleTimers: the Lifecycle's ArmTimer and CancelTimer on
// the loop. A timer armed again under the same id moves (one timer per id,
// as the core expects); a fired timer is forgotten before its TimerFired
// is fed, so the Lifecycle may arm it again while handling it.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "supervisor/lifecycle/types.h"
#include "supervisor/loop/event_loop.h"

namespace podvisor::supervisor::executor {

class LifecycleTimers {
 public:
  using Feed = std::function<void(lifecycle::Event)>;
  LifecycleTimers(loop::EventLoop& loop, Feed feed) : loop_(loop), feed_(std::move(feed)) {}
  ~LifecycleTimers() { Clear(); }
  LifecycleTimers(const LifecycleTimers&) = delete;
  LifecycleTimers& operator=(const LifecycleTimers&) = delete;

  void Arm(const lifecycle::ArmTimer& arm);
  void Cancel(const lifecycle::CancelTimer& cancel);
  void Clear();  // the pod's end: nothing fires after it
  std::size_t armed() const { return timers_.size(); }

 private:
  loop::EventLoop& loop_;
  Feed feed_;
  std::map<std::string, loop::EventLoop::TimerId, std::less<>> timers_;  // by ToString(TimerId)
};

}  // namespace podvisor::supervisor::executor
