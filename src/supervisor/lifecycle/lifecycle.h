// supervisor::Lifecycle: the pure decision core of podvisor.
//
// It holds the pod's state — per container its run state, instance,
// restart count, backoff, hook and probe state and termination step, and
// for the pod its start plan, phase and termination budget — and applies
// the rules of docs/SEMANTICS.md S1–S9 to every event. It asks for effects by
// returning actions; it never makes a system call, reads a clock, sleeps,
// logs or does I/O. Time arrives with each event (`Now`), and a timeout is
// one more event (TimerFired) for a timer the core armed itself.
//
// The shell (Executor) feeds it events from the runtime, the reaper, hooks,
// probes, timers and the control socket and carries out the actions in the
// order given. Tests drive it the same way with a fake clock.
//
// Termination steps of a running container are explicit states (StopStep),
// and the grace arithmetic of S5 lives in termination.cc.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "pod/model.h"
#include "pod/status.h"
#include "supervisor/lifecycle/backoff.h"
#include "supervisor/lifecycle/container.h"
#include "supervisor/lifecycle/types.h"

namespace podvisor::supervisor::lifecycle {

struct LifecycleOptions {
  // Replaces spec.terminationGracePeriodSeconds for pod termination when
  // set (the supervisor's --grace); a stop request's own grace still wins.
  std::optional<Duration> grace_override;
  BackoffOptions backoff;  // S4.4
  // The image config's StopSignal per container name, as signal numbers;
  // used when the container sets no lifecycle.stopSignal.
  std::map<std::string, int> image_stop_signals;
  std::string qos_class;  // reported as status.qosClass (S10.2)
};

// What started the pod's termination (S5).
enum class TerminationCause {
  kNone,
  kStopRequested,
  kCompleted,
  kDeadlineExceeded,
  kInitFailed,
  kSidecarExited,         // S12.1: a draft sidecar ended for good before it was ready
  kBackoffLimitExceeded,  // S3.6: a Job's pod failed more often than its backoffLimit
};
std::string_view TerminationCauseName(TerminationCause cause);

// The version of SaveState's JSON, its own "format" key: the Lifecycle's
// part of the supervisor's handover (executor/handover_format.h) is read by
// this folder alone. Bumped only when an older reader would misread it;
// new keys with defaults keep the number.
inline constexpr int kLifecycleStateFormat = 1;

class Lifecycle {
 public:
  // `pod` must have had pod::ApplyDefaults applied.
  Lifecycle(pod::Pod pod, LifecycleOptions options = {});

  // Begins the pod: starts the active deadline (S3.5) and the start plan (S1).
  std::vector<Action> Start(Now now);

  // Applies one event; returns the actions to carry out, in order.
  std::vector<Action> Handle(const Event& event, Now now);

  // Hands the pod over to another supervisor process (saved_state.cc):
  // `podvisor upgrade`'s re-exec in place and a `run` that adopts the
  // containers of one that crashed. SaveState writes everything held that
  // is not derived from the pod spec; RestoreState rebuilds a Lifecycle
  // from the same pod and options and that state, refusing (never
  // throwing on) a state it cannot read, and Resume, called once before
  // any Handle, returns what the new shell must do to carry on: the armed
  // timers with their saved deadlines, the active probes from their stored
  // results, and the ends of hooks that died with the old process.
  nlohmann::json SaveState() const;
  static Result<Lifecycle> RestoreState(pod::Pod pod, LifecycleOptions options,
                                        const nlohmann::json& state);
  std::vector<Action> Resume(Now now);
  // A postStart or preStop hook runs: `podvisor upgrade` waits for none to.
  bool HooksRunning() const;

  // S16.5: a pulled image's config arrives after Start; its StopSignal
  // counts from then on, as if it had been in LifecycleOptions.
  void SetImageStopSignal(const std::string& container, int signo);

  pod::PodStatus Status() const;
  pod::PodPhase Phase() const;
  bool Ended() const { return ended_; }
  bool Started() const { return started_; }  // Start ran (or a restored state's had)
  // S19.3: the start plan waits for the pods of podvisor.io/after; the
  // shell watches them while this is true and reports with AwaitedPods.
  bool AwaitingPods() const { return awaiting_pods_ && !Terminating() && !ended_; }
  const std::vector<std::string>& awaited_pods() const { return awaited_pods_; }
  bool Terminating() const { return termination_.cause != TerminationCause::kNone; }
  TerminationCause termination_cause() const { return termination_.cause; }
  // When the pod's grace budget ends (S5.1); meaningful once Terminating().
  MonoTime termination_budget_end() const { return termination_.budget_end; }
  const pod::Pod& pod() const { return pod_; }

  // Introspection for the shell's logs and for tests. `name` must exist.
  RunState StateOf(std::string_view name) const;
  StopStep StopStepOf(std::string_view name) const;
  int InstanceOf(std::string_view name) const;

 private:
  using Container = ContainerRecord;
  struct Termination {
    TerminationCause cause = TerminationCause::kNone;
    std::optional<std::string> stop_reason;  // S6
    MonoTime budget_end{};                   // S5.1
    bool budget_expired = false;             // S5.5 happened
  };
  struct ConditionRecord {
    pod::ConditionStatus status = pod::ConditionStatus::kUnknown;
    WallTime since{};
  };

