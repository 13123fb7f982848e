// Lifecycle: event dispatch and the start plan (SEMANTICS S1, S7.4, S8.2).

#include "supervisor/lifecycle/lifecycle.h"

#include <utility>

#include "pod/pod_order.h"

namespace podvisor::supervisor::lifecycle {

namespace {

// How many init-list entries are created ahead of their turn (S1.1).
constexpr size_t kCreateAheadDepth = 2;

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

bool HasHook(const pod::Container& spec, HookKind kind) {
  if (!spec.lifecycle) return false;
  return kind == HookKind::kPostStart ? spec.lifecycle->post_start.has_value()
                                      : spec.lifecycle->pre_stop.has_value();
}

}  // namespace

Lifecycle::Lifecycle(pod::Pod pod, LifecycleOptions options)
    : pod_(std::move(pod)), options_(std::move(options)) {
  const auto& inits = pod_.spec.init_containers;
  for (size_t i = 0; i < inits.size(); ++i) {
    const ContainerRole role =
        pod::IsSidecar(inits[i]) ? ContainerRole::kSidecar : ContainerRole::kInit;
    containers_.emplace_back(inits[i], role, i, options_.backoff);
  }
  init_count_ = inits.size();
  for (size_t i = 0; i < pod_.spec.containers.size(); ++i) {
    const ContainerRole role = pod::IsDraftSidecar(pod_.spec.containers[i])
                                   ? ContainerRole::kDraftSidecar
                                   : ContainerRole::kRegular;
    containers_.emplace_back(pod_.spec.containers[i], role, i, options_.backoff);
  }
}

std::vector<Action> Lifecycle::Start(Now now) {
  out_.clear();
  if (started_) return {};
  started_ = true;
  pod_start_ = now;
  // S3.5: the deadline counts from the pod start, init containers included.
  if (pod_.spec.active_deadline_seconds) {
    active_deadline_armed_ = true;
    Emit(ArmTimer{TimerId{TimerKind::kActiveDeadline, "", 0},
                  now.mono + ClampedSeconds(*pod_.spec.active_deadline_seconds)});
  }
  // S19.3: with podvisor.io/after, nothing is created before the pods it
  // names are Ready; the shell watches them and reports AwaitedPods.
  awaited_pods_ = pod::AfterPods(pod_);
  if (!awaited_pods_.empty()) {
    awaiting_pods_ = true;
    Announce(EventType::kNormal, "WaitingForPods", "pod",
             "Waiting for pods " + JoinNames(awaited_pods_) +
                 " to be Ready before starting containers (podvisor.io/after)");
  } else {
    BeginStartPlan();
  }
  RecordConditions(now);
  return std::exchange(out_, {});
}

void Lifecycle::BeginStartPlan() {
  if (init_count_ == 0) {
    MarkInitialized();  // S1.6
  } else {
    CreateInstance(containers_[0]);  // S1.1
    CreateAhead(0);
  }
}

// S19.3: the watcher's report. A report after the pod began to terminate
// changes nothing: a stop during the wait ends the pod with no container
// made (S19.6).
void Lifecycle::OnAwaitedPods(const AwaitedPods& e, Now /*now*/) {
  if (!awaiting_pods_ || Terminating() || ended_) return;
  if (!e.not_ready.empty()) {
    awaited_pods_ = e.not_ready;
    return;
  }
  const std::vector<std::string> named = pod::AfterPods(pod_);
  awaiting_pods_ = false;
  awaited_pods_.clear();
  Announce(EventType::kNormal, "AwaitedPodsReady", "pod",
           "Pods " + JoinNames(named) + " are Ready: starting containers");
  BeginStartPlan();
}

std::vector<Action> Lifecycle::Handle(const Event& event, Now now) {
  out_.clear();
  if (!started_) return {};
  std::visit(
      [&](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, RuntimeCreated>) OnRuntimeCreated(e, now);
        if constexpr (std::is_same_v<T, RuntimeStarted>) OnRuntimeStarted(e, now);
        if constexpr (std::is_same_v<T, RuntimeFailed>) OnRuntimeFailed(e, now);
        if constexpr (std::is_same_v<T, ContainerExited>) OnContainerExited(e, now);
        if constexpr (std::is_same_v<T, HookFinished>) OnHookFinished(e, now);
        if constexpr (std::is_same_v<T, ProbeResult>) OnProbeResult(e, now);
        if constexpr (std::is_same_v<T, TimerFired>) OnTimerFired(e, now);
        if constexpr (std::is_same_v<T, StopRequested>) OnStopRequested(e, now);
        if constexpr (std::is_same_v<T, ImagePullFailed>) OnImagePullFailed(e, now);
        if constexpr (std::is_same_v<T, ImagePulling>) OnImagePulling(e);
        if constexpr (std::is_same_v<T, AwaitedPods>) OnAwaitedPods(e, now);
        if constexpr (std::is_same_v<T, ResizeRestart>) OnResizeRestart(e, now);
      },
      event);
  RecordConditions(now);
  return std::exchange(out_, {});
}

