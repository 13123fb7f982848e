// Records the Executor keeps per container instance and runtime call.
// Internal to the executor_*.cc files.
#pragma once

#include <unistd.h>

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "common/result.h"
#include "hostfs/layout.h"
#include "oci/spec.h"
#include "pod/model.h"
#include "process/child_process.h"
#include "process/exit_info.h"
#include "supervisor/executor/executor.h"
#include "supervisor/executor/instance_steps.h"
#include "supervisor/logs/cri_log.h"
#include "supervisor/probes/probe_schedule.h"

namespace podvisor::supervisor::executor {

struct ContainerInstance {
  std::string container;
  int instance = 0;
  std::string id;  // the runtime's container id, unique per attempt
  std::filesystem::path dir;
  uint64_t seq = 0;  // creation order among all records (S14.12)
  hostfs::WritableRootPaths root;
  bool root_mounted = false;
  bool sub_paths_bound = false;  // volumes.h BindSubPaths; unbound after delete
  nlohmann::json process;        // config.json's process, the template for exec
  std::string cgroups_path;      // linux.cgroupsPath; "" = the runtime's choice
  // S20.10: the pod's block (hostUsers: false): its root owns the pipes.
  std::optional<oci::PodUserNamespaceIds> user_namespace;
  // S20.10: a pipe is mode 0600 of its creator; in the pod's user
  // namespace its root must be able to reopen one it writes (/dev/stdout,
  // /proc/self/fd/1), as it can without one. Both ends are one inode.
  Status GivePipeToRoot(int fd) const {
    if (user_namespace && ::fchown(fd, user_namespace->host_uid, user_namespace->host_gid) != 0) {
      return Error::FromErrno("giving a pipe to the container's root");
    }
    return Ok();
  }
  uint64_t oom_kills_at_create = 0;  // S9.5: the count the instance started with
  std::optional<process::ChildProcess> init;
  uint64_t init_start_time = 0;  // with the pid, names the init for the boot (S15.1)
  // S15.5: adopted from a supervisor that died: not our child, its exit
  // read from its pidfd; unknown when the kernel could not say.
  bool adopted = false;
  bool exit_unknown = false;
  Fd pipes[2];  // read ends of the container's stdout and stderr
  std::optional<logs::CriLogWriter> log;
  // Where it is between create and delete (instance_steps.h).
  InstanceState state;
  std::optional<process::ExitInfo> init_exit;  // the init's, once the reaper saw it
  loop::EventLoop::TimerId delete_retry = 0;   // S14.11: a delete waiting for descriptors
};

std::string InstanceKey(std::string_view container, int instance);
// The key of an instance's log pipe (0 stdout, 1 stderr) among the
// descriptors a handover carries (instance_handover.cc).
std::string CarriedFdKey(const std::string& runtime_id, int stream);
// S15.5: `e` as the kubelet reports a container whose end it lost:
// reason ContainerStatusUnknown, exit code 137, the kubelet's message.
void ReportAsLost(lifecycle::ContainerExited& e);
// A process's start time (field 22 of /proc/PID/stat, clock ticks since
// boot), 0 when unknown: with the pid, it names one process for the boot.
uint64_t StartTimeOf(pid_t pid);

// S17.10 (resize_state.cc): `mine` (a pod spec's JSON) is `saved_spec`
// but for the containers' resources.
bool SameButResized(const nlohmann::json& mine, const nlohmann::json& saved_spec);

}  // namespace podvisor::supervisor::executor
