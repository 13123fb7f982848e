#include "process/reaper.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "process/pidfd.h"
#include "process/signalfd.h"
#include "process/spawn.h"
#include "process/test_util.h"

namespace podvisor::process {
namespace {

using testing::HasNoChildren;
using testing::MakePipe;
using testing::Pipe;
using testing::ReadAll;
using testing::RunInForkedProcess;
using testing::WaitReadable;

ChildProcess MustSpawn(SpawnOptions options) {
  auto child = Spawn(options);
  EXPECT_TRUE(child.ok()) << child.error().message();
  return child.ok() ? std::move(*child) : ChildProcess();
}

// The process state letter from /proc/<pid>/stat ('Z' for a zombie).
char ProcState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
}

pid_t ParentOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PPid:", 0) == 0) return static_cast<pid_t>(std::stol(line.substr(5)));
  }
  return -1;
}

TEST(Reaper, TrueAndFalseExitCodesReachTheirOwners) {
  Reaper reaper;
  std::map<std::string, ExitInfo> exits;
  ChildProcess yes = MustSpawn({.argv = {"/bin/true"}});
  ChildProcess no = MustSpawn({.argv = {"/bin/false"}});
  ASSERT_TRUE(reaper.Track(yes, [&](const ExitInfo& e) { exits["true"] = e; }).ok());
  ASSERT_TRUE(reaper.Track(no, [&](const ExitInfo& e) { exits["false"] = e; }).ok());
  EXPECT_TRUE(yes.committed());
  EXPECT_EQ(reaper.watched_count(), 2u);

  ASSERT_TRUE(WaitReadable(yes.pidfd()));
  ASSERT_TRUE(WaitReadable(no.pidfd()));
  auto reaped = reaper.Dispatch();
  ASSERT_TRUE(reaped.ok()) << reaped.error().message();
  EXPECT_EQ(*reaped, 2u);
  EXPECT_EQ(exits["true"], ExitInfo::Exited(yes.pid(), 0));
  EXPECT_EQ(exits["false"], ExitInfo::Exited(no.pid(), 1));
  EXPECT_EQ(exits["false"].ToString(), "exited with code 1");
  EXPECT_EQ(reaper.watched_count(), 0u);
  EXPECT_EQ(reaper.orphans_reaped(), 0u);
  EXPECT_TRUE(HasNoChildren());
}

TEST(Reaper, ExitCodeThree) {
  Reaper reaper;
  std::optional<ExitInfo> exit;
  ChildProcess child = MustSpawn({.argv = {"/bin/sh", "-c", "exit 3"}});
  ASSERT_TRUE(reaper.Track(child, [&](const ExitInfo& e) { exit = e; }).ok());
  ASSERT_TRUE(WaitReadable(child.pidfd()));
  ASSERT_TRUE(reaper.Dispatch().ok());
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->ToString(), "exited with code 3");
  EXPECT_EQ(exit->KubernetesExitCode(), 3);
}

TEST(Reaper, SendSignalTermReportsKilledBySigterm) {
  // S5.9: the stop signal goes through the pidfd.
  Reaper reaper;
  std::optional<ExitInfo> exit;
  ChildProcess child = MustSpawn({.argv = {"/bin/sleep", "1000"}});
  ASSERT_TRUE(reaper.Track(child, [&](const ExitInfo& e) { exit = e; }).ok());
  ASSERT_TRUE(child.SendSignal(SIGTERM).ok());
  ASSERT_TRUE(WaitReadable(child.pidfd()));
  ASSERT_TRUE(reaper.Dispatch().ok());
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(*exit, ExitInfo::Killed(child.pid(), SIGTERM));
  EXPECT_EQ(exit->ToString(), "killed by SIGTERM");
  EXPECT_EQ(exit->KubernetesExitCode(), 143);
}

TEST(Reaper, PeekLeavesTheZombieInPlace) {
  ChildProcess child = MustSpawn({.argv = {"/bin/true"}});
  child.Commit();
  ASSERT_TRUE(WaitReadable(child.pidfd()));
  auto peeked = PeekExitedChild();
  ASSERT_TRUE(peeked.ok() && peeked->has_value());
  EXPECT_EQ((*peeked)->pid, child.pid());
  EXPECT_EQ(ProcState(child.pid()), 'Z');
  auto again = PeekExitedChild();
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((*again)->pid, child.pid());

  auto reaped = ReapExitedChild(child.pid());
  ASSERT_TRUE(reaped.ok() && reaped->has_value());
  EXPECT_EQ(**reaped, ExitInfo::Exited(child.pid(), 0));
  EXPECT_TRUE(HasNoChildren());
}

