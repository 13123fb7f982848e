// HooksAndProbes' probes (S7): each probe of a container instance is a
// ProbeSchedule (when it runs, when it pauses) and a timer on the loop;
// each run is a handler run on the HandlerRunner (exec through the
// runtime, httpGet, gRPC and tcpSocket by podvisor itself from the pod's
// network namespace).
#include <cctype>

#include "supervisor/executor/hooks_probes.h"

namespace podvisor::supervisor::executor {
namespace {

// "Liveness", as in the kubelet's event messages.
std::string ProbeTitle(lifecycle::ProbeKind kind) {
  std::string name(lifecycle::ProbeKindName(kind));
  if (!name.empty()) name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
  return name;
}

std::string ProbeKey(std::string_view container, int instance, lifecycle::ProbeKind kind) {
  return std::string(container) + "#" + std::to_string(instance) + "/" +
         std::string(lifecycle::ProbeKindName(kind));
}

}  // namespace

void HooksAndProbes::StartProbesAction(const lifecycle::StartProbes& a) {
  const pod::Container* spec = ContainerSpec(a.container);
  if (!spec) return;
  const std::optional<pod::Probe>& p =
      a.kind == lifecycle::ProbeKind::kStartup     ? spec->startup_probe
      : a.kind == lifecycle::ProbeKind::kReadiness ? spec->readiness_probe
                                                   : spec->liveness_probe;
  if (!p) return;
  auto probe = std::make_unique<Probe>(a.kind, *p);
  probe->key = ProbeKey(a.container, a.instance, a.kind);
  probe->container = a.container;
  probe->instance = a.instance;
  // Issue 30: a probe the previous supervisor ran starts from its stored
  // result; only a change from it is fed, so a ready container whose first
  // run here succeeds causes no event and no flip of Ready.
  if (a.resumed_result) probe->schedule.Resume(*a.resumed_result);
  Probe& ref = *probe;
  probes_[probe->key] = std::move(probe);
  ScheduleProbe(ref, ref.schedule.FirstRun(loop_.Now(), a.container_started));  // S7.6
}

void HooksAndProbes::StopProbesAction(const lifecycle::StopProbes& a) {
  auto it = probes_.find(ProbeKey(a.container, a.instance, a.kind));
  if (it == probes_.end()) return;
  if (it->second->timer) loop_.CancelTimer(it->second->timer);
  // A run in flight is dropped; an exec probe's runtime exec ends by its
  // own timeout.
  probes_.erase(it);
}

void HooksAndProbes::ScheduleProbe(Probe& probe, MonoTime at) {
  std::string key = probe.key;
  probe.timer = loop_.AddTimer(at, [this, key] {
    auto it = probes_.find(key);
    if (it == probes_.end()) return;
    it->second->timer = 0;
    RunProbeOnce(*it->second);
  });
}

void HooksAndProbes::RunProbeOnce(Probe& probe) {
  const pod::Container* spec = ContainerSpec(probe.container);
  std::unique_ptr<InstanceExec> exec = seams_.exec_in(probe.container, probe.instance);
  if (!spec || !exec) return;
  HandlerCall call;
  call.use = HandlerUse::kProbe;
  call.name = lifecycle::ProbeKindName(probe.kind);
  call.handler = &probe.spec.handler;
  call.container = spec;
  call.timeout = probe.schedule.BeginRun();
  call.netns = seams_.netns_path();
  if (probe.spec.handler.exec) call.exec = std::move(exec);
  std::string key = probe.key;
  probe.run = Handlers().Start(std::move(call), [this, key](const HandlerOutcome& outcome) {
    OnProbeOutcome(key, outcome);
  });
}

void HooksAndProbes::OnProbeOutcome(const std::string& key, const HandlerOutcome& outcome) {
  auto it = probes_.find(key);
  if (it == probes_.end()) return;  // stopped meanwhile
  Probe& probe = *it->second;
  probe.run.reset();  // it ended; its callback is this call
  if (outcome.warning) {
    seams_.publish(lifecycle::Publish{
        lifecycle::EventType::kWarning, "ProbeWarning", "container/" + probe.container,
        ProbeTitle(probe.kind) + " probe warning: " + outcome.message});
  }
  if (!outcome.success) {
    // Every failed run is an Unhealthy event, as in the kubelet; the
    // Lifecycle hears only of changes of the stored result (S7.3).
    seams_.publish(lifecycle::Publish{
        lifecycle::EventType::kWarning, "Unhealthy", "container/" + probe.container,
        ProbeTitle(probe.kind) + " probe failed: " + TruncateMessage(outcome.message)});
  }
  std::string container = probe.container;
  int instance = probe.instance;
  lifecycle::ProbeKind kind = probe.kind;
  probes::ProbeNext next = probe.schedule.RecordOutcome(
      outcome.success ? probes::ProbeOutcome::kSuccess : probes::ProbeOutcome::kFailure,
      loop_.Now());
  if (next.paused) {
    probes_.erase(it);  // S7.4: until the next instance
  } else {
    ScheduleProbe(probe, next.next_run);
  }
  // S7.3: only changes of the stored result reach the Lifecycle. Feeding
  // may stop this very probe, so it comes last.
  if (next.changed) {
    seams_.feed(lifecycle::ProbeResult{container, instance, kind, *next.changed,
                                       TruncateMessage(outcome.message)});
  }
}

}  // namespace podvisor::supervisor::executor
