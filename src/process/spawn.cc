#include "process/spawn.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "process/fd_limit.h"
#include "process/pidfd.h"
#include "process/signalfd.h"

extern char** environ;

namespace podvisor::process {
namespace {

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// struct clone_args, version 0 (64 bytes). Declared here rather than taken
// from <linux/sched.h>, which clashes with glibc's <sched.h>.
struct CloneArgs {
  uint64_t flags;
  uint64_t pidfd;
  uint64_t child_tid;
  uint64_t parent_tid;
  uint64_t exit_signal;
  uint64_t stack;
  uint64_t stack_size;
  uint64_t tls;
};

// What a failing child writes into the error pipe.
enum class ChildStage : int32_t {
  kSetsid,
  kSetpgid,
  kStdin,
  kStdout,
  kStderr,
  kChdir,
  kPreExec,
  kExec
};

struct ChildReport {
  ChildStage stage;
  int32_t err;
};

// Everything the child reads, prepared by the parent before forking: plain
// pointers and integers, so the child never allocates.
struct ChildPlan {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = nullptr;  // nullptr: stay
  int stdio[3] = {SpawnOptions::kDevNull, SpawnOptions::kDevNull, SpawnOptions::kDevNull};
  int dev_null = -1;
  const int* keep_fds = nullptr;  // sorted ascending
  size_t keep_count = 0;
  bool new_session = false;
  bool new_process_group = false;
  const std::function<int()>* pre_exec = nullptr;
  int error_fd = -1;
};

[[noreturn]] void ChildFail(const ChildPlan& plan, ChildStage stage, int err) {
  ChildReport report{stage, err};
  // A short write to a pipe of 8 bytes cannot happen (PIPE_BUF); if the
  // write fails the parent sees EOF and the exit code 127 instead.
  ssize_t ignored = ::write(plan.error_fd, &report, sizeof(report));
  (void)ignored;
  ::_exit(127);
}

// The child side: async-signal-safe calls only.
[[noreturn]] void RunChild(const ChildPlan& plan) {
  // The parent blocked every signal around clone so that no handler of its
  // runs in the child; dispositions go back to default before the mask opens.
  ResetSignalsForChild();

  if (plan.new_session) {
    if (::setsid() < 0) ChildFail(plan, ChildStage::kSetsid, errno);
  } else if (plan.new_process_group) {
    if (::setpgid(0, 0) < 0) ChildFail(plan, ChildStage::kSetpgid, errno);
  }

  // Redirections in two passes, so that any permutation works (stdout_fd=2
  // with stderr_fd=1, or stdin_fd=1): first duplicate every source above 2,
  // then dup2 the copies into place. The copies are close-on-exec.
  constexpr ChildStage kStdioStage[3] = {ChildStage::kStdin, ChildStage::kStdout,
                                         ChildStage::kStderr};
  int copies[3];
  for (int i = 0; i < 3; ++i) {
    int source = plan.stdio[i];
    if (source == SpawnOptions::kInherit) source = ::fcntl(i, F_GETFD) >= 0 ? i : plan.dev_null;
    if (source == SpawnOptions::kDevNull) source = plan.dev_null;
    copies[i] = ::fcntl(source, F_DUPFD_CLOEXEC, 3);
    if (copies[i] < 0) ChildFail(plan, kStdioStage[i], errno);
  }
  for (int i = 0; i < 3; ++i) {
    if (::dup2(copies[i], i) < 0) ChildFail(plan, kStdioStage[i], errno);
  }

  // Every descriptor from 3 up is close-on-exec, except the kept ones.
  // close_range(CLOSE_RANGE_CLOEXEC) needs Linux 5.11; on older kernels
  // podvisor's own descriptors are O_CLOEXEC anyway, so failure is ignored.
  unsigned int low = 3;
  for (size_t k = 0; k < plan.keep_count; ++k) {
    unsigned int keep = static_cast<unsigned int>(plan.keep_fds[k]);
    if (keep > low) ::close_range(low, keep - 1, CLOSE_RANGE_CLOEXEC);
    low = keep + 1;
    int flags = ::fcntl(plan.keep_fds[k], F_GETFD);
    if (flags >= 0) ::fcntl(plan.keep_fds[k], F_SETFD, flags & ~FD_CLOEXEC);
  }
  ::close_range(low, ~0U, CLOSE_RANGE_CLOEXEC);

  if (plan.cwd != nullptr && ::chdir(plan.cwd) < 0) ChildFail(plan, ChildStage::kChdir, errno);

  if (plan.pre_exec != nullptr && *plan.pre_exec) {
    int err = (*plan.pre_exec)();
    if (err != 0) ChildFail(plan, ChildStage::kPreExec, err);
  }

  // S14.10: the program gets the descriptor limit podvisor was started
  // with, not the one it raised for itself.
  RestoreFdLimitInChild();
  ::execve(plan.path, plan.argv, plan.envp);
  ChildFail(plan, ChildStage::kExec, errno);
}

Error ChildError(const ChildReport& report, const SpawnOptions& options, const std::string& path) {
  switch (report.stage) {
    case ChildStage::kSetsid:
      return Error::FromErrno("setsid", report.err);
    case ChildStage::kSetpgid:
      return Error::FromErrno("setpgid", report.err);
    case ChildStage::kStdin:
      return Error::FromErrno("redirecting stdin", report.err);
    case ChildStage::kStdout:
      return Error::FromErrno("redirecting stdout", report.err);
    case ChildStage::kStderr:
      return Error::FromErrno("redirecting stderr", report.err);
    case ChildStage::kChdir:
      return Error::FromErrno("chdir " + options.cwd, report.err);
    case ChildStage::kPreExec:
      return Error::FromErrno("pre_exec hook", report.err);
    case ChildStage::kExec:
      break;
  }
  return Error::FromErrno("exec " + path, report.err);
}

// The PATH the child's program is looked up in.
std::string PathListFor(const SpawnOptions& options) {
  if (options.env) {
    for (const std::string& entry : *options.env) {
      if (entry.rfind("PATH=", 0) == 0) return entry.substr(5);
    }
    return kDefaultPath;
  }
  const char* path = std::getenv("PATH");
  return path != nullptr ? path : kDefaultPath;
}

// clone3 with CLONE_PIDFD: returns the pid (0 in the child), the pidfd in
// *pidfd; -1 with errno on failure.
pid_t Clone3WithPidfd(int* pidfd) {
  CloneArgs args = {};
  args.flags = CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(pidfd);
  args.exit_signal = SIGCHLD;
  return static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof(args)));
}

