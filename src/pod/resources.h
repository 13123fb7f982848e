// Resource arithmetic of SEMANTICS S10: the pod's effective requests and
// limits with sidecars and overhead (S10.1), the QoS class (S10.2) and each
// container's oom_score_adj (S10.3), with the pod-level resources of
// KEP-2837 (spec.resources, S10.5-S10.9) where the pod sets them. Pure
// arithmetic on the model; which host can enforce them is cgroups/'s.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "pod/model.h"

namespace podvisor::pod {

struct EffectiveResources {
  // Absent when no container contributes a value for that resource.
  std::optional<Quantity> cpu_request, memory_request;
  std::optional<Quantity> cpu_limit, memory_limit;
  // S10.4: a pod-level limit is enforced only when every container has one.
  bool every_container_has_cpu_limit = false;
  bool every_container_has_memory_limit = false;
  // S10.8: the limit is enforced on the pod cgroup: every container has
  // one, or spec.resources.limits sets it (the kubelet's ResourceConfigForPod).
  bool cpu_limit_declared = false;
  bool memory_limit_declared = false;
};

// S10.1, after ApplyDefaults (requests defaulted to limits); S10.6: a
// pod-level request or limit replaces the containers' aggregate.
EffectiveResources ComputeEffectiveResources(const PodSpec& spec);

// S10.5: the resources spec.resources may name (the kubelet's
// IsSupportedPodLevelResource, without hugepages: see S10.5).
bool IsSupportedPodLevelResource(std::string_view name);
// Whether spec.resources sets cpu or memory: requests, limits, either
// (component-helpers' IsPodLevelRequestsSet, IsPodLevelLimitsSet,
// IsPodLevelResourcesSet).
bool HasPodLevelRequests(const PodSpec& spec);
bool HasPodLevelLimits(const PodSpec& spec);
bool HasPodLevelResources(const PodSpec& spec);

// The containers' own aggregate (S10.1 without overhead or spec.resources:
// component-helpers' AggregateContainerRequests/Limits), cpu and memory.
ResourceList AggregateContainerRequests(const PodSpec& spec);
ResourceList AggregateContainerLimits(const PodSpec& spec);
// Whether every container, init containers included, has a limit for
// "cpu" or "memory".
bool EveryContainerHasLimit(const PodSpec& spec, std::string_view name);

enum class QosClass { kGuaranteed, kBurstable, kBestEffort };
std::string_view QosClassName(QosClass q);  // "Guaranteed", ...

// S10.2.
QosClass ComputeQosClass(const PodSpec& spec);

// S10.3: oom_score_adj for `container` (which must belong to `spec`) on a
// node with `node_memory_bytes` of memory.
int ComputeOomScoreAdj(const PodSpec& spec, const Container& container, int64_t node_memory_bytes);

constexpr int kSupervisorOomScoreAdj = -999;
constexpr int kGuaranteedOomScoreAdj = -997;
constexpr int kBestEffortOomScoreAdj = 1000;

}  // namespace podvisor::pod