TEST(Reaper, NothingToReapIsNotAnError) {
  ASSERT_TRUE(HasNoChildren());
  auto peeked = PeekExitedChild();
  ASSERT_TRUE(peeked.ok());
  EXPECT_FALSE(peeked->has_value());
  auto reaped = ReapAll();
  ASSERT_TRUE(reaped.ok());
  EXPECT_TRUE(reaped->empty());
  Reaper reaper;
  auto dispatched = reaper.Dispatch();
  ASSERT_TRUE(dispatched.ok());
  EXPECT_EQ(*dispatched, 0u);
}

TEST(Reaper, RunningChildIsNotReaped) {
  ChildProcess child = MustSpawn({.argv = {"/bin/sleep", "1000"}});
  auto reaped = ReapExitedChild(child.pid());
  ASSERT_TRUE(reaped.ok());
  EXPECT_FALSE(reaped->has_value());
  auto all = ReapAll();
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
}

TEST(Reaper, UnknownPidsAreOrphansSeenWhileStillZombies) {
  Reaper reaper;
  std::vector<std::pair<ExitInfo, char>> orphans;
  reaper.SetOrphanHandler([&](const ExitInfo& e) { orphans.emplace_back(e, ProcState(e.pid)); });
  ChildProcess child = MustSpawn({.argv = {"/bin/false"}});
  child.Commit();  // committed but registered nowhere
  ASSERT_TRUE(WaitReadable(child.pidfd()));
  auto reaped = reaper.Dispatch();
  ASSERT_TRUE(reaped.ok()) << reaped.error().message();
  EXPECT_EQ(*reaped, 1u);
  EXPECT_EQ(reaper.orphans_reaped(), 1u);
  ASSERT_EQ(orphans.size(), 1u);
  EXPECT_EQ(orphans[0].first, ExitInfo::Exited(child.pid(), 1));
  EXPECT_EQ(orphans[0].second, 'Z');
  EXPECT_TRUE(HasNoChildren());
}

TEST(Reaper, WatchedExitsGoFirstSoTheirHandlersMayClaimAnUnknownOne) {
  // `run --detach`: the container init (here `init`, unknown to the
  // reaper) and the runtime call that started it (`runtime`, tracked)
  // have both exited. The waitid(P_ALL) peek finds `init` first, as it is
  // the older child; it must not be reaped as an orphan before the
  // runtime's handler has adopted it.
  Reaper reaper;
  ChildProcess init = MustSpawn({.argv = {"/bin/sh", "-c", "exit 7"}});
  init.Commit();
  ChildProcess runtime = MustSpawn({.argv = {"/bin/true"}});
  std::optional<ExitInfo> init_exit;
  std::vector<std::string> order;
  ASSERT_TRUE(reaper
                  .Track(runtime,
                         [&](const ExitInfo&) {
                           order.push_back("runtime");
                           ASSERT_TRUE(reaper
                                           .Watch(init.pid(),
                                                  [&](const ExitInfo& e) {
                                                    order.push_back("init");
                                                    init_exit = e;
                                                  })
                                           .ok());
                         })
                  .ok());
  ASSERT_TRUE(WaitReadable(init.pidfd()));
  ASSERT_TRUE(WaitReadable(runtime.pidfd()));
  auto reaped = reaper.Dispatch();
  ASSERT_TRUE(reaped.ok()) << reaped.error().message();
  EXPECT_EQ(*reaped, 2u);
  EXPECT_EQ(reaper.orphans_reaped(), 0u);
  EXPECT_THAT(order, ::testing::ElementsAre("runtime", "init"));
  ASSERT_TRUE(init_exit.has_value());
  EXPECT_EQ(*init_exit, ExitInfo::Exited(init.pid(), 7));
  EXPECT_TRUE(HasNoChildren());
}