// ---- Lookups and small helpers ---------------------------------------------

Lifecycle::Container* Lifecycle::Find(std::string_view name) {
  for (Container& c : containers_) {
    if (c.spec.name == name) return &c;
  }
  return nullptr;
}

const Lifecycle::Container* Lifecycle::Find(std::string_view name) const {
  for (const Container& c : containers_) {
    if (c.spec.name == name) return &c;
  }
  return nullptr;
}

Lifecycle::Container* Lifecycle::Current(std::string_view name, int instance) {
  Container* c = Find(name);
  return c && c->instance == instance ? c : nullptr;
}

RunState Lifecycle::StateOf(std::string_view name) const {
  return Find(name)->state;
}
StopStep Lifecycle::StopStepOf(std::string_view name) const {
  return Find(name)->stop;
}
int Lifecycle::InstanceOf(std::string_view name) const {
  return Find(name)->instance;
}

void Lifecycle::Announce(EventType type, std::string reason, std::string object,
                         std::string message) {
  Emit(supervisor::lifecycle::Publish{type, std::move(reason), std::move(object),
                                      std::move(message)});
}

void Lifecycle::AnnounceFor(const Container& c, EventType type, std::string reason,
                            std::string message) {
  Announce(type, std::move(reason), c.Object(), std::move(message));
}

// ---- The start plan (S1) ---------------------------------------------------

void Lifecycle::CreateInstance(Container& c) {
  c.state = RunState::kCreating;
  c.image_pending = false;
  c.instance_exists = false;
  c.started_mono.reset();
  c.post_start_running = false;
  c.post_start_done = false;
  c.startup_succeeded = false;
  c.readiness_success = false;  // S7.3: readiness starts as failure
  c.probes_active = 0;
  c.pre_stop_running = false;
  c.stop = StopStep::kNone;
  c.kill_cause = KillCause::kNone;
  c.kill_budget_end.reset();
  c.kill_budget_armed = false;
  c.sigkill_at.reset();
  Emit(CreateContainer{c.spec.name, c.instance, StartsWhenCreated(c)});
}

// Whether OnRuntimeCreated would start `c` at once, judged when its create
// is issued: not an entry created ahead of its turn, and a regular
// container only when its chain (S1.4, S12.1) would let it start. What
// can change before the create returns only holds the start back (the pod
// terminating: S5.8), and the shell's delete then stops what it started.
bool Lifecycle::StartsWhenCreated(const Container& c) const {
  if (c.ahead || Terminating()) return false;
  if (!c.InRegularList() || c.start_attempt_finished) return true;
  for (const Container& earlier : containers_) {
    if (&earlier == &c) break;
    if (earlier.role == c.role && !earlier.start_attempt_finished) return false;
  }
  return c.role != ContainerRole::kRegular || draft_gate_open_ || DraftSidecarsReady();
}

