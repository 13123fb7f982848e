// S17.10: a resize across a handover. The allocated resources travel in
// the state's pod (HandoverState); what else a resize left (the pending
// request, the values a cgroup kept after a refused write, the
// conditions) in its "resize" object, read back here by the supervisor
// that is handed the pod, after an upgrade or an adoption.
#include "common/log.h"
#include "pod/resize.h"
#include "supervisor/executor/handover.h"
#include "supervisor/executor/internal.h"

namespace podvisor::supervisor::executor {
namespace {

std::optional<pod::PodCondition> ConditionFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  pod::PodCondition c;
  c.type = j.value("type", "");
  c.status = pod::ConditionStatus::kTrue;
  c.reason = j.value("reason", "");
  c.message = j.value("message", "");
  c.last_transition_time = NsToWall(j.value("at", int64_t{0}));
  if (c.type.empty()) return std::nullopt;
  return c;
}

}  // namespace

void Executor::RestoreResizeState(const nlohmann::json& state) {
  auto it = state.find("resize");
  if (it == state.end() || !it->is_object()) return;
  const nlohmann::json& r = *it;
  resize_.resized = r.value("resized", false);
  // An adopting supervisor was started from the manifest: the resources
  // the pod runs with are the saved pod's.
  if (resize_.resized) {
    auto saved = SavedPod(state, pod_);
    if (!saved) {
      log::Warn("handover state: the resized pod cannot be read back: {}", saved.error().message());
    } else {
      for (auto* list : {&pod_.spec.init_containers, &pod_.spec.containers}) {
        for (pod::Container& c : *list) {
          if (const pod::Container* s = pod::FindResizableContainer(saved->spec, c.name)) {
            c.resources = s->resources;
          }
        }
      }
      pod_json_ = nlohmann::json();
    }
  }
  if (auto d = r.find("desired"); d != r.end() && d->is_object()) {
    for (const auto& [name, j] : d->items()) {
      if (auto res = pod::ResourcesFromJson(j)) resize_.desired[name] = *res;
    }
  }
  if (auto a = r.find("actual"); a != r.end() && a->is_object()) {
    for (const auto& [name, j] : a->items()) {
      if (auto res = pod::ResourcesFromJson(j)) resize_.actual[name] = *res;
    }
  }
  if (auto p = r.find("pending"); p != r.end()) resize_.pending = ConditionFromJson(*p);
  if (auto p = r.find("inProgress"); p != r.end()) resize_.in_progress = ConditionFromJson(*p);
  record_.SetResizeView({resize_.desired, resize_.actual});
  // S17.12: a deferred resize is still waited for by the next supervisor.
  if (resize_.pending && resize_.pending->reason == "Deferred") WatchDeferredResize();
}

// S17.10: a spec that differs from the saved one only in the cpu and
// memory resources a resize changed is the same pod: it is adopted, with
// the saved (resized) values, not replaced as an update (S15.6).
bool SameButResized(const nlohmann::json& mine, const nlohmann::json& saved_spec) {
  nlohmann::json a = mine;
  for (const char* list : {"initContainers", "containers"}) {
    auto ours = a.find(list);
    auto theirs = saved_spec.find(list);
    if (ours == a.end() || theirs == saved_spec.end()) continue;
    if (!ours->is_array() || !theirs->is_array() || ours->size() != theirs->size()) return false;
    for (std::size_t i = 0; i < ours->size(); ++i) {
      if ((*theirs)[i].contains("resources")) (*ours)[i]["resources"] = (*theirs)[i]["resources"];
    }
  }
  return a == saved_spec;
}

}  // namespace podvisor::supervisor::executor
