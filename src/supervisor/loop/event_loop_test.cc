#include "supervisor/loop/event_loop.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace podvisor::supervisor::loop {
namespace {

using namespace std::chrono_literals;

EventLoop MakeLoop() {
  auto loop = EventLoop::Create();
  EXPECT_TRUE(loop.ok());
  return std::move(loop).value();
}

TEST(EventLoop, TimersFireInDeadlineOrder) {
  auto loop = MakeLoop();
  std::vector<int> fired;
  MonoTime now = std::chrono::steady_clock::now();
  loop.AddTimer(now + 30ms, [&] { fired.push_back(3); });
  loop.AddTimer(now + 10ms, [&] { fired.push_back(1); });
  loop.AddTimer(now + 20ms, [&] { fired.push_back(2); });
  loop.AddTimer(now + 40ms, [&] { loop.Stop(); });
  ASSERT_TRUE(loop.Run().ok());
  EXPECT_EQ(fired, (std::vector<int>{1, 2, 3}));
  EXPECT_GE(std::chrono::steady_clock::now(), now + 40ms);
}

TEST(EventLoop, CancelledTimersNeverFire) {
  auto loop = MakeLoop();
  bool fired = false;
  MonoTime now = std::chrono::steady_clock::now();
  auto id = loop.AddTimer(now + 5ms, [&] { fired = true; });
  loop.AddTimer(now + 20ms, [&] { loop.Stop(); });
  loop.CancelTimer(id);
  ASSERT_TRUE(loop.Run().ok());
  EXPECT_FALSE(fired);
  EXPECT_EQ(loop.pending_timers(), 0u);
}

TEST(EventLoop, PastDeadlinesFireAtOnceAndHandlersMayAddTimers) {
  auto loop = MakeLoop();
  int count = 0;
  MonoTime past = std::chrono::steady_clock::now() - 1s;
  loop.AddTimer(past, [&] {
    ++count;
    loop.AddTimer(std::chrono::steady_clock::now(), [&] {
      ++count;
      loop.Stop();
    });
  });
  ASSERT_TRUE(loop.Run().ok());
  EXPECT_EQ(count, 2);
}

TEST(EventLoop, DueTimerRunsOnTheNextRoundWhileALaterOneIsArmed) {
  auto loop = MakeLoop();
  MonoTime now = std::chrono::steady_clock::now();
  bool late = false, due = false;
  loop.AddTimer(now + 10s, [&] { late = true; });  // the timerfd is armed for this
  loop.AddTimer(now - 1ms, [&] { due = true; });   // due: needs no timerfd
  MonoTime before = std::chrono::steady_clock::now();
  ASSERT_TRUE(loop.RunOnce(5s).ok());
  EXPECT_TRUE(due);
  EXPECT_FALSE(late);
  EXPECT_LT(std::chrono::steady_clock::now() - before, 1s);
}

TEST(EventLoop, CancellingTheArmedTimerNeverFiresItOrTheNextOneEarly) {
  auto loop = MakeLoop();
  MonoTime now = std::chrono::steady_clock::now();
  bool cancelled_ran = false;
  MonoTime fired_at{};
  auto first = loop.AddTimer(now + 20ms, [&] { cancelled_ran = true; });
  loop.AddTimer(now + 60ms, [&] {
    fired_at = std::chrono::steady_clock::now();
    loop.Stop();
  });
  loop.CancelTimer(first);
  ASSERT_TRUE(loop.Run().ok());
  EXPECT_FALSE(cancelled_ran);
  EXPECT_GE(fired_at, now + 60ms);
}

TEST(EventLoop, DispatchesReadableDescriptors) {
  auto loop = MakeLoop();
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
  Fd r(fds[0]), w(fds[1]);
  std::string got;
  ASSERT_TRUE(loop.Add(r.get(), EPOLLIN,
                       [&](uint32_t) {
                         char buf[16];
                         ssize_t n = read(r.get(), buf, sizeof buf);
                         if (n > 0) got.append(buf, static_cast<size_t>(n));
                         loop.Stop();
                       })
                  .ok());
  EXPECT_FALSE(loop.Add(r.get(), EPOLLIN, [](uint32_t) {}).ok());  // one owner per fd
  ASSERT_EQ(write(w.get(), "hi", 2), 2);
  ASSERT_TRUE(loop.Run().ok());
  EXPECT_EQ(got, "hi");
}

TEST(EventLoop, AHandlerMayRemoveAnotherReadyDescriptor) {
  auto loop = MakeLoop();
  int a[2], b[2];
  ASSERT_EQ(pipe2(a, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(b, O_CLOEXEC), 0);
  Fd ar(a[0]), aw(a[1]), br(b[0]), bw(b[1]);
  int calls = 0;
  // Whichever runs first removes the other; the other must not run.
  ASSERT_TRUE(loop.Add(ar.get(), EPOLLIN,
                       [&](uint32_t) {
                         ++calls;
                         loop.Remove(br.get());
                         loop.Remove(ar.get());
                       })
                  .ok());
  ASSERT_TRUE(loop.Add(br.get(), EPOLLIN,
                       [&](uint32_t) {
                         ++calls;
                         loop.Remove(ar.get());
                         loop.Remove(br.get());
                       })
                  .ok());
  ASSERT_EQ(write(aw.get(), "x", 1), 1);
  ASSERT_EQ(write(bw.get(), "x", 1), 1);
  ASSERT_TRUE(loop.RunOnce(1s).ok());
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(loop.Watching(ar.get()));
  EXPECT_FALSE(loop.Watching(br.get()));
}

TEST(EventLoop, RunOnceHonoursMaxWait) {
  auto loop = MakeLoop();
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(loop.RunOnce(20ms).ok());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 15ms);
}

TEST(EventLoop, NowIsTheRealMonotonicClockByDefault) {
  auto loop = MakeLoop();
  MonoTime before = std::chrono::steady_clock::now();
  MonoTime now = loop.Now();
  EXPECT_GE(now, before);
  EXPECT_LE(now, std::chrono::steady_clock::now());
}

TEST(EventLoop, TimersFollowTheClockItWasGiven) {
  FakeClock clock;
  clock.Set(MonoTime(std::chrono::hours(1)));
  auto created = EventLoop::Create(clock);
  ASSERT_TRUE(created.ok());
  EventLoop loop = std::move(created).value();
  EXPECT_EQ(&loop.clock(), &clock);
  EXPECT_EQ(loop.Now(), MonoTime(std::chrono::hours(1)));
  bool fired = false;
  loop.AddTimer(loop.Now() + 10s, [&] { fired = true; });
  ASSERT_TRUE(loop.RunOnce(0ms).ok());
  EXPECT_FALSE(fired);  // the fake clock has not moved
  clock.Advance(9s);
  ASSERT_TRUE(loop.RunOnce(0ms).ok());
  EXPECT_FALSE(fired);
  clock.Advance(1s);
  ASSERT_TRUE(loop.RunOnce(0ms).ok());
  EXPECT_TRUE(fired);
}

}  // namespace
}  // namespace podvisor::supervisor::loop
