#include "pod/status.h"

#include <tuple>

namespace podvisor::pod {

namespace {

using nlohmann::json;

std::string Rfc3339(WallTime t) {
  return FormatRfc3339(t, TimePrecision::kSeconds);
}

void PutIfNotEmpty(json& j, const char* key, const std::string& value) {
  if (!value.empty()) j[key] = value;
}

json ContainerStateToJson(const ContainerState& state) {
  json j = json::object();
  if (state.waiting) {
    json w = json::object();
    PutIfNotEmpty(w, "reason", state.waiting->reason);
    PutIfNotEmpty(w, "message", state.waiting->message);
    j["waiting"] = std::move(w);
  }
  if (state.running) {
    j["running"] = {{"startedAt", Rfc3339(state.running->started_at)}};
  }
  if (state.terminated) {
    const ContainerStateTerminated& t = *state.terminated;
    json k = {{"exitCode", t.exit_code}};
    if (t.signal != 0) k["signal"] = t.signal;
    PutIfNotEmpty(k, "reason", t.reason);
    PutIfNotEmpty(k, "message", t.message);
    if (t.started_at) k["startedAt"] = Rfc3339(*t.started_at);
    k["finishedAt"] = Rfc3339(t.finished_at);
    j["terminated"] = std::move(k);
  }
  return j;
}

json ConditionToJson(const PodCondition& c) {
  json j = {{"type", c.type}, {"status", std::string(ConditionStatusName(c.status))}};
  if (c.last_transition_time) j["lastTransitionTime"] = Rfc3339(*c.last_transition_time);
  PutIfNotEmpty(j, "reason", c.reason);
  PutIfNotEmpty(j, "message", c.message);
  return j;
}

bool IsSidecarName(const PodSpec& spec, const std::string& name) {
  for (const Container& c : spec.init_containers) {
    if (c.name == name) return IsSidecar(c);
  }
  return false;
}

void NoteRestart(const ContainerStatus& c, std::optional<WallTime>& latest) {
  if (!c.last_state.terminated) return;
  const WallTime finished = c.last_state.terminated->finished_at;
  if (!latest || *latest < finished) latest = finished;
}

}  // namespace

std::string_view PodPhaseName(PodPhase phase) {
  switch (phase) {
    case PodPhase::kPending:
      return "Pending";
    case PodPhase::kRunning:
      return "Running";
    case PodPhase::kSucceeded:
      return "Succeeded";
    case PodPhase::kFailed:
      return "Failed";
    case PodPhase::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

bool IsTerminalPhase(PodPhase phase) {
  return phase == PodPhase::kSucceeded || phase == PodPhase::kFailed;
}

std::string_view ConditionStatusName(ConditionStatus status) {
  switch (status) {
    case ConditionStatus::kTrue:
      return "True";
    case ConditionStatus::kFalse:
      return "False";
    case ConditionStatus::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

const PodCondition* PodStatus::FindCondition(std::string_view type) const {
  for (const PodCondition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

json ContainerStatusToJson(const ContainerStatus& status) {
  json j = {
      {"name", status.name},
      {"image", status.image},
      {"state", ContainerStateToJson(status.state)},
      {"lastState", ContainerStateToJson(status.last_state)},
      {"ready", status.ready},
      {"restartCount", status.restart_count},
  };
  if (status.started) j["started"] = *status.started;
  PutIfNotEmpty(j, "containerID", status.container_id);
  return j;
}

json PodStatusToJson(const PodStatus& status) {
  json j = {{"phase", std::string(PodPhaseName(status.phase))}};
  PutIfNotEmpty(j, "reason", status.reason);
  PutIfNotEmpty(j, "message", status.message);
  if (status.stop_reason) j["stopReason"] = *status.stop_reason;
  if (!status.conditions.empty()) {
    json conditions = json::array();
    for (const PodCondition& c : status.conditions) conditions.push_back(ConditionToJson(c));
    j["conditions"] = std::move(conditions);
  }
  // The API's shape: the first address alone, then all as [{"ip": ...}].
  for (const auto& [ips, one, all] : {std::tuple{&status.host_ips, "hostIP", "hostIPs"},
                                      std::tuple{&status.pod_ips, "podIP", "podIPs"}}) {
    if (ips->empty()) continue;
    j[one] = ips->front();
    json list = json::array();
    for (const std::string& ip : *ips) list.push_back({{"ip", ip}});
    j[all] = std::move(list);
  }
  if (status.start_time) j["startTime"] = Rfc3339(*status.start_time);
  PutIfNotEmpty(j, "qosClass", status.qos_class);
  if (!status.init_container_statuses.empty()) {
    json list = json::array();
    for (const ContainerStatus& c : status.init_container_statuses) {
      list.push_back(ContainerStatusToJson(c));
    }
    j["initContainerStatuses"] = std::move(list);
  }
  json list = json::array();
  for (const ContainerStatus& c : status.container_statuses)
    list.push_back(ContainerStatusToJson(c));
  j["containerStatuses"] = std::move(list);
  return j;
}

void AddStatusToPodJson(const PodStatus& status, json& pod_object) {
  pod_object["status"] = PodStatusToJson(status);
  if (status.deletion_timestamp) {
    pod_object["metadata"]["deletionTimestamp"] = Rfc3339(*status.deletion_timestamp);
  }
}

std::string PodSummary::ReadyColumn() const {
  return std::to_string(ready_containers) + "/" + std::to_string(total_containers);
}

std::string PodSummary::RestartsColumn(WallTime now) const {
  std::string column = std::to_string(restarts);
  if (restarts != 0 && last_restart) {
    column += " (" + HumanDuration(now - *last_restart) + " ago)";
  }
  return column;
}

// Mirrors printPod. The one deliberate difference: a pod whose phase reason
// is DeadlineExceeded shows it, where kubectl would let the last container's
// terminated reason (usually "Error" for a container we killed) overwrite
// it. S9.4 lists DeadlineExceeded as a STATUS, and "Error" would hide why
// the pod stopped.
PodSummary SummarizePod(const PodSpec& spec, const PodStatus& status) {
  PodSummary summary;
  summary.total_containers = static_cast<int32_t>(spec.containers.size());
  for (const Container& c : spec.init_containers) {
    if (IsSidecar(c)) ++summary.total_containers;
  }

  std::string reason(PodPhaseName(status.phase));
  if (!status.reason.empty()) reason = status.reason;

  int32_t restarts = 0;
  int32_t sidecar_restarts = 0;
  std::optional<WallTime> last_restart;
  std::optional<WallTime> last_sidecar_restart;
  int32_t ready = 0;

  bool initializing = false;
  const auto init_count = spec.init_containers.size();
  for (size_t i = 0; i < status.init_container_statuses.size(); ++i) {
    const ContainerStatus& c = status.init_container_statuses[i];
    const bool sidecar = IsSidecarName(spec, c.name);
    restarts += c.restart_count;
    NoteRestart(c, last_restart);
    if (sidecar) {
      sidecar_restarts += c.restart_count;
      NoteRestart(c, last_sidecar_restart);
    }
    if (c.state.terminated && c.state.terminated->exit_code == 0) continue;
    if (sidecar && c.started.value_or(false)) {
      if (c.ready) ++ready;
      continue;
    }
    if (c.state.terminated) {
      const ContainerStateTerminated& t = *c.state.terminated;
      if (t.reason.empty()) {
        reason = t.signal != 0 ? "Init:Signal:" + std::to_string(t.signal)
                               : "Init:ExitCode:" + std::to_string(t.exit_code);
      } else {
        reason = "Init:" + t.reason;
      }
    } else if (c.state.waiting && !c.state.waiting->reason.empty() &&
               c.state.waiting->reason != "PodInitializing") {
      reason = "Init:" + c.state.waiting->reason;
    } else {
      reason = "Init:" + std::to_string(i) + "/" + std::to_string(init_count);
    }
    initializing = true;
    break;
  }

  const PodCondition* initialized = status.FindCondition(kConditionInitialized);
  const bool initialized_true = initialized && initialized->status == ConditionStatus::kTrue;
  if (!initializing || initialized_true) {
    restarts = sidecar_restarts;
    last_restart = last_sidecar_restart;
    bool has_running = false;
    for (size_t n = status.container_statuses.size(); n-- > 0;) {
      const ContainerStatus& c = status.container_statuses[n];
      restarts += c.restart_count;
      NoteRestart(c, last_restart);
      if (c.state.waiting && !c.state.waiting->reason.empty()) {
        reason = c.state.waiting->reason;
      } else if (c.state.terminated && !c.state.terminated->reason.empty()) {
        reason = c.state.terminated->reason;
      } else if (c.state.terminated) {
        reason = c.state.terminated->signal != 0
                     ? "Signal:" + std::to_string(c.state.terminated->signal)
                     : "ExitCode:" + std::to_string(c.state.terminated->exit_code);
      } else if (c.ready && c.state.running) {
        has_running = true;
        ++ready;
      }
    }
    if (reason == "Completed" && has_running) {
      const PodCondition* pod_ready = status.FindCondition(kConditionReady);
      reason = pod_ready && pod_ready->status == ConditionStatus::kTrue ? "Running" : "NotReady";
    }
  }

  // S9.4: a Failed pod never reads "Completed". kubectl shows its first
  // container's reason, so a pod whose first container completed and whose
  // second failed said Completed; the first failed container's reason (or
  // the phase reason) says why it failed.
  if (status.phase == PodPhase::kFailed && reason == "Completed") {
    reason = status.reason.empty() ? "Error" : status.reason;
    for (const ContainerStatus& c : status.container_statuses) {
      if (c.state.terminated && c.state.terminated->exit_code != 0) {
        reason = c.state.terminated->reason.empty() ? "Error" : c.state.terminated->reason;
        break;
      }
    }
  }
  if (status.reason == "DeadlineExceeded" || status.reason == "BackoffLimitExceeded") {
    reason = status.reason;
  }
  if (status.deletion_timestamp && !IsTerminalPhase(status.phase)) reason = "Terminating";

  summary.ready_containers = ready;
  summary.status = reason;
  summary.restarts = restarts;
  summary.last_restart = last_restart;
  return summary;
}

std::string HumanDuration(Duration d) {
  using std::chrono::duration_cast;
  const int64_t seconds = duration_cast<std::chrono::seconds>(d).count();
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return std::to_string(seconds) + "s";
  const int64_t minutes = seconds / 60;
  if (minutes < 10) {
    const int64_t s = seconds % 60;
    return s == 0 ? std::to_string(minutes) + "m"
                  : std::to_string(minutes) + "m" + std::to_string(s) + "s";
  }
  if (minutes < 60 * 3) return std::to_string(minutes) + "m";
  const int64_t hours = minutes / 60;
  if (hours < 8) {
    const int64_t m = minutes % 60;
    return m == 0 ? std::to_string(hours) + "h"
                  : std::to_string(hours) + "h" + std::to_string(m) + "m";
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    const int64_t h = hours % 24;
    return h == 0 ? std::to_string(hours / 24) + "d"
                  : std::to_string(hours / 24) + "d" + std::to_string(h) + "h";
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    const int64_t dy = (hours / 24) % 365;
    return dy == 0 ? std::to_string(hours / 24 / 365) + "y"
                   : std::to_string(hours / 24 / 365) + "y" + std::to_string(dy) + "d";
  }
  return std::to_string(hours / 24 / 365) + "y";
}

}  // namespace podvisor::pod
