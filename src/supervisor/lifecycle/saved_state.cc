// Lifecycle: its state handed to another supervisor process and taken
// back (issue 30: `podvisor upgrade` re-executes in place; a `run` after a
// crash adopts the running containers).
//
// The layout, one JSON object (the Lifecycle's part of the handover):
//
//   { "format": 1, "started": true, "pod_start": {"mono": ns, "wall": ns},
//     "next_init": 2, "initialized": true, "termination": {"cause": "None", ...},
//     "conditions": {"Ready": {"status": "True", "since": ns}, ...},
//     "containers": {"web": {"role": "regular", "state": "Running", ...}}, ... }
//
// Times are integer nanoseconds: MonoTime of the steady clock
// (CLOCK_MONOTONIC, one clock for every process of a boot, so saved
// deadlines keep their meaning), WallTime since the Unix epoch. Enums are
// their names, never numbers, so a reordered enum cannot misread an old
// state. The pod spec is not saved: the new process loads the same one.
//
// The reader ignores keys it does not know and takes the default for a
// missing one, except "format" and "containers". Anything else it cannot
// use is an Error naming the key ("handover state: containers[web].state:
// unknown value \"Foo\""); nlohmann's exceptions stay inside this file.
// Values that would make the core misbehave later (a probe the spec does
// not have, times beyond any clock) are refused here, so a corrupt state
// fails the handover instead of the pod.

#include <array>
#include <span>

#include "supervisor/lifecycle/lifecycle.h"

