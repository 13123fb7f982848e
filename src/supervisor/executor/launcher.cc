#include "supervisor/executor/launcher.h"

#include "process/spawn.h"

namespace podvisor::supervisor::executor {

Status RuntimeCliLauncher::Call(const oci::RuntimeCommand& cmd,
                                const std::filesystem::path& log_file, int stdout_fd, int stderr_fd,
                                Done done) {
  auto pid = spawn_(cmd, log_file, stdout_fd, stderr_fd, std::move(done));
  if (!pid) return pid.take_error();
  return Ok();
}

Status RuntimeCliLauncher::Create(const std::string& id, const Files& files, bool run,
                                  int stdout_fd, int stderr_fd, Done done) {
  oci::RuntimeCommand cmd = run ? cli_.Run(id, files.bundle, files.pid_file)
                                : cli_.Create(id, files.bundle, files.pid_file);
  return Call(cmd, files.log_file, stdout_fd, stderr_fd, std::move(done));
}

Status RuntimeCliLauncher::Start(const std::string& id, const Files& files, Done done) {
  return Call(cli_.Start(id), files.log_file, process::SpawnOptions::kDevNull,
              process::SpawnOptions::kDevNull, std::move(done));
}

Status RuntimeCliLauncher::Delete(const std::string& id, const Files& files, Done done) {
  return Call(cli_.Delete(id), files.log_file, process::SpawnOptions::kDevNull,
              process::SpawnOptions::kDevNull, std::move(done));
}

}  // namespace podvisor::supervisor::executor
