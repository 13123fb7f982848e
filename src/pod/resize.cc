#include "pod/resize.h"

#include <algorithm>

#include "pod/defaults.h"
#include "pod/resources.h"
#include "pod/validate.h"

namespace podvisor::pod {
namespace {

using json = nlohmann::json;

Result<ResourceListPatch> ParseList(const json& list, const std::string& path) {
  ResourceListPatch out;
  if (list.is_null()) return out;
  if (!list.is_object()) return Error(path + ": must be an object of resource names to quantities");
  for (const auto& [name, value] : list.items()) {
    std::string at = path;
    at.append(".").append(name);
    if (value.is_null()) {
      out[name] = std::nullopt;
      continue;
    }
    std::string text;
    if (value.is_string()) {
      text = value.get<std::string>();
    } else if (value.is_number()) {
      text = value.dump();
    } else {
      return Error(at + ": must be a quantity (\"250m\", \"64Mi\")");
    }
    auto q = Quantity::Parse(text);
    if (!q) return Error(at + ": " + QuoteValue(text) + ": " + q.error().message());
    out[name] = *q;
  }
  return out;
}

std::optional<Quantity>* Slot(ResourceList& list, const std::string& name) {
  if (name == "cpu") return &list.cpu;
  if (name == "memory") return &list.memory;
  return nullptr;
}

std::optional<Quantity> Lookup(const ResourceList& list, const std::string& name) {
  if (name == "cpu") return list.cpu;
  if (name == "memory") return list.memory;
  auto it = list.other.find(name);
  if (it == list.other.end()) return std::nullopt;
  return it->second;
}

struct Merged {
  bool removed = false;    // a null for a value the container has
  bool other_res = false;  // a change to a resource other than cpu and memory
};

// JSON merge patch semantics on one list: a value replaces, null removes.
Merged MergeList(ResourceList& list, const ResourceListPatch& patch) {
  Merged m;
  for (const auto& [name, value] : patch) {
    std::optional<Quantity> old = Lookup(list, name);
    if (!value) {
      if (old) m.removed = true;
      continue;
    }
    if (std::optional<Quantity>* slot = Slot(list, name)) {
      *slot = value;
    } else if (!old || *old != *value) {
      m.other_res = true;
    }
  }
  return m;
}

std::string ContainerPath(const Pod& pod, const std::string& name) {
  for (std::size_t i = 0; i < pod.spec.containers.size(); ++i) {
    if (pod.spec.containers[i].name == name) return "spec.containers[" + std::to_string(i) + "]";
  }
  for (std::size_t i = 0; i < pod.spec.init_containers.size(); ++i) {
    if (pod.spec.init_containers[i].name == name) {
      return "spec.initContainers[" + std::to_string(i) + "]";
    }
  }
  return "spec.containers";
}

Container* FindMutable(PodSpec& spec, const std::string& name, bool& plain_init) {
  plain_init = false;
  for (Container& c : spec.containers) {
    if (c.name == name) return &c;
  }
  for (Container& c : spec.init_containers) {
    if (c.name != name) continue;
    if (IsSidecar(c)) return &c;
    plain_init = true;
    return nullptr;
  }
  return nullptr;
}

// S17.4: a memory-limit decrease that needs no restart must leave the
// container's current usage under the new limit; on cgroup v1 the kernel
// would refuse the write (EBUSY), on v2 it would OOM-kill the container.
void CheckMemoryDecrease(const Container& before, const Container& after, const std::string& path,
                         const ResizeFacts& facts, FieldErrors& errors) {
  const auto& old_limit = before.resources.limits.memory;
  const auto& new_limit = after.resources.limits.memory;
  if (!old_limit || !new_limit || *new_limit >= *old_limit) return;
  if (ResizeRestartPolicy(after, "memory") != "NotRequired") return;
  auto usage = facts.memory_usage_bytes.find(after.name);
  if (usage == facts.memory_usage_bytes.end() || usage->second <= new_limit->value()) return;
  errors.push_back(
      Forbidden(path + ".resources.limits.memory",
                "memory limit " + new_limit->ToString() +
                    " is below the container's current usage of " + std::to_string(usage->second) +
                    " bytes; lower it less, or set resizePolicy RestartContainer for memory"));
}

}  // namespace

Result<std::vector<ContainerResizePatch>> ParseResizeContainers(const json& containers) {
  if (!containers.is_array() || containers.empty()) {
    return Error("containers: must be a non-empty list of {\"name\", \"resources\"}");
  }
  std::vector<ContainerResizePatch> out;
  for (std::size_t i = 0; i < containers.size(); ++i) {
    const json& entry = containers[i];
    const std::string path = "containers[" + std::to_string(i) + "]";
    if (!entry.is_object()) return Error(path + ": must be an object");
    ContainerResizePatch patch;
    auto name = entry.find("name");
    if (name == entry.end() || !name->is_string() || name->get<std::string>().empty()) {
      return Error(path + ".name: Required value");
    }
    patch.name = name->get<std::string>();
    for (const auto& [key, value] : entry.items()) {
      if (key == "name") continue;
      if (key != "resources") {
        std::string at = path;
        at.append(".").append(key);
        return Error(at + ": Forbidden: only resources (requests and limits) may change on resize");
      }
      if (!value.is_object()) return Error(path + ".resources: must be an object");
      for (const auto& [list, items] : value.items()) {
        std::string at = path;
        at.append(".resources.").append(list);
        if (list != "requests" && list != "limits") {
          return Error(at + ": Forbidden: only requests and limits may change on resize");
        }
        auto parsed = ParseList(items, at);
        if (!parsed) return parsed.take_error();
        (list == "requests" ? patch.requests : patch.limits) = std::move(*parsed);
      }
    }
    out.push_back(std::move(patch));
  }
  return out;
}

std::string_view ResizeRestartPolicy(const Container& c, std::string_view resource) {
  for (const ContainerResizePolicy& p : c.resize_policy) {
    if (p.resource_name == resource) return p.restart_policy;
  }
  return "NotRequired";
}

const Container* FindResizableContainer(const PodSpec& spec, std::string_view name) {
  for (const Container& c : spec.containers) {
    if (c.name == name) return &c;
  }
  for (const Container& c : spec.init_containers) {
    if (c.name == name && IsSidecar(c)) return &c;
  }
  return nullptr;
}

ResizeMerge MergeResize(const Pod& current, const std::vector<ContainerResizePatch>& patch,
                        const ResizeFacts& facts) {
  ResizeMerge out{current, {}};
  FieldErrors& errors = out.errors;
  bool other_res = false;
  for (const ContainerResizePatch& p : patch) {
    bool plain_init = false;
    Container* c = FindMutable(out.pod.spec, p.name, plain_init);
    const std::string path = ContainerPath(current, p.name);
    if (plain_init) {
      errors.push_back(Forbidden(path + ".resources",
                                 "resources for non-sidecar init containers are immutable"));
      continue;
    }
    if (!c) {
      errors.push_back(NotFound("spec.containers", QuoteValue(p.name)));
      continue;
    }
    Merged req = MergeList(c->resources.requests, p.requests);
    Merged lim = MergeList(c->resources.limits, p.limits);
    // The API server's ValidatePodResize: nothing may be removed.
    if (req.removed) {
      errors.push_back(
          Forbidden(path + ".resources.requests", "resource requests cannot be removed"));
    }
    if (lim.removed) {
      errors.push_back(Forbidden(path + ".resources.limits", "resource limits cannot be removed"));
    }
    other_res |= req.other_res || lim.other_res;
  }
  if (other_res) errors.push_back(Forbidden("spec", "only cpu and memory resources are mutable"));
  if (!errors.empty()) return out;

  // Defaulting runs on every write to the API server: a limit added
  // without a request brings its request.
  ApplyDefaults(out.pod);
  for (FieldError& e : ValidatePod(out.pod)) errors.push_back(std::move(e));

  QosClass before = ComputeQosClass(current.spec);
  QosClass after = ComputeQosClass(out.pod.spec);
  if (before != after) {
    errors.push_back(Invalid("spec", QuoteValue(QosClassName(after)),
                             "Pod QOS Class may not change as a result of resizing"));
  }
  for (const ContainerResizePatch& p : patch) {
    const Container* old_c = FindResizableContainer(current.spec, p.name);
    const Container* new_c = FindResizableContainer(out.pod.spec, p.name);
    if (old_c && new_c) {
      CheckMemoryDecrease(*old_c, *new_c, ContainerPath(current, p.name), facts, errors);
    }
  }
  return out;
}

NodeRequests PodRequests(const PodSpec& spec) {
  EffectiveResources r = ComputeEffectiveResources(spec);
  return {r.cpu_request ? r.cpu_request->milli() : 0,
          r.memory_request ? r.memory_request->value() : 0};
}

ResizeAdmission AdmitResize(const PodSpec& desired, NodeAllocatable node, const PodSpec* allocated,
                            NodeRequests others) {
  const NodeRequests asked = PodRequests(desired);
  // The kubelet's canResizePod names memory first when both are short.
  if (node.memory_bytes > 0 && asked.memory_bytes > node.memory_bytes) {
    return {ResizeVerdict::kInfeasible, "Node didn't have enough capacity: memory, requested: " +
                                            std::to_string(asked.memory_bytes) +
                                            ", capacity: " + std::to_string(node.memory_bytes)};
  }
  if (node.cpu_milli > 0 && asked.cpu_milli > node.cpu_milli) {
    return {ResizeVerdict::kInfeasible,
            "Node didn't have enough capacity: cpu, requested: " + std::to_string(asked.cpu_milli) +
                ", capacity: " + std::to_string(node.cpu_milli)};
  }
  // S17.12: the kubelet's admission of the resized pod beside the others
  // (its resource fit checks cpu, then memory, and names the first one
  // short). podvisor's `run` admits no pod against the node, so a node may
  // already be over-committed: a resize that raises no request fits as
  // well as the pod already did.
  if (allocated) {
    const NodeRequests now = PodRequests(*allocated);
    if (asked.cpu_milli <= now.cpu_milli && asked.memory_bytes <= now.memory_bytes) return {};
  }
  auto short_of = [](std::string_view resource, int64_t requested, int64_t used, int64_t capacity) {
    return ResizeAdmission{ResizeVerdict::kDeferred,
                           "Node didn't have enough resource: " + std::string(resource) +
                               ", requested: " + std::to_string(requested) + ", used: " +
                               std::to_string(used) + ", capacity: " + std::to_string(capacity)};
  };
  if (node.cpu_milli > 0 && asked.cpu_milli + others.cpu_milli > node.cpu_milli) {
    return short_of("cpu", asked.cpu_milli, others.cpu_milli, node.cpu_milli);
  }
  if (node.memory_bytes > 0 && asked.memory_bytes + others.memory_bytes > node.memory_bytes) {
    return short_of("memory", asked.memory_bytes, others.memory_bytes, node.memory_bytes);
  }
  return {};
}

std::vector<std::string> ContainersToRestart(const PodSpec& before, const PodSpec& after) {
  std::vector<std::string> out;
  auto check = [&](const Container& c) {
    const Container* old_c = FindResizableContainer(before, c.name);
    if (!old_c) return;
    const auto &o = old_c->resources, &n = c.resources;
    bool cpu = o.requests.cpu != n.requests.cpu || o.limits.cpu != n.limits.cpu;
    bool memory = o.requests.memory != n.requests.memory || o.limits.memory != n.limits.memory;
    // KEP-1287: RestartContainer wins over NotRequired when both change.
    if ((cpu && ResizeRestartPolicy(c, "cpu") == "RestartContainer") ||
        (memory && ResizeRestartPolicy(c, "memory") == "RestartContainer")) {
      out.push_back(c.name);
    }
  };
  for (const Container& c : after.init_containers) {
    if (IsSidecar(c)) check(c);
  }
  for (const Container& c : after.containers) check(c);
  return out;
}

Result<ResourceRequirements> ResourcesFromJson(const json& j) {
  ResourceRequirements out;
  if (!j.is_object()) return Error("resources: must be an object");
  for (const char* list : {"requests", "limits"}) {
    auto it = j.find(list);
    if (it == j.end()) continue;
    auto parsed = ParseList(*it, std::string("resources.") + list);
    if (!parsed) return parsed.take_error();
    ResourceList& target = std::string_view(list) == "requests" ? out.requests : out.limits;
    for (const auto& [name, q] : *parsed) {
      if (std::optional<Quantity>* slot = Slot(target, name)) *slot = q;
    }
  }
  return out;
}

json ResourcesJson(const ResourceRequirements& r, bool requests_only) {
  auto list = [](const ResourceList& l) {
    json out = json::object();
    if (l.cpu) out["cpu"] = l.cpu->ToString();
    if (l.memory) out["memory"] = l.memory->ToString();
    return out;
  };
  if (requests_only) return list(r.requests);
  json out = json::object();
  if (!r.requests.empty()) out["requests"] = list(r.requests);
  if (r.limits.cpu || r.limits.memory) out["limits"] = list(r.limits);
  return out;
}

}  // namespace podvisor::pod
