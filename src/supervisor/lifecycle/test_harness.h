// Test-only: drives a Lifecycle with a fake clock the way the shell would,
// answering the runtime's part "the obvious way" so tests only script what
// matters to the rule under test.
//
// - CreateContainer is answered with RuntimeCreated, StartContainer with
//   RuntimeStarted, and postStart hooks with success, unless the test
//   turns that off for a container.
// - preStop hooks, exits and probe results are always fed by the test.
// - ArmTimer/CancelTimer maintain a timer table; Advance() fires due timers
//   in deadline order, each at its own time.
// - A CreateContainer that says start_when_created (the shell may then
//   create and start with one runtime call) is held to it: the lifecycle's
//   answer to its RuntimeCreated must start the instance, or delete it
//   when the pod began terminating meanwhile (S5.8). Every test checks it.
// Every action is logged as "<time> <action>"; Take() returns the log
// since the last call without timers and published events, which
// TakeEvents() returns instead.
#pragma once

#include <algorithm>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "supervisor/lifecycle/lifecycle.h"

namespace podvisor::supervisor::lifecycle::harness {

using namespace std::chrono_literals;

// ---- Pod builders ----------------------------------------------------------

inline pod::Container C(std::string name) {
  pod::Container c;
  c.name = std::move(name);
  c.image = "busybox";
  return c;
}

inline pod::Container Sidecar(pod::Container c) {
  c.restart_policy = pod::RestartPolicy::kAlways;
  return c;
}

// S12: a container of spec.containers marked with the draft's lifecycle.type.
inline pod::Container DraftSidecar(pod::Container c) {
  if (!c.lifecycle) c.lifecycle.emplace();
  c.lifecycle->type = pod::LifecycleType::kSidecar;
  return c;
}

inline pod::LifecycleHandler SleepHook() {
  pod::LifecycleHandler h;
  h.handler.sleep = pod::SleepAction{1};
  return h;
}

inline pod::Container WithPreStop(pod::Container c) {
  if (!c.lifecycle) c.lifecycle.emplace();
  c.lifecycle->pre_stop = SleepHook();
  return c;
}

inline pod::Container WithPostStart(pod::Container c) {
  if (!c.lifecycle) c.lifecycle.emplace();
  c.lifecycle->post_start = SleepHook();
  return c;
}

inline pod::Container WithStopSignal(pod::Container c, std::string signal) {
  if (!c.lifecycle) c.lifecycle.emplace();
  c.lifecycle->stop_signal = std::move(signal);
  return c;
}

inline pod::Probe ExecProbe(std::optional<int64_t> grace = std::nullopt) {
  pod::Probe p;
  p.handler.exec = pod::ExecAction{{"true"}};
  p.termination_grace_period_seconds = grace;
  return p;
}

inline pod::Container WithStartupProbe(pod::Container c,
                                       std::optional<int64_t> grace = std::nullopt) {
  c.startup_probe = ExecProbe(grace);
  return c;
}
inline pod::Container WithLiveness(pod::Container c, std::optional<int64_t> grace = std::nullopt) {
  c.liveness_probe = ExecProbe(grace);
  return c;
}
inline pod::Container WithReadiness(pod::Container c) {
  c.readiness_probe = ExecProbe();
  return c;
}

inline pod::Pod MakePod(std::vector<pod::Container> inits, std::vector<pod::Container> regulars,
                        pod::RestartPolicy policy = pod::RestartPolicy::kAlways,
                        int64_t grace_seconds = 30) {
  pod::Pod p;
  p.metadata.name = "web";
  p.spec.init_containers = std::move(inits);
  p.spec.containers = std::move(regulars);
  p.spec.restart_policy = policy;
  p.spec.termination_grace_period_seconds = grace_seconds;
  return p;
}

// ---- The harness -----------------------------------------------------------

class Harness {
 public:
  explicit Harness(pod::Pod pod, LifecycleOptions options = {})
      : lifecycle_(std::move(pod), std::move(options)) {}
  // Around a Lifecycle taken over from another process (RestoreState),
  // its clock at `now`; Resume() then carries on where the other stopped.
  Harness(Lifecycle lifecycle, MonoTime now) : lifecycle_(std::move(lifecycle)) { clock_.Set(now); }

  Lifecycle& lc() { return lifecycle_; }
  Now now() const { return Now{clock_.Now(), clock_.WallNow()}; }
  MonoTime mono() const { return clock_.Now(); }

  // Containers whose runtime create/start the test answers itself.
  std::set<std::string> manual_runtime;
  // Containers whose postStart hook the test finishes itself.
  std::set<std::string> manual_post_start;

  void Start() { Process(lifecycle_.Start(now())); }
  void Resume() { Process(lifecycle_.Resume(now())); }

  void Feed(const Event& e) { Process(Handle(e)); }

  void Exit(const std::string& name, int code = 0, int signal = 0, bool oom = false) {
    Feed(ContainerExited{name, Instance(name), code, signal, oom, "", ""});
  }
  void ExitBySignal(const std::string& name, int signal) { Exit(name, 128 + signal, signal); }
  void Probe(const std::string& name, ProbeKind kind, bool success, std::string message = "") {
    Feed(ProbeResult{name, Instance(name), kind, success, std::move(message)});
  }
  void HookDone(const std::string& name, HookKind kind, bool success = true,
                std::string message = "") {
    Feed(HookFinished{name, Instance(name), kind, success, std::move(message)});
  }
  void Stop(std::optional<std::string> reason = std::nullopt,
            std::optional<Duration> grace = std::nullopt) {
    Feed(StopRequested{std::move(reason), grace});
  }
  int Instance(const std::string& name) const { return lifecycle_.InstanceOf(name); }

