// The vocabulary between the pure decision core (supervisor::Lifecycle) and
// the shell that carries its decisions out: the events the shell reports and
// the actions the core asks for.
//
// A container is named by its spec name (names are unique across the init
// list and the regular list) and each run of it by its *instance*: the
// container's restart count when that run was created. Every event names
// the instance it is about, so a report that arrives after the core moved
// on (an exit racing a restart, a probe result for a killed instance, a
// timer that fired just as it was cancelled) is recognised as stale and
// ignored.
//
// Every enum prints as a word and every event and action has a readable
// ToString: logs and test failures depend on it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "pod/status.h"

namespace podvisor::supervisor::lifecycle {

// S14.14: a seconds field of the pod (terminationGracePeriodSeconds,
// activeDeadlineSeconds, a probe's or a sleep hook's seconds; int64 in
// Kubernetes) as a Duration. Nanoseconds in an int64 hold 292 years, so
// 1e10 s would wrap; anything at or above kForeverSeconds (100 years) is
// "effectively forever" and becomes exactly that, which a clock (time
// since boot or since 1970) can still be added to without overflowing.
// Negative values, which validation refuses, count as zero.
constexpr int64_t kForeverSeconds = int64_t{100} * 365 * 24 * 3600;
constexpr Duration ClampedSeconds(int64_t seconds) {
  if (seconds <= 0) return Duration::zero();
  return std::chrono::seconds(seconds < kForeverSeconds ? seconds : kForeverSeconds);
}
constexpr Duration kForever = ClampedSeconds(kForeverSeconds);

// Status timestamps need the wall clock, everything else the monotonic one;
// the shell reads both once per event.
struct Now {
  MonoTime mono;
  WallTime wall;
};

enum class HookKind { kPostStart, kPreStop };
std::string_view HookKindName(HookKind kind);  // "postStart", "preStop"

enum class ProbeKind { kStartup, kReadiness, kLiveness };
std::string_view ProbeKindName(ProbeKind kind);  // "startup", ...

enum class RuntimeStep { kCreate, kStart };
std::string_view RuntimeStepName(RuntimeStep step);  // "create", "start"

enum class EventType { kNormal, kWarning };
std::string_view EventTypeName(EventType type);  // "Normal", "Warning"

enum class TimerKind {
  kActiveDeadline,  // S3.5, pod-wide
  kGraceBudget,     // S5.1/S5.5: the pod's termination budget ran out
  kRestart,         // S4: a backoff ended; `instance` is the one to create
  kKillBudget,      // S3.3/S8.2: one container's own kill budget ran out
  kSigkill,         // S5.3/S5.5: escalate to SIGKILL
  // S16.6: a failed pull's ErrImagePull becomes ImagePullBackOff
  kImagePullBackOff,
};
std::string_view TimerKindName(TimerKind kind);

struct TimerId {
  TimerKind kind = TimerKind::kActiveDeadline;
  std::string container;  // empty for pod-wide timers
  int instance = 0;
  friend bool operator==(const TimerId&, const TimerId&) = default;
};
std::string ToString(const TimerId& id);

// ---- Events: what happened -------------------------------------------------

// The runtime's `create` of this instance succeeded.
struct RuntimeCreated {
  std::string container;
  int instance = 0;
  std::string container_id;  // shown as status containerID
  friend bool operator==(const RuntimeCreated&, const RuntimeCreated&) = default;
};

// The container's init process runs (the runtime's `start` returned).
struct RuntimeStarted {
  std::string container;
  int instance = 0;
  friend bool operator==(const RuntimeStarted&, const RuntimeStarted&) = default;
};

// S2.3: the runtime failed to create or start the instance.
struct RuntimeFailed {
  std::string container;
  int instance = 0;
  RuntimeStep step = RuntimeStep::kCreate;
  std::string message;
  friend bool operator==(const RuntimeFailed&, const RuntimeFailed&) = default;
};

// S16.5: the shell holds the instance's create until its image is pulled
// (or unpacked): the container waits for its image, the pod is Pending.
struct ImagePulling {
  std::string container;
  int instance = 0;
  friend bool operator==(const ImagePulling&, const ImagePulling&) = default;
};

// S17.3: a resize changed a resource whose resizePolicy is
// RestartContainer; the shell already holds the new resources for the
// next instance. The running instance is killed and replaced at once.
struct ResizeRestart {
  std::string container;
  int instance = 0;
  friend bool operator==(const ResizeRestart&, const ResizeRestart&) = default;
};

// S16.5: the image of the instance the shell was asked to create could not
// be had: pulling it failed (reason ErrImagePull) or its pull policy is
// Never and it is not present (ErrImageNeverPull). No container existed;
// the message is the puller's, without any credential.
struct ImagePullFailed {
  std::string container;
  int instance = 0;
  std::string reason;
  std::string message;
  friend bool operator==(const ImagePullFailed&, const ImagePullFailed&) = default;
};

// The instance's init process was reaped. A death by signal n reports
// exit_code 128+n and signal n, as the kubelet does.
struct ContainerExited {
  std::string container;
  int instance = 0;
  int exit_code = 0;
  int signal = 0;
  bool oom_killed = false;  // S9.5, from the cgroup's memory.events
  std::string message;      // S11.3 termination message, if any
  // Replaces the reason the exit gives (Completed, Error, OOMKilled): a
  // container whose end nobody saw is ContainerStatusUnknown (S15.5).
  std::string reason;
  friend bool operator==(const ContainerExited&, const ContainerExited&) = default;
};

struct HookFinished {
  std::string container;
  int instance = 0;
  HookKind kind = HookKind::kPostStart;
  bool success = true;
  std::string message;  // S8.4: the failure's output, truncated
  friend bool operator==(const HookFinished&, const HookFinished&) = default;
};

// A change of a probe's stored result (S7.3): the probe runner applies the
// thresholds and reports only changes.
struct ProbeResult {
  std::string container;
  int instance = 0;
  ProbeKind kind = ProbeKind::kReadiness;
  bool success = true;
  std::string message;
  friend bool operator==(const ProbeResult&, const ProbeResult&) = default;
};

struct TimerFired {
  TimerId id;
  friend bool operator==(const TimerFired&, const TimerFired&) = default;
};

// S5/S6: control socket `stop`, `podvisor stop`, SIGTERM/SIGINT.
struct StopRequested {
  std::optional<std::string> reason;  // S6.1, validated by the caller
  std::optional<Duration> grace;
  friend bool operator==(const StopRequested&, const StopRequested&) = default;
};

// S19.3: the pods of podvisor.io/after that are not Ready yet, as the
// shell's watcher last found them; empty once every one is Ready, which
// releases the start plan.
struct AwaitedPods {
  std::vector<std::string> not_ready;
  friend bool operator==(const AwaitedPods&, const AwaitedPods&) = default;
};

using Event = std::variant<RuntimeCreated, RuntimeStarted, RuntimeFailed, ContainerExited,
                           HookFinished, ProbeResult, TimerFired, StopRequested, ImagePullFailed,
                           ImagePulling, AwaitedPods, ResizeRestart>;
std::string ToString(const Event& event);

// ---- Actions: what the shell must do ---------------------------------------

struct CreateContainer {
  std::string container;
  int instance = 0;
  // The instance's StartContainer will follow its RuntimeCreated at once
  // (its turn has come: S1.1, S1.4), so the shell may have the runtime
  // create and start it in one call; it still reports RuntimeCreated, then
  // answers that StartContainer with RuntimeStarted. A hint about how, not
  // about what: the actions compare equal without it.
  bool start_when_created = false;
  friend bool operator==(const CreateContainer& a, const CreateContainer& b) {
    return a.container == b.container && a.instance == b.instance;
  }
};

struct StartContainer {
  std::string container;
  int instance = 0;
  friend bool operator==(const StartContainer&, const StartContainer&) = default;
};

// Runtime `delete` of an instance that exited or failed to start. The core
// does not wait for it; the shell finishes outstanding deletes before it
// exits.
struct DeleteContainer {
  std::string container;
  int instance = 0;
  friend bool operator==(const DeleteContainer&, const DeleteContainer&) = default;
};

// Deliver `signo` to the instance's init process (S5.9: via its pidfd).
struct SignalContainer {
  std::string container;
  int instance = 0;
  int signo = 0;
  friend bool operator==(const SignalContainer&, const SignalContainer&) = default;
};

struct RunHook {
  std::string container;
  int instance = 0;
  HookKind kind = HookKind::kPostStart;
  std::optional<std::string> stop_reason;  // S6.2: preStop only, when one exists
  friend bool operator==(const RunHook&, const RunHook&) = default;
};

// S5.6: end a hook still running when its container exited.
struct CancelHook {
  std::string container;
  int instance = 0;
  HookKind kind = HookKind::kPreStop;
  friend bool operator==(const CancelHook&, const CancelHook&) = default;
};

struct StartProbes {
  std::string container;
  int instance = 0;
  ProbeKind kind = ProbeKind::kReadiness;
  // S7.6: the first run is initialDelaySeconds after this, also for the
  // probes that began only once the startup probe succeeded.
  MonoTime container_started{};
  // Set only by Lifecycle::Resume, for a probe that ran under the previous
  // supervisor: the stored result (S7.3) it had, which the runner starts
  // from instead of the initial one (readiness is re-checked, not reset).
  // Unset for a startup probe: an active one has no stored result yet.
  std::optional<bool> resumed_result;
  friend bool operator==(const StartProbes&, const StartProbes&) = default;
};

struct StopProbes {
  std::string container;
  int instance = 0;
  ProbeKind kind = ProbeKind::kReadiness;
  friend bool operator==(const StopProbes&, const StopProbes&) = default;
};

// Arming an id that is already armed moves its deadline.
struct ArmTimer {
  TimerId id;
  MonoTime deadline;
  friend bool operator==(const ArmTimer&, const ArmTimer&) = default;
};

struct CancelTimer {
  TimerId id;
  friend bool operator==(const CancelTimer&, const CancelTimer&) = default;
};

// An entry for events.jsonl (docs/INTERFACE.md "Events"); the shell stamps the time.
struct Publish {
  EventType type = EventType::kNormal;
  std::string reason;  // Created, Started, Killing, BackOff, ...
  std::string object;  // "pod" or "container/<name>"
  std::string message;
  friend bool operator==(const Publish&, const Publish&) = default;
};

// Every container is done; the supervisor may clean up and exit.
struct PodEnded {
  pod::PodPhase phase = pod::PodPhase::kSucceeded;
  friend bool operator==(const PodEnded&, const PodEnded&) = default;
};

using Action =
    std::variant<CreateContainer, StartContainer, DeleteContainer, SignalContainer, RunHook,
                 CancelHook, StartProbes, StopProbes, ArmTimer, CancelTimer, Publish, PodEnded>;
std::string ToString(const Action& action);

// "12.5s": a monotonic time as seconds since the clock's epoch (readable in
// tests, where the fake clock starts at 0).
std::string FormatMono(MonoTime t);
std::string FormatDuration(Duration d);  // "10s", "2.5s"

}  // namespace podvisor::supervisor::lifecycle
