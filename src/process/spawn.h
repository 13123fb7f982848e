// Spawn: start a program as a child process and hand back its ChildProcess.
//
// The child is created with clone3(CLONE_PIDFD), so its pidfd exists from
// the first instant and no pid-reuse window opens; where clone3 is
// unavailable (kernels before 5.3, or container seccomp profiles that
// answer ENOSYS, as Docker's does, or EPERM) it falls back to fork + pidfd_open,
// which is equally safe here because nobody but this single-threaded
// process can reap the new child before pidfd_open runs.
//
// Between fork and exec the child runs only async-signal-safe code: no
// allocation, no logging, no exceptions. Everything it needs (argv and
// envp arrays, the resolved program path, descriptor numbers) is prepared
// before forking. If anything in the child fails (a redirection, chdir,
// the pre_exec hook, execve itself) it writes the stage and errno into a
// close-on-exec pipe and exits; Spawn reaps it and returns an Error such as
// "exec /bin/nope: ENOENT (No such file or directory)". A successful exec
// closes the pipe, which is how the parent knows the program is running.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "process/child_process.h"

namespace podvisor::process {

enum class CloneMethod {
  kAuto,    // clone3(CLONE_PIDFD), falling back to fork + pidfd_open on ENOSYS/EPERM
  kClone3,  // clone3 only
  kFork,    // fork + pidfd_open only
};

// "auto", "clone3", "fork".
const char* CloneMethodName(CloneMethod method);

struct SpawnOptions {
  // Every member has a default initializer, so designated initializers
  // ({.argv = {...}, .cwd = "/"}) may name only what they set.
  // Values for stdin_fd/stdout_fd/stderr_fd besides a descriptor number.
  static constexpr int kDevNull = -1;  // /dev/null
  static constexpr int kInherit = -2;  // this process's own 0/1/2 (/dev/null if closed)

  // argv[0] is the program. Without a '/', it is looked up in the PATH of
  // `env` (or of this process when env is unset, or a default when neither
  // has one); empty PATH entries are skipped rather than meaning ".".
  std::vector<std::string> argv{};
  // "NAME=value" entries; unset means this process's environment.
  std::optional<std::vector<std::string>> env{};
  // Working directory of the child; empty means this process's.
  std::string cwd{};

  // Any descriptor (even 0-2, e.g. stderr_fd = 1 for 2>&1) or a constant
  // above. The descriptors stay owned by the caller; Spawn closes nothing.
  int stdin_fd = kDevNull;
  int stdout_fd = kDevNull;
  int stderr_fd = kDevNull;

  // Descriptors (>= 3) the program inherits under the same number. Every
  // other descriptor from 3 up is marked close-on-exec in the child, so a
  // library that forgot O_CLOEXEC cannot leak into a container.
  std::vector<int> keep_fds{};

  bool new_session = false;        // setsid(): own session and process group
  bool new_process_group = false;  // setpgid(0, 0); ignored with new_session

  // Runs in the child after redirections and chdir, right before execve.
  // Must be async-signal-safe: no allocation, no locks, no logging, no
  // exceptions, no pthread calls (after a raw clone3 glibc's thread state
  // is the parent's). Returns 0, or an errno value to abort the spawn.
  std::function<int()> pre_exec{};

  CloneMethod clone_method = CloneMethod::kAuto;
};

// Starts the program. On success the returned handle is uncommitted: if the
// caller drops it, the process is killed and reaped.
Result<ChildProcess> Spawn(const SpawnOptions& options);

// The path execve will be given for `program`: itself if it contains '/',
// else the first executable regular file named so in `path_list` (a
// colon-separated PATH). ENOENT if none, EACCES if only non-executable
// candidates were found.
Result<std::string> ResolveProgram(const std::string& program, const std::string& path_list);

}  // namespace podvisor::process