// Reads the child's report; true if one arrived (the child failed), false
// on EOF (the exec succeeded and closed the pipe).
bool ReadChildReport(int fd, ChildReport* report) {
  size_t got = 0;
  auto* bytes = reinterpret_cast<char*>(report);
  while (got < sizeof(*report)) {
    ssize_t n = ::read(fd, bytes + got, sizeof(*report) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  return got == sizeof(*report);
}

}  // namespace

const char* CloneMethodName(CloneMethod method) {
  switch (method) {
    case CloneMethod::kAuto:
      return "auto";
    case CloneMethod::kClone3:
      return "clone3";
    case CloneMethod::kFork:
      return "fork";
  }
  return "unknown";
}

Result<std::string> ResolveProgram(const std::string& program, const std::string& path_list) {
  if (program.empty()) return Error("exec: empty program name", ENOENT);
  if (program.find('/') != std::string::npos) return program;
  int err = ENOENT;
  size_t start = 0;
  while (start <= path_list.size()) {
    size_t colon = path_list.find(':', start);
    if (colon == std::string::npos) colon = path_list.size();
    std::string_view dir(path_list.data() + start, colon - start);
    start = colon + 1;
    if (dir.empty()) continue;
    std::string candidate = std::string(dir) + "/" + program;
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      err = EACCES;
    }
  }
  return Error::FromErrno("exec " + program, err);
}

namespace {

// options.keep_fds sorted, without duplicates, each open and above the
// standard descriptors.
Result<std::vector<int>> KeptDescriptors(const SpawnOptions& options) {
  std::vector<int> keep_fds = options.keep_fds;
  std::sort(keep_fds.begin(), keep_fds.end());
  keep_fds.erase(std::unique(keep_fds.begin(), keep_fds.end()), keep_fds.end());
  for (int fd : keep_fds) {
    if (fd < 3)
      return Error("spawn: kept descriptor " + std::to_string(fd) + " is below 3", EINVAL);
    if (::fcntl(fd, F_GETFD) < 0)
      return Error::FromErrno("spawn: kept descriptor " + std::to_string(fd));
  }
  return keep_fds;
}

struct Cloned {
  pid_t pid = -1;  // 0 in the child, which never returns from RunChild
  int pidfd = -1;  // with clone3 only
  int clone_errno = 0;
  bool forked = false;
};

// clone3 with CLONE_PIDFD, or fork where it is refused; the child runs
// `plan`.
Cloned CloneChild(CloneMethod method, const ChildPlan& plan) {
  Cloned c;
  // Block everything around the clone: a signal handler (a library's, or a
  // test's) must not run in the child before its dispositions are reset.
  sigset_t all;
  sigset_t saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);

