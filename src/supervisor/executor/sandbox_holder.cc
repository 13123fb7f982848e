// The Executor's part of the pod's sandbox holder (supervisor/sandbox/):
// starting it, recording who it is before it keeps anything, and handing
// it the descriptors a later supervisor takes back (S15.4).
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "common/log.h"
#include "common/pod_dir.h"
#include "oci/spec.h"
#include "supervisor/executor/executor.h"
#include "supervisor/executor/handover.h"
#include "supervisor/executor/internal.h"

namespace podvisor::supervisor::executor {

// The sandbox's holder (sandbox.h), started and not waited for; none
// without --sandbox.
Result<std::optional<sandbox::PendingSandbox>> Executor::StartSandbox() {
  if (!options_.sandbox) return std::optional<sandbox::PendingSandbox>();
  auto started = sandbox::Sandbox::Start(SandboxOptionsOf());
  if (!started) return started.take_error();
  return std::optional<sandbox::PendingSandbox>(std::move(*started));
}

// Before the holder is entrusted with a descriptor, and so stops dying
// with this process: a SIGKILL before the first handover state is written
// must not leave a holder that no later run can find (recovery.cc).
void Executor::RecordHolder() {
  const nlohmann::json holder = {{"bootId", BootId()},
                                 {"pid", sandbox_->holder_pid()},
                                 {"startTime", sandbox_->holder_start_time()}};
  if (auto s = WriteFileAtomic(PodDir::At(options_.state_dir).SandboxHolderFile(), holder.dump(),
                               0600, Durability::kUnsynced);
      !s) {
    log::Warn("{}", s.error().message());
  }
}

sandbox::SandboxOptions Executor::SandboxOptionsOf() const {
  sandbox::SandboxOptions sb;
  sb.hostname = oci::PodHostname(pod_, options_.node_hostname);
  sb.new_network = !pod_.spec.host_network;
  sb.new_ipc = !pod_.spec.host_ipc;
  sb.new_uts = !pod_.spec.host_network;
  sb.new_pid = pod_.spec.share_process_namespace.value_or(false);
  sb.podvisor_exe = options_.podvisor_exe;
  // S15.4: the holder keeps what a supervisor adopting the pod needs.
  sb.keeper_socket = PodDir::At(options_.state_dir).KeeperSocket();
  return sb;
}

void Executor::KeepForNext(const std::string& key, const std::vector<int>& fds) {
  if (!sandbox_) return;
  if (auto s = sandbox_->Keep(key, fds); !s) {
    log::Warn("the sandbox holder cannot keep {} for a later supervisor: {}", key,
              s.error().message());
  }
}

void Executor::ForgetKept(const std::string& key) {
  if (!sandbox_) return;
  (void)sandbox_->Drop(key);
  (void)sandbox_->Drop(key + "/pidfd");
}

}  // namespace podvisor::supervisor::executor