TEST(Reaper, AHeldOrphanWaitsForTheCallThatClaimsIt) {
  // runc's `run --detach`: the init (unknown) has exited and is our
  // child, but the runtime (tracked) cannot be waited for yet. Held, the
  // init stays a zombie until the runtime's handler claims it.
  Reaper reaper;
  ChildProcess init = MustSpawn({.argv = {"/bin/sh", "-c", "exit 7"}});
  init.Commit();
  ChildProcess runtime = MustSpawn({.argv = {"/bin/sleep", "1000"}});
  std::optional<ExitInfo> init_exit;
  ASSERT_TRUE(
      reaper
          .Track(runtime,
                 [&](const ExitInfo&) {
                   ASSERT_TRUE(
                       reaper.Watch(init.pid(), [&](const ExitInfo& e) { init_exit = e; }).ok());
                 })
          .ok());
  reaper.SetOrphanHold([&] { return reaper.IsWatched(runtime.pid()); });
  ASSERT_TRUE(WaitReadable(init.pidfd()));
  auto reaped = reaper.Dispatch();
  ASSERT_TRUE(reaped.ok()) << reaped.error().message();
  EXPECT_EQ(*reaped, 0u);
  EXPECT_EQ(ProcState(init.pid()), 'Z') << "held: still a zombie";
  ASSERT_TRUE(runtime.SendSignal(SIGKILL).ok());
  ASSERT_TRUE(WaitReadable(runtime.pidfd()));
  reaped = reaper.Dispatch();
  ASSERT_TRUE(reaped.ok()) << reaped.error().message();
  EXPECT_EQ(*reaped, 2u);
  EXPECT_EQ(reaper.orphans_reaped(), 0u);
  ASSERT_TRUE(init_exit.has_value());
  EXPECT_EQ(*init_exit, ExitInfo::Exited(init.pid(), 7));
  EXPECT_TRUE(HasNoChildren());
}

TEST(Reaper, AHeldOrphanIsReapedOnceTheHoldEnds) {
  Reaper reaper;
  ChildProcess orphan = MustSpawn({.argv = {"/bin/true"}});
  orphan.Commit();
  ChildProcess call = MustSpawn({.argv = {"/bin/sleep", "1000"}});
  bool call_ended = false;
  ASSERT_TRUE(reaper.Track(call, [&](const ExitInfo&) { call_ended = true; }).ok());
  reaper.SetOrphanHold([&] { return !call_ended; });
  ASSERT_TRUE(WaitReadable(orphan.pidfd()));
  ASSERT_TRUE(reaper.Dispatch().ok());
  EXPECT_EQ(reaper.orphans_reaped(), 0u);
  ASSERT_TRUE(call.SendSignal(SIGKILL).ok());
  ASSERT_TRUE(WaitReadable(call.pidfd()));
  auto reaped = reaper.Dispatch();
  ASSERT_TRUE(reaped.ok()) << reaped.error().message();
  EXPECT_EQ(*reaped, 2u);
  EXPECT_EQ(reaper.orphans_reaped(), 1u);
  EXPECT_TRUE(HasNoChildren());
}

TEST(Reaper, AnOrphanHandlerMayClaimTheExit) {
  Reaper reaper;
  ChildProcess child = MustSpawn({.argv = {"/bin/sh", "-c", "exit 7"}});
  child.Commit();
  pid_t pid = child.pid();
  std::optional<ExitInfo> claimed;
  reaper.SetOrphanHandler([&](const ExitInfo& e) {
    if (e.pid == pid) {
      ASSERT_TRUE(reaper.Watch(pid, [&](const ExitInfo& exit) { claimed = exit; }).ok());
    }
  });
  ASSERT_TRUE(WaitReadable(child.pidfd()));
  auto reaped = reaper.Dispatch();
  ASSERT_TRUE(reaped.ok()) << reaped.error().message();
  EXPECT_EQ(*reaped, 1u);
  EXPECT_EQ(reaper.orphans_reaped(), 0u);
  ASSERT_TRUE(claimed.has_value());
  EXPECT_EQ(*claimed, ExitInfo::Exited(pid, 7));
  EXPECT_TRUE(HasNoChildren());
}

TEST(Reaper, WatchTwiceIsEexistAndUnwatchMakesAnOrphan) {
  Reaper reaper;
  ChildProcess child = MustSpawn({.argv = {"/bin/true"}});
  bool called = false;
  ASSERT_TRUE(reaper.Watch(child.pid(), [&](const ExitInfo&) { called = true; }).ok());
  Status twice = reaper.Watch(child.pid(), nullptr);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().code(), EEXIST);
  EXPECT_TRUE(reaper.IsWatched(child.pid()));
  EXPECT_TRUE(reaper.Unwatch(child.pid()));
  EXPECT_FALSE(reaper.Unwatch(child.pid()));
  child.Commit();
  ASSERT_TRUE(WaitReadable(child.pidfd()));
  ASSERT_TRUE(reaper.Dispatch().ok());
  EXPECT_FALSE(called);
  EXPECT_EQ(reaper.orphans_reaped(), 1u);
}

