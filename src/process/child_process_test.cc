#include "process/child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

#include "process/pidfd.h"
#include "process/reaper.h"
#include "process/spawn.h"
#include "process/test_util.h"

namespace podvisor::process {
namespace {

using testing::HasNoChildren;
using ::testing::HasSubstr;
using testing::IsRunningChild;
using testing::WaitReadable;

ChildProcess SpawnSleep() {
  auto child = Spawn({.argv = {"/bin/sleep", "1000"}});
  EXPECT_TRUE(child.ok()) << child.error().message();
  return child.ok() ? std::move(*child) : ChildProcess();
}

// True when `pid` is no longer our child: neither running nor a zombie.
bool IsGoneForGood(pid_t pid) {
  siginfo_t info = {};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == -1 &&
         errno == ECHILD;
}

TEST(ChildProcess, DestructorKillsAndReapsUncommittedChild) {
  pid_t pid = 0;
  {
    ChildProcess child = SpawnSleep();
    ASSERT_TRUE(child.valid());
    pid = child.pid();
    EXPECT_TRUE(IsRunningChild(pid));
  }
  EXPECT_TRUE(IsGoneForGood(pid));  // no zombie either
  EXPECT_TRUE(HasNoChildren());
}

TEST(ChildProcess, KillAndReapReportsSigkill) {
  ChildProcess child = SpawnSleep();
  pid_t pid = child.pid();
  auto exit = child.KillAndReap();
  ASSERT_TRUE(exit.ok()) << exit.error().message();
  EXPECT_EQ(*exit, ExitInfo::Killed(pid, SIGKILL));
  EXPECT_EQ(exit->ToString(), "killed by SIGKILL");
  EXPECT_FALSE(child.valid());
  EXPECT_TRUE(IsGoneForGood(pid));
}

TEST(ChildProcess, CommittedChildOutlivesItsHandle) {
  ChildProcess child = SpawnSleep();
  pid_t pid = child.pid();
  Fd pidfd(::fcntl(child.pidfd(), F_DUPFD_CLOEXEC, 3));
  ASSERT_TRUE(pidfd.valid());
  child.Commit();
  { ChildProcess dropped = std::move(child); }
  EXPECT_TRUE(IsRunningChild(pid));

  ASSERT_TRUE(PidfdSendSignal(pidfd.get(), SIGKILL).ok());
  ASSERT_TRUE(WaitReadable(pidfd.get()));
  auto reaped = ReapAll();
  ASSERT_TRUE(reaped.ok()) << reaped.error().message();
  EXPECT_EQ(*reaped, std::vector<ExitInfo>{ExitInfo::Killed(pid, SIGKILL)});
}

TEST(ChildProcess, ReleaseGivesUpTheProcess) {
  ChildProcess child = SpawnSleep();
  pid_t pid = child.pid();
  Fd pidfd = child.Release();
  EXPECT_FALSE(child.valid());
  EXPECT_EQ(child.pid(), 0);
  { ChildProcess dropped = std::move(child); }
  EXPECT_TRUE(IsRunningChild(pid));

  ChildProcess again(pid, std::move(pidfd));  // uncommitted: kills on scope exit
}

TEST(ChildProcess, MoveAssignmentKillsTheProcessItReplaces) {
  ChildProcess child = SpawnSleep();
  pid_t first = child.pid();
  child = SpawnSleep();
  EXPECT_TRUE(IsGoneForGood(first));
  EXPECT_NE(child.pid(), first);
  EXPECT_TRUE(IsRunningChild(child.pid()));
}

TEST(ChildProcess, SendSignalToAZombieSucceeds) {
  auto child = Spawn({.argv = {"/bin/true"}});
  ASSERT_TRUE(child.ok()) << child.error().message();
  child->Commit();
  ASSERT_TRUE(WaitReadable(child->pidfd()));
  // Exited, not yet reaped: the pid is still held, the signal is ignored.
  EXPECT_TRUE(child->SendSignal(SIGTERM).ok());
  auto reaped = ReapExitedChild(child->pid());
  ASSERT_TRUE(reaped.ok() && reaped->has_value());
  EXPECT_TRUE((*reaped)->success());
}

TEST(ChildProcess, SendSignalAfterReapIsEsrch) {
  // S5.9: after the process is reaped its pid may belong to anyone; the
  // pidfd still names the dead process, so nothing else can be hit.
  auto child = Spawn({.argv = {"/bin/true"}});
  ASSERT_TRUE(child.ok()) << child.error().message();
  child->Commit();
  ASSERT_TRUE(WaitReadable(child->pidfd()));
  auto reaped = ReapExitedChild(child->pid());
  ASSERT_TRUE(reaped.ok() && reaped->has_value());

  Status sent = child->SendSignal(SIGTERM);
  ASSERT_FALSE(sent.ok());
  EXPECT_TRUE(IsNoSuchProcess(sent.error()));
  EXPECT_EQ(sent.error().message(), "signalling pid " + std::to_string(child->pid()) +
                                        ": pidfd_send_signal SIGTERM: ESRCH (No such process)");
}

TEST(ChildProcess, SendSignalOnEmptyHandleIsEbadf) {
  ChildProcess empty;
  Status sent = empty.SendSignal(SIGTERM);
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.error().code(), EBADF);
  EXPECT_FALSE(IsNoSuchProcess(sent.error()));
}

TEST(ChildProcess, AdoptsAChildByPid) {
  // A child we know only by pid, as the container init read from the
  // runtime's --pid-file.
  pid_t pid = 0;
  {
    ChildProcess original = SpawnSleep();
    pid = original.pid();
    original.Release();  // the pidfd is dropped; the process runs on
  }
  auto adopted = ChildProcess::Adopt(pid);
  ASSERT_TRUE(adopted.ok()) << adopted.error().message();
  EXPECT_EQ(adopted->pid(), pid);
  EXPECT_FALSE(adopted->committed());
  ASSERT_TRUE(adopted->SendSignal(SIGTERM).ok());
  ASSERT_TRUE(WaitReadable(adopted->pidfd()));
  auto exit = adopted->KillAndReap();
  ASSERT_TRUE(exit.ok()) << exit.error().message();
  EXPECT_EQ(*exit, ExitInfo::Killed(pid, SIGTERM));
}

TEST(ChildProcess, AdoptRefusesAProcessThatIsNotOurChild) {
  pid_t parent = ::getppid();
  if (parent <= 0) GTEST_SKIP() << "no visible parent process";
  auto adopted = ChildProcess::Adopt(parent);
  ASSERT_FALSE(adopted.ok());
  EXPECT_EQ(adopted.error().code(), ECHILD);
  EXPECT_THAT(adopted.error().message(), HasSubstr("not this process"));
}

TEST(ChildProcess, ChildAncestorOfAGrandchildIsTheChildBetween) {
  // As crun's run --detach leaves it: the init (a grandchild) is still
  // the child of a process ours, which has yet to exit.
  int pipefd[2];
  ASSERT_EQ(::pipe2(pipefd, O_CLOEXEC), 0);
  auto child =
      Spawn({.argv = {"/bin/sh", "-c", "sleep 1000 & echo $!; wait"}, .stdout_fd = pipefd[1]});
  ::close(pipefd[1]);
  ASSERT_TRUE(child.ok()) << child.error().message();
  char buf[32] = {};
  ASSERT_GT(::read(pipefd[0], buf, sizeof buf - 1), 0);
  ::close(pipefd[0]);
  pid_t grandchild = std::atoi(buf);
  ASSERT_GT(grandchild, 0);
  EXPECT_EQ(ChildProcess::ChildAncestorOf(grandchild), child->pid());
  EXPECT_EQ(ChildProcess::ChildAncestorOf(child->pid()), child->pid());
  EXPECT_EQ(ChildProcess::Adopt(grandchild).error().code(), ECHILD);
  ::kill(grandchild, SIGKILL);
  ASSERT_TRUE(child->KillAndReap().ok());
}

TEST(ChildProcess, ChildAncestorOfAnUnrelatedProcessIsNone) {
  if (::getpid() == 1) GTEST_SKIP() << "as PID 1, every process is our descendant";
  pid_t parent = ::getppid();
  if (parent <= 0) GTEST_SKIP() << "no visible parent process";
  EXPECT_EQ(ChildProcess::ChildAncestorOf(parent), 0);
}

TEST(ChildProcess, AdoptOfAReapedPidIsEsrch) {
  auto child = Spawn({.argv = {"/bin/true"}});
  ASSERT_TRUE(child.ok()) << child.error().message();
  pid_t pid = child->pid();
  ASSERT_TRUE(WaitReadable(child->pidfd()));
  ASSERT_TRUE(child->KillAndReap().ok());
  auto adopted = ChildProcess::Adopt(pid);
  if (adopted.ok()) GTEST_SKIP() << "pid " << pid << " was reused already";
  EXPECT_TRUE(IsNoSuchProcess(adopted.error())) << adopted.error().message();
}

TEST(ChildProcess, AdoptRejectsNonPositivePids) {
  auto adopted = ChildProcess::Adopt(0);
  ASSERT_FALSE(adopted.ok());
  EXPECT_EQ(adopted.error().code(), EINVAL);
}

}  // namespace
}  // namespace podvisor::process
