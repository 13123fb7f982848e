// API-server defaulting (SEMANTICS S7.1, docs/INTERFACE.md): what `kubectl get
// pod -o json` shows for fields the manifest left out.
#pragma once

#include "pod/model.h"

namespace podvisor::pod {

// Idempotent. Fills: metadata.namespace "default"; terminationGracePeriodSeconds
// 30; for every container (init, sidecar, regular) requests default to limits
// (per resource, when the request is absent); httpGet path "/" and scheme
// HTTP in probes and hooks; an empty port protocol becomes TCP, an empty
// terminationMessagePath the default, and a probe's timeout, period and
// thresholds given as 0 their S7.1 defaults, as the API server does. The
// hostname (pod name when empty) is left to the sandbox, not defaulted here.
// Probe numeric defaults and terminationMessagePath are member initialisers
// of the model, so a decoded pod already has them.
void ApplyDefaults(Pod& pod);

constexpr int64_t kDefaultTerminationGracePeriodSeconds = 30;

}  // namespace podvisor::pod
