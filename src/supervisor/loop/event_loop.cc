#include "supervisor/loop/event_loop.h"

#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <array>

namespace podvisor::supervisor::loop {
namespace {

// The timerfd's own registration uses a generation no descriptor gets.
constexpr uint32_t kTimerGeneration = 0;

uint64_t Pack(int fd, uint32_t generation) {
  return (static_cast<uint64_t>(generation) << 32) | static_cast<uint32_t>(fd);
}

}  // namespace

const Clock& EventLoop::DefaultClock() {
  static const RealClock clock;
  return clock;
}

Result<EventLoop> EventLoop::Create(const Clock& clock) {
  Fd epoll(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll) return Error::FromErrno("epoll_create1");
  // steady_clock is CLOCK_MONOTONIC on Linux, so heap deadlines can be
  // handed to the timerfd as absolute times.
  Fd timer(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!timer) return Error::FromErrno("timerfd_create");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = Pack(timer.get(), kTimerGeneration);
  if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, timer.get(), &ev) != 0) {
    return Error::FromErrno("epoll_ctl(timerfd)");
  }
  return EventLoop(std::move(epoll), std::move(timer), clock);
}

Status EventLoop::Add(int fd, uint32_t events, FdHandler handler) {
  if (fds_.count(fd)) return Error("fd " + std::to_string(fd) + " is already watched", EEXIST);
  uint32_t generation = next_generation_++;
  if (next_generation_ == kTimerGeneration) next_generation_ = 1;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = Pack(fd, generation);
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
    return Error::FromErrno("epoll_ctl(ADD, fd " + std::to_string(fd) + ")");
  }
  fds_[fd] = Watch{generation, std::make_shared<FdHandler>(std::move(handler))};
  return Ok();
}

Status EventLoop::Modify(int fd, uint32_t events) {
  auto it = fds_.find(fd);
  if (it == fds_.end()) return Error("fd " + std::to_string(fd) + " is not watched", ENOENT);
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = Pack(fd, it->second.generation);
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev) != 0) {
    return Error::FromErrno("epoll_ctl(MOD, fd " + std::to_string(fd) + ")");
  }
  return Ok();
}

void EventLoop::Remove(int fd) {
  auto it = fds_.find(fd);
  if (it == fds_.end()) return;
  // The descriptor may already be closed (its owner went first), in which
  // case the kernel dropped it from the epoll set and this fails: harmless.
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
  fds_.erase(it);
}

EventLoop::TimerId EventLoop::AddTimer(MonoTime deadline, TimerHandler handler) {
  TimerId id = next_timer_++;
  timers_.emplace(id, std::move(handler));
  heap_.push(Timer{deadline, id});
  RearmTimerFd();
  return id;
}

void EventLoop::CancelTimer(TimerId id) {
  // Lazy deletion: the heap entry stays and is skipped when it surfaces.
  timers_.erase(id);
}

// Arms the timerfd for the earliest live deadline, unless it is armed for
// that one or an earlier one already, or that deadline is due: RunOnce
// runs due timers itself, without a syscall. A probe every second per
// container makes several timer changes per probe, and most of them (a
// "now" from curl or a FailSoon, a later timeout) need no re-arm. The cost
// is a wakeup with nothing due when the armed timer was cancelled.
void EventLoop::RearmTimerFd() {
  while (!heap_.empty() && !timers_.count(heap_.top().id)) heap_.pop();
  if (heap_.empty()) return;
  MonoTime next = heap_.top().deadline;
  if (armed_for_ != MonoTime{} && armed_for_ <= next) return;
  if (next <= Now()) return;
  armed_for_ = next;
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(next.time_since_epoch()).count();
  itimerspec spec{};
  spec.it_value.tv_sec = ns / 1'000'000'000;
  spec.it_value.tv_nsec = ns % 1'000'000'000;
  ::timerfd_settime(timerfd_.get(), TFD_TIMER_ABSTIME, &spec, nullptr);
}

bool EventLoop::TimerDue(MonoTime now) {
  while (!heap_.empty() && !timers_.count(heap_.top().id)) heap_.pop();
  return !heap_.empty() && heap_.top().deadline <= now;
}

void EventLoop::OnTimerFd() {
  uint64_t expirations;
  // One read resets the expiration count; the fd is non-blocking.
  (void)!::read(timerfd_.get(), &expirations, sizeof expirations);
  armed_for_ = MonoTime{};  // it fired: nothing is armed now
  FireDueTimers();
}

void EventLoop::FireDueTimers() {
  MonoTime now = Now();
  // Timers added by handlers for "now" fire in this same pass, in order.
  while (!stopped_ && TimerDue(now)) {
    Timer t = heap_.top();
    heap_.pop();
    auto it = timers_.find(t.id);
    TimerHandler handler = std::move(it->second);
    timers_.erase(it);
    handler();
  }
  RearmTimerFd();
}

Status EventLoop::RunOnce(std::optional<Duration> max_wait) {
  std::array<epoll_event, 64> events;
  int timeout_ms = -1;
  if (max_wait) {
    timeout_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(*max_wait).count());
  }
  const bool due = TimerDue(Now());
  if (due) timeout_ms = 0;  // see what else is ready, then run them
  int n = ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), timeout_ms);
  if (n < 0) {
    if (errno == EINTR) return Ok();
    return Error::FromErrno("epoll_wait");
  }
  for (int i = 0; i < n && !stopped_; ++i) {
    int fd = static_cast<int>(events[i].data.u64 & 0xffffffffu);
    uint32_t generation = static_cast<uint32_t>(events[i].data.u64 >> 32);
    if (generation == kTimerGeneration && fd == timerfd_.get()) {
      OnTimerFd();
      continue;
    }
    auto it = fds_.find(fd);
    if (it == fds_.end() || it->second.generation != generation) continue;
    // Hold the handler alive even if it removes itself while running.
    std::shared_ptr<FdHandler> handler = it->second.handler;
    (*handler)(events[i].events);
  }
  if (due && !stopped_) FireDueTimers();
  return Ok();
}

Status EventLoop::Run() {
  stopped_ = false;
  while (!stopped_) {
    if (auto s = RunOnce(); !s) return s;
  }
  return Ok();
}

}  // namespace podvisor::supervisor::loop
