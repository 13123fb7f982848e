// What the Executor needs from the OCI runtime for a container instance:
// create (or `run --detach`), start and delete, each a call that runs
// without blocking the loop and delivers its exit through a callback. The
// production launcher builds each call's command line (oci::RuntimeCli)
// and hands it to a spawner, which the Executor backs with its runtime
// calls (SpawnRuntime: the reaper, --runtime-timeout, the pod's end
// waiting for it); fake_launcher.h records calls and lets a test deliver
// their exits in the order it chooses.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>

#include "common/result.h"
#include "oci/runtime_cli.h"
#include "process/exit_info.h"

namespace podvisor::supervisor::executor {

class RuntimeLauncher {
 public:
  using Done = std::function<void(const process::ExitInfo&)>;

  // The files of one instance's calls: its bundle (config.json), where the
  // runtime writes the init's pid, and the runtime's own --log.
  struct Files {
    std::filesystem::path bundle;
    std::filesystem::path pid_file;
    std::filesystem::path log_file;
  };

  virtual ~RuntimeLauncher() = default;

  // Whether Create can also start the container (`run --detach`).
  virtual bool HasDetachedRun() const = 0;
  // `create`, or `run --detach` when `run`; the container's init inherits
  // `stdout_fd` and `stderr_fd`.
  virtual Status Create(const std::string& id, const Files& files, bool run, int stdout_fd,
                        int stderr_fd, Done done) = 0;
  virtual Status Start(const std::string& id, const Files& files, Done done) = 0;
  // `delete --force`.
  virtual Status Delete(const std::string& id, const Files& files, Done done) = 0;
};

// The runtime's command line, spawned by `spawn` (Executor::SpawnRuntime).
class RuntimeCliLauncher : public RuntimeLauncher {
 public:
  using Spawn = std::function<Result<pid_t>(const oci::RuntimeCommand& cmd,
                                            const std::filesystem::path& log_file, int stdout_fd,
                                            int stderr_fd, Done done)>;

  RuntimeCliLauncher(oci::RuntimeCli cli, Spawn spawn)
      : cli_(std::move(cli)), spawn_(std::move(spawn)) {}

  bool HasDetachedRun() const override { return cli_.HasDetachedRun(); }
  Status Create(const std::string& id, const Files& files, bool run, int stdout_fd, int stderr_fd,
                Done done) override;
  Status Start(const std::string& id, const Files& files, Done done) override;
  Status Delete(const std::string& id, const Files& files, Done done) override;

 private:
  Status Call(const oci::RuntimeCommand& cmd, const std::filesystem::path& log_file, int stdout_fd,
              int stderr_fd, Done done);

  oci::RuntimeCli cli_;
  Spawn spawn_;
};

}  // namespace podvisor::supervisor::executor
