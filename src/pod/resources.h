// Resource arithmetic of SEMANTICS S10: the pod's effective requests and
// limits with sidecars and overhead (S10.1), the QoS class (S10.2) and each
// container's oom_score_adj (S10.3).
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
};

// S10.1, after ApplyDefaults (requests defaulted to limits).
EffectiveResources ComputeEffectiveResources(const PodSpec& spec);

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