  // lifecycle.cc: dispatch and the start plan (S1, S2, S7, S8).
  void OnRuntimeCreated(const RuntimeCreated& e, Now now);
  void OnRuntimeStarted(const RuntimeStarted& e, Now now);
  void OnHookFinished(const HookFinished& e, Now now);
  void OnProbeResult(const ProbeResult& e, Now now);
  void OnTimerFired(const TimerFired& e, Now now);
  void OnAwaitedPods(const AwaitedPods& e, Now now);  // S19.3
  void BeginStartPlan();                              // S1.1, S1.6
  void CreateInstance(Container& c);
  bool StartsWhenCreated(const Container& c) const;
  void CreateAhead(size_t current);  // the entries after init-list entry `current`
  void TakeTurn(Container& c);
  void StartInstance(Container& c);
  void StartFinished(Container& c, Now now);
  void StartCreatedRegulars();
  bool DraftSidecarsReady() const;  // S12.1
  void SequenceEntryDone(const Container& c, Now now);
  void MarkInitialized();
  bool StartedForSequence(const Container& c) const;  // S1.3
  void StartProbe(Container& c, ProbeKind kind);
  void StopProbe(Container& c, ProbeKind kind);
  void StopAllProbes(Container& c);

  // restart.cc: ends of instances and restarts (S2, S3, S4).
  void OnContainerExited(const ContainerExited& e, Now now);
  void OnRuntimeFailed(const RuntimeFailed& e, Now now);
  void InstanceEnded(Container& c, bool failed, Now now);
  void ScheduleRestart(Container& c, Now now);
  bool EndsJob(Container& c, Now now);  // S3.6
  void OnRestartTimer(Container& c, int instance);
  void OnImagePullFailed(const ImagePullFailed& e, Now now);  // image_pull.cc, S16.5-S16.6
  void OnImagePulling(const ImagePulling& e);
  void OnResizeRestart(const ResizeRestart& e, Now now);  // restart.cc, S17.3
  bool WaitsForImage(const Container& c) const;
  void ShowImagePullBackOff(Container& c);
  void CheckCompletion(Now now);

  // termination.cc: S3.3, S5, S6, S8.2.
  void BeginTermination(TerminationCause cause, std::optional<std::string> reason,
                        std::optional<Duration> grace, Now now);
  void OnStopRequested(const StopRequested& e, Now now);
  void ShortenBudget(Duration grace, Now now);
  void OnDeadline(Now now);
  void OnGraceBudgetExpired(Now now);
  void StopForTermination(Container& c, Now now);
  void BeginStop(Container& c, Now now);
  bool DraftPreStopsRunning() const;  // S12.5
  void KillInstance(Container& c, KillCause cause, std::optional<int64_t> grace_seconds, Now now);
  void PreStopEnded(Container& c, Now now);
  void SendStopSignal(Container& c, Now now);
  void ArmSigkill(Container& c, MonoTime at);
  void OnKillBudgetExpired(Container& c, Now now);
  void OnSigkillTimer(Container& c);
  void AdvanceSidecarStops(Now now);
  void ReleaseHeldStops(Now now);  // S12.5
  void CheckEnded(Now now);
  MonoTime BudgetEnd(const Container& c) const;
  Duration PodGrace(std::optional<Duration> requested) const;
  bool Done(const Container& c) const;
  int StopSignalOf(const Container& c) const;

  // status.cc: S7.5, S9.
  pod::ContainerStatus ContainerStatusOf(const Container& c) const;
  std::vector<pod::PodCondition> Conditions() const;
  void RecordConditions(Now now);
  pod::PodPhase FinalPhase() const;
  bool StartedForStatus(const Container& c) const;  // S7.5
  bool ReadyForStatus(const Container& c) const;    // S7.5

  // saved_state.cc
  nlohmann::json SavePod() const;
  podvisor::Status RestorePod(const nlohmann::json& state);

  Container* Find(std::string_view name);
  const Container* Find(std::string_view name) const;
  // The container an event is about, or null when the event is stale: the
  // instance it names is not the current one.
  Container* Current(std::string_view name, int instance);
  void Emit(Action action) { out_.push_back(std::move(action)); }
  void Announce(EventType type, std::string reason, std::string object, std::string message);
  void AnnounceFor(const Container& c, EventType type, std::string reason, std::string message);
  void AnnounceExit(const Container& c, const pod::ContainerStateTerminated& t);
  void BeginNextInstance(Container& c);

  pod::Pod pod_;
  LifecycleOptions options_;
  std::vector<Container> containers_;  // init list in spec order, then regular
  size_t init_count_ = 0;

  bool started_ = false;
  Now pod_start_{};
  size_t next_init_ = 0;      // the init-list entry the start plan waits for
  bool initialized_ = false;  // S1.5: for good once true
  // S12.1: every draft sidecar was ready once; the standard containers'
  // first starts no longer wait (restarts never did).
  bool draft_gate_open_ = false;
  bool active_deadline_armed_ = false;
  // S19.3: Start held the start plan back for podvisor.io/after; the
  // names are those not Ready at the last report.
  bool awaiting_pods_ = false;
  std::vector<std::string> awaited_pods_;

  Termination termination_;
  std::optional<WallTime> deletion_timestamp_;
  bool failed_ = false;  // S9.1: init failed under Never or deadline passed
  std::string reason_;
  std::string message_;

  bool ended_ = false;
  pod::PodPhase final_phase_ = pod::PodPhase::kPending;

  std::map<std::string, ConditionRecord, std::less<>> conditions_;
  std::vector<Action> out_;  // actions of the event being handled
};

}  // namespace podvisor::supervisor::lifecycle
