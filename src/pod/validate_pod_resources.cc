// The API server's validation of spec.resources, the pod-level resources of
// KEP-2837 (S10.5): validatePodResources, validatePodResourceName and
// validatePodResourceConsistency of pkg/apis/core/validation, run after the
// defaults (pod/defaults.cc), as the API server runs them. Whether the host
// can enforce the values is not decided here (cgroups/pod_cgroup.h).
#include <array>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pod/resources.h"
#include "pod/validate_internal.h"

namespace podvisor::pod::internal {
namespace {

// The API server's IsStandardResourceName: container resources and the
// names a ResourceQuota counts. Such a name is well-formed at pod level and
// then refused as unsupported, as the API server does.
bool IsStandardResourceName(std::string_view name) {
  static constexpr std::array<std::string_view, 20> kStandard = {
      "cpu",
      "memory",
      "ephemeral-storage",
      "requests.cpu",
      "requests.memory",
      "requests.ephemeral-storage",
      "limits.cpu",
      "limits.memory",
      "limits.ephemeral-storage",
      "pods",
      "resourcequotas",
      "services",
      "replicationcontrollers",
      "secrets",
      "configmaps",
      "persistentvolumeclaims",
      "storage",
      "requests.storage",
      "services.nodeports",
      "services.loadbalancers",
  };
  for (std::string_view s : kStandard) {
    if (s == name) return true;
  }
  return name.starts_with("hugepages-") || name.starts_with("requests.hugepages-");
}

std::optional<Quantity> Lookup(const ResourceList& list, const std::string& name) {
  if (name == "cpu") return list.cpu;
  if (name == "memory") return list.memory;
  auto it = list.other.find(name);
  return it == list.other.end() ? std::nullopt : std::optional<Quantity>(it->second);
}

}  // namespace

// validatePodResourceName: a well-formed resource name first, then one a
// pod cgroup enforces.
void Validator::CheckPodResourceName(const std::string& name, const std::string& path) {
  Messages msgs = QualifiedNameMessages(name);
  if (!msgs.empty()) {
    AddEach(path, Q(name), msgs);
    return;
  }
  if (name.find('/') == std::string::npos && !IsStandardResourceName(name)) {
    Add(Invalid(path, Q(name), "must be a standard resource type or fully qualified"));
    return;
  }
  if (IsSupportedPodLevelResource(name)) return;
  // S10.5, departs: current Kubernetes accepts hugepages-<size> at pod level
  // and sizes the pod's hugetlb cgroup from it; podvisor does not manage
  // hugetlb, and a limit it accepted but did not enforce would be a
  // silent loss, so it says so instead.
  if (name.starts_with("hugepages-")) {
    Add(Forbidden(path,
                  "podvisor does not enforce huge pages at pod level (no hugetlb pod cgroup); "
                  "set them per container"));
    return;
  }
  Add(Unsupported(path, Q(name), {"cpu", "memory"}));
}

// validatePodResources + validatePodResourceConsistency (S10.5).
void Validator::CheckPodResources() {
  const PodSpec& spec = pod_.spec;
  const ResourceRequirements& pod = spec.resources;
  if (pod.requests.empty() && pod.limits.empty()) return;
  CheckResources(pod, "spec.resources", /*pod_level=*/true);

  // The pod-level request of a resource covers what its containers ask
  // together, sidecars and the init phase included (S10.1). The API server
  // of 1.33.1 compared every resource any container requests, a missing
  // pod-level one reading as 0 (kubernetes#132449); the fix compares only
  // those spec.resources sets, and so does podvisor.
  const ResourceList aggregate = AggregateContainerRequests(spec);
  for (const auto& [name, agg] :
       std::initializer_list<std::pair<std::string, std::optional<Quantity>>>{
           {"cpu", aggregate.cpu}, {"memory", aggregate.memory}}) {
    std::optional<Quantity> requested = Lookup(pod.requests, name);
    if (!requested || !agg || *agg <= *requested) continue;
    Add(Invalid(
        Key("spec.resources.requests", name), Q(requested->ToString()),
        "must be greater than or equal to aggregate container requests of " + agg->ToString()));
  }
  // No regular container's limit above the pod's. Their sum may be: the
  // pod cgroup caps them together (KEP-2837). The field path is the API
  // server's, built from spec.resources.
  for (std::size_t i = 0; i < spec.containers.size(); ++i) {
    const ResourceList& limits = spec.containers[i].resources.limits;
    std::vector<std::pair<std::string, Quantity>> entries;
    if (limits.cpu) entries.emplace_back("cpu", *limits.cpu);
    if (limits.memory) entries.emplace_back("memory", *limits.memory);
    for (const auto& [name, q] : limits.other) entries.emplace_back(name, q);
    for (const auto& [name, limit] : entries) {
      std::optional<Quantity> pod_limit = Lookup(pod.limits, name);
      if (!pod_limit || limit <= *pod_limit) continue;
      Add(Invalid(Key(Idx("spec.resources.containers", i), name) + ".limits", Q(limit.ToString()),
                  "must be less than or equal to pod limits of " + pod_limit->ToString()));
    }
  }
}

}  // namespace podvisor::pod::internal
