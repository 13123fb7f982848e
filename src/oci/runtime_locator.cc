#include "oci/runtime_locator.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "common/fd.h"

extern char** environ;

namespace podvisor::oci {
namespace {

bool IsExecutableFile(const std::filesystem::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

// A path names crun by its file name, or through a symbolic link to it
// (/usr/local/bin/oci-runtime -> /usr/bin/crun).
bool IsCrun(const std::filesystem::path& p) {
  if (p.filename() == "crun") return true;
  std::error_code ec;
  auto real = std::filesystem::canonical(p, ec);
  return !ec && real.filename() == "crun";
}

Error CrunRefused(std::string_view choice, std::string_view crun_unusable) {
  return Error("--runtime " + std::string(choice) + ": crun cannot run on " +
               std::string(crun_unusable) + "; use runc");
}

}  // namespace

Result<std::filesystem::path> FindInPath(std::string_view program, std::string_view search_path) {
  std::string path_var(search_path);
  if (path_var.empty()) {
    const char* env = std::getenv("PATH");
    path_var = env ? env : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  }
  std::size_t start = 0;
  while (start <= path_var.size()) {
    std::size_t end = path_var.find(':', start);
    if (end == std::string::npos) end = path_var.size();
    std::string dir = path_var.substr(start, end - start);
    if (!dir.empty()) {
      std::filesystem::path candidate = std::filesystem::path(dir) / program;
      if (IsExecutableFile(candidate)) return candidate;
    }
    start = end + 1;
  }
  return Error(std::string(program) + " not found in PATH", ENOENT);
}

Result<RuntimeBinary> LocateRuntime(std::string_view choice, std::string_view crun_unusable) {
  const bool crun_usable = crun_unusable.empty();
  if (choice.find('/') != std::string_view::npos) {
    std::filesystem::path p(choice);
    if (!IsExecutableFile(p)) {
      return Error("runtime " + p.string() + " is not an executable file", ENOENT);
    }
    if (!crun_usable && IsCrun(p)) return CrunRefused(choice, crun_unusable);
    return RuntimeBinary{p.filename().string(), p};
  }
  if (choice == "crun" || choice == "runc") {
    auto found = FindInPath(choice);
    if (!found) return found.take_error().Wrap("--runtime " + std::string(choice));
    // Found first: "not in PATH" is the plainer answer where crun is absent.
    if (!crun_usable && choice == "crun") return CrunRefused(choice, crun_unusable);
    return RuntimeBinary{std::string(choice), *found};
  }
  if (!choice.empty()) {
    return Error("--runtime: unknown runtime \"" + std::string(choice) +
                 "\": use crun, runc or a path to an OCI runtime");
  }
  if (crun_usable) {
    if (auto crun = FindInPath("crun")) return RuntimeBinary{"crun", *crun};
  }
  if (auto runc = FindInPath("runc")) return RuntimeBinary{"runc", *runc};
  return Error(crun_usable ? "no OCI runtime found: neither crun nor runc is in PATH"
                           : "no usable OCI runtime found: runc is not in PATH, and crun "
                             "cannot work with this host's cgroup hierarchy",
               ENOENT);
}

Result<std::string> RuntimeVersion(const std::filesystem::path& runtime) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Error::FromErrno("pipe2");
  Fd read_end(pipe_fds[0]), write_end(pipe_fds[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::string path = runtime.string();
  char* argv[] = {path.data(), const_cast<char*>("--version"), nullptr};
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, path.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Error::FromErrno("spawning " + path + " --version", rc);
  write_end.Reset();

  std::string output;
  char buf[512];
  for (;;) {
    ssize_t n = ::read(read_end.get(), buf, sizeof buf);
    if (n > 0) {
      if (output.size() < 4096) output.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Error(path + " --version failed");
  }
  return output.substr(0, output.find('\n'));
}

}  // namespace podvisor::oci
