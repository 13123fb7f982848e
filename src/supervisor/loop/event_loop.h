// EventLoop: the one place podvisor waits. A single epoll instance watches
// every descriptor (signalfd, pidfds, pipes, sockets) and one timerfd that
// is armed for the earliest deadline of a min-heap of timers, so a timeout
// is just another readiness event (docs/ARCHITECTURE.md "The shell"); timers
// already due when the loop comes round run without the timerfd.
//
// Handlers run on the loop's thread, one at a time, and may add or remove
// descriptors and timers, including their own. Each registration carries a
// generation number in the epoll data, so an event already fetched for a
// descriptor that was removed (and whose number was reused) in the same
// batch is dropped instead of reaching the new owner.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/clock.h"
#include "common/fd.h"
#include "common/result.h"

namespace podvisor::supervisor::loop {

class EventLoop {
 public:
  using FdHandler = std::function<void(uint32_t epoll_events)>;
  using TimerHandler = std::function<void()>;
  using TimerId = uint64_t;

  // `clock`: where the loop and the shell around it take the time from
  // (common/clock.h); it must outlive the loop. The default is the real
  // monotonic clock, the one the timerfd counts on.
  static Result<EventLoop> Create(const Clock& clock = DefaultClock());
  EventLoop(EventLoop&&) = default;
  EventLoop& operator=(EventLoop&&) = default;

  // Watches `fd` (not owned) for `events` (EPOLLIN, EPOLLOUT, ...).
  Status Add(int fd, uint32_t events, FdHandler handler);
  Status Modify(int fd, uint32_t events);
  // Stops watching; safe to call from any handler, and for unknown fds.
  void Remove(int fd);
  bool Watching(int fd) const { return fds_.count(fd) != 0; }

  // Runs `handler` once, when the monotonic clock reaches `deadline`.
  TimerId AddTimer(MonoTime deadline, TimerHandler handler);
  // Forgets a timer that has not fired; unknown or fired ids are ignored.
  void CancelTimer(TimerId id);
  std::size_t pending_timers() const { return timers_.size(); }

  // Waits for at least one event (or until `max_wait` passes, when given)
  // and dispatches everything ready. EINTR is not an error.
  Status RunOnce(std::optional<Duration> max_wait = std::nullopt);

  // Dispatches until Stop() is called from a handler.
  Status Run();
  void Stop() { stopped_ = true; }
  bool stopped() const { return stopped_; }

  // The one clock of the loop's owner: timers fire when it reaches their
  // deadline, and code on the loop reads "now" here rather than from
  // steady_clock, so that tests can drive it with a FakeClock.
  const Clock& clock() const { return *clock_; }
  MonoTime Now() const { return clock_->Now(); }

 private:
  EventLoop(Fd epoll, Fd timerfd, const Clock& clock)
      : epoll_(std::move(epoll)), timerfd_(std::move(timerfd)), clock_(&clock) {}
  static const Clock& DefaultClock();
  void RearmTimerFd();
  bool TimerDue(MonoTime now);  // drops cancelled timers from the heap top
  void OnTimerFd();
  void FireDueTimers();

  struct Watch {
    uint32_t generation;
    std::shared_ptr<FdHandler> handler;
  };
  struct Timer {
    MonoTime deadline;
    TimerId id;
    bool operator>(const Timer& o) const {
      return deadline != o.deadline ? deadline > o.deadline : id > o.id;
    }
  };

  Fd epoll_;
  Fd timerfd_;
  const Clock* clock_;  // a pointer, so that the loop stays movable
  std::unordered_map<int, Watch> fds_;
  uint32_t next_generation_ = 1;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> heap_;
  std::unordered_map<TimerId, TimerHandler> timers_;  // live timers only
  TimerId next_timer_ = 1;
  MonoTime armed_for_{};
  bool stopped_ = false;
};

}  // namespace podvisor::supervisor::loop
