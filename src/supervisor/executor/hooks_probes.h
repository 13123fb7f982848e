// HooksAndProbes: the Lifecycle's hook and probe actions carried out on
// the loop. Lifecycle hooks (S8, hooks.cc) run once per RunHook; probes
// (S7, probes.cc) run on their ProbeSchedule (S7.4 pauses, S7.6 first run
// and grid) until stopped. Both run their handlers on one HandlerRunner
// and answer with Lifecycle events (HookFinished, ProbeResult) and
// published events (Unhealthy, ProbeWarning, InvalidHook).
//
// What it needs of the pod is narrow (Seams): a way to feed events, a way
// to publish, an exec into a container instance, and the pod's network
// namespace. The Executor gives it its event queue and the runtime's exec;
// tests give it fakes and a loop on a FakeClock.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "pod/model.h"
#include "supervisor/executor/handler_runner.h"
#include "supervisor/lifecycle/types.h"
#include "supervisor/loop/event_loop.h"
#include "supervisor/probes/probe_schedule.h"

namespace podvisor::supervisor::executor {

class HooksAndProbes {
 public:
  struct Seams {
    // Queues a Lifecycle event (never fed re-entrantly by the caller).
    std::function<void(lifecycle::Event)> feed;
    std::function<void(const lifecycle::Publish&)> publish;
    // An exec into (container, instance); nullptr when that instance is
    // not (or no longer) there.
    std::function<std::unique_ptr<InstanceExec>(std::string_view container, int instance)> exec_in;
    // The pod's network namespace file; "" for ours (hostNetwork).
    std::function<std::string()> netns_path;
  };

  // `pod` outlives this: its containers' hooks and probes are read from it.
  HooksAndProbes(loop::EventLoop& loop, const pod::Pod& pod, Seams seams);
  ~HooksAndProbes();
  HooksAndProbes(const HooksAndProbes&) = delete;
  HooksAndProbes& operator=(const HooksAndProbes&) = delete;

  // hooks.cc
  void RunHookAction(const lifecycle::RunHook& a);
  void CancelHookAction(const lifecycle::CancelHook& a);
  // probes.cc
  void StartProbesAction(const lifecycle::StartProbes& a);
  void StopProbesAction(const lifecycle::StopProbes& a);

  // Drops every hook and probe (their runs in flight are cancelled; the
  // runner stays, a later action may still use it).
  void Clear();

 private:
  struct Hook {
    std::string container;
    int instance = 0;
    lifecycle::HookKind kind = lifecycle::HookKind::kPostStart;
    // The handler running; none when the hook's outcome was known at once
    // (no handler, a tcpSocket hook).
    std::unique_ptr<HandlerRun> run;
  };
  struct Probe {
    std::string key;
    std::string container;
    int instance = 0;
    lifecycle::ProbeKind kind = lifecycle::ProbeKind::kReadiness;
    pod::Probe spec;
    probes::ProbeSchedule schedule;  // S7.3 results, S7.4 pauses, S7.6 run times
    loop::EventLoop::TimerId timer = 0;
    std::unique_ptr<HandlerRun> run;  // the run in flight
    Probe(lifecycle::ProbeKind k, const pod::Probe& p) : kind(k), spec(p), schedule(k, p) {}
  };

  const pod::Container* ContainerSpec(std::string_view name) const;
  HandlerRunner& Handlers();
  void ScheduleProbe(Probe& probe, MonoTime at);
  void RunProbeOnce(Probe& probe);
  void OnProbeOutcome(const std::string& key, const HandlerOutcome& outcome);

  loop::EventLoop& loop_;
  const pod::Pod& pod_;
  Seams seams_;
  std::unique_ptr<HandlerRunner> handlers_;  // outlives the probes and hooks using it
  std::map<std::string, std::unique_ptr<Probe>, std::less<>> probes_;
  std::map<std::string, std::unique_ptr<Hook>, std::less<>> hooks_;
};

}  // namespace podvisor::supervisor::executor
