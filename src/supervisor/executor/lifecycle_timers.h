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

namespace podvisor::supervisor {

class LifecycleTimers {
 public:
  using Feed = std::function<void(Event)>;
  LifecycleTimers(EventLoop& loop, Feed feed) : loop_(loop), feed_(std::move(feed)) {}
  ~LifecycleTimers() { Clear(); }
  LifecycleTimers(const LifecycleTimers&) = delete;
  LifecycleTimers& operator=(const LifecycleTimers&) = delete;

  void Arm(const ArmTimer& arm);
  void Cancel(const CancelTimer& cancel);
  void Clear();  // the pod's end: nothing fires after it
  std::size_t armed() const { return timers_.size(); }

 private:
  EventLoop& loop_;
  Feed feed_;
  std::map<std::string, EventLoop::TimerId, std::less<>> timers_;  // by ToString(TimerId)
};

}  // namespace podvisor::supervisor
