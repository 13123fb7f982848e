#include "pod/resources.h"

#include <algorithm>

namespace podvisor::pod {
namespace {

using Pick = std::optional<Quantity> (*)(const Container&);

std::optional<Quantity> CpuRequest(const Container& c) {
  return c.resources.requests.cpu;
}
std::optional<Quantity> MemoryRequest(const Container& c) {
  return c.resources.requests.memory;
}
std::optional<Quantity> CpuLimit(const Container& c) {
  return c.resources.limits.cpu;
}
std::optional<Quantity> MemoryLimit(const Container& c) {
  return c.resources.limits.memory;
}

std::optional<Quantity> Add(std::optional<Quantity> a, std::optional<Quantity> b) {
  if (!a) return b;
  if (!b) return a;
  return *a + *b;
}

std::optional<Quantity> Max(std::optional<Quantity> a, std::optional<Quantity> b) {
  if (!a) return b;
  if (!b) return a;
  return std::max(*a, *b);
}

// S10.1, the kubelet's PodRequests/PodLimits with sidecars:
//   max(Σ regular + Σ sidecars,
//       max over the init list of: an init's value + Σ sidecars before it,
//                                  or, at a sidecar, the running sidecar sum)
// plus the pod overhead.
std::optional<Quantity> Effective(const PodSpec& spec, Pick pick,
                                  std::optional<Quantity> overhead) {
  std::optional<Quantity> regular;
  for (const auto& c : spec.containers) regular = Add(regular, pick(c));

  std::optional<Quantity> sidecars;   // running sum of sidecars seen so far
  std::optional<Quantity> init_peak;  // the largest moment of the init phase
  for (const auto& c : spec.init_containers) {
    std::optional<Quantity> at_this_step;
    if (IsSidecar(c)) {
      sidecars = Add(sidecars, pick(c));
      at_this_step = sidecars;
    } else {
      at_this_step = Add(pick(c), sidecars);
    }
    init_peak = Max(init_peak, at_this_step);
  }
  std::optional<Quantity> total = Max(Add(regular, sidecars), init_peak);
  if (!total) return std::nullopt;
  return Add(total, overhead);
}

bool EveryContainerHas(const PodSpec& spec, Pick pick) {
  auto has = [&](const Container& c) { return pick(c).has_value(); };
  return std::all_of(spec.containers.begin(), spec.containers.end(), has) &&
         std::all_of(spec.init_containers.begin(), spec.init_containers.end(), has);
}

template <typename F>
void ForEachContainer(const PodSpec& spec, F f) {
  for (const auto& c : spec.init_containers) f(c);
  for (const auto& c : spec.containers) f(c);
}

constexpr int64_t kMi = 1024 * 1024;
// S10.3: a sidecar or regular container without a memory request counts as
// 200Mi when the sidecar's score is compared with the regular containers'.
constexpr int64_t kMissingRequestForSidecarScore = 200 * kMi;

__extension__ typedef __int128 i128;  // 1000 x bytes overflows int64 past 8 PiB

// 128 bits: with S10.9's share added a request may pass int64 in a
// manifest validation refuses, which the fuzzer still computes.
i128 ScoreFromRequest(i128 request_bytes, int64_t node_memory_bytes) {
  if (node_memory_bytes <= 0) return 1000;
  i128 scaled = static_cast<i128>(1000) * request_bytes / node_memory_bytes;
  return 1000 - scaled;
}

// S10.9: (pod memory request - the containers' aggregate) / the number of
// containers, init containers included; 0 without a pod-level memory request.
i128 RemainingPodMemoryPerContainer(const PodSpec& spec) {
  const auto& pod_memory = spec.resources.requests.memory;
  if (!pod_memory || pod_memory->milli() == 0) return 0;
  const std::size_t count = spec.containers.size() + spec.init_containers.size();
  if (count == 0) return 0;
  std::optional<Quantity> aggregate = Effective(spec, MemoryRequest, std::nullopt);
  i128 remaining = static_cast<i128>(pod_memory->value()) - (aggregate ? aggregate->value() : 0);
  return remaining / static_cast<i128>(count);
}

}  // namespace

std::string_view QosClassName(QosClass q) {
  switch (q) {
    case QosClass::kGuaranteed:
      return "Guaranteed";
    case QosClass::kBurstable:
      return "Burstable";
    case QosClass::kBestEffort:
      return "BestEffort";
  }
  return "Burstable";
}

bool IsSupportedPodLevelResource(std::string_view name) {
  return name == "cpu" || name == "memory";
}

bool HasPodLevelRequests(const PodSpec& spec) {
  return spec.resources.requests.cpu || spec.resources.requests.memory;
}
bool HasPodLevelLimits(const PodSpec& spec) {
  return spec.resources.limits.cpu || spec.resources.limits.memory;
}
bool HasPodLevelResources(const PodSpec& spec) {
  return HasPodLevelRequests(spec) || HasPodLevelLimits(spec);
}

ResourceList AggregateContainerRequests(const PodSpec& spec) {
  ResourceList r;
  r.cpu = Effective(spec, CpuRequest, std::nullopt);
  r.memory = Effective(spec, MemoryRequest, std::nullopt);
  return r;
}
ResourceList AggregateContainerLimits(const PodSpec& spec) {
  ResourceList r;
  r.cpu = Effective(spec, CpuLimit, std::nullopt);
  r.memory = Effective(spec, MemoryLimit, std::nullopt);
  return r;
}
bool EveryContainerHasLimit(const PodSpec& spec, std::string_view name) {
  if (name == "cpu") return EveryContainerHas(spec, CpuLimit);
  if (name == "memory") return EveryContainerHas(spec, MemoryLimit);
  return false;
}

EffectiveResources ComputeEffectiveResources(const PodSpec& spec) {
  EffectiveResources r;
  r.cpu_request = Effective(spec, CpuRequest, spec.overhead.cpu);
  r.memory_request = Effective(spec, MemoryRequest, spec.overhead.memory);
  r.cpu_limit = Effective(spec, CpuLimit, spec.overhead.cpu);
  r.memory_limit = Effective(spec, MemoryLimit, spec.overhead.memory);
  r.every_container_has_cpu_limit = EveryContainerHas(spec, CpuLimit);
  r.every_container_has_memory_limit = EveryContainerHas(spec, MemoryLimit);
  r.cpu_limit_declared = r.every_container_has_cpu_limit;
  r.memory_limit_declared = r.every_container_has_memory_limit;
  // S10.6: component-helpers' PodRequests/PodLimits replace the aggregate
  // with each pod-level value that is set, then add the overhead. Limits
  // are replaced whenever spec.resources sets anything (IsPodLevelResourcesSet).
  const ResourceRequirements& pod = spec.resources;
  if (HasPodLevelRequests(spec)) {
    if (pod.requests.cpu) r.cpu_request = Add(pod.requests.cpu, spec.overhead.cpu);
    if (pod.requests.memory) r.memory_request = Add(pod.requests.memory, spec.overhead.memory);
  }
  if (HasPodLevelResources(spec)) {
    if (pod.limits.cpu) r.cpu_limit = Add(pod.limits.cpu, spec.overhead.cpu);
    if (pod.limits.memory) r.memory_limit = Add(pod.limits.memory, spec.overhead.memory);
    // S10.8: a non-zero pod-level limit is enforced on the pod cgroup even
    // where a container has none (ResourceConfigForPod).
    if (pod.limits.cpu && pod.limits.cpu->milli() > 0) r.cpu_limit_declared = true;
    if (pod.limits.memory && pod.limits.memory->milli() > 0) r.memory_limit_declared = true;
  }
  return r;
}

// S10.2. Only cpu and memory decide the class, as in the kubelet. Requests
// are read after defaulting, so an absent request equals its limit.
QosClass ComputeQosClass(const PodSpec& spec) {
  // S10.7: with pod-level resources only spec.resources decides (the
  // API server's ComputePodQOS): values of 0 count as unset; Guaranteed
  // needs cpu and memory limits, and requests equal to them.
  if (HasPodLevelResources(spec)) {
    auto positive = [](const std::optional<Quantity>& q) { return q && q->milli() > 0; };
    const ResourceList& req = spec.resources.requests;
    const ResourceList& lim = spec.resources.limits;
    bool any =
        positive(req.cpu) || positive(req.memory) || positive(lim.cpu) || positive(lim.memory);
    if (!any) return QosClass::kBestEffort;
    auto same = [&](const std::optional<Quantity>& r, const std::optional<Quantity>& l) {
      return positive(l) && (!positive(r) || *r == *l);
    };
    bool guaranteed = same(req.cpu, lim.cpu) && same(req.memory, lim.memory) &&
                      positive(req.cpu) == positive(lim.cpu) &&
                      positive(req.memory) == positive(lim.memory);
    return guaranteed ? QosClass::kGuaranteed : QosClass::kBurstable;
  }
  bool any_set = false;
  bool all_guaranteed = true;
  ForEachContainer(spec, [&](const Container& c) {
    const auto& req = c.resources.requests;
    const auto& lim = c.resources.limits;
    if (req.cpu || req.memory || lim.cpu || lim.memory) any_set = true;
    bool cpu_ok = lim.cpu && (!req.cpu || *req.cpu == *lim.cpu);
    bool memory_ok = lim.memory && (!req.memory || *req.memory == *lim.memory);
    if (!cpu_ok || !memory_ok) all_guaranteed = false;
  });
  if (!any_set) return QosClass::kBestEffort;
  return all_guaranteed ? QosClass::kGuaranteed : QosClass::kBurstable;
}

int ComputeOomScoreAdj(const PodSpec& spec, const Container& container, int64_t node_memory_bytes) {
  switch (ComputeQosClass(spec)) {
    case QosClass::kGuaranteed:
      return kGuaranteedOomScoreAdj;
    case QosClass::kBestEffort:
      return kBestEffortOomScoreAdj;
    case QosClass::kBurstable:
      break;
  }
  const auto& own_request = container.resources.requests.memory;
  // S10.9: the pod-level memory request the containers do not ask for
  // themselves is shared out equally among every container and added to
  // each request the score is computed from (the kubelet's
  // remainingPodMemReqPerContainer).
  const i128 remaining = RemainingPodMemoryPerContainer(spec);
  i128 score;
  if (IsSidecar(container)) {
    // A sidecar must not be the OOM killer's first choice over the
    // application it serves: it is scored with the smaller of its own
    // request and the smallest regular container's (KEP-753).
    int64_t m = own_request ? own_request->value() : kMissingRequestForSidecarScore;
    for (const auto& c : spec.containers) {
      const auto& r = c.resources.requests.memory;
      m = std::min(m, r ? r->value() : kMissingRequestForSidecarScore);
    }
    score = ScoreFromRequest(m + remaining, node_memory_bytes);
    int64_t declared = own_request ? own_request->value() : 0;
    if (m <= declared) score += 1;
  } else {
    score =
        ScoreFromRequest((own_request ? own_request->value() : 0) + remaining, node_memory_bytes);
  }
  // The kubelet's clamps: never as protected as a Guaranteed container
  // (1000 + -997 = 3), never as exposed as a BestEffort one.
  if (score < 1000 + kGuaranteedOomScoreAdj) return 1000 + kGuaranteedOomScoreAdj;
  if (score >= kBestEffortOomScoreAdj) return kBestEffortOomScoreAdj - 1;
  return static_cast<int>(score);
}

}  // namespace podvisor::pod
