// Records the Executor keeps per container instance and runtime call.
// Internal to the executor_*.cc files.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "hostfs/layout.h"
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
  bool sub_paths_bound = false;      // volumes.h BindSubPaths; unbound after delete
  nlohmann::json process;            // config.json's process, the template for exec
  std::string cgroups_path;          // linux.cgroupsPath; "" = the runtime's choice
  uint64_t oom_kills_at_create = 0;  // S9.5: the count the instance started with
  std::optional<process::ChildProcess> init;
  Fd pipes[2];  // read ends of the container's stdout and stderr
  std::optional<logs::CriLogWriter> log;
  // Where it is between create and delete (instance_steps.h).
  InstanceState state;
  std::optional<process::ExitInfo> init_exit;  // the init's, once the reaper saw it
  loop::EventLoop::TimerId delete_retry = 0;   // S14.11: a delete waiting for descriptors
};

std::string InstanceKey(std::string_view container, int instance);

}  // namespace podvisor::supervisor::executor
