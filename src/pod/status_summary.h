// What `status`, `list` and `status -w` print of a pod, and what the
// control protocol's "summary" answers: kubectl get pod's columns and one
// line per container, computed once from the typed status. The supervisor
// summarises its live status with it, the CLI a kept record or a reply
// (cli/pod_summary.h), so a running pod and an ended one print the same.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "pod/model.h"
#include "pod/status.h"

namespace podvisor::pod {

struct ContainerLine {
  std::string name;
  std::string type;  // init, sidecar, container
  bool ready = false;
  std::string started;  // true, false, -
  std::string state;
  std::string last_state;
  int32_t restart_count = 0;
  std::string restarts;  // the RESTARTS column: "3 (12s ago)"
  std::string image;
  std::string container_id;  // as the status has it: "runc://ID", or empty
};

// What a pod's line says beside its status: from its metadata and spec, or
// the supervisor's own knowledge of them.
struct PodFacts {
  std::string name;
  std::optional<WallTime> created;  // none: the AGE column is "-"
  std::string node;
  std::string ip;  // "<none>" without one (kubectl -o wide)
};

struct PodLine {
  std::string name;
  std::string ready;
  std::string status;  // Running, Completed, Error, CrashLoopBackOff, ...
  std::string restarts;
  std::string age;
  std::string node;
  std::string ip;
  std::vector<ContainerLine> containers;  // init list first, spec order
};

// `spec` tells sidecars from init containers. A pod whose phase is Unknown
// (its supervisor was lost) has the status Unknown, whatever its
// containers said last.
PodLine SummarizePodLine(const PodSpec& spec, const PodStatus& status, const PodFacts& facts,
                         WallTime now);

// One container state in a few words, kubectl describe's way:
// "Running (5m)", "Waiting: CrashLoopBackOff", "Terminated: Error (exit 1, 12s ago)".
std::string DescribeState(const ContainerState& state, WallTime now);

}  // namespace podvisor::pod
