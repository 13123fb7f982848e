#include "process/spawn.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "process/reaper.h"
#include "process/signalfd.h"
#include "process/test_util.h"

namespace podvisor::process {
namespace {

using testing::HasNoChildren;
using ::testing::HasSubstr;
using testing::MakePipe;
using testing::Pipe;
using testing::ReadAll;
using ::testing::StartsWith;
using testing::WaitReadable;

struct RunResult {
  ExitInfo exit;
  std::string out;
};

// Spawns with stdout into a pipe, reads it to EOF, reaps the process.
RunResult RunCapturingStdout(SpawnOptions options) {
  Pipe pipe = MakePipe();
  options.stdout_fd = pipe.write.get();
  auto child = Spawn(options);
  EXPECT_TRUE(child.ok()) << child.error().message();
  if (!child.ok()) return {};
  pipe.write.Reset();
  RunResult result;
  result.out = ReadAll(pipe.read.get());
  child->Commit();
  EXPECT_TRUE(WaitReadable(child->pidfd()));
  auto reaped = ReapExitedChild(child->pid());
  EXPECT_TRUE(reaped.ok() && reaped->has_value());
  if (reaped.ok() && reaped->has_value()) result.exit = **reaped;
  return result;
}

TEST(Spawn, StdoutIntoPipe) {
  RunResult run = RunCapturingStdout({.argv = {"/bin/echo", "hello", "world"}});
  EXPECT_EQ(run.out, "hello world\n");
  EXPECT_TRUE(run.exit.success()) << run.exit;
}

TEST(Spawn, ExecFailureReportsErrnoAndReapsChild) {
  auto child = Spawn({.argv = {"/bin/nope"}});
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().message(), "exec /bin/nope: ENOENT (No such file or directory)");
  EXPECT_EQ(child.error().code(), ENOENT);
  EXPECT_TRUE(HasNoChildren());
}

// A scratch file, removed with its directory at the end of the test.
class ScratchFile {
 public:
  ScratchFile(const std::string& content, mode_t mode) {
    char dir_template[] = "/tmp/podvisor-spawn-XXXXXX";
    if (::mkdtemp(dir_template) != nullptr) dir_ = dir_template;
    path_ = dir_ + "/file";
    std::ofstream(path_) << content;
    ::chmod(path_.c_str(), mode);
  }
  ~ScratchFile() {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  const std::string& dir() const { return dir_; }
  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
};

TEST(Spawn, ExecOfNonExecutableIsEacces) {
  ScratchFile file("#!/bin/sh\n", 0644);  // no execute bit: EACCES even for root
  auto child = Spawn({.argv = {file.path()}});
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().message(), "exec " + file.path() + ": EACCES (Permission denied)");
  EXPECT_TRUE(HasNoChildren());
}

TEST(Spawn, ExecOfGarbageIsEnoexec) {
  ScratchFile file("not a program\n", 0755);
  auto child = Spawn({.argv = {file.path()}});
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().message(), "exec " + file.path() + ": ENOEXEC (Exec format error)");
  EXPECT_TRUE(HasNoChildren());
}

TEST(Spawn, LooksUpBareNamesInTheChildsPath) {
  RunResult run =
      RunCapturingStdout({.argv = {"echo", "found"},
                          .env = std::vector<std::string>{"PATH=/nonexistent::/usr/bin:/bin"}});
  EXPECT_EQ(run.out, "found\n");
}

TEST(Spawn, BareNameNotFoundFailsWithoutForking) {
  auto child = Spawn(
      {.argv = {"podvisor-no-such-program"}, .env = std::vector<std::string>{"PATH=/usr/bin"}});
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().message(),
            "exec podvisor-no-such-program: ENOENT (No such file or directory)");
}

TEST(ResolveProgram, SkipsEmptyEntriesAndNonExecutables) {
  ScratchFile file("#!/bin/sh\n", 0644);
  auto not_executable = ResolveProgram("file", ":" + file.dir());
  ASSERT_FALSE(not_executable.ok());
  EXPECT_EQ(not_executable.error().code(), EACCES);

  ASSERT_EQ(::chmod(file.path().c_str(), 0755), 0);
  auto found = ResolveProgram("file", "/nonexistent::" + file.dir());
  ASSERT_TRUE(found.ok()) << found.error().message();
  EXPECT_EQ(*found, file.path());
  EXPECT_EQ(*ResolveProgram("./file", ""), "./file");
  EXPECT_EQ(ResolveProgram("file", "").error().code(), ENOENT);
}

