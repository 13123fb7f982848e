// A container's config.json when podvisor runs without root (S21.5, S21.2):
// what the runtime, itself root only of podvisor's user namespace, cannot
// do on the host is left out of the config rather than failing the create.
#pragma once

#include <nlohmann/json.hpp>

namespace podvisor::oci {

struct RootlessConfig {
  // No delegated cgroup (S21.5): no linux.cgroupsPath and no limits in
  // linux.resources (runc's rootless cgroup manager fails "cannot set cpu
  // limit: container could not join or create cgroup" for any), only the
  // device rules, which it ignores.
  bool no_cgroup = false;
  // A one-id user namespace (S21.2): gid 5 (tty) does not exist in it, so
  // /dev/pts is mounted without gid=5 (the kernel refuses an unmapped gid).
  bool single_id = false;
  // The container shares a network namespace podvisor's user namespace
  // does not own (hostNetwork: the host's, or the outer container's when
  // podvisor is its PID 1): sysfs cannot be mounted there, so /sys is the
  // host's, bound read-only, as podman does (S21.6).
  bool bind_sys = false;
};

void AdaptConfigForRootless(nlohmann::json& config, const RootlessConfig& rootless);

}  // namespace podvisor::oci
