// API-server defaulting (k8s.io/kubernetes/pkg/apis/core/v1/defaults.go),
// for the fields the model keeps. Every rule fills a value only where the
// manifest left it empty, so applying the defaults twice changes nothing.
#include "pod/defaults.h"

#include "pod/resources.h"

namespace podvisor::pod {
namespace {

// SetDefaults_ResourceList semantics for requests: a resource with a limit
// and no request gets the limit as its request, so a container that only
// sets limits is Guaranteed (S10.2).
void DefaultRequestsToLimits(ResourceRequirements& r) {
  if (!r.requests.cpu && r.limits.cpu) r.requests.cpu = r.limits.cpu;
  if (!r.requests.memory && r.limits.memory) r.requests.memory = r.limits.memory;
  for (const auto& [name, limit] : r.limits.other) r.requests.other.emplace(name, limit);
}

void DefaultHandler(Handler& h) {
  if (h.http_get) {
    if (h.http_get->path.empty()) h.http_get->path = "/";
    if (h.http_get->scheme.empty()) h.http_get->scheme = "HTTP";
  }
}

// The model's member initialisers already hold the probe defaults (S7.1);
// the API server also replaces an explicit 0, which a manifest may give.
void DefaultProbe(std::optional<Probe>& probe) {
  if (!probe) return;
  DefaultHandler(probe->handler);
  const Probe defaults;
  if (probe->timeout_seconds == 0) probe->timeout_seconds = defaults.timeout_seconds;
  if (probe->period_seconds == 0) probe->period_seconds = defaults.period_seconds;
  if (probe->success_threshold == 0) probe->success_threshold = defaults.success_threshold;
  if (probe->failure_threshold == 0) probe->failure_threshold = defaults.failure_threshold;
}

void DefaultContainer(Container& c) {
  DefaultRequestsToLimits(c.resources);
  for (ContainerPort& port : c.ports) {
    if (port.protocol.empty()) port.protocol = "TCP";
  }
  if (c.lifecycle) {
    if (c.lifecycle->post_start) DefaultHandler(c.lifecycle->post_start->handler);
    if (c.lifecycle->pre_stop) DefaultHandler(c.lifecycle->pre_stop->handler);
  }
  DefaultProbe(c.startup_probe);
  DefaultProbe(c.readiness_probe);
  DefaultProbe(c.liveness_probe);
  if (c.termination_message_path.empty()) c.termination_message_path = "/dev/termination-log";
}

// S10.5: the API server's defaultPodLimits and defaultPodRequests, after
// the containers' own defaults. With pod-level requests and no pod-level
// limit, the limit is the containers' aggregate where every container has
// one; with pod-level limits, a pod-level request left out is the
// containers' aggregate request, else the pod-level limit. The API server
// runs them the other way round, but on every read of the stored pod, so
// a pod whose limits were defaulted gets its requests at the next read;
// this order gives that settled pod at once, and applying it twice
// changes nothing (handover.cc applies the defaults again).
void DefaultPodLevelResources(PodSpec& spec) {
  ResourceRequirements& pod = spec.resources;
  if (!HasPodLevelLimits(spec) && HasPodLevelRequests(spec)) {
    const ResourceList aggregate = AggregateContainerLimits(spec);
    if (aggregate.cpu && EveryContainerHasLimit(spec, "cpu")) pod.limits.cpu = aggregate.cpu;
    if (aggregate.memory && EveryContainerHasLimit(spec, "memory")) {
      pod.limits.memory = aggregate.memory;
    }
  }
  if (!pod.limits.empty()) {
    const ResourceList aggregate = AggregateContainerRequests(spec);
    if (!pod.requests.cpu) pod.requests.cpu = aggregate.cpu ? aggregate.cpu : pod.limits.cpu;
    if (!pod.requests.memory) {
      pod.requests.memory = aggregate.memory ? aggregate.memory : pod.limits.memory;
    }
  }
}

}  // namespace

void ApplyDefaults(Pod& pod) {
  if (pod.metadata.namespace_name.empty()) pod.metadata.namespace_name = "default";
  if (!pod.spec.termination_grace_period_seconds) {
    pod.spec.termination_grace_period_seconds = kDefaultTerminationGracePeriodSeconds;
  }
  // Init containers and sidecars included: the kubelet sizes the pod from
  // their requests too (S10.1).
  for (Container& c : pod.spec.init_containers) DefaultContainer(c);
  for (Container& c : pod.spec.containers) DefaultContainer(c);
  DefaultPodLevelResources(pod.spec);
}

}  // namespace podvisor::pod
