// The Executor's part of the pod's sandbox holder (supervisor/sandbox/):
// starting it, recording who it is before it keeps anything, and handing
// it the descriptors a later supervisor takes back (S15.4).
#include <sys/stat.h>

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
  if (pod_.spec.host_users == false && options_.rootless) {
    // S21.12: a rootless podvisor's pods all run in its own user
    // namespace, where container root is the user: what hostUsers: false
    // asks (container root is not host root) holds already, and a block of
    // its own per pod is not the user's to give (the user's subordinate ids
    // are one range; idmapped mounts need the host's root).
    log::Warn(
        "spec.hostUsers: false: the pod runs in podvisor's own user namespace (rootless, "
        "S21.12): its container root is this user on the host, and it shares the user's "
        "subordinate ids with the user's other pods");
  } else if (pod_.spec.host_users == false) {
    // S20.5: the user namespace is the holder's; without one there is no
    // namespace to map the pod's ids in, and running the pod with the
    // host's ids would drop the isolation it asked for.
    if (!options_.sandbox) {
      return Error("spec.hostUsers: false needs the pod's own namespaces (--sandbox namespaces)",
                   EINVAL);
    }
    // S20.12: the runtime mounts each instance's root as the pod's root,
    // which must be able to search every directory above the pod's (the
    // pod's own are made searchable, hostfs/rootfs.h).
    for (auto dir = options_.state_dir.parent_path(); !dir.empty(); dir = dir.parent_path()) {
      struct stat st {};
      if (::stat(dir.c_str(), &st) == 0 && !(st.st_mode & S_IXOTH)) {
        return Error("spec.hostUsers: false: " + dir.string() +
                         " is not searchable by others, so the pod's user namespace cannot "
                         "reach its containers' roots (chmod o+x it, or use another --state-dir)",
                     EACCES);
      }
      if (dir == dir.root_path()) break;
    }
    // S20.3: before the holder starts, which inherits the claim's lock.
    auto range = HostPodIdRange();
    if (!range) return range.take_error().Wrap("spec.hostUsers: false");
    auto block =
        PodIdBlock::Claim(options_.host_claims_dir, *range,
                          ClaimOwner{options_.state_dir.parent_path(), pod_.metadata.name});
    if (!block) return block.take_error().Wrap("spec.hostUsers: false");
    id_block_ = std::move(*block);
  }
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

// S20.6: an adopted pod's block, as its holder's uid_map says it; the
// holder still holds the claim's lock.
Status Executor::ResumeIdBlock(pid_t holder_pid) {
  if (pod_.spec.host_users != false || options_.rootless) return Ok();
  auto ids = sandbox::ReadHolderIds(holder_pid);
  if (!ids) return ids.take_error().Wrap("the pod's user namespace");
  if (!*ids) return Error("the pod's sandbox holder has no user namespace of its own", EINVAL);
  auto block = PodIdBlock::Resume(options_.host_claims_dir, (*ids)->host_uid,
                                  ClaimOwner{options_.state_dir.parent_path(), pod_.metadata.name});
  if (!block) return block.take_error().Wrap("the pod's user namespace");
  id_block_ = std::move(*block);
  record_.SetUserNamespaceIds(PodIdBlockText(id_block_.start(), id_block_.size()));
  return Ok();
}

// S20.7: the event that says the pod's ids, once the events can be
// recorded; the record's annotation says them from now on.
void Executor::AnnounceUserNamespace() {
  if (!id_block_.valid()) return;
  const std::string ids = PodIdBlockText(id_block_.start(), id_block_.size());
  record_.SetUserNamespaceIds(ids);
  OnPublish(lifecycle::Publish{lifecycle::EventType::kNormal, "UserNamespace", "pod",
                               "container ids 0-" + std::to_string(id_block_.size() - 1) +
                                   " are host ids " + ids +
                                   " (uids and gids) in the pod's user namespace"});
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
  if (id_block_.valid()) {
    sb.user_namespace =
        sandbox::UserNamespaceIds{id_block_.start(), id_block_.start(), id_block_.size()};
    sb.inherited_lock_fd = id_block_.lock_fd();
  }
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
