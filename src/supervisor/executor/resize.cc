// The Executor's in-place resize (SEMANTICS S17, KEP-1287): the control
// socket's `resize` checked as the API server would (pod/resize.h),
// admitted against the node as the kubelet does, then actuated at once:
// the pod's allocated resources become the request's (new instances get
// them in config.json), the cgroups of running instances are written in
// the kubelet's order (cgroups/resize.h), and containers whose
// resizePolicy says RestartContainer are replaced through the Lifecycle.
//
// The writes are synchronous on the loop: a handful of cgroupfs writes
// and reads, microseconds each, never a runtime call (S17.8).
#include <sys/sysinfo.h>

#include <algorithm>

#include "cgroups/cleanup.h"
#include "cgroups/resize.h"
#include "common/log.h"
#include "oci/node_info.h"
#include "pod/resize.h"
#include "supervisor/control/control_error.h"
#include "supervisor/executor/internal.h"
#include "supervisor/executor/node_allocations.h"

namespace podvisor::supervisor::executor {
namespace {

using cgroups::CgroupLocation;

// The API server's answer to a patch it refuses, as kubectl prints it:
// `Pod "web" is invalid: <error>` or `... is invalid: [<e1>, <e2>]`.
std::string InvalidMessage(const std::string& pod, const pod::FieldErrors& errors) {
  std::string list;
  for (const pod::FieldError& e : errors) list += (list.empty() ? "" : ", ") + e.ToString();
  if (errors.size() > 1) list = "[" + list + "]";
  return "Pod \"" + pod + "\" is invalid: " + list;
}

std::string Describe(const pod::ResourceRequirements& r) {
  return pod::ResourcesJson(r, false).dump();
}

int64_t NodeMemoryBytes(int64_t configured) {
  if (configured > 0) return configured;
  struct sysinfo info {};
  if (::sysinfo(&info) != 0) return 0;
  return static_cast<int64_t>(info.totalram) * info.mem_unit;
}

// Sidecars and regular containers, the ones a resize may change; for a
// PodSpec or a const one.
template <typename Spec, typename F>
void ForEachResizable(Spec& spec, F&& f) {
  for (auto& c : spec.init_containers) {
    if (pod::IsSidecar(c)) f(c);
  }
  for (auto& c : spec.containers) f(c);
}

}  // namespace

std::optional<CgroupLocation> Executor::InstanceCgroup(
    const std::string& container, const std::vector<std::filesystem::path>& mounts) {
  Instance* inst = instances_.Find(container, lifecycle_.InstanceOf(container));
  if (!inst || !inst->init || inst->state.Exited() || inst->cgroups_path.empty()) {
    return std::nullopt;
  }
  return cgroups::LocateCgroup(inst->cgroups_path, mounts);
}

control::ControlReply Executor::Resize(const std::vector<pod::ContainerResizePatch>& patch) {
  const std::vector<std::filesystem::path> mounts = cgroups::CgroupMounts();
  pod::Pod asked = pod_;
  asked.spec = AskedSpec();
  pod::ResizeFacts facts;
  for (const pod::ContainerResizePatch& p : patch) {
    if (auto at = InstanceCgroup(p.name, mounts)) {
      if (auto usage = cgroups::ReadMemoryUsage(*at)) facts.memory_usage_bytes[p.name] = *usage;
    }
  }
  pod::ResizeMerge merged = pod::MergeResize(asked, patch, facts);
  if (!merged.errors.empty()) {
    const std::string message = InvalidMessage(pod_.metadata.name, merged.errors);
    log::Info("resize refused: {}", message);
    return control::ControlErrorReply(control::ControlCode::kInvalidArgument, message);
  }

  // S17.5, S17.12: the kubelet's admission. A resize it does not admit
  // changes the spec (what was asked) and nothing else.
  pod::ResizeAdmission admission = AdmitResize(merged.pod.spec);
  if (admission.verdict != pod::ResizeVerdict::kAccepted) {
    KeepResizePending(merged.pod.spec, admission);
    return record_.StatusReply(CurrentStatus());
  }
  ApplyAdmittedResize(merged.pod.spec, mounts);
  return record_.StatusReply(CurrentStatus());
}

// The spec as the API server holds it: the allocated one with what was
// last asked and is still pending.
pod::PodSpec Executor::AskedSpec() const {
  pod::PodSpec asked = pod_.spec;
  ForEachResizable(asked, [&](pod::Container& c) {
    if (auto d = resize_.desired.find(c.name); d != resize_.desired.end()) c.resources = d->second;
  });
  return asked;
}

pod::ResizeAdmission Executor::AdmitResize(const pod::PodSpec& asked) const {
  const pod::NodeAllocatable node{oci::NodeCpuMilli(), NodeMemoryBytes(options_.node_memory_bytes)};
  // The other pods are read only when the pod would grow (S17.12).
  const pod::NodeRequests want = pod::PodRequests(asked);
  const pod::NodeRequests have = pod::PodRequests(pod_.spec);
  pod::NodeRequests others;
  if (want.cpu_milli > have.cpu_milli || want.memory_bytes > have.memory_bytes) {
    others = OtherPodsAllocated(options_.state_dir.parent_path(), pod_.metadata.name);
  }
  return pod::AdmitResize(asked, node, &pod_.spec, others);
}

// PodResizePending: the spec keeps what was asked, the allocated values
// stay. The kubelet's events (both warnings) come when the condition's
// reason or message changes; a deferred resize is tried again when the
// other pods change (S17.12).
void Executor::KeepResizePending(const pod::PodSpec& asked, const pod::ResizeAdmission& admission) {
  const bool deferred = admission.verdict == pod::ResizeVerdict::kDeferred;
  const std::string reason = deferred ? "Deferred" : "Infeasible";
  resize_.desired.clear();
  ForEachResizable(asked, [&](const pod::Container& c) {
    const pod::Container* allocated = pod::FindResizableContainer(pod_.spec, c.name);
    if (allocated && allocated->resources != c.resources) resize_.desired[c.name] = c.resources;
  });
  const bool changed = !resize_.pending || resize_.pending->reason != reason ||
                       resize_.pending->message != admission.message;
  if (changed) {
    resize_.pending = pod::PodCondition{"PodResizePending", pod::ConditionStatus::kTrue,
                                        loop_.clock().WallNow(), reason, admission.message};
    log::Info("resize {}: {}", deferred ? "deferred" : "infeasible", admission.message);
    OnPublish(lifecycle::Publish{lifecycle::EventType::kWarning,
                                 deferred ? "ResizeDeferred" : "ResizeInfeasible", "pod",
                                 admission.message});
  }
  if (deferred) {
    WatchDeferredResize();
  } else {
    allocation_watch_.reset();
  }
  ResizeChanged();
}

void Executor::WatchDeferredResize() {
  if (allocation_watch_) return;
  auto watch = AllocationWatch::Start(loop_, options_.state_dir.parent_path(), pod_.metadata.name,
                                      [this] { RetryDeferredResize(); });
  if (!watch) {
    // Still tried again by the next resize request; the log says why not
    // sooner.
    log::Warn("a deferred resize is not retried by itself: {}", watch.error().message());
    return;
  }
  allocation_watch_ = std::move(*watch);
}

// The kubelet's retry of a pending resize: admitted now, it is actuated
// as if just asked; still short, its condition follows the numbers.
void Executor::RetryDeferredResize() {
  if (!resize_.pending || resize_.pending->reason != "Deferred" || resize_.desired.empty() ||
      lifecycle_.Terminating() || pod_ended_) {
    allocation_watch_.reset();
    return;
  }
  const pod::PodSpec asked = AskedSpec();
  pod::ResizeAdmission admission = AdmitResize(asked);
  if (admission.verdict != pod::ResizeVerdict::kAccepted) {
    KeepResizePending(asked, admission);
    return;
  }
  log::Info("a deferred resize fits now");
  ApplyAdmittedResize(asked, cgroups::CgroupMounts());
}

// Accepted: allocated := asked. New instances are made from pod_.
void Executor::ApplyAdmittedResize(const pod::PodSpec& asked,
                                   const std::vector<std::filesystem::path>& mounts) {
  allocation_watch_.reset();
  resize_.desired.clear();
  resize_.pending.reset();
  const pod::PodSpec before = pod_.spec;
  std::string changes;
  ForEachResizable(pod_.spec, [&](pod::Container& c) {
    const pod::Container* next = pod::FindResizableContainer(asked, c.name);
    if (!next || next->resources == c.resources) return;
    changes += (changes.empty() ? "" : "; ") + c.name + " " + Describe(c.resources) + " -> " +
               Describe(next->resources);
    c.resources = next->resources;
  });
  pod_json_ = nlohmann::json();  // S15: the handed-over pod is the allocated one
  if (!changes.empty()) resize_.resized = true;
  if (changes.empty()) {
    ResizeChanged();
    return;
  }
  const std::vector<std::string> restart = pod::ContainersToRestart(before, pod_.spec);
  OnPublish(
      lifecycle::Publish{lifecycle::EventType::kNormal, "Resizing", "pod", "Resizing " + changes});
  ActuateResize(before, restart, mounts);
  for (const std::string& name : restart) {
    // S17.3: replaced through the Lifecycle; the next instance's
    // config.json carries the new resources.
    Feed(lifecycle::ResizeRestart{name, lifecycle_.InstanceOf(name)});
  }
  ResizeChanged();
}

// S17.7–S17.9: the cgroup writes for the containers resized in place.
void Executor::ActuateResize(const pod::PodSpec& before, const std::vector<std::string>& restart,
                             const std::vector<std::filesystem::path>& mounts) {
  const WallTime now = loop_.clock().WallNow();
  std::map<std::string, CgroupLocation> where;
  cgroups::ResizeTargets targets;
  if (pod_cgroup_) {
    where[""].v2 = pod_cgroup_->path();
    targets.pod = cgroups::ResizeTargets::Values{cgroups::PodCgroupResources(before),
                                                 cgroups::PodCgroupResources(pod_.spec)};
  }
  ForEachResizable(pod_.spec, [&](pod::Container& c) {
    if (std::find(restart.begin(), restart.end(), c.name) != restart.end()) return;
    auto at = InstanceCgroup(c.name, mounts);
    if (!at) return;  // not running: its next instance is made with the new values
    const pod::Container* old = pod::FindResizableContainer(before, c.name);
    auto held = cgroups::ReadCgroupResources(*at);
    cgroups::CgroupResources from =
        held ? *held : cgroups::ContainerCgroupResources(old ? *old : c);
    targets.containers.emplace_back(
        c.name, cgroups::ResizeTargets::Values{from, cgroups::ContainerCgroupResources(c)});
    where[c.name] = *at;
  });
  cgroups::CgroupFileWriter writer(
      [&where](const std::string& name) -> std::optional<CgroupLocation> {
        auto it = where.find(name);
        if (it == where.end()) return std::nullopt;
        return it->second;
      });
  cgroups::ResizeOutcome outcome =
      cgroups::ApplyResizeWrites(cgroups::PlanResizeWrites(targets), writer);

  // status...resources: what each resized cgroup holds now.
  resize_.actual.clear();
  for (const auto& [name, at] : where) {
    if (name.empty()) continue;
    const pod::Container* c = pod::FindResizableContainer(pod_.spec, name);
    auto held = cgroups::ReadCgroupResources(at);
    if (!c || !held) continue;
    pod::ResourceRequirements actual = cgroups::ActualResources(*c, *held);
    if (actual != c->resources) {
      resize_.actual[name] = std::move(actual);
    }
  }
  if (outcome.ok()) {
    resize_.in_progress.reset();
    std::string done;
    for (const auto& w : outcome.applied) {
      done += (done.empty() ? "" : ", ") + std::string(cgroups::ResizeResourceName(w.resource)) +
              " of " + (w.container.empty() ? "the pod cgroup" : "container " + w.container);
    }
    log::Info("resized in place: {}", done.empty() ? "nothing to write" : done);
    OnPublish(lifecycle::Publish{lifecycle::EventType::kNormal, "Resized", "pod",
                                 done.empty() ? "Resized" : "Resized " + done});
    return;
  }
  // S17.9: the old values stay where a write was refused; the condition
  // says why until the next resize or the container's next instance.
  std::string why;
  for (const auto& [w, reason] : outcome.failed) {
    why += (why.empty() ? "" : "; ") + std::string(cgroups::ResizeResourceName(w.resource)) + ": " +
           reason;
  }
  for (const auto& w : outcome.skipped) {
    why += "; " + std::string(cgroups::ResizeResourceName(w.resource)) + " of " +
           (w.container.empty() ? "the pod cgroup" : "container " + w.container) +
           " not changed after that failure";
  }
  resize_.in_progress =
      pod::PodCondition{"PodResizeInProgress", pod::ConditionStatus::kTrue, now, "Error", why};
  log::Warn("resize not fully applied: {}", why);
  OnPublish(lifecycle::Publish{lifecycle::EventType::kWarning, "ResizeError", "pod", why});
}

void Executor::AddResizeConditions(pod::PodStatus& status) const {
  for (const auto* c : {&resize_.pending, &resize_.in_progress}) {
    if (*c) status.conditions.push_back(**c);
  }
}

// The record's view, the status reply and the state for the next
// supervisor (S17.10) after any change of the resize's state.
void Executor::ResizeChanged() {
  record_.SetResizeView({resize_.desired, resize_.actual});
  WriteRecord();
  state_urgent_ = true;
  SaveStateForNext();
}

// A create after a resize whose writes were refused: the new instance
// has the allocated values, so the error no longer holds once no
// container keeps old ones.
void Executor::ResizeInstanceMade() {
  if (resize_.actual.empty()) resize_.in_progress.reset();
  record_.SetResizeView({resize_.desired, resize_.actual});
}

// S17.10: what a resize left, for the handover state. The allocated
// resources travel in the state's pod.
nlohmann::json Executor::ResizeStateJson() const {
  nlohmann::json j = nlohmann::json::object();
  if (resize_.resized) j["resized"] = true;
  for (const auto& [name, r] : resize_.desired) {
    j["desired"][name] = pod::ResourcesJson(r, false);
  }
  for (const auto& [name, actual] : resize_.actual) {
    j["actual"][name] = pod::ResourcesJson(actual, false);
  }
  auto condition = [](const pod::PodCondition& c) {
    return nlohmann::json{{"type", c.type},
                          {"reason", c.reason},
                          {"message", c.message},
                          {"at", WallToNs(c.last_transition_time.value_or(WallTime{}))}};
  };
  if (resize_.pending) j["pending"] = condition(*resize_.pending);
  if (resize_.in_progress) j["inProgress"] = condition(*resize_.in_progress);
  return j;
}

}  // namespace podvisor::supervisor::executor
