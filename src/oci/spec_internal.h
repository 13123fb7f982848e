// Shared between the spec_*.cc files, one per concern of config.json:
// spec.cc assembles, spec_process.cc (args, env, cwd, user, rlimits,
// oomScoreAdj), spec_security.cc (capabilities, no_new_privs, seccomp),
// spec_mounts.cc (system mounts, volumes, pod files), spec_linux.cc
// (namespaces, resources, cgroupsPath, devices, masked paths).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oci/spec.h"
#include "pod/env_resolution.h"

namespace podvisor::oci::internal {

struct SpecContext {
  const pod::Pod& pod;
  const pod::Container& container;
  const image::Image& image;
  const ContainerConfigInput& input;
  std::string field;     // "spec.containers[0]"
  std::string hostname;  // the pod's (or the node's for hostNetwork)
  bool privileged = false;
  bool read_only_root = false;
  std::vector<std::string> capabilities;  // the final set, sorted
  // The container's own variables (pod/env_resolution.h): the env of the
  // process over the image's, and what $(VAR) in command, args and
  // subPathExpr expands from.
  pod::EnvPairs own_env;
};

// Field paths of securityContext entries, for error messages.
std::string SecurityField(const SpecContext& ctx, const char* name);

// process.capabilities and process.noNewPrivileges.
Result<nlohmann::json> BuildCapabilitiesJson(const SpecContext& ctx);
Result<bool> NoNewPrivileges(const SpecContext& ctx);
// linux.seccomp, or null for none (Unconfined, privileged).
Result<nlohmann::json> BuildSeccomp(const SpecContext& ctx);
// process.apparmorProfile: the Localhost profile's name, "" for none.
Result<std::string> AppArmorProfileName(const SpecContext& ctx);

Result<nlohmann::json> BuildProcess(const SpecContext& ctx);
Result<nlohmann::json> BuildMounts(const SpecContext& ctx);
Result<nlohmann::json> BuildLinux(const SpecContext& ctx);

}  // namespace podvisor::oci::internal