// The next init-list entries are created while the current one is created,
// started and run, so that each start follows at once when its turn comes:
// S1.1 orders the starts. kCreateAheadDepth entries ahead, not the whole
// list, and never a regular container, whose create would make the pod
// initialized (S1.5). Nor an entry that mounts a subPath: the kubelet makes
// a subPath when the container is created, and an entry before may be the
// one that writes it (an init container's config file).
void Lifecycle::CreateAhead(size_t current) {
  if (Terminating()) return;
  for (size_t i = current + 1; i <= current + kCreateAheadDepth && i < init_count_; ++i) {
    Container& c = containers_[i];
    // Created ahead already, or created in its turn: nothing to do.
    if (c.state != RunState::kWaiting) continue;
    bool has_sub_path = false;
    for (const auto& m : c.spec.volume_mounts) {
      has_sub_path |= !m.sub_path.empty() || !m.sub_path_expr.empty();
    }
    if (has_sub_path) continue;
    c.ahead = true;  // before CreateInstance, which asks
    CreateInstance(c);
  }
}

// The start plan reached `c`, an init-list entry.
void Lifecycle::TakeTurn(Container& c) {
  if (!c.ahead) {
    CreateInstance(c);
    return;
  }
  c.ahead = false;
  // Still creating: OnRuntimeCreated starts it, as any other.
  if (c.state == RunState::kCreated) {
    AnnounceFor(c, EventType::kNormal, "Created", "Created container " + c.spec.name);
    StartInstance(c);
  }
}

void Lifecycle::BeginNextInstance(Container& c) {
  // An instance that never existed (its create failed) keeps its number.
  if (c.terminated) {
    c.last_terminated = std::move(c.terminated);
    c.terminated.reset();
    ++c.instance;
  }
}

void Lifecycle::StartInstance(Container& c) {
  c.state = RunState::kStarting;
  Emit(StartContainer{c.spec.name, c.instance});
}

void Lifecycle::OnRuntimeCreated(const RuntimeCreated& e, Now /*now*/) {
  Container* c = Current(e.container, e.instance);
  if (!c) return;
  if (c->state == RunState::kAbandoned) {
    // S5.8: the pod began terminating while this create was in flight; the
    // instance will never start, so it only needs removing.
    Emit(DeleteContainer{c->spec.name, c->instance});
    return;
  }
  if (c->state != RunState::kCreating) return;
  c->instance_exists = true;
  c->container_id = e.container_id;
  c->image_pull_failures = 0;  // S16.6: the image is had
  c->image_pending = false;
  if (c->ahead) {
    c->state = RunState::kCreated;  // TakeTurn starts it
    return;
  }
  AnnounceFor(*c, EventType::kNormal, "Created", "Created container " + c->spec.name);
  if (c->InRegularList() && !c->start_attempt_finished) {
    // S1.4: created concurrently, started in spec order.
    c->state = RunState::kCreated;
    StartCreatedRegulars();
  } else {
    StartInstance(*c);
  }
}

// S1.4: regular container k+1 starts once k's first start finished, its
// postStart hook included. A start that failed also finishes it: the
// kubelet moves on to the next container, and so do we.
//
// S12.1: the draft sidecars go first, in that same order among themselves;
// the standard containers' chain begins once every draft sidecar is ready.
// That gate is passed once: a sidecar that later turns unready or restarts
// holds nothing back (the draft orders the pod's start, not each restart).
void Lifecycle::StartCreatedRegulars() {
  auto chain = [this](ContainerRole role) {
    bool earlier_finished = true;
    for (Container& c : containers_) {
      if (c.role != role) continue;
      if (c.state == RunState::kCreated && earlier_finished) StartInstance(c);
      earlier_finished = earlier_finished && c.start_attempt_finished;
    }
  };
  chain(ContainerRole::kDraftSidecar);
  if (!draft_gate_open_) {
    if (Terminating() || !DraftSidecarsReady()) return;
    draft_gate_open_ = true;
  }
  chain(ContainerRole::kRegular);
}

// S12.1: ready = running, postStart done, startup probe (if any) succeeded
// and readiness probe (if any) succeeding.
bool Lifecycle::DraftSidecarsReady() const {
  for (const Container& c : containers_) {
    if (!c.IsDraftSidecar()) continue;
    if (!StartedForSequence(c) || (c.spec.readiness_probe && !c.readiness_success)) return false;
  }
  return true;
}

