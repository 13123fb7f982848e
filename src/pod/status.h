// The pod status model: what `podvisor status` reports, shaped like the
// Kubernetes v1 PodStatus so that scripts written for `kubectl get pod -o
// json` read it unchanged (docs/INTERFACE.md "Status JSON").
//
// This file only holds data and renders it: the JSON object (Kubernetes
// field names, RFC 3339 UTC timestamps) and the kubectl one-line summary
// (READY, STATUS, RESTARTS) of SEMANTICS S9.4. Who fills it in is
// supervisor::Lifecycle; nothing here decides a state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "pod/model.h"

namespace podvisor::pod {

enum class PodPhase { kPending, kRunning, kSucceeded, kFailed, kUnknown };
std::string_view PodPhaseName(PodPhase phase);  // "Pending", ...
bool IsTerminalPhase(PodPhase phase);           // Succeeded or Failed

enum class ConditionStatus { kTrue, kFalse, kUnknown };
std::string_view ConditionStatusName(ConditionStatus status);  // "True", ...

// Condition types podvisor reports (S9.3), in the order the kubelet lists them.
inline constexpr std::string_view kConditionPodReadyToStartContainers = "PodReadyToStartContainers";
inline constexpr std::string_view kConditionInitialized = "Initialized";
inline constexpr std::string_view kConditionContainersReady = "ContainersReady";
inline constexpr std::string_view kConditionReady = "Ready";

struct PodCondition {
  std::string type;
  ConditionStatus status = ConditionStatus::kFalse;
  std::optional<WallTime> last_transition_time;
  std::string reason;
  std::string message;
  friend bool operator==(const PodCondition&, const PodCondition&) = default;
};

struct ContainerStateWaiting {
  std::string reason;
  std::string message;
  friend bool operator==(const ContainerStateWaiting&, const ContainerStateWaiting&) = default;
};

struct ContainerStateRunning {
  WallTime started_at;
  friend bool operator==(const ContainerStateRunning&, const ContainerStateRunning&) = default;
};

struct ContainerStateTerminated {
  int32_t exit_code = 0;
  int32_t signal = 0;  // 0: not killed by a signal
  std::string reason;  // Completed | Error | OOMKilled | StartError
  std::string message;
  std::optional<WallTime> started_at;  // absent for a start error
  WallTime finished_at;
  friend bool operator==(const ContainerStateTerminated&,
                         const ContainerStateTerminated&) = default;
};

// As in the API, at most one member is set; none set is the empty state
// (`{}`), which is what `lastState` is before the first restart.
struct ContainerState {
  std::optional<ContainerStateWaiting> waiting;
  std::optional<ContainerStateRunning> running;
  std::optional<ContainerStateTerminated> terminated;
  bool empty() const { return !waiting && !running && !terminated; }
  friend bool operator==(const ContainerState&, const ContainerState&) = default;
};

struct ContainerStatus {
  std::string name;
  std::string image;
  ContainerState state;
  ContainerState last_state;
  bool ready = false;
  std::optional<bool> started;
  int32_t restart_count = 0;
  std::string container_id;  // empty until the runtime created it
  friend bool operator==(const ContainerStatus&, const ContainerStatus&) = default;
};

struct PodStatus {
  PodPhase phase = PodPhase::kPending;
  std::string reason;  // the phase reason, e.g. DeadlineExceeded
  std::string message;
  // podvisor's addition (S6.4): why the pod is being stopped. Never mixed
  // into `reason`, which stays the phase reason.
  std::optional<std::string> stop_reason;
  std::vector<PodCondition> conditions;
  std::optional<WallTime> start_time;
  std::string qos_class;  // "Guaranteed" | "Burstable" | "BestEffort" | ""
  std::vector<ContainerStatus> init_container_statuses;
  std::vector<ContainerStatus> container_statuses;
  // Rendered as metadata.deletionTimestamp: set while the pod terminates on
  // a stop request, as the API server does on deletion (request time plus
  // the grace period).
  std::optional<WallTime> deletion_timestamp;
  // status.hostIP(s) and podIP(s): the host's primary address, and the
  // pod's own from its network (the host's under hostNetwork); empty
  // when the pod has none (--network none).
  std::vector<std::string> host_ips;
  std::vector<std::string> pod_ips;

  const PodCondition* FindCondition(std::string_view type) const;
  friend bool operator==(const PodStatus&, const PodStatus&) = default;
};

// The `status` object of a v1 Pod. Empty strings and absent optionals are
// left out, as the API server's omitempty does; `ready`, `restartCount`,
// `state` and `lastState` are always present.
nlohmann::json PodStatusToJson(const PodStatus& status);
nlohmann::json ContainerStatusToJson(const ContainerStatus& status);

// Puts `status` into a Pod object (`pod_object["status"]`) and, while set,
// the deletion timestamp into `pod_object["metadata"]["deletionTimestamp"]`.
void AddStatusToPodJson(const PodStatus& status, nlohmann::json& pod_object);

// The columns `kubectl get pod` prints for a pod (S9.4).
struct PodSummary {
  int32_t ready_containers = 0;
  int32_t total_containers = 0;  // regular containers + sidecars
  std::string status;            // Running, Init:1/3, CrashLoopBackOff, ...
  int32_t restarts = 0;
  std::optional<WallTime> last_restart;  // finishedAt of the latest lastState

  std::string ReadyColumn() const;  // "1/2"
  // "3" or "3 (42s ago)", durations printed as kubectl's HumanDuration.
  std::string RestartsColumn(WallTime now) const;
};

// kubectl's printPod (pkg/printers/internalversion/printers.go), sidecars
// included. `spec` tells which init-list entries are sidecars.
PodSummary SummarizePod(const PodSpec& spec, const PodStatus& status);

// kubectl's duration.HumanDuration: "42s", "5m10s", "3h", "2d5h", "3y".
std::string HumanDuration(Duration d);

}  // namespace podvisor::pod