TEST(Spawn, ExplicitEnvironmentReplacesOurs) {
  RunResult run = RunCapturingStdout(
      {.argv = {"/usr/bin/env"}, .env = std::vector<std::string>{"A=1", "B=two words"}});
  EXPECT_EQ(run.out, "A=1\nB=two words\n");
}

TEST(Spawn, UnsetEnvironmentIsInherited) {
  ASSERT_EQ(::setenv("PODVISOR_SPAWN_TEST", "inherited", 1), 0);
  RunResult run = RunCapturingStdout({.argv = {"/usr/bin/env"}});
  ::unsetenv("PODVISOR_SPAWN_TEST");
  EXPECT_THAT(run.out, HasSubstr("PODVISOR_SPAWN_TEST=inherited\n"));
}

TEST(Spawn, WorkingDirectory) {
  RunResult run = RunCapturingStdout({.argv = {"/bin/pwd"}, .cwd = "/"});
  EXPECT_EQ(run.out, "/\n");
}

TEST(Spawn, ChdirFailureIsReported) {
  auto child = Spawn({.argv = {"/bin/true"}, .cwd = "/nonexistent-podvisor-dir"});
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().message(),
            "chdir /nonexistent-podvisor-dir: ENOENT (No such file or directory)");
  EXPECT_TRUE(HasNoChildren());
}

TEST(Spawn, StderrIntoTheSamePipeAsStdout) {
  Pipe pipe = MakePipe();
  auto child = Spawn({.argv = {"/bin/sh", "-c", "echo out; echo err >&2"},
                      .stdout_fd = pipe.write.get(),
                      .stderr_fd = pipe.write.get()});
  ASSERT_TRUE(child.ok()) << child.error().message();
  pipe.write.Reset();
  EXPECT_EQ(ReadAll(pipe.read.get()), "out\nerr\n");
  auto exit = child->KillAndReap();  // already exited: reaps, the kill is moot
  ASSERT_TRUE(exit.ok()) << exit.error().message();
}

TEST(Spawn, SwappedStdoutAndStderr) {
  // stdout_fd = our 2's replacement and stderr_fd = 1 at the same time
  // needs the two-pass redirection in the child.
  Pipe out = MakePipe();
  Pipe err = MakePipe();
  Fd saved_stderr(::fcntl(2, F_DUPFD_CLOEXEC, 3));
  ASSERT_EQ(::dup2(err.write.get(), 2), 2);
  auto child = Spawn({.argv = {"/bin/sh", "-c", "echo to-stdout; echo to-stderr >&2"},
                      .stdout_fd = 2,
                      .stderr_fd = out.write.get()});
  ::dup2(saved_stderr.get(), 2);
  ASSERT_TRUE(child.ok()) << child.error().message();
  out.write.Reset();
  err.write.Reset();
  EXPECT_EQ(ReadAll(err.read.get()), "to-stdout\n");
  EXPECT_EQ(ReadAll(out.read.get()), "to-stderr\n");
  ASSERT_TRUE(child->KillAndReap().ok());
}

TEST(Spawn, StdinFromPipe) {
  Pipe in = MakePipe();
  Pipe out = MakePipe();
  auto child =
      Spawn({.argv = {"/bin/cat"}, .stdin_fd = in.read.get(), .stdout_fd = out.write.get()});
  ASSERT_TRUE(child.ok()) << child.error().message();
  in.read.Reset();
  out.write.Reset();
  ASSERT_EQ(::write(in.write.get(), "abc", 3), 3);
  in.write.Reset();
  EXPECT_EQ(ReadAll(out.read.get()), "abc");
  ASSERT_TRUE(child->KillAndReap().ok());
}

TEST(Spawn, DefaultStdinIsDevNull) {
  RunResult run = RunCapturingStdout({.argv = {"/bin/readlink", "/proc/self/fd/0"}});
  EXPECT_EQ(run.out, "/dev/null\n");
}