void Lifecycle::OnRuntimeStarted(const RuntimeStarted& e, Now now) {
  Container* c = Current(e.container, e.instance);
  if (!c || c->state != RunState::kStarting) return;
  c->state = RunState::kRunning;
  c->started_mono = now.mono;
  c->started_wall = now.wall;
  c->ever_started = true;
  c->start_error.reset();  // as the kubelet clears its reason cache
  AnnounceFor(*c, EventType::kNormal, "Started", "Started container " + c->spec.name);

  // S7.4: liveness and readiness wait for the startup probe.
  if (c->spec.startup_probe) {
    StartProbe(*c, ProbeKind::kStartup);
  } else {
    StartProbe(*c, ProbeKind::kReadiness);
    StartProbe(*c, ProbeKind::kLiveness);
  }

  if (Terminating()) {
    if (!c->IsSidecar()) {
      // Its start was in flight when termination began; the moment for
      // preStop hooks (S5.2) has passed, so it gets its stop signal now.
      c->kill_cause = KillCause::kPodTermination;
      SendStopSignal(*c, now);
      return;
    }
    // S5.7: a sidecar restarted during termination waits for its turn; its
    // preStop already had its moment.
    c->stop = StopStep::kWaitingForTurn;
    if (termination_.budget_expired) {
      SendStopSignal(*c, now);  // S5.5
      return;
    }
  }

  if (HasHook(c->spec, HookKind::kPostStart)) {
    c->post_start_running = true;
    Emit(RunHook{c->spec.name, c->instance, HookKind::kPostStart, std::nullopt});  // S8.2
  } else {
    StartFinished(*c, now);
  }
  AdvanceSidecarStops(now);
}

// The instance is running and its postStart hook (if any) succeeded.
void Lifecycle::StartFinished(Container& c, Now now) {
  c.post_start_done = true;
  if (c.InRegularList() && !c.start_attempt_finished) {
    c.start_attempt_finished = true;
    StartCreatedRegulars();
  } else if (c.IsDraftSidecar()) {
    StartCreatedRegulars();  // S12.1: a restarted sidecar may complete the gate
  }
  if (c.IsSidecar() && StartedForSequence(c)) SequenceEntryDone(c, now);
}

// S1.3: started = running, postStart completed, startup probe succeeded.
bool Lifecycle::StartedForSequence(const Container& c) const {
  return c.state == RunState::kRunning && c.post_start_done &&
         (!c.spec.startup_probe || c.startup_succeeded);
}

// An init-list entry is done (S1.2: an init exited 0; S1.3: a sidecar
// started): the next entry may begin. Later restarts of a sidecar call this
// again and change nothing, since the plan has moved past them.
void Lifecycle::SequenceEntryDone(const Container& c, Now /*now*/) {
  if (Terminating() || initialized_ || c.InRegularList()) return;
  if (c.list_index != next_init_) return;
  ++next_init_;
  if (next_init_ < init_count_) {
    TakeTurn(containers_[next_init_]);  // S1.1
    CreateAhead(next_init_);
  } else {
    MarkInitialized();
  }
}

// S1.4/S1.5: every regular container is created at once; the pod stays
// initialized from now on, whatever happens to the init list.
void Lifecycle::MarkInitialized() {
  initialized_ = true;
  for (Container& c : containers_) {
    if (c.InRegularList() && c.state == RunState::kWaiting) CreateInstance(c);
  }
}

// ---- Hooks (S8) ------------------------------------------------------------

void Lifecycle::OnHookFinished(const HookFinished& e, Now now) {
  Container* c = Current(e.container, e.instance);
  if (!c || c->state != RunState::kRunning) return;
  if (e.kind == HookKind::kPostStart) {
    if (!c->post_start_running) return;
    c->post_start_running = false;
    if (e.success) {
      StartFinished(*c, now);
      return;
    }
    // S8.2: a failed postStart is a failed start; S2/S3 decide the restart
    // once the kill (S5.3) is through.
    AnnounceFor(*c, EventType::kWarning, "FailedPostStartHook", e.message);
    c->start_error = pod::ContainerStateWaiting{"PostStartHookError", e.message};
    if (c->InRegularList() && !c->start_attempt_finished) {
      c->start_attempt_finished = true;
      StartCreatedRegulars();
    }
    KillInstance(*c, KillCause::kPostStartFailed, std::nullopt, now);
    return;
  }
  if (!c->pre_stop_running) return;
  c->pre_stop_running = false;
  // S5.6: a failing preStop is reported and changes nothing else.
  if (!e.success) AnnounceFor(*c, EventType::kWarning, "FailedPreStopHook", e.message);
  if (c->stop == StopStep::kPreStop) PreStopEnded(*c, now);
}

