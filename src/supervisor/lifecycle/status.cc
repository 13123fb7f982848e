// Lifecycle: the pod status it reports (SEMANTICS S7.5, S9).

#include "supervisor/lifecycle/lifecycle.h"

namespace podvisor::supervisor::lifecycle {

namespace {

using pod::ConditionStatus;
using pod::PodCondition;

std::string Join(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += " ";
    out += names[i];
  }
  return out + "]";
}

// S19.4
std::string AwaitedPodsMessage(const std::vector<std::string>& pods) {
  return "waiting for pods to be Ready (podvisor.io/after): " + Join(pods);
}

pod::ContainerState Waiting(std::string reason, std::string message = "") {
  pod::ContainerState s;
  s.waiting = pod::ContainerStateWaiting{std::move(reason), std::move(message)};
  return s;
}

pod::ContainerState Terminated(const pod::ContainerStateTerminated& t) {
  pod::ContainerState s;
  s.terminated = t;
  return s;
}

pod::ContainerState StateOrEmpty(const std::optional<pod::ContainerStateTerminated>& t) {
  return t ? Terminated(*t) : pod::ContainerState{};
}

}  // namespace

// S9.1. The kubelet keeps a pod out of a terminal phase until all of its
// containers stopped, sidecars included; the explicit failures (an init
// failed under Never, the deadline passed) are Failed at once.
pod::PodPhase Lifecycle::Phase() const {
  if (ended_) return final_phase_;
  if (failed_) return pod::PodPhase::kFailed;
  if (!initialized_) return pod::PodPhase::kPending;
  // S16.5: a container of spec.containers waiting for its image before its
  // first run keeps the pod Pending, as the kubelet's getPhase counts it.
  for (const Container& c : containers_) {
    if (c.role != ContainerRole::kRegular || c.terminated || c.last_terminated) continue;
    if (WaitsForImage(c)) return pod::PodPhase::kPending;
  }
  return pod::PodPhase::kRunning;
}

// S9.1 at the end: Succeeded when every regular container's last run exited
// 0 (not OOMKilled), else Failed. Sidecar exit codes never count, a draft
// sidecar's (S12.4) no more than a KEP-753 one's.
pod::PodPhase Lifecycle::FinalPhase() const {
  if (failed_) return pod::PodPhase::kFailed;
  for (const Container& c : containers_) {
    if (c.role != ContainerRole::kRegular) continue;
    if (!c.ever_started || !c.last_exit_ok) return pod::PodPhase::kFailed;
  }
  return pod::PodPhase::kSucceeded;
}

// S7.5: started = running and (no startup probe or it succeeded). An init
// container is started while it runs.
bool Lifecycle::StartedForStatus(const Container& c) const {
  if (c.state != RunState::kRunning) return false;
  if (c.role == ContainerRole::kInit) return true;
  return !c.spec.startup_probe || c.startup_succeeded;
}

// S7.5: ready = started and (no readiness probe or readiness success); an
// init container is ready once it exited 0.
bool Lifecycle::ReadyForStatus(const Container& c) const {
  if (c.role == ContainerRole::kInit) return c.state == RunState::kExited && c.last_exit_ok;
  return StartedForStatus(c) && (!c.spec.readiness_probe || c.readiness_success);
}

pod::ContainerStatus Lifecycle::ContainerStatusOf(const Container& c) const {
  pod::ContainerStatus s;
  s.name = c.spec.name;
  s.image = c.spec.image;
  s.restart_count = c.instance;
  // An entry created ahead of its turn (S1.1) looks as if it were not.
  s.container_id = c.ahead ? "" : c.container_id;
  s.ready = ReadyForStatus(c);
  s.started = StartedForStatus(c);
  s.last_state = StateOrEmpty(c.last_terminated);
  switch (c.ahead ? RunState::kWaiting : c.state) {
    case RunState::kWaiting:
      // S19.4: what the pod waits for, where kubectl's STATUS column and
      // describe look first.
      s.state = AwaitingPods() ? Waiting("WaitingForPods", AwaitedPodsMessage(awaited_pods_))
                               : Waiting("PodInitializing");
      break;
    case RunState::kCreating:
    case RunState::kCreated:
    case RunState::kStarting:
      s.state = c.start_error ? Waiting(c.start_error->reason, c.start_error->message)
                              : Waiting("ContainerCreating");
      break;
    case RunState::kRunning:
      s.state.running = pod::ContainerStateRunning{c.started_wall};
      break;
    case RunState::kBackOff:
      // S4.3. A start error keeps its own reason (CreateContainerError,
      // RunContainerError, PostStartHookError): CrashLoopBackOff would hide
      // why the container cannot start.
      if (c.start_error) {
        s.state = Waiting(c.start_error->reason, c.start_error->message);
      } else {
        s.state = Waiting("CrashLoopBackOff", "back-off " + FormatDuration(c.backoff_delay) +
                                                  " restarting failed container=" + c.spec.name +
                                                  " pod=" + pod_.metadata.name);
      }
      if (c.terminated) s.last_state = Terminated(*c.terminated);
      break;
    case RunState::kExited:
      if (c.terminated) {
        s.state = Terminated(*c.terminated);
      } else if (c.start_error) {
        s.state = Waiting(c.start_error->reason, c.start_error->message);
      } else {
        s.state = Waiting("PodInitializing");
      }
      break;
    case RunState::kAbandoned:
      // The instance never ran: show the run before it, if there was one.
      if (c.terminated) {
        s.state = Terminated(*c.terminated);
      } else if (c.last_terminated) {
        s.state = Terminated(*c.last_terminated);
        s.last_state = {};
      } else {
        s.state = Waiting("PodInitializing");
      }
      break;
  }
  return s;
}

