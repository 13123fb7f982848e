// A RuntimeLauncher for tests (launcher.h): every call is recorded, runs
// until the test delivers its exit, and exits in the order the test
// chooses. HasDetachedRun is the test's to set; a spawn failure can be
// injected for the next call.
#pragma once

#include <cerrno>
#include <string>
#include <vector>

#include "supervisor/executor/launcher.h"

namespace podvisor::supervisor::executor {

class FakeLauncher : public RuntimeLauncher {
 public:
  struct Call {
    std::string what;  // "create", "run", "start" or "delete"
    std::string id;
    Files files;
    int stdout_fd = -1;
    int stderr_fd = -1;
    Done done;
    bool exited = false;
  };

  bool detached_run = true;
  int fail_next_spawn = 0;  // an errno: the next call fails to spawn with it

  bool HasDetachedRun() const override { return detached_run; }
  Status Create(const std::string& id, const Files& files, bool run, int stdout_fd, int stderr_fd,
                Done done) override {
    return Record(run ? "run" : "create", id, files, stdout_fd, stderr_fd, std::move(done));
  }
  Status Start(const std::string& id, const Files& files, Done done) override {
    return Record("start", id, files, -1, -1, std::move(done));
  }
  Status Delete(const std::string& id, const Files& files, Done done) override {
    return Record("delete", id, files, -1, -1, std::move(done));
  }

  const std::vector<Call>& calls() const { return calls_; }
  // The index of the last call `what` for `id` still running, or -1.
  int Running(const std::string& what, const std::string& id) const {
    for (int i = static_cast<int>(calls_.size()) - 1; i >= 0; --i) {
      const Call& c = calls_[static_cast<std::size_t>(i)];
      if (c.what == what && c.id == id && !c.exited) return i;
    }
    return -1;
  }
  // Ends the call at `index` with `exit_code`; false when it is not running.
  bool Exit(int index, int exit_code = 0) {
    if (index < 0 || index >= static_cast<int>(calls_.size())) return false;
    Call& c = calls_[static_cast<std::size_t>(index)];
    if (c.exited) return false;
    c.exited = true;
    Done done = c.done;  // the callback may start more calls
    done(process::ExitInfo::Exited(1000 + index, exit_code));
    return true;
  }

 private:
  Status Record(std::string what, const std::string& id, const Files& files, int stdout_fd,
                int stderr_fd, Done done) {
    if (int code = fail_next_spawn) {
      fail_next_spawn = 0;
      return Error::FromErrno("runtime " + what, code);
    }
    calls_.push_back({std::move(what), id, files, stdout_fd, stderr_fd, std::move(done), false});
    return Ok();
  }

  std::vector<Call> calls_;
};

}  // namespace podvisor::supervisor::executor
