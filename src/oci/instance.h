// The on-disk recipe for a pod and its container instances, in the order
// the supervisor runs it:
//
//   PreparePodFiles          once, before any container: /etc files,
//                            volumes (emptyDir dirs/tmpfs, hostPath
//                            checks), the pod's /dev/shm
//   PrepareContainerInstance per (re)start: overlay root, subPaths,
//                            termination-message file, config.json
//   ... runtime create/start/delete (oci::Runtime) ...
//   RemoveContainerInstance  after `delete`: unmount and remove the instance
//   CleanupPod (volumes.h)   when the pod has ended
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "oci/etc_files.h"
#include "oci/image.h"
#include "oci/layout.h"
#include "oci/spec.h"
#include "pod/model.h"

namespace podvisor::oci {

// A ContainerConfigInput with every pod-wide path taken from `layout`
// (etc files, volumes, shm unless hostIPC). Still to fill by the caller:
// bundle, namespaces, cgroups_path, node_memory_bytes, node_hostname,
// pids_limit, host_devices.
ContainerConfigInput PodInputFromLayout(const PodLayout& layout, const pod::Pod& pod);

// Writes the pod's /etc files, prepares every volume and mounts the pod's
// /dev/shm (not for hostIPC pods). Idempotent.
Status PreparePodFiles(const pod::Pod& pod, const PodLayout& layout,
                       const std::string& node_hostname, const HostEtcFiles& host = {});

struct PreparedInstance {
  std::filesystem::path bundle_dir;   // pass as `--bundle` to the runtime
  std::filesystem::path config_file;  // bundle_dir/config.json
  std::filesystem::path termination_message_file;
  WritableRootPaths root;
  nlohmann::json config;
};

// Mounts the instance's overlay root, creates its subPath directories and
// its termination-message file (mode 0666, as the kubelet makes it, so any
// container user can write it), generates and writes config.json. The
// per-instance fields of `input` (root_path, termination_message_file) are
// set here. On failure the instance is removed again.
Result<PreparedInstance> PrepareContainerInstance(const pod::Pod& pod,
                                                  const pod::Container& container,
                                                  const Image& image, const PodLayout& layout,
                                                  int instance, ContainerConfigInput input);

// Unmounts the instance's root and removes its directory. Idempotent. The
// termination message must have been read before (S11.3).
Status RemoveContainerInstance(const PodLayout& layout, std::string_view container, int instance);

}  // namespace podvisor::oci
