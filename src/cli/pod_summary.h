// What `status`, `list` and `status -w` print of a pod: kubectl get pod's
// columns, computed from the v1 Pod (a supervisor's reply or a kept
// record), so a running pod and an ended one print the same way.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "pod/status.h"

namespace podvisor::cli {

struct ContainerLine {
  std::string name;
  std::string type;  // init, sidecar, container
  bool ready = false;
  std::string started;  // true, false, -
  std::string state;
  std::string last_state;
  std::string restarts;  // "3 (12s ago)"
  std::string image;
  std::string container_id;
};

struct PodLine {
  std::string name;
  std::string ready;
  std::string status;  // Running, Completed, Error, CrashLoopBackOff, ...
  std::string restarts;
  std::string age;
  std::string node;
  std::string ip;                         // status.podIP, "<none>" without one (kubectl -o wide)
  std::vector<ContainerLine> containers;  // init list first, spec order
};

PodLine SummarizePodJson(const nlohmann::json& pod, WallTime now);

// `podvisor status` as a table (`wide`: -o wide): kubectl get pod's line,
// then one line per container, init list first. Without `first` (the
// lines `status -w` adds), the pod's line only, without its header. The
// supervisor renders it too, for the client that asks for text (the
// control protocol's "status" with "output"; cli/early_client.h).
std::string StatusTable(const nlohmann::json& pod, bool wide, bool first, WallTime now);

// One container state in a few words, kubectl describe's way:
// "Running (5m)", "Waiting: CrashLoopBackOff", "Terminated: Error (exit 1, 12s ago)".
std::string DescribeState(const pod::ContainerState& state, WallTime now);

}  // namespace podvisor::cli