TEST(Reaper, HandlerMayWatchTheNextProcess) {
  // A restart: the exit handler spawns and tracks the successor.
  Reaper reaper;
  std::vector<ExitInfo> exits;
  ChildProcess successor;
  ChildProcess first = MustSpawn({.argv = {"/bin/true"}});
  ASSERT_TRUE(
      reaper
          .Track(
              first,
              [&](const ExitInfo& e) {
                exits.push_back(e);
                successor = MustSpawn({.argv = {"/bin/false"}});
                EXPECT_TRUE(
                    reaper.Track(successor, [&](const ExitInfo& e2) { exits.push_back(e2); }).ok());
              })
          .ok());
  ASSERT_TRUE(WaitReadable(first.pidfd()));
  ASSERT_TRUE(reaper.Dispatch().ok());
  ASSERT_TRUE(successor.valid());
  ASSERT_TRUE(WaitReadable(successor.pidfd()));
  ASSERT_TRUE(reaper.Dispatch().ok());
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_TRUE(exits[0].success());
  EXPECT_EQ(exits[1], ExitInfo::Exited(successor.pid(), 1));
}

TEST(Reaper, TrackRejectsAnEmptyHandle) {
  Reaper reaper;
  ChildProcess empty;
  Status tracked = reaper.Track(empty, nullptr);
  ASSERT_FALSE(tracked.ok());
  EXPECT_EQ(tracked.error().code(), EBADF);
}

// ChildProcess and Reaper never both collect one exit (child_process.h).
TEST(ReaperAndChildProcess, CommittedExitIsLeftForTheReaper) {
  Reaper reaper;
  std::optional<ExitInfo> exit;
  pid_t pid = 0;
  {
    ChildProcess child = MustSpawn({.argv = {"/bin/true"}});
    pid = child.pid();
    ASSERT_TRUE(reaper.Track(child, [&](const ExitInfo& e) { exit = e; }).ok());
    ASSERT_TRUE(WaitReadable(child.pidfd()));
  }  // the committed handle only closes its pidfd
  EXPECT_EQ(ProcState(pid), 'Z');
  ASSERT_TRUE(reaper.Dispatch().ok());
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(*exit, ExitInfo::Exited(pid, 0));
}

TEST(ReaperAndChildProcess, UncommittedExitIsCollectedByTheDestructor) {
  {
    ChildProcess child = MustSpawn({.argv = {"/bin/true"}});
    ASSERT_TRUE(WaitReadable(child.pidfd()));
  }
  Reaper reaper;
  auto reaped = reaper.Dispatch();
  ASSERT_TRUE(reaped.ok());
  EXPECT_EQ(*reaped, 0u);
  EXPECT_TRUE(HasNoChildren());
}

TEST(ReaperAndChildProcess, UncommittedChildReapedByTheReaperFirstIsHarmless) {
  // The reaper runs while a handle is still uncommitted (the caller broke
  // the commit-before-the-loop rule): the exit counts as an orphan, and the
  // destructor finds ECHILD instead of hanging or signalling a reused pid.
  ChildProcess child = MustSpawn({.argv = {"/bin/true"}});
  pid_t pid = child.pid();
  ASSERT_TRUE(WaitReadable(child.pidfd()));
  Reaper reaper;
  auto reaped = reaper.Dispatch();
  ASSERT_TRUE(reaped.ok());
  EXPECT_EQ(*reaped, 1u);
  EXPECT_EQ(reaper.orphans_reaped(), 1u);

  auto late = child.KillAndReap();
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code(), ECHILD) << late.error().message();
  EXPECT_EQ(late.error().message(),
            "waiting for pid " + std::to_string(pid) + ": ECHILD (No child processes)");
  EXPECT_TRUE(HasNoChildren());
}

TEST(Reaper, ReapAllCollects200ShortLivedChildren) {
  std::vector<ChildProcess> children;
  std::set<pid_t> spawned;
  for (int i = 0; i < 200; ++i) {
    ChildProcess child = MustSpawn({.argv = {"/bin/true"}});
    ASSERT_TRUE(child.valid());
    child.Commit();
    spawned.insert(child.pid());
    children.push_back(std::move(child));
  }
  for (const ChildProcess& child : children) ASSERT_TRUE(WaitReadable(child.pidfd()));

  auto reaped = ReapAll();
  ASSERT_TRUE(reaped.ok()) << reaped.error().message();
  std::set<pid_t> collected;
  for (const ExitInfo& exit : *reaped) {
    EXPECT_TRUE(exit.success()) << exit;
    collected.insert(exit.pid);
  }
  EXPECT_EQ(reaped->size(), 200u);
  EXPECT_EQ(collected, spawned);
  EXPECT_TRUE(HasNoChildren());  // no zombie left
}