TEST(Spawn, InheritedStdoutIsOurs) {
  Pipe pipe = MakePipe();
  Fd saved_stdout(::fcntl(1, F_DUPFD_CLOEXEC, 3));
  ASSERT_EQ(::dup2(pipe.write.get(), 1), 1);
  auto child = Spawn({.argv = {"/bin/echo", "inherited"}, .stdout_fd = SpawnOptions::kInherit});
  ::dup2(saved_stdout.get(), 1);
  ASSERT_TRUE(child.ok()) << child.error().message();
  pipe.write.Reset();
  EXPECT_EQ(ReadAll(pipe.read.get()), "inherited\n");
  ASSERT_TRUE(child->KillAndReap().ok());
}

TEST(Spawn, WorksWhenOurStandardDescriptorsAreClosed) {
  // PID 1 may start without 0-1-2. The error pipe must then not land on
  // 0-2 (the child's redirections would clobber it), and kInherit of a
  // closed descriptor means /dev/null. Forked, to keep this binary's stdio.
  std::string result = testing::RunInForkedProcess([]() -> std::string {
    Pipe pipe = MakePipe();
    ::close(0);
    ::close(1);
    ::close(2);
    auto failed = Spawn({.argv = {"/bin/nope"}});
    if (failed.ok()) return "exec of /bin/nope succeeded";
    if (failed.error().code() != ENOENT) return failed.error().message();
    auto child = Spawn({.argv = {"/bin/readlink", "/proc/self/fd/0"},
                        .stdin_fd = SpawnOptions::kInherit,
                        .stdout_fd = pipe.write.get()});
    if (!child.ok()) return child.error().message();
    pipe.write.Reset();
    std::string out = ReadAll(pipe.read.get());
    if (!child->KillAndReap().ok()) return "reap failed";
    return out;
  });
  EXPECT_EQ(result, "/dev/null\n");
}

TEST(Spawn, RedirectingFromAClosedDescriptorFails) {
  auto child = Spawn({.argv = {"/bin/true"}, .stdout_fd = 999});
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().message(), "redirecting stdout: EBADF (Bad file descriptor)");
  EXPECT_TRUE(HasNoChildren());
}

TEST(Spawn, KeptDescriptorIsInheritedUnderItsNumber) {
  Pipe pipe = MakePipe();
  // Above the range a shell uses for itself, and close-on-exec like every
  // podvisor descriptor: keep_fds must clear the flag in the child only.
  Fd kept(::fcntl(pipe.write.get(), F_DUPFD_CLOEXEC, 100));
  ASSERT_TRUE(kept.valid());
  pipe.write.Reset();
  std::string script = "echo kept >/proc/self/fd/" + std::to_string(kept.get());
  auto child = Spawn({.argv = {"/bin/sh", "-c", script}, .keep_fds = {kept.get()}});
  ASSERT_TRUE(child.ok()) << child.error().message();
  kept.Reset();
  EXPECT_EQ(ReadAll(pipe.read.get()), "kept\n");
  EXPECT_TRUE(::fcntl(pipe.read.get(), F_GETFD) & FD_CLOEXEC);
  ASSERT_TRUE(child->KillAndReap().ok());
}

TEST(Spawn, LeakedDescriptorWithoutCloexecIsNotInherited) {
  // A descriptor some library opened without O_CLOEXEC.
  int leaky = ::fcntl(0, F_DUPFD, 150);
  ASSERT_GE(leaky, 150);
  std::string script =
      "test -e /proc/self/fd/" + std::to_string(leaky) + " && echo leaked || echo closed";
  RunResult run = RunCapturingStdout({.argv = {"/bin/sh", "-c", script}});
  ::close(leaky);
  EXPECT_EQ(run.out, "closed\n");
}

TEST(Spawn, KeptDescriptorBelowThreeIsRejected) {
  auto child = Spawn({.argv = {"/bin/true"}, .keep_fds = {1}});
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().code(), EINVAL);
}

// Fields 5 and 6 of /proc/self/stat: process group and session.
std::pair<pid_t, pid_t> GroupAndSession(const std::string& stat) {
  std::istringstream in(stat.substr(stat.rfind(')') + 2));
  std::string state;
  pid_t ppid = 0, pgrp = 0, session = 0;
  in >> state >> ppid >> pgrp >> session;
  return {pgrp, session};
}

TEST(Spawn, NewSessionMakesTheChildALeader) {
  Pipe pipe = MakePipe();
  auto child = Spawn({.argv = {"/bin/cat", "/proc/self/stat"},
                      .stdout_fd = pipe.write.get(),
                      .new_session = true});
  ASSERT_TRUE(child.ok()) << child.error().message();
  pipe.write.Reset();
  auto [pgrp, session] = GroupAndSession(ReadAll(pipe.read.get()));
  EXPECT_EQ(pgrp, child->pid());
  EXPECT_EQ(session, child->pid());
  ASSERT_TRUE(child->KillAndReap().ok());
}

