// The on-disk recipe for a pod and its container instances, in the order
// the supervisor runs it:
//
//   PreparePodFiles          once, before any container: /etc files,
//                            volumes (emptyDir dirs/tmpfs, hostPath
//                            checks), the pod's /dev/shm
//   PrepareContainerInstance per (re)start: overlay root, subPaths,
//                            termination-message file, config.json
//                            (the config planned by instance_plan.h)
//   ... runtime create/start/delete (oci::Runtime) ...
//   RemoveContainerInstance  after `delete`: unmount and remove the instance
//   CleanupPod (volumes.h)   when the pod has ended
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "hostfs/etc_files.h"
#include "hostfs/instance_plan.h"
#include "hostfs/layout.h"
#include "image/image.h"
#include "oci/spec.h"
#include "pod/model.h"

namespace podvisor::hostfs {

// Writes the pod's /etc files, prepares every volume and mounts the pod's
// /dev/shm (not for hostIPC pods); for a hostUsers: false pod
// (`user_namespace` not empty: /proc/<holder>/ns/user) then makes its
// idmapped mounts (IdmapPodMounts, idmapped_pod.h). Idempotent.
Status PreparePodFiles(const pod::Pod& pod, const PodLayout& layout,
                       const std::string& node_hostname, const HostEtcFiles& host = {},
                       const std::filesystem::path& user_namespace = {});

// What PrepareContainerInstance did, also when it failed part way: the
// caller undoes it (RemoveContainerInstance, or the Executor's delete).
struct PreparedInstance {
  std::filesystem::path config_file;  // instance_dir/config.json
  WritableRootPaths root;             // its overlay, mounted only when facts.own_root
  bool root_mounted = false;
  bool sub_paths_bound = false;
  std::string cgroups_path;  // linux.cgroupsPath, once planned
  nlohmann::json config;     // what config_file holds
};

// What `run` does before each create, in this order: makes
// facts.instance_dir (0700; with a user namespace 0711, and o+x on its
// parents up to the pod's directory, S20.25), binds its subPaths (S14.2: the runtime mounts
// our bind of what was resolved, never the path that names it), mounts its
// overlay root when facts.own_root, creates its termination-message file
// (mode 0666, as the kubelet makes it, so any container user can write
// it), then writes config.json from PlanContainerConfig (instance_plan.h).
// sub_path_sources of `facts` are filled here. With facts.user_namespace
// (S20.21, S20.24) the root's layers and the subPath binds are idmapped to
// facts.namespaces.user, whose pod mounts IdmapPodMounts made; that needs
// facts.own_root (the shared root of --sandbox none is never idmapped).
Status PrepareContainerInstance(const pod::Pod& pod, const pod::Container& container,
                                const image::Image& image, const PodLayout& layout,
                                InstanceFacts facts, const HostFacts& host, PreparedInstance& out);

// S20.25: gives o+x (others may pass, not list) to `dir` and each parent
// up to and including `top`. The runtime mounts root.path from inside a
// hostUsers: false pod's user namespace, as its root, which is no one to
// the host's directories: every directory above an instance's rootfs/
// must let it pass, as containerd's 0711 bundle directories do.
// PrepareContainerInstance does this from the instance up to the pod's
// directory; the state directory and its parents are the caller's.
Status AllowPassingThrough(const std::filesystem::path& dir, const std::filesystem::path& top);

// Unmounts what is mounted under an instance's directory and removes it.
// Idempotent. The termination message must have been read before (S11.3).
Status RemoveContainerInstance(const std::filesystem::path& instance_dir);

}  // namespace podvisor::hostfs
