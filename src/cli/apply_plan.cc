#include "cli/apply_plan.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "pod/serialize.h"

namespace podvisor::cli::apply {
namespace {

// S18.3: an annotation podvisor itself reads changes what the pod does
// (podvisor.io/after orders its start), so it counts as a change; any
// other label or annotation is metadata only, as for a Deployment, whose
// pods are not rolled for a label of the Deployment's own.
constexpr std::string_view kBehaviourAnnotationPrefix = "podvisor.io/";

// The downward API can hand labels and annotations to the containers
// (fieldRef metadata.labels, metadata.annotations['k']); then they are
// part of what runs.
bool MetadataReachesContainers(const pod::Pod& pod) {
  const std::string spec = pod::ToJson(pod.spec).dump();
  return spec.find("\"metadata.labels") != std::string::npos ||
         spec.find("\"metadata.annotations") != std::string::npos;
}

void DropInertMetadata(pod::Pod& pod) {
  pod.metadata.labels.clear();
  std::erase_if(pod.metadata.annotations, [](const auto& entry) {
    return !std::string_view(entry.first).starts_with(kBehaviourAnnotationPrefix);
  });
}

// The containers a resize may change: regular ones and sidecars (KEP-1287
// leaves an ordinary init container, which has finished, out).
std::vector<pod::Container*> ResizableContainers(pod::Pod& pod) {
  std::vector<pod::Container*> out;
  for (auto& c : pod.spec.init_containers) {
    if (pod::IsSidecar(c)) out.push_back(&c);
  }
  for (auto& c : pod.spec.containers) out.push_back(&c);
  return out;
}

void CopyCpuMemory(const pod::ResourceList& from, pod::ResourceList& to) {
  to.cpu = from.cpu;
  to.memory = from.memory;
}

// JSON Pointer "/spec/containers/0/image" as a field path,
// "spec.containers[0].image".
std::string FieldPath(const std::string& pointer) {
  std::string out;
  std::size_t start = 1;
  while (start <= pointer.size()) {
    std::size_t end = pointer.find('/', start);
    if (end == std::string::npos) end = pointer.size();
    std::string token = pointer.substr(start, end - start);
    if (!token.empty() && std::all_of(token.begin(), token.end(),
                                      [](unsigned char ch) { return std::isdigit(ch) != 0; })) {
      out += "[" + token + "]";
    } else {
      out += (out.empty() ? "" : ".") + token;
    }
    start = end + 1;
  }
  return out;
}

// The first ConfigMap or Secret that differs, as "configmap/NAME".
std::string ConfigDifference(const pod::ConfigObjects& a, const pod::ConfigObjects& b) {
  auto first = [](const auto& left, const auto& right, const std::string& kind) -> std::string {
    std::set<std::string> names;
    for (const auto& [name, object] : left) names.insert(name);
    for (const auto& [name, object] : right) names.insert(name);
    for (const auto& name : names) {
      auto l = left.find(name);
      auto r = right.find(name);
      if (l == left.end() || r == right.end() || !(l->second == r->second)) {
        std::string what = kind;
        what += "/";
        what += name;
        return what;
      }
    }
    return "";
  };
  std::string what = first(a.config_maps, b.config_maps, "configmap");
  return what.empty() ? first(a.secrets, b.secrets, "secret") : what;
}

Decision DecideChange(const Desired* desired, const Current* current) {
  Decision d;
  d.pod = desired ? desired->name : current->name;
  if (!desired) {
    d.change = Change::kPrune;
    d.why = "its manifest is gone";
    return d;
  }
  if (!desired->pod) {
    d.change = Change::kInvalid;
    d.why = desired->problems.empty() ? "invalid" : desired->problems.front();
    return d;
  }
  if (!current || !current->running) {
    // S18.2: a pod whose last run of this very manifest Succeeded (a Job's)
    // is done; anything else that does not run is started.
    if (current && current->applied && current->kept && current->phase == "Succeeded" &&
        Compare(*current->kept, *desired->pod).difference == Difference::kNone) {
      d.change = Change::kKeep;
      d.why = "completed";
      return d;
    }
    d.change = Change::kStart;
    return d;
  }
  if (!current->applied) {
    d.change = Change::kForeign;
    d.why = "a pod of that name runs that apply did not start";
    return d;
  }
  if (!current->kept) {
    d.change = Change::kReplace;
    d.why = "its kept manifest cannot be read";
    return d;
  }
  Comparison c = Compare(*current->kept, *desired->pod);
  d.why = c.what;
  switch (c.difference) {
    case Difference::kNone:
      d.change = Change::kKeep;
      break;
    case Difference::kResources:
      d.change = Change::kResize;
      break;
    case Difference::kOther:
      d.change = Change::kReplace;
      break;
  }
  return d;
}

// S18.6: a manifest that was rolled back stays rolled back until it is
// edited, or a rescan (--watch) would replace and roll back every time;
// but a pod that no longer runs (stopped by hand) is started on it again.
Decision Decide(const Desired* desired, const Current* current) {
  Decision d = DecideChange(desired, current);
  if ((d.change == Change::kStart || d.change == Change::kReplace || d.change == Change::kResize) &&
      current && current->running && current->failed && desired && desired->pod &&
      Compare(*current->failed, *desired->pod).difference == Difference::kNone) {
    d.change = Change::kHeld;
    d.why = "this manifest was rolled back before; edit it to try again";
  }
  return d;
}

}  // namespace

std::string_view ChangeName(Change change) {
  switch (change) {
    case Change::kStart:
      return "start";
    case Change::kKeep:
      return "keep";
    case Change::kResize:
      return "resize";
    case Change::kReplace:
      return "replace";
    case Change::kInvalid:
      return "invalid";
    case Change::kForeign:
      return "foreign";
    case Change::kPrune:
      return "prune";
    case Change::kHeld:
      return "held";
  }
  return "?";
}

Comparison Compare(const pod::Pod& kept, const pod::Pod& desired) {
  pod::Pod a = kept;
  pod::Pod b = desired;
  if (!MetadataReachesContainers(a) && !MetadataReachesContainers(b)) {
    DropInertMetadata(a);
    DropInertMetadata(b);
  }
  if (a == b) return {};
  // Resources only: with the desired cpu and memory copied into the kept
  // pod's resizable containers (same names in the same places), nothing
  // else differs.
  pod::Pod resized = a;
  std::vector<pod::Container*> from = ResizableContainers(b);
  std::vector<pod::Container*> to = ResizableContainers(resized);
  std::string resized_names;
  if (from.size() == to.size()) {
    for (std::size_t i = 0; i < from.size(); ++i) {
      if (from[i]->name != to[i]->name) break;
      if (!(from[i]->resources == to[i]->resources)) {
        resized_names += (resized_names.empty() ? "" : ", ") + from[i]->name;
      }
      CopyCpuMemory(from[i]->resources.requests, to[i]->resources.requests);
      CopyCpuMemory(from[i]->resources.limits, to[i]->resources.limits);
    }
    if (resized == b) return {Difference::kResources, "resources of " + resized_names};
  }
  Comparison c{Difference::kOther, ConfigDifference(a.config, b.config)};
  if (c.what.empty()) {
    nlohmann::json patch = nlohmann::json::diff(pod::ToJson(a), pod::ToJson(b));
    c.what = patch.empty() ? "the pod's Job limits"
                           : FieldPath(patch.front().value("path", std::string()));
  }
  return c;
}

std::vector<Decision> Plan(const std::vector<Desired>& desired, const std::vector<Current>& current,
                           bool prune) {
  std::map<std::string, std::pair<const Desired*, const Current*>> by_name;
  for (const auto& d : desired) by_name[d.name].first = &d;
  for (const auto& c : current) by_name[c.name].second = &c;
  std::vector<Decision> out;
  for (const auto& [name, pair] : by_name) {
    const auto& [d, c] = pair;
    if (!d && (!prune || !c->applied)) continue;
    out.push_back(Decide(d, c));
  }
  return out;
}

nlohmann::json ResizeRequest(const pod::Pod& kept, const pod::Pod& desired) {
  nlohmann::json containers = nlohmann::json::array();
  pod::Pod a = kept;
  pod::Pod b = desired;
  std::vector<pod::Container*> old_list = ResizableContainers(a);
  for (pod::Container* c : ResizableContainers(b)) {
    auto old = std::find_if(old_list.begin(), old_list.end(),
                            [&](const pod::Container* o) { return o->name == c->name; });
    if (old != old_list.end() && (*old)->resources == c->resources) continue;
    nlohmann::json resources = nlohmann::json::object();
    for (auto [key, list] : {std::pair{"requests", &c->resources.requests},
                             std::pair{"limits", &c->resources.limits}}) {
      nlohmann::json values = nlohmann::json::object();
      if (list->cpu) values["cpu"] = pod::ToJson(*list->cpu);
      if (list->memory) values["memory"] = pod::ToJson(*list->memory);
      if (!values.empty()) resources[key] = values;
    }
    containers.push_back({{"name", c->name}, {"resources", resources}});
  }
  return {{"op", "resize"}, {"containers", containers}};
}

ConfigNames UsedConfigNames(const pod::PodSpec& spec) {
  std::set<std::string> maps;
  std::set<std::string> secrets;
  for (const auto& v : spec.volumes) {
    if (v.config_map) maps.insert(v.config_map->name);
    if (v.secret) secrets.insert(v.secret->secret_name);
    if (v.projected) {
      for (const auto& s : v.projected->sources) {
        if (s.config_map) maps.insert(s.config_map->name);
        if (s.secret) secrets.insert(s.secret->secret_name);
      }
    }
  }
  for (const auto* list : {&spec.init_containers, &spec.containers}) {
    for (const auto& c : *list) {
      for (const auto& e : c.env) {
        if (!e.value_from) continue;
        if (e.value_from->config_map_key_ref) maps.insert(e.value_from->config_map_key_ref->name);
        if (e.value_from->secret_key_ref) secrets.insert(e.value_from->secret_key_ref->name);
      }
      for (const auto& f : c.env_from) {
        if (f.config_map_ref) maps.insert(f.config_map_ref->name);
        if (f.secret_ref) secrets.insert(f.secret_ref->name);
      }
    }
  }
  for (const auto& s : spec.image_pull_secrets) secrets.insert(s.name);
  maps.erase("");
  secrets.erase("");
  return {{maps.begin(), maps.end()}, {secrets.begin(), secrets.end()}};
}

Duration ReadyBudget(const pod::Pod& pod, std::optional<Duration> timeout) {
  if (timeout) return *timeout;
  Duration longest{0};
  for (const auto* list : {&pod.spec.init_containers, &pod.spec.containers}) {
    for (const auto& c : *list) {
      if (!c.startup_probe) continue;
      const pod::Probe& p = *c.startup_probe;
      longest = std::max<Duration>(
          longest, std::chrono::seconds(int64_t{p.initial_delay_seconds} +
                                        int64_t{p.period_seconds} * p.failure_threshold));
    }
  }
  if (longest == Duration{0}) return kDefaultReadyTimeout;
  return longest + std::chrono::minutes(1);
}

bool IsManifestFileName(std::string_view name) {
  if (name.empty() || name.front() == '.' || name.front() == '#') return false;
  if (name.back() == '~' || name == "4913") return false;
  for (std::string_view ext : {".yaml", ".yml", ".json"}) {
    if (name.size() > ext.size() && name.ends_with(ext)) return true;
  }
  return false;
}

}  // namespace podvisor::cli::apply
