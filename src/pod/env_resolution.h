// A container's own environment by the kubelet's rules
// (pkg/kubelet/kubelet_pods.go, makeEnvironmentVariables), and the
// downward API values it and downwardAPI volumes read:
//
//  1. envFrom, source by source: every key of the ConfigMap's `data` (not
//     binaryData) or the Secret's data, with the prefix prepended; a key
//     that is then not a valid variable name is skipped (and reported by
//     EnvFromWarnings); a later source overrides an earlier one.
//  2. env, in order: a non-empty `value` has its $(VAR) references
//     expanded against the variables built so far (envFrom's and earlier
//     env entries; never the image's, which the kubelet cannot see); a
//     valueFrom is resolved and never expanded; the entry overrides any
//     earlier one of the same name. A missing optional reference leaves
//     the variable unset.
//
// The image's Env is merged by the runtime layer (oci/process_env.h): the
// container's variables override the image's.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "pod/field_error.h"
#include "pod/model.h"

namespace podvisor::pod {

using EnvPairs = std::vector<std::pair<std::string, std::string>>;

// What the kubelet knows about its node and the pod's network that the
// manifest does not say.
struct DownwardApiNode {
  std::string node_name;              // spec.nodeName: the host name
  std::vector<std::string> host_ips;  // status.hostIP(s)
  // status.podIP(s): the pod's addresses once its network exists (the
  // host's with hostNetwork); empty while the pod has only loopback.
  std::vector<std::string> pod_ips;
  // Node allocatable, the default of limits.* in resourceFieldRef.
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  int64_t ephemeral_storage_bytes = 0;
};

// The value of a fieldRef. Volumes may also name metadata.labels and
// metadata.annotations (every entry, `key="value"` a line, sorted).
Result<std::string> ResolveFieldRef(const Pod& pod, const ObjectFieldSelector& field,
                                    const DownwardApiNode& node);

// The value of a resourceFieldRef; SELF is the container an env entry
// belongs to (used when containerName is empty).
Result<std::string> ResolveResourceFieldRef(const Pod& pod, const Container* self,
                                            const ResourceFieldSelector& field,
                                            const DownwardApiNode& node);

// Steps 1 and 2 above. Errors name the env entry.
Result<EnvPairs> ResolveContainerEnv(const Pod& pod, const Container& container,
                                     const DownwardApiNode& node);

// envFrom keys the kubelet would skip as invalid variable names, one
// warning per source (the kubelet's InvalidEnvironmentVariableNames event).
FieldWarnings EnvFromWarnings(const Pod& pod);

// Kubernetes' expansion.Expand: `$$` is a literal `$`, `$(NAME)` the value
// of NAME when LOOKUP knows it, else left as written.
std::string ExpandEnvRefs(std::string_view input, const EnvPairs& env);
// The same expansion with any lookup (nullopt: the reference stays as
// written); oci::ExpandVars uses it for the image's env.
std::string ExpandRefs(std::string_view input,
                       const std::function<std::optional<std::string>(std::string_view)>& lookup);

// A volumeMount's subPathExpr expanded against the container's own
// variables; as the kubelet, an unknown or empty variable is an error
// naming it.
Result<std::string> ExpandSubPathExpr(std::string_view expr, const EnvPairs& env);

// The names $(NAME) references in TEXT (for validation).
std::vector<std::string> EnvReferences(std::string_view text);

}  // namespace podvisor::pod