  if (method != CloneMethod::kFork) {
    c.pid = Clone3WithPidfd(&c.pidfd);
    c.clone_errno = errno;
  }
  if (method == CloneMethod::kFork || (method == CloneMethod::kAuto && c.pid < 0 &&
                                       (c.clone_errno == ENOSYS || c.clone_errno == EPERM))) {
    // With CLONE_PIDFD as the only flag, clone3 fails with ENOSYS or EPERM
    // only when the kernel lacks it or a seccomp filter refuses it.
    c.pid = ::fork();
    c.clone_errno = errno;
    c.forked = true;
  }
  if (c.pid == 0) RunChild(plan);

  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  return c;
}

}  // namespace

Result<ChildProcess> Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return Error("spawn: empty argv", EINVAL);
  auto path = ResolveProgram(options.argv[0], PathListFor(options));
  if (!path) return path.take_error();

  auto kept = KeptDescriptors(options);
  if (!kept) return kept.take_error();
  std::vector<int>& keep_fds = *kept;

  // The char* arrays execve wants, pointing into `options`, which outlives
  // the child's use of them (the child execs or exits before Spawn returns).
  std::vector<char*> argv;
  argv.reserve(options.argv.size() + 1);
  for (const std::string& arg : options.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  if (options.env) {
    envp.reserve(options.env->size() + 1);
    for (const std::string& entry : *options.env) envp.push_back(const_cast<char*>(entry.c_str()));
    envp.push_back(nullptr);
  }

  Fd dev_null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!dev_null) return Error::FromErrno("opening /dev/null");

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) < 0) return Error::FromErrno("creating the exec error pipe");
  Fd error_read(pipe_fds[0]);
  Fd error_write(pipe_fds[1]);
  // The child overwrites 0-2 with the redirections; if this process runs
  // with its standard descriptors closed (PID 1 may), the error pipe could
  // sit there and be clobbered before exec, so move it above 2.
  if (error_write.get() < 3) {
    Fd moved(::fcntl(error_write.get(), F_DUPFD_CLOEXEC, 3));
    if (!moved) return Error::FromErrno("moving the exec error pipe");
    error_write = std::move(moved);
  }

  ChildPlan plan;
  plan.path = path->c_str();
  plan.argv = argv.data();
  plan.envp = options.env ? envp.data() : environ;
  plan.cwd = options.cwd.empty() ? nullptr : options.cwd.c_str();
  plan.stdio[0] = options.stdin_fd;
  plan.stdio[1] = options.stdout_fd;
  plan.stdio[2] = options.stderr_fd;
  plan.dev_null = dev_null.get();
  plan.keep_fds = keep_fds.data();
  plan.keep_count = keep_fds.size();
  plan.new_session = options.new_session;
  plan.new_process_group = options.new_process_group;
  plan.pre_exec = options.pre_exec ? &options.pre_exec : nullptr;
  plan.error_fd = error_write.get();

  Cloned cloned = CloneChild(options.clone_method, plan);
  pid_t pid = cloned.pid;
  int pidfd = cloned.pidfd;
  const bool forked = cloned.forked;
  error_write.Reset();
  if (pid < 0) return Error::FromErrno(forked ? "fork" : "clone3", cloned.clone_errno);

  if (forked) {
    // Safe from pid reuse: the child is ours and only this (single-threaded)
    // process could reap it, which it has not done.
    auto opened = PidfdOpen(pid);
    if (!opened) {
      ::kill(pid, SIGKILL);
      siginfo_t info;
      ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED);
      return opened.take_error();
    }
    pidfd = opened->Release();
  }
  ChildProcess child(pid, Fd(pidfd));

  ChildReport report;
  if (ReadChildReport(error_read.get(), &report)) {
    // The child has _exit()ed or is about to; KillAndReap collects it.
    (void)child.KillAndReap();
    return ChildError(report, options, *path);
  }
  return child;
}

}  // namespace podvisor::process