namespace podvisor::supervisor::lifecycle {

namespace {

using nlohmann::json;

// Times are refused beyond 2^62 ns (146 years): no steady clock of a boot
// and no wall clock of this century reaches them, and the core adds up to
// kForever (100 years) to a saved time without overflowing int64.
constexpr int64_t kMaxTime = int64_t{1} << 62;
// Instances and restart counts are incremented by the core; this bound
// keeps them far from INT_MAX.
constexpr int64_t kMaxCount = int64_t{1} << 30;

constexpr std::array kRunStates{RunState::kWaiting,  RunState::kCreating, RunState::kCreated,
                                RunState::kStarting, RunState::kRunning,  RunState::kBackOff,
                                RunState::kExited,   RunState::kAbandoned};
constexpr std::array kStopSteps{StopStep::kNone, StopStep::kPreStop,   StopStep::kWaitingForTurn,
                                StopStep::kHeld, StopStep::kSignalled, StopStep::kKilled};
constexpr std::array kKillCauses{
    KillCause::kNone,          KillCause::kPodTermination,  KillCause::kLivenessFailed,
    KillCause::kStartupFailed, KillCause::kPostStartFailed, KillCause::kResize};
constexpr std::array kRoles{ContainerRole::kInit, ContainerRole::kSidecar, ContainerRole::kRegular,
                            ContainerRole::kDraftSidecar};
constexpr std::array kTerminationCauses{TerminationCause::kNone,
                                        TerminationCause::kStopRequested,
                                        TerminationCause::kCompleted,
                                        TerminationCause::kDeadlineExceeded,
                                        TerminationCause::kInitFailed,
                                        TerminationCause::kSidecarExited,
                                        TerminationCause::kBackoffLimitExceeded};
constexpr std::array kPhases{pod::PodPhase::kPending, pod::PodPhase::kRunning,
                             pod::PodPhase::kSucceeded, pod::PodPhase::kFailed,
                             pod::PodPhase::kUnknown};
constexpr std::array kConditionStatuses{pod::ConditionStatus::kTrue, pod::ConditionStatus::kFalse,
                                        pod::ConditionStatus::kUnknown};
constexpr std::array kProbeKinds{ProbeKind::kStartup, ProbeKind::kReadiness, ProbeKind::kLiveness};

// ---- Writing ---------------------------------------------------------------

int64_t Nanos(MonoTime t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
int64_t Nanos(WallTime t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// Messages (termination messages, runtime errors, hook output) may be any
// bytes, and nlohmann's dump throws on invalid UTF-8. The state is made
// valid here rather than at its writer, so that any dump of it works:
// invalid sequences become U+FFFD, which is what the status and event
// writers (dumped with error_handler_t::replace) already show of them.
std::string Utf8(const std::string& text) {
  for (unsigned char ch : text) {
    if (ch >= 0x80) {
      return json::parse(json(text).dump(-1, ' ', false, json::error_handler_t::replace))
          .get<std::string>();
    }
  }
  return text;  // ASCII, the common case
}

json OptionalMono(const std::optional<MonoTime>& t) {
  return t ? json(Nanos(*t)) : json(nullptr);
}

json SaveTerminated(const std::optional<pod::ContainerStateTerminated>& t) {
  if (!t) return nullptr;
  return {{"exit_code", t->exit_code},
          {"signal", t->signal},
          {"reason", Utf8(t->reason)},
          {"message", Utf8(t->message)},
          {"started_at", t->started_at ? json(Nanos(*t->started_at)) : json(nullptr)},
          {"finished_at", Nanos(t->finished_at)}};
}

json SaveContainer(const ContainerRecord& c) {
  json probes = json::array();
  for (ProbeKind kind : kProbeKinds) {
    if (c.probes_active & ProbeBit(kind)) probes.push_back(ProbeKindName(kind));
  }
  json start_error = nullptr;
  if (c.start_error) {
    start_error = {{"reason", Utf8(c.start_error->reason)},
                   {"message", Utf8(c.start_error->message)}};
  }
  return {{"role", ContainerRoleName(c.role)},
          {"state", RunStateName(c.state)},
          {"instance", c.instance},
          {"instance_exists", c.instance_exists},
          {"ever_started", c.ever_started},
          {"container_id", Utf8(c.container_id)},
          {"started_mono", OptionalMono(c.started_mono)},
          {"started_wall", Nanos(c.started_wall)},
          {"post_start_running", c.post_start_running},
          {"post_start_done", c.post_start_done},
          {"startup_succeeded", c.startup_succeeded},
          {"readiness_success", c.readiness_success},
          {"probes_active", std::move(probes)},
          {"pre_stop_running", c.pre_stop_running},
          {"stop", StopStepName(c.stop)},
          {"kill_cause", KillCauseName(c.kill_cause)},
          {"kill_budget_end", OptionalMono(c.kill_budget_end)},
          {"kill_budget_armed", c.kill_budget_armed},
          {"signalled_at", Nanos(c.signalled_at)},
          {"sigkill_at", OptionalMono(c.sigkill_at)},
          {"start_attempt_finished", c.start_attempt_finished},
          {"ahead", c.ahead},
          {"terminated", SaveTerminated(c.terminated)},
          {"last_terminated", SaveTerminated(c.last_terminated)},
          {"start_error", std::move(start_error)},
          {"last_exit_ok", c.last_exit_ok},
          {"backoff_restarts", c.backoff.restarts_in_sequence()},
          {"image_pull_failures", c.image_pull_failures},
          {"image_pending", c.image_pending},
          {"backoff_delay", c.backoff_delay.count()},
          {"restart_at", Nanos(c.restart_at)},
          {"restart_timer_armed", c.restart_timer_armed}};
}

// ---- Reading ---------------------------------------------------------------

// One JSON object being read, with its path for error messages. Every read
// leaves its target alone when the key is absent (or null, for optional
// values); the first problem is kept in `error` and later reads do nothing,
// so a reader reads straight through and checks once.
class In {
 public:
  In(const json* obj, std::string path, std::optional<Error>& error)
      : obj_(obj), path_(std::move(path)), error_(error) {}

  std::string Path(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  bool ok() const { return !error_; }
  void Fail(const std::string& path, const std::string& what) {
    if (!error_) error_ = Error(path + ": " + what);
  }
  // The member `key`, or null when it is absent (or an earlier read failed).
  const json* Get(std::string_view key) {
    if (error_ || !obj_) return nullptr;
    auto it = obj_->find(std::string(key));
    return it == obj_->end() ? nullptr : &*it;
  }
  // A nested object; absent reads as an empty one.
  In Object(std::string_view key) {
    const json* v = Get(key);
    if (v && !v->is_object()) {
      Fail(Path(key), "not an object");
      v = nullptr;
    }
    return In(v, Path(key), error_);
  }

  void Bool(std::string_view key, bool& out) {
    if (const json* v = Get(key)) {
      if (!v->is_boolean()) return Fail(Path(key), "not a boolean");
      out = v->get<bool>();
    }
  }
  void String(std::string_view key, std::string& out) {
    if (const json* v = Get(key)) {
      if (!v->is_string()) return Fail(Path(key), "not a string");
      out = v->get<std::string>();
    }
  }
  void Int(std::string_view key, int64_t lo, int64_t hi, int64_t& out) {
    const json* v = Get(key);
    if (!v) return;
    if (!v->is_number_integer()) return Fail(Path(key), "not an integer");
    const bool big = v->is_number_unsigned() && v->get<uint64_t>() > uint64_t{INT64_MAX};
    const int64_t n = big ? INT64_MAX : v->get<int64_t>();
    if (big || n < lo || n > hi) {
      return Fail(Path(key), "out of range [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                 "]: " + v->dump());
    }
    out = n;
  }
  template <typename T>
  void Int(std::string_view key, int64_t lo, int64_t hi, T& out) {
    int64_t n = out;
    Int(key, lo, hi, n);
    out = static_cast<T>(n);
  }
  void Nanos(std::string_view key, int64_t hi, Duration& out) {
    int64_t n = out.count();
    Int(key, 0, hi, n);
    out = Duration(n);
  }
  void Mono(std::string_view key, MonoTime& out) {
    Duration d = out.time_since_epoch();
    Nanos(key, kMaxTime, d);
    out = MonoTime(d);
  }
  void Wall(std::string_view key, WallTime& out) {
    Duration d = out.time_since_epoch();
    Nanos(key, kMaxTime, d);
    out = WallTime(std::chrono::duration_cast<WallTime::duration>(d));
  }
  void OptionalMono(std::string_view key, std::optional<MonoTime>& out) {
    const json* v = Get(key);
    if (!v) return;
    if (v->is_null()) {
      out.reset();
      return;
    }
    MonoTime t{};
    Mono(key, t);
    out = t;
  }
  void OptionalWall(std::string_view key, std::optional<WallTime>& out) {
    const json* v = Get(key);
    if (!v) return;
    if (v->is_null()) {
      out.reset();
      return;
    }
    WallTime t{};
    Wall(key, t);
    out = t;
  }
  // An enum by its name, as the name function prints it.
  template <typename E, size_t N>
  void Enum(std::string_view key, const std::array<E, N>& all, std::string_view (*name)(E),
            E& out) {
    if (const json* v = Get(key)) EnumValue(*v, Path(key), all, name, out);
  }
  template <typename E, size_t N>
  void EnumValue(const json& v, const std::string& path, const std::array<E, N>& all,
                 std::string_view (*name)(E), E& out) {
    if (error_) return;
    if (!v.is_string()) return Fail(path, "not a string");
    const auto& text = v.get_ref<const std::string&>();
    for (E e : all) {
      if (name(e) == text) {
        out = e;
        return;
      }
    }
    Fail(path, "unknown value " + json(text).dump(-1, ' ', false, json::error_handler_t::replace));
  }

 private:
  const json* obj_;
  std::string path_;
  std::optional<Error>& error_;
};

void RestoreTerminated(In in, std::string_view key,
                       std::optional<pod::ContainerStateTerminated>& out) {
  const json* v = in.Get(key);
  if (!v) return;
  if (v->is_null()) {
    out.reset();
    return;
  }
  In t = in.Object(key);
  pod::ContainerStateTerminated r;
  t.Int("exit_code", INT32_MIN, INT32_MAX, r.exit_code);
  t.Int("signal", INT32_MIN, INT32_MAX, r.signal);
  t.String("reason", r.reason);
  t.String("message", r.message);
  t.OptionalWall("started_at", r.started_at);
  t.Wall("finished_at", r.finished_at);
  out = std::move(r);
}

void RestoreContainer(In in, ContainerRecord& c) {
  ContainerRole role = c.role;
  in.Enum("role", kRoles, ContainerRoleName, role);
  if (role != c.role) {
    in.Fail(in.Path("role"), "\"" + std::string(ContainerRoleName(role)) +
                                 "\" but the pod's is \"" + std::string(ContainerRoleName(c.role)) +
                                 "\"");
  }
  in.Enum("state", kRunStates, RunStateName, c.state);
  in.Int("instance", 0, kMaxCount, c.instance);
  in.Bool("instance_exists", c.instance_exists);
  in.Bool("ever_started", c.ever_started);
  in.String("container_id", c.container_id);
  in.OptionalMono("started_mono", c.started_mono);
  in.Wall("started_wall", c.started_wall);
  in.Bool("post_start_running", c.post_start_running);
  in.Bool("post_start_done", c.post_start_done);
  in.Bool("startup_succeeded", c.startup_succeeded);
  in.Bool("readiness_success", c.readiness_success);
  if (const json* probes = in.Get("probes_active")) {
    if (!probes->is_array()) return in.Fail(in.Path("probes_active"), "not an array");
    c.probes_active = 0;
    for (size_t i = 0; i < probes->size(); ++i) {
      const std::string path = in.Path("probes_active[" + std::to_string(i) + "]");
      ProbeKind kind = ProbeKind::kStartup;
      in.EnumValue((*probes)[i], path, kProbeKinds, ProbeKindName, kind);
      // The core dereferences the spec's probe of every active kind.
      if (in.ok() && !ProbeOf(c.spec, kind)) {
        return in.Fail(path, "the container has no " + std::string(ProbeKindName(kind)) + " probe");
      }
      c.probes_active |= ProbeBit(kind);
    }
  }
  in.Bool("pre_stop_running", c.pre_stop_running);
  in.Enum("stop", kStopSteps, StopStepName, c.stop);
  in.Enum("kill_cause", kKillCauses, KillCauseName, c.kill_cause);
  in.OptionalMono("kill_budget_end", c.kill_budget_end);
  in.Bool("kill_budget_armed", c.kill_budget_armed);
  if (in.ok() && c.kill_budget_armed && !c.kill_budget_end) {
    return in.Fail(in.Path("kill_budget_armed"), "true without a kill_budget_end");
  }
  in.Mono("signalled_at", c.signalled_at);
  in.OptionalMono("sigkill_at", c.sigkill_at);
  in.Bool("start_attempt_finished", c.start_attempt_finished);
  in.Bool("ahead", c.ahead);
  RestoreTerminated(in, "terminated", c.terminated);
  RestoreTerminated(in, "last_terminated", c.last_terminated);
  if (const json* v = in.Get("start_error"); v && !v->is_null()) {
    In e = in.Object("start_error");
    pod::ContainerStateWaiting w;
    e.String("reason", w.reason);
    e.String("message", w.message);
    c.start_error = std::move(w);
  } else if (v) {
    c.start_error.reset();
  }
  in.Bool("last_exit_ok", c.last_exit_ok);
  int restarts = c.backoff.restarts_in_sequence();
  in.Int("backoff_restarts", 0, kMaxCount, restarts);
  c.backoff.RestoreRestartsInSequence(restarts);
  in.Int("image_pull_failures", 0, kMaxCount, c.image_pull_failures);
  in.Bool("image_pending", c.image_pending);
  in.Nanos("backoff_delay", kForever.count(), c.backoff_delay);
  in.Mono("restart_at", c.restart_at);
  in.Bool("restart_timer_armed", c.restart_timer_armed);
}

}  // namespace

nlohmann::json Lifecycle::SaveState() const {
  json conditions = json::object();
  for (const auto& [type, record] : conditions_) {
    conditions[type] = {{"status", pod::ConditionStatusName(record.status)},
                        {"since", Nanos(record.since)}};
  }
  json containers = json::object();
  for (const Container& c : containers_) containers[c.spec.name] = SaveContainer(c);
  return {{"format", kLifecycleStateFormat},
          {"started", started_},
          {"pod_start", {{"mono", Nanos(pod_start_.mono)}, {"wall", Nanos(pod_start_.wall)}}},
          {"next_init", next_init_},
          {"initialized", initialized_},
          {"draft_gate_open", draft_gate_open_},
          {"active_deadline_armed", active_deadline_armed_},
          {"awaiting_pods", awaiting_pods_},
          {"awaited_pods", awaited_pods_},
          {"termination",
           {{"cause", TerminationCauseName(termination_.cause)},
            {"stop_reason",
             termination_.stop_reason ? json(Utf8(*termination_.stop_reason)) : json(nullptr)},
            {"budget_end", Nanos(termination_.budget_end)},
            {"budget_expired", termination_.budget_expired}}},
          {"deletion_timestamp",
           deletion_timestamp_ ? json(Nanos(*deletion_timestamp_)) : json(nullptr)},
          {"failed", failed_},
          {"reason", Utf8(reason_)},
          {"message", Utf8(message_)},
          {"ended", ended_},
          {"final_phase", pod::PodPhaseName(final_phase_)},
          {"conditions", std::move(conditions)},
          {"containers", std::move(containers)}};
}

Result<Lifecycle> Lifecycle::RestoreState(pod::Pod pod, LifecycleOptions options,
                                          const nlohmann::json& state) {
  Lifecycle lifecycle(std::move(pod), std::move(options));
  podvisor::Status restored;
  try {
    restored = lifecycle.RestorePod(state);
  } catch (const json::exception& e) {
    // Not expected: every value's type is checked before it is read.
    restored = Error(e.what());
  }
  if (!restored) return restored.error().Wrap("handover state");
  return lifecycle;
}

podvisor::Status Lifecycle::RestorePod(const nlohmann::json& state) {
  if (!state.is_object()) return Error("not an object");
  std::optional<Error> error;
  In in(&state, "", error);
  if (!in.Get("format")) return Error("format: missing");
  int64_t format = 0;
  in.Int("format", 1, INT64_MAX, format);
  if (error) return *error;
  if (format > kLifecycleStateFormat) {
    return Error("format: " + std::to_string(format) + " is newer than this reader's " +
                 std::to_string(kLifecycleStateFormat));
  }

  in.Bool("started", started_);
  In start = in.Object("pod_start");
  start.Mono("mono", pod_start_.mono);
  start.Wall("wall", pod_start_.wall);
  in.Int("next_init", 0, static_cast<int64_t>(init_count_), next_init_);
  in.Bool("initialized", initialized_);
  in.Bool("draft_gate_open", draft_gate_open_);
  in.Bool("active_deadline_armed", active_deadline_armed_);
  if (in.ok() && active_deadline_armed_ && !pod_.spec.active_deadline_seconds) {
    in.Fail("active_deadline_armed", "true but the pod has no activeDeadlineSeconds");
  }
  // S19.3: absent in a state written before podvisor.io/after existed.
  in.Bool("awaiting_pods", awaiting_pods_);
  if (const json* pods = in.Get("awaited_pods")) {
    if (!pods->is_array()) return Error("awaited_pods: not an array");
    awaited_pods_.clear();
    for (const json& name : *pods) {
      if (!name.is_string()) return Error("awaited_pods: not an array of strings");
      awaited_pods_.push_back(name.get<std::string>());
    }
  }
  In term = in.Object("termination");
  term.Enum("cause", kTerminationCauses, TerminationCauseName, termination_.cause);
  if (const json* v = term.Get("stop_reason"); v && v->is_null()) {
    termination_.stop_reason.reset();
  } else if (v) {
    std::string reason;
    term.String("stop_reason", reason);
    termination_.stop_reason = std::move(reason);
  }
  term.Mono("budget_end", termination_.budget_end);
  term.Bool("budget_expired", termination_.budget_expired);
  in.OptionalWall("deletion_timestamp", deletion_timestamp_);
  in.Bool("failed", failed_);
  in.String("reason", reason_);
  in.String("message", message_);
  in.Bool("ended", ended_);
  in.Enum("final_phase", kPhases, pod::PodPhaseName, final_phase_);

  if (const json* conditions = in.Get("conditions")) {
    if (!conditions->is_object()) return Error("conditions: not an object");
    conditions_.clear();
    for (const auto& [type, value] : conditions->items()) {
      if (!value.is_object()) return Error("conditions[" + type + "]: not an object");
      In c(&value, "conditions[" + type + "]", error);
      ConditionRecord record;
      c.Enum("status", kConditionStatuses, pod::ConditionStatusName, record.status);
      c.Wall("since", record.since);
      conditions_[type] = record;
    }
  }
  if (error) return *error;

  // Every container of the pod, each by its name, and no other.
  const json* containers = in.Get("containers");
  if (!containers) return Error("containers: missing");
  if (!containers->is_object()) return Error("containers: not an object");
  for (const auto& [name, value] : containers->items()) {
    if (!Find(name)) return Error("containers[" + name + "]: the pod has no such container");
  }
  for (Container& c : containers_) {
    const std::string path = "containers[" + c.spec.name + "]";
    auto it = containers->find(c.spec.name);
    if (it == containers->end()) return Error(path + ": missing");
    if (!it->is_object()) return Error(path + ": not an object");
    RestoreContainer(In(&*it, path, error), c);
    if (error) return *error;
  }
  return Ok();
}

}  // namespace podvisor::supervisor::lifecycle
