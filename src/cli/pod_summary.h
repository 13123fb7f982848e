// What `status`, `list` and `status -w` print of a pod, from the v1 Pod (a
// supervisor's reply or a kept record): the JSON read back into the typed
// status and summarised by pod/status_summary.h, as the supervisor
// summarises its own, so a running pod and an ended one print the same way.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "pod/status_summary.h"

namespace podvisor::cli {

pod::PodLine SummarizePodJson(const nlohmann::json& pod, WallTime now);

// `podvisor status` as a table (`wide`: -o wide): kubectl get pod's line,
// then one line per container, init list first. Without `first` (the
// lines `status -w` adds), the pod's line only, without its header. The
// supervisor renders it too, for the client that asks for text (the
// control protocol's "status" with "output"; cli/early_client.h).
std::string StatusTable(const nlohmann::json& pod, bool wide, bool first, WallTime now);

}  // namespace podvisor::cli
