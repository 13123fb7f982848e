// Setup of a supervisor that was handed its pod by the one before it
// (S15.1, S15.2): nothing of the pod is made again. The pod lock and the
// control socket are the ones handed over; the sandbox's holder, the
// CNI attachment (never ADDed again), the pod cgroup and its claims, the
// volumes and /etc files are taken as they are; the Lifecycle and the
// instances are restored from the state, and Run resumes them instead of
// starting the pod.
#include <unistd.h>

#include "common/log.h"

#include <set>

#include "cgroups/cgroup_name.h"
#include "podvisor_version.h"
#include "supervisor/executor/internal.h"
#include "supervisor/executor/recovery.h"

namespace podvisor::supervisor::executor {

Status Executor::ResumeSetup() {
  InheritedHandover& h = *handover_;
  const nlohmann::json& state = h.state;
  // Events the restored instances raise (an init that exited meanwhile)
  // wait until Run has resumed the Lifecycle's timers and probes.
  draining_ = true;
  const std::filesystem::path state_root = options_.state_dir.parent_path();
  if (!pod_lock_ && h.adopting) {
    auto lock = PodLock::TryTake(state_root, pod_.metadata.name);
    if (!lock) return lock.take_error();
    pod_lock_.emplace(std::move(*lock));
  } else if (!pod_lock_) {
    auto lock_fd = h.fds.find("lock");
    if (lock_fd == h.fds.end()) return Error("handover state: the pod lock was not handed over");
    auto lock = PodLock::Inherit(lock_fd->second.Release(), state_root, pod_.metadata.name);
    h.fds.erase(lock_fd);
    if (!lock) return lock.take_error();
    pod_lock_.emplace(std::move(*lock));
  }
  // The pod's uid is the one it ran with.
  if (state.contains("pod") && state["pod"].contains("metadata") &&
      state["pod"]["metadata"].value("uid", std::string()) != "") {
    pod_.metadata.uid = state["pod"]["metadata"]["uid"].get<std::string>();
  }
  RestoreResizeState(state);  // S17.10
  try {
    record_created_at_ = NsToWall(state.value("createdAt", int64_t{0}));
    const nlohmann::json& sup = state.at("supervisor");
    if (h.adopting) {
      // A new supervisor: its own start, the upgrades of the one before.
      supervisor_.upgrades = sup.value("upgrades", 0);
    } else {
      supervisor_.started_at = NsToWall(sup.value("startedAt", int64_t{0}));
      supervisor_.upgrades = sup.value("upgrades", 0) + 1;
      supervisor_.upgraded_at = loop_.clock().WallNow();
    }
  } catch (const nlohmann::json::exception& e) {
    return Error(std::string("handover state: ") + e.what());
  }
  record_.SetIdentity(pod_.metadata.uid, record_created_at_);
  if (auto s = LoadImages(); !s) return s;
  if (!options_.cgroup_parent.empty()) {
    auto name = cgroups::ClaimPodCgroupName(options_.host_claims_dir, options_.cgroup_parent,
                                            ClaimOwner{state_root, pod_.metadata.name},
                                            state.value("cgroupName", std::string()));
    if (!name) return name.take_error();
    pod_cgroup_name_ = std::move(name->name);
    cgroup_claim_ = std::move(name->claim);
  }
  if (auto s = SetupPodCgroup(); !s) return s;
  if (auto s = WatchSignals(); !s) return s;
  if (options_.sandbox && state.contains("sandbox")) {
    const nlohmann::json& sb = state["sandbox"];
    // S20.6: the block first, so that the options name the user namespace.
    if (auto s = ResumeIdBlock(sb.value("pid", 0)); !s) return s;
    auto sandbox =
        sandbox::Sandbox::Reattach(SandboxOptionsOf(), sb.value("pid", 0),
                                   sb.value("startTime", uint64_t{0}), sb.value("pidNsInit", 0));
    if (!sandbox) return sandbox.take_error().Wrap("the pod's sandbox");
    sandbox_.emplace(std::move(*sandbox));
    if (h.adopting) {
      // S15.4: the log pipes and pidfds the holder kept for us.
      auto kept = sandbox_->FetchKept();
      if (!kept) return kept.take_error().Wrap("the descriptors the sandbox kept");
      for (auto& [key, fds] : *kept) {
        if (fds.size() == 1) {
          h.fds[key] = std::move(fds.front());
        } else {
          for (std::size_t i = 0; i < fds.size(); ++i) {
            h.fds[CarriedFdKey(key, static_cast<int>(i))] = std::move(fds[i]);
          }
        }
      }
    }
  }
  if (auto s = network_.Resume(); !s) return s;
  auto events = logs::EventRecorder::Open(PodDir::At(options_.state_dir).EventsFile());
  if (!events) return events.take_error();
  events_.emplace(std::move(*events));
  auto handler = [this](const nlohmann::json& req, control::ControlServer::Responder respond) {
    Control().Handle(req, std::move(respond));
  };
  auto control_fd = h.fds.find("control");
  if (h.adopting) {
    // The socket of the supervisor that died is stale: bound anew.
    auto control = control::ControlServer::Listen(
        loop_, PodDir::At(options_.state_dir).ControlSocket(), handler);
    if (!control) return control.take_error();
    control_ = std::move(*control);
  } else {
    if (control_fd == h.fds.end()) {
      return Error("handover state: the control socket was not handed over");
    }
    auto control =
        control::ControlServer::Adopt(loop_, PodDir::At(options_.state_dir).ControlSocket(),
                                      std::move(control_fd->second), handler);
    h.fds.erase(control_fd);
    if (!control) return control.take_error();
    control_ = std::move(*control);
  }
  instances_.RefillDescriptorReserve();
  auto restored = lifecycle::Lifecycle::RestoreState(pod_, options_.lifecycle,
                                                     state.value("lifecycle", nlohmann::json()));
  if (!restored) return restored.take_error();
  lifecycle_ = std::move(*restored);
  if (h.adopting) {
    // What the runtime holds that the state does not name was created in
    // the moment before the crash that the state missed: it never ran
    // under a supervisor that knew it, and goes (S15.5).
    if (auto s = DeleteUnknownContainers(state); !s) return s;
  }
  if (auto s =
          instances_.Resume(state.value("instances", nlohmann::json::array()), h.fds, h.adopting);
      !s) {
    return s;
  }
  if (h.adopting) ReconcileAdopted();
  // Whatever was handed over and not taken (an instance's pipe at EOF) closes here.
  h.fds.clear();
  owns_pod_ = true;
  draining_ = false;
  return Ok();
}

Status Executor::DeleteUnknownContainers(const nlohmann::json& state) {
  std::set<std::string> known;
  if (state.contains("instances") && state["instances"].is_array()) {
    for (const auto& i : state["instances"]) {
      if (i.is_object() && i.contains("id") && i["id"].is_string()) {
        known.insert(i["id"].get<std::string>());
      }
    }
  }
  oci::RuntimeCli runtime = instances_.Runtime();
  for (const std::string& id : RuntimeContainerIds(layout_)) {
    if (known.count(id) != 0) continue;
    log::Warn("deleting container {}: created as its supervisor died", id);
    if (auto s = RunRuntimeCall(runtime.Delete(id), options_.runtime_timeout); !s) {
      return s.error().Wrap("deleting " + id);
    }
  }
  return Ok();
}

// After a crash the state may be older than what happened: a container
// the Lifecycle asked to be created or started whose instance the state
// does not hold (deleted above as unknown) failed that step; one it
// believes running without an instance is lost (S15.5). Queued: they are
// fed once the Lifecycle has resumed.
void Executor::ReconcileAdopted() {
  for (const auto* list : {&pod_.spec.init_containers, &pod_.spec.containers}) {
    for (const auto& c : *list) {
      const int instance = lifecycle_.InstanceOf(c.name);
      if (instances_.Find(c.name, instance) != nullptr) continue;
      const std::string why = "its supervisor died before it knew the runtime's answer";
      switch (lifecycle_.StateOf(c.name)) {
        case lifecycle::RunState::kCreating:
        case lifecycle::RunState::kCreated:
        case lifecycle::RunState::kStarting:
          queue_.emplace_back(
              lifecycle::RuntimeFailed{c.name, instance, lifecycle::RuntimeStep::kCreate, why});
          break;
        case lifecycle::RunState::kRunning: {
          lifecycle::ContainerExited lost;
          lost.container = c.name;
          lost.instance = instance;
          ReportAsLost(lost);
          queue_.emplace_back(std::move(lost));
          break;
        }
        default:
          break;
      }
    }
  }
}

std::vector<lifecycle::Action> Executor::ResumeLifecycle() {
  // A state written before the pod began (the first write precedes the
  // start plan): the plan begins now.
  std::vector<lifecycle::Action> actions =
      lifecycle_.Started() ? lifecycle_.Resume(CurrentTime()) : lifecycle_.Start(CurrentTime());
  const bool adopted = handover_->adopting;
  if (stop_after_resume_ || stop_adopted_) {
    // S15.6: adopted to be stopped; a pod that was terminating goes on.
    if (stop_after_resume_) {
      actions.emplace_back(
          lifecycle::Publish{lifecycle::EventType::kNormal, "Adopted", "pod",
                             "the supervisor before died; the pod it ran is stopped first (" +
                                 *stop_after_resume_ + "): its manifest changed"});
    }
    handover_.reset();
    return actions;
  }
  if (adopted) {
    int running = 0;
    std::string pids;
    instances_.ForEachAdopted([&](const std::string& container, pid_t pid) {
      ++running;
      pids += (pids.empty() ? "" : ", ") + container + " " + std::to_string(pid);
    });
    actions.emplace_back(lifecycle::Publish{
        lifecycle::EventType::kNormal, "Adopted", "pod",
        "the supervisor before died; " + std::to_string(running) + " running container(s) adopted" +
            (pids.empty() ? std::string() : " (" + pids + ")")});
    handover_.reset();
    return actions;
  }
  const std::string from = handover_->state.value("version", std::string("?"));
  std::string took;
  if (handover_->started_ns > 0) {
    const MonoTime started{std::chrono::nanoseconds(handover_->started_ns)};
    took =
        ", handed over in " +
        std::to_string(
            std::chrono::duration_cast<std::chrono::milliseconds>(loop_.Now() - started).count()) +
        " ms";
  }
  actions.emplace_back(lifecycle::Publish{lifecycle::EventType::kNormal, "Upgraded", "pod",
                                          "podvisor " + from + " -> " + PODVISOR_VERSION +
                                              " (pid " + std::to_string(::getpid()) + ")" + took});
  handover_.reset();
  return actions;
}

}  // namespace podvisor::supervisor::executor