TEST(Subreaper, SetAndClear) {
  // In a forked subprocess: the flag is process-wide and would otherwise
  // make every later test in this binary inherit orphans.
  std::string result = RunInForkedProcess([]() -> std::string {
    if (::getpid() == 1) return "pid 1";
    if (!SetChildSubreaper().ok()) return "set failed";
    auto set = IsChildSubreaper();
    if (!set.ok() || !*set) return "flag not set";
    if (!ClearChildSubreaper().ok()) return "clear failed";
    auto cleared = IsChildSubreaper();
    if (!cleared.ok() || *cleared) return "flag not cleared";
    return "ok";
  });
  EXPECT_EQ(result, "ok");
}

TEST(Subreaper, OrphanedGrandchildIsReparentedAndReaped) {
  // The subreaper flag is process-wide, so the whole scenario runs in a
  // forked copy of the test process; its report comes back as a string.
  std::string result = RunInForkedProcess([]() -> std::string {
    if (!SetChildSubreaper().ok()) return "PR_SET_CHILD_SUBREAPER failed";
    auto sfd = SignalFd::Create({SIGCHLD});
    if (!sfd.ok()) return sfd.error().message();

    Pipe out = MakePipe();
    auto shell = Spawn({.argv = {"/bin/sh", "-c", "sleep 0.2 >/dev/null & echo $!; exit 0"},
                        .stdout_fd = out.write.get()});
    if (!shell.ok()) return shell.error().message();
    out.write.Reset();
    pid_t grandchild = static_cast<pid_t>(std::stol(ReadAll(out.read.get())));

    Reaper reaper;
    std::optional<ExitInfo> shell_exit;
    std::optional<ExitInfo> orphan_exit;
    pid_t orphan_parent = 0;
    if (!reaper.Track(*shell, [&](const ExitInfo& e) { shell_exit = e; }).ok())
      return "track failed";
    reaper.SetOrphanHandler([&](const ExitInfo& e) {
      orphan_exit = e;
      orphan_parent = ParentOf(e.pid);  // still a zombie: /proc/<pid> is there
    });
    while (!shell_exit || !orphan_exit) {
      if (!WaitReadable(sfd->fd())) return "no SIGCHLD within 10s";
      if (!sfd->Read().ok()) return "signalfd read failed";
      if (!reaper.Dispatch().ok()) return "dispatch failed";
    }
    if (!shell_exit->success()) return "shell " + shell_exit->ToString();
    if (orphan_exit->pid != grandchild)
      return "orphan " + std::to_string(orphan_exit->pid) + " is not the grandchild";
    if (orphan_parent != ::getpid()) return "orphan was not reparented to us";
    if (!HasNoChildren()) return "children left behind";
    return "grandchild " + orphan_exit->ToString();
  });
  EXPECT_EQ(result, "grandchild exited with code 0");
}

TEST(Subreaper, ReapAllCollectsTheOrphanedGrandchild) {
  std::string result = RunInForkedProcess([]() -> std::string {
    if (!SetChildSubreaper().ok()) return "PR_SET_CHILD_SUBREAPER failed";
    Pipe out = MakePipe();
    auto shell = Spawn({.argv = {"/bin/sh", "-c", "sleep 0.2 >/dev/null & echo $!; exit 0"},
                        .stdout_fd = out.write.get()});
    if (!shell.ok()) return shell.error().message();
    shell->Commit();
    out.write.Reset();
    pid_t grandchild = static_cast<pid_t>(std::stol(ReadAll(out.read.get())));
    // A pidfd pins the grandchild whoever its parent is; it becomes
    // readable when it exits.
    auto pinned = PidfdOpen(grandchild);
    if (!pinned.ok()) return pinned.error().message();
    if (!WaitReadable(shell->pidfd()) || !WaitReadable(pinned->get())) return "timed out";
    auto reaped = ReapAll();
    if (!reaped.ok()) return reaped.error().message();
    std::vector<ExitInfo> expected{ExitInfo::Exited(shell->pid(), 0),
                                   ExitInfo::Exited(grandchild, 0)};
    std::set<pid_t> pids;
    for (const ExitInfo& e : *reaped) pids.insert(e.pid);
    if (pids != std::set<pid_t>{shell->pid(), grandchild}) return "reaped the wrong set of pids";
    return HasNoChildren() ? "ok" : "children left behind";
  });
  EXPECT_EQ(result, "ok");
}

}  // namespace
}  // namespace podvisor::process