// ---- Probes (S7.3–S7.5) ----------------------------------------------------

void Lifecycle::StartProbe(Container& c, ProbeKind kind) {
  if (!ProbeOf(c.spec, kind) || (c.probes_active & ProbeBit(kind))) return;
  c.probes_active |= ProbeBit(kind);
  Emit(StartProbes{c.spec.name, c.instance, kind, c.started_mono.value_or(MonoTime{}),
                   std::nullopt});
}

void Lifecycle::StopProbe(Container& c, ProbeKind kind) {
  if (!(c.probes_active & ProbeBit(kind))) return;
  c.probes_active &= ~ProbeBit(kind);
  Emit(StopProbes{c.spec.name, c.instance, kind});
}

void Lifecycle::StopAllProbes(Container& c) {
  StopProbe(c, ProbeKind::kStartup);
  StopProbe(c, ProbeKind::kReadiness);
  StopProbe(c, ProbeKind::kLiveness);
}

void Lifecycle::OnProbeResult(const ProbeResult& e, Now now) {
  Container* c = Current(e.container, e.instance);
  if (!c || c->state != RunState::kRunning || !(c->probes_active & ProbeBit(e.kind))) return;
  const std::optional<pod::Probe>& probe = ProbeOf(c->spec, e.kind);
  switch (e.kind) {
    case ProbeKind::kStartup:
      // S7.4: the runner pauses the startup probe after any result. The
      // runner also records an Unhealthy event for every failed run.
      c->probes_active &= ~ProbeBit(ProbeKind::kStartup);
      if (!e.success) {
        // S2.2/S3.3: killed through S5.3, then restarted per S3.1/S3.2.
        KillInstance(*c, KillCause::kStartupFailed, probe->termination_grace_period_seconds, now);
        return;
      }
      c->startup_succeeded = true;
      StartProbe(*c, ProbeKind::kReadiness);
      // A regular container already being stopped gets no liveness probe:
      // it will not be restarted (S5.7).
      if (c->IsSidecar() || c->stop == StopStep::kNone) StartProbe(*c, ProbeKind::kLiveness);
      if (c->IsSidecar() && StartedForSequence(*c)) SequenceEntryDone(*c, now);
      if (c->IsDraftSidecar()) StartCreatedRegulars();  // S12.1
      return;
    case ProbeKind::kLiveness:
      if (e.success) return;  // S7.3: the initial result is already success
      c->probes_active &= ~ProbeBit(ProbeKind::kLiveness);  // S7.4: paused by the runner
      KillInstance(*c, KillCause::kLivenessFailed, probe->termination_grace_period_seconds, now);
      return;
    case ProbeKind::kReadiness:
      c->readiness_success = e.success;
      if (c->IsDraftSidecar() && e.success) StartCreatedRegulars();  // S12.1
      return;
  }
}

// ---- Timers ----------------------------------------------------------------

void Lifecycle::OnTimerFired(const TimerFired& e, Now now) {
  switch (e.id.kind) {
    case TimerKind::kActiveDeadline:
      OnDeadline(now);
      return;
    case TimerKind::kGraceBudget:
      OnGraceBudgetExpired(now);
      return;
    case TimerKind::kRestart:
      if (Container* c = Find(e.id.container)) OnRestartTimer(*c, e.id.instance);
      return;
    case TimerKind::kKillBudget:
      if (Container* c = Current(e.id.container, e.id.instance)) OnKillBudgetExpired(*c, now);
      return;
    case TimerKind::kSigkill:
      if (Container* c = Current(e.id.container, e.id.instance)) OnSigkillTimer(*c);
      return;
    case TimerKind::kImagePullBackOff:
      if (Container* c = Current(e.id.container, e.id.instance)) ShowImagePullBackOff(*c);
      return;
  }
}

}  // namespace podvisor::supervisor::lifecycle
