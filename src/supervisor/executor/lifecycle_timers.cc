#include "supervisor/executor/lifecycle_timers.h"

namespace podvisor::supervisor::executor {

void LifecycleTimers::Arm(const lifecycle::ArmTimer& arm) {
  std::string key = lifecycle::ToString(arm.id);
  if (auto it = timers_.find(key); it != timers_.end()) loop_.CancelTimer(it->second);
  timers_[key] = loop_.AddTimer(arm.deadline, [this, key, id = arm.id] {
    timers_.erase(key);
    feed_(lifecycle::TimerFired{id});
  });
}

void LifecycleTimers::Cancel(const lifecycle::CancelTimer& cancel) {
  auto it = timers_.find(lifecycle::ToString(cancel.id));
  if (it == timers_.end()) return;
  loop_.CancelTimer(it->second);
  timers_.erase(it);
}

void LifecycleTimers::Clear() {
  for (const auto& [key, id] : timers_) loop_.CancelTimer(id);
  timers_.clear();
}

}  // namespace podvisor::supervisor::executor
