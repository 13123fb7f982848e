#include "process/signalfd.h"

#include <gtest/gtest.h>

#include <csignal>

#include "process/reaper.h"
#include "process/spawn.h"
#include "process/test_util.h"

namespace podvisor::process {
namespace {

using testing::WaitReadable;

// The library restores nothing; tests put the mask back themselves so the
// rest of the binary runs with the mask it started with.
class SignalMaskGuard {
 public:
  SignalMaskGuard() : saved_(CurrentSignalMask()) {}
  ~SignalMaskGuard() { (void)SetSignalMask(saved_); }

 private:
  SignalSet saved_;
};

TEST(SignalSet, RendersMembersByName) {
  SignalSet set{SIGTERM, SIGINT, SIGCHLD};
  EXPECT_EQ(set.ToString(), "SIGINT SIGTERM SIGCHLD");
  EXPECT_TRUE(set.Contains(SIGINT));
  EXPECT_FALSE(set.Contains(SIGHUP));
  EXPECT_EQ(set.Members(), (std::vector<int>{SIGINT, SIGTERM, SIGCHLD}));
  set.Remove(SIGINT);
  set.Add(SIGHUP);
  EXPECT_EQ(set.ToString(), "SIGHUP SIGTERM SIGCHLD");
}

TEST(SignalSet, EmptyAndFull) {
  EXPECT_TRUE(SignalSet().empty());
  EXPECT_EQ(SignalSet().ToString(), "(none)");
  SignalSet full = SignalSet::Full();
  EXPECT_TRUE(full.Contains(SIGKILL));
  EXPECT_TRUE(full.Contains(SIGRTMAX));
}

TEST(SignalFd, BlockSignalsReturnsPreviousMask) {
  SignalMaskGuard guard;
  SignalSet before = CurrentSignalMask();
  auto previous = BlockSignals({SIGUSR2});
  ASSERT_TRUE(previous.ok()) << previous.error().message();
  EXPECT_EQ(*previous, before);
  EXPECT_TRUE(CurrentSignalMask().Contains(SIGUSR2));
}

TEST(SignalFd, ReceivesRaisedSigusr1) {
  SignalMaskGuard guard;
  auto sfd = SignalFd::Create({SIGUSR1});
  ASSERT_TRUE(sfd.ok()) << sfd.error().message();
  EXPECT_TRUE(CurrentSignalMask().Contains(SIGUSR1));

  ASSERT_EQ(::raise(SIGUSR1), 0);
  ASSERT_TRUE(WaitReadable(sfd->fd()));
  auto records = sfd->Read();
  ASSERT_TRUE(records.ok()) << records.error().message();
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ((*records)[0].ssi_signo, static_cast<uint32_t>(SIGUSR1));
  EXPECT_EQ((*records)[0].ssi_pid, static_cast<uint32_t>(::getpid()));
}

TEST(SignalFd, ReadWithNothingPendingIsEmpty) {
  SignalMaskGuard guard;
  auto sfd = SignalFd::Create({SIGUSR1});
  ASSERT_TRUE(sfd.ok()) << sfd.error().message();
  auto records = sfd->Read();
  ASSERT_TRUE(records.ok()) << records.error().message();
  EXPECT_TRUE(records->empty());
}

TEST(SignalFd, DrainsEveryPendingSignal) {
  SignalMaskGuard guard;
  auto sfd = SignalFd::Create({SIGUSR1, SIGUSR2, SIGRTMIN + 1});
  ASSERT_TRUE(sfd.ok()) << sfd.error().message();
  ::raise(SIGUSR1);
  ::raise(SIGUSR2);
  // Real-time signals queue instead of coalescing.
  ::raise(SIGRTMIN + 1);
  ::raise(SIGRTMIN + 1);
  auto records = sfd->Read();
  ASSERT_TRUE(records.ok()) << records.error().message();
  ASSERT_EQ(records->size(), 4u);
  auto again = sfd->Read();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
}

TEST(SignalFd, ReceivesSigchldWhenChildExits) {
  SignalMaskGuard guard;
  auto sfd = SignalFd::Create({SIGCHLD});
  ASSERT_TRUE(sfd.ok()) << sfd.error().message();

  auto child = Spawn({.argv = {"/bin/true"}});
  ASSERT_TRUE(child.ok()) << child.error().message();
  child->Commit();
  pid_t pid = child->pid();

  ASSERT_TRUE(WaitReadable(sfd->fd()));
  auto records = sfd->Read();
  ASSERT_TRUE(records.ok()) << records.error().message();
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ((*records)[0].ssi_signo, static_cast<uint32_t>(SIGCHLD));
  EXPECT_EQ((*records)[0].ssi_pid, static_cast<uint32_t>(pid));
  EXPECT_EQ((*records)[0].ssi_code, CLD_EXITED);

  auto reaped = ReapAll();
  ASSERT_TRUE(reaped.ok()) << reaped.error().message();
  EXPECT_EQ(*reaped, std::vector<ExitInfo>{ExitInfo::Exited(pid, 0)});
}

TEST(SignalFd, DestroyingLeavesSignalsBlocked) {
  SignalMaskGuard guard;
  {
    auto sfd = SignalFd::Create({SIGUSR2});
    ASSERT_TRUE(sfd.ok()) << sfd.error().message();
  }
  EXPECT_TRUE(CurrentSignalMask().Contains(SIGUSR2));
}

}  // namespace
}  // namespace podvisor::process