// S9.3, with the kubelet's reasons and messages.
std::vector<PodCondition> Lifecycle::Conditions() const {
  std::vector<PodCondition> out;
  auto add = [&](std::string_view type, bool value, std::string reason, std::string message) {
    PodCondition c;
    c.type = std::string(type);
    c.status = value ? ConditionStatus::kTrue : ConditionStatus::kFalse;
    if (!value) {
      c.reason = std::move(reason);
      c.message = std::move(message);
    }
    if (auto it = conditions_.find(type); it != conditions_.end()) {
      c.last_transition_time = it->second.since;
    }
    out.push_back(std::move(c));
  };

  // The sandbox (namespaces, cgroup) exists from the pod start to its end.
  add(pod::kConditionPodReadyToStartContainers, started_ && !ended_, "", "");

  std::vector<std::string> incomplete;
  for (const Container& c : containers_) {
    if (c.InRegularList()) continue;
    const bool done = c.role == ContainerRole::kInit ? ReadyForStatus(c) : StartedForSequence(c);
    if (!done) incomplete.push_back(c.spec.name);
  }
  if (AwaitingPods()) {
    add(pod::kConditionInitialized, false, "WaitingForPods", AwaitedPodsMessage(awaited_pods_));
  } else {
    add(pod::kConditionInitialized, initialized_, "ContainersNotInitialized",
        "containers with incomplete status: " + Join(incomplete));
  }

  std::vector<std::string> unready;
  for (const Container& c : containers_) {
    if (c.role != ContainerRole::kInit && !ReadyForStatus(c)) unready.push_back(c.spec.name);
  }
  const bool completed = Phase() == pod::PodPhase::kSucceeded;
  const std::string ready_reason = completed ? "PodCompleted" : "ContainersNotReady";
  const std::string ready_message =
      completed ? "" : "containers with unready status: " + Join(unready);
  const bool containers_ready = !completed && unready.empty();
  add(pod::kConditionContainersReady, containers_ready, ready_reason, ready_message);

  // podvisor has no one to set a readiness gate's condition, so a pod with
  // gates is never Ready, as it would not be in a cluster without the
  // controller that owns them.
  if (!pod_.spec.readiness_gates.empty() && containers_ready) {
    add(pod::kConditionReady, false, "ReadinessGatesNotReady",
        "corresponding condition of pod readiness gate \"" +
            pod_.spec.readiness_gates.front().condition_type + "\" does not exist.");
  } else {
    add(pod::kConditionReady, containers_ready, ready_reason, ready_message);
  }
  return out;
}

void Lifecycle::RecordConditions(Now now) {
  for (const PodCondition& c : Conditions()) {
    ConditionRecord& record = conditions_[c.type];
    if (record.status != c.status) record = ConditionRecord{c.status, now.wall};
  }
}

pod::PodStatus Lifecycle::Status() const {
  pod::PodStatus s;
  s.phase = Phase();
  s.reason = reason_;
  s.message = message_;
  s.stop_reason = termination_.stop_reason;  // S6.4
  if (started_) {
    s.conditions = Conditions();
    s.start_time = pod_start_.wall;
  }
  s.qos_class = options_.qos_class;
  for (const Container& c : containers_) {
    (c.InRegularList() ? s.container_statuses : s.init_container_statuses)
        .push_back(ContainerStatusOf(c));
  }
  s.deletion_timestamp = deletion_timestamp_;
  return s;
}

}  // namespace podvisor::supervisor::lifecycle
