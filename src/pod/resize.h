// In-place resize of a running pod's containers (KEP-1287, SEMANTICS S17):
// the request as the control socket carries it, its merge into the pod's
// spec, the API server's checks of the result (S17.2), the kubelet's
// admission against the node (S17.5) and which containers a resize
// restarts (S17.3). Pure: no cgroup, no clock; the cgroup writes are
// cgroups/resize.h, the actuation the supervisor's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "pod/field_error.h"
#include "pod/model.h"

namespace podvisor::pod {

// One resource list of a merge patch: a name and its new quantity, or
// nullopt where the patch has null (JSON merge patch's removal).
using ResourceListPatch = std::map<std::string, std::optional<Quantity>>;

// One entry of the request's "containers" (docs/INTERFACE.md, `resize`):
// matched by name against spec.containers, then sidecars of
// spec.initContainers, as `kubectl patch --subresource resize` merges.
struct ContainerResizePatch {
  std::string name;
  ResourceListPatch requests;
  ResourceListPatch limits;
};

// Parses the request's "containers" array. An error names the field
// ("containers[0].resources.limits.memory: ...") and the quantity's problem.
Result<std::vector<ContainerResizePatch>> ParseResizeContainers(const nlohmann::json& containers);

// What the checks of S17.2 need to know that the spec does not say.
struct ResizeFacts {
  // Each running container's current memory usage in bytes (its cgroup's
  // memory.current or memory.usage_in_bytes); a container missing here is
  // not checked (S17.4).
  std::map<std::string, int64_t> memory_usage_bytes;
};

struct ResizeMerge {
  Pod pod;             // the pod with the patch merged and defaults applied
  FieldErrors errors;  // the API server's refusal; empty when accepted
};

// S17.1 and S17.2: merges `patch` into `current` (the pod's desired spec,
// defaults applied) and checks the result as the API server's
// ValidatePodResize does, plus S17.4's memory-limit decrease rule.
ResizeMerge MergeResize(const Pod& current, const std::vector<ContainerResizePatch>& patch,
                        const ResizeFacts& facts);

// The node as the kubelet's resize admission sees it (S17.5).
struct NodeAllocatable {
  int64_t cpu_milli = 0;     // 0: unknown, not checked
  int64_t memory_bytes = 0;  // 0: unknown, not checked
};

// What the other pods of the node were allocated (S17.12): the sum of
// their effective requests.
struct NodeRequests {
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
};

enum class ResizeVerdict { kAccepted, kInfeasible, kDeferred };

struct ResizeAdmission {
  ResizeVerdict verdict = ResizeVerdict::kAccepted;
  std::string message;  // the kubelet's, for PodResizePending
};

// S17.5: the kubelet's canResizePod: the pod's effective requests (S10.1,
// overhead included) against the node's allocatable: more than the node
// has is Infeasible. S17.12: a resize that raises a request beyond what
// the other pods' allocations (`others`) leave of the node is Deferred;
// one that raises none of the pod's requests over `allocated` (the pod as
// it runs) is never deferred.
ResizeAdmission AdmitResize(const PodSpec& desired, NodeAllocatable node,
                            const PodSpec* allocated = nullptr, NodeRequests others = {});

// The effective cpu and memory requests of `spec` (S10.1), as NodeRequests.
NodeRequests PodRequests(const PodSpec& spec);

// S17.3: "NotRequired" or "RestartContainer" for `resource` ("cpu",
// "memory") of `c`; NotRequired when the container does not say.
std::string_view ResizeRestartPolicy(const Container& c, std::string_view resource);

// S17.3: the names of the containers (sidecars included) whose resources
// differ between `before` and `after` in a resource whose policy is
// RestartContainer. The others are resized in place.
std::vector<std::string> ContainersToRestart(const PodSpec& before, const PodSpec& after);

// The container of `spec` named `name`: a regular container or a sidecar;
// nullptr for none (plain init containers are never resized).
const Container* FindResizableContainer(const PodSpec& spec, std::string_view name);

// Each resizable container's cpu and memory requests and limits, for
// status.containerStatuses[].allocatedResources / .resources (S17.6).
nlohmann::json ResourcesJson(const ResourceRequirements& r, bool requests_only);
// The inverse of ResourcesJson(r, false), for the handover state.
Result<ResourceRequirements> ResourcesFromJson(const nlohmann::json& j);

}  // namespace podvisor::pod
