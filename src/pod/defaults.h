// API-server defaulting (SEMANTICS S7.1, INTERFACE.md): what `kubectl get
// pod -o json` shows for fields the manifest left out.
#pragma once

#include "pod/model.h"

namespace podvisor::pod {

// Idempotent. Fills: terminationGracePeriodSeconds 30; for every container
// requests default to limits (per resource, when the request is absent);
// httpGet path "/" and scheme HTTP; the hostname (pod name when empty) is
// left to the sandbox, not defaulted here. Probe numeric defaults and
// terminationMessagePath are member initialisers of the model, so a decoded
// pod already has them.
void ApplyDefaults(Pod& pod);

constexpr int64_t kDefaultTerminationGracePeriodSeconds = 30;

}  // namespace podvisor::pod