TEST(Spawn, NewProcessGroupKeepsOurSession) {
  Pipe pipe = MakePipe();
  auto child = Spawn({.argv = {"/bin/cat", "/proc/self/stat"},
                      .stdout_fd = pipe.write.get(),
                      .new_process_group = true});
  ASSERT_TRUE(child.ok()) << child.error().message();
  pipe.write.Reset();
  auto [pgrp, session] = GroupAndSession(ReadAll(pipe.read.get()));
  EXPECT_EQ(pgrp, child->pid());
  EXPECT_EQ(session, ::getsid(0));
  ASSERT_TRUE(child->KillAndReap().ok());
}

TEST(Spawn, PreExecHookRunsInTheChild) {
  Pipe pipe = MakePipe();
  int fd = pipe.write.get();
  auto child = Spawn({.argv = {"/bin/true"}, .pre_exec = [fd] {
                        // async-signal-safe: write(2) only.
                        return ::write(fd, "x", 1) == 1 ? 0 : errno;
                      }});
  ASSERT_TRUE(child.ok()) << child.error().message();
  pipe.write.Reset();
  EXPECT_EQ(ReadAll(pipe.read.get()), "x");
  ASSERT_TRUE(child->KillAndReap().ok());
}

TEST(Spawn, PreExecHookFailureAbortsTheSpawn) {
  auto child = Spawn({.argv = {"/bin/true"}, .pre_exec = [] { return EPERM; }});
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().message(), "pre_exec hook: EPERM (Operation not permitted)");
  EXPECT_TRUE(HasNoChildren());
}

TEST(Spawn, ChildStartsWithDefaultSignalState) {
  // The supervisor blocks SIGCHLD/SIGTERM and may ignore SIGPIPE; none of
  // that may reach a container.
  SignalSet saved = CurrentSignalMask();
  ASSERT_TRUE(BlockSignals({SIGUSR1, SIGTERM}).ok());
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction old_pipe = {};
  ::sigaction(SIGPIPE, &ignore, &old_pipe);

  RunResult run =
      RunCapturingStdout({.argv = {"/bin/grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"}});

  ::sigaction(SIGPIPE, &old_pipe, nullptr);
  ASSERT_TRUE(SetSignalMask(saved).ok());
  EXPECT_EQ(run.out, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
}

TEST(Spawn, ForkFallbackBehavesLikeClone3) {
  RunResult run =
      RunCapturingStdout({.argv = {"/bin/echo", "forked"}, .clone_method = CloneMethod::kFork});
  EXPECT_EQ(run.out, "forked\n");
  auto failed = Spawn({.argv = {"/bin/nope"}, .clone_method = CloneMethod::kFork});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message(), "exec /bin/nope: ENOENT (No such file or directory)");
  EXPECT_TRUE(HasNoChildren());
}

TEST(Spawn, Clone3ProvidesAPidfd) {
  auto child = Spawn({.argv = {"/bin/true"}, .clone_method = CloneMethod::kClone3});
  if (!child.ok() && child.error().code() == ENOSYS) GTEST_SKIP() << "clone3 not supported here";
  ASSERT_TRUE(child.ok()) << child.error().message();
  EXPECT_TRUE(child->valid());
  EXPECT_TRUE(::fcntl(child->pidfd(), F_GETFD) & FD_CLOEXEC);
  ASSERT_TRUE(WaitReadable(child->pidfd()));
  auto exit = child->KillAndReap();
  ASSERT_TRUE(exit.ok()) << exit.error().message();
  EXPECT_EQ(*exit, ExitInfo::Exited(exit->pid, 0));
}

TEST(Spawn, EmptyArgvIsRejected) {
  auto child = Spawn({});
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().code(), EINVAL);
}

TEST(CloneMethod, Names) {
  EXPECT_STREQ(CloneMethodName(CloneMethod::kAuto), "auto");
  EXPECT_STREQ(CloneMethodName(CloneMethod::kClone3), "clone3");
  EXPECT_STREQ(CloneMethodName(CloneMethod::kFork), "fork");
}

}  // namespace
}  // namespace podvisor::process