  // Moves time forward by `d`, firing every timer due on the way at its
  // own deadline.
  void Advance(Duration d) { AdvanceTo(clock_.Now() + d); }
  void AdvanceTo(MonoTime target) {
    for (;;) {
      auto next = timers_.end();
      for (auto it = timers_.begin(); it != timers_.end(); ++it) {
        if (it->deadline <= target && (next == timers_.end() || it->deadline < next->deadline))
          next = it;
      }
      if (next == timers_.end()) break;
      const TimerId id = next->id;
      if (next->deadline > clock_.Now()) clock_.Set(next->deadline);
      timers_.erase(next);
      Feed(TimerFired{id});
    }
    if (target > clock_.Now()) clock_.Set(target);
  }

  // The timers armed now, as "<id> <deadline>", sorted.
  std::vector<std::string> Timers() const {
    std::vector<std::string> out;
    for (const ArmTimer& t : timers_) out.push_back(ToString(t.id) + " " + FormatMono(t.deadline));
    std::sort(out.begin(), out.end());
    return out;
  }

  std::optional<MonoTime> TimerDeadline(const TimerId& id) const {
    for (const ArmTimer& t : timers_) {
      if (t.id == id) return t.deadline;
    }
    return std::nullopt;
  }

  // The actions since the last Take(), without timers and published events.
  std::vector<std::string> Take() { return std::exchange(log_, {}); }
  // Published events since the last TakeEvents(): "<time> <reason> <object>".
  std::vector<std::string> TakeEvents() { return std::exchange(events_, {}); }
  // Every action, timers and events included, since the last TakeAll().
  std::vector<Action> TakeAll() { return std::exchange(all_, {}); }
  // Published events in full since the last TakeAll() (not consumed).
  std::vector<Publish> Published() const {
    std::vector<Publish> out;
    for (const Action& a : all_) {
      if (auto* p = std::get_if<Publish>(&a)) out.push_back(*p);
    }
    return out;
  }

  std::string T(MonoTime t) const { return FormatMono(t); }

 private:
  void Process(std::vector<Action> actions) {
    std::deque<Event> replies;
    Queue(std::move(actions), replies);
    while (!replies.empty()) {
      Event e = std::move(replies.front());
      replies.pop_front();
      Queue(Handle(e), replies);
    }
  }

  std::vector<Action> Handle(const Event& e) {
    std::vector<Action> actions = lifecycle_.Handle(e, now());
    const auto* created = std::get_if<RuntimeCreated>(&e);
    if (!created || !start_promised_.erase({created->container, created->instance})) {
      return actions;
    }
    bool kept = false;
    for (const Action& a : actions) {
      if (const auto* start = std::get_if<StartContainer>(&a)) {
        kept |= start->container == created->container && start->instance == created->instance;
      } else if (const auto* del = std::get_if<DeleteContainer>(&a)) {
        kept |= del->container == created->container && del->instance == created->instance &&
                lifecycle_.Terminating();
      }
    }
    EXPECT_TRUE(kept) << created->container << "#" << created->instance
                      << " was created with start_when_created, but its RuntimeCreated did not "
                         "start it";
    return actions;
  }

  void Queue(std::vector<Action> actions, std::deque<Event>& replies) {
    const std::string t = FormatMono(clock_.Now()) + " ";
    for (Action& a : actions) {
      all_.push_back(a);
      if (auto* arm = std::get_if<ArmTimer>(&a)) {
        std::erase_if(timers_, [&](const ArmTimer& x) { return x.id == arm->id; });
        timers_.push_back(*arm);
        continue;
      }
      if (auto* cancel = std::get_if<CancelTimer>(&a)) {
        std::erase_if(timers_, [&](const ArmTimer& x) { return x.id == cancel->id; });
        continue;
      }
      if (auto* p = std::get_if<Publish>(&a)) {
        events_.push_back(t + p->reason + " " + p->object);
        continue;
      }
      log_.push_back(t + ToString(a));
      if (auto* create = std::get_if<CreateContainer>(&a)) {
        if (create->start_when_created)
          start_promised_.insert({create->container, create->instance});
        if (!manual_runtime.count(create->container)) {
          replies.push_back(
              RuntimeCreated{create->container, create->instance,
                             "web-" + create->container + "-" + std::to_string(create->instance)});
        }
      } else if (auto* start = std::get_if<StartContainer>(&a)) {
        if (!manual_runtime.count(start->container)) {
          replies.push_back(RuntimeStarted{start->container, start->instance});
        }
      } else if (auto* hook = std::get_if<RunHook>(&a)) {
        if (hook->kind == HookKind::kPostStart && !manual_post_start.count(hook->container)) {
          replies.push_back(
              HookFinished{hook->container, hook->instance, HookKind::kPostStart, true, ""});
        }
      }
    }
  }

  FakeClock clock_{};
  Lifecycle lifecycle_;
  std::vector<ArmTimer> timers_;
  std::vector<std::string> log_;
  std::vector<std::string> events_;
  std::vector<Action> all_;
  std::set<std::pair<std::string, int>> start_promised_;
};

}  // namespace podvisor::supervisor::lifecycle::harness
