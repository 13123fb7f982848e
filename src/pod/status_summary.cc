#include "pod/status_summary.h"

namespace podvisor::pod {

std::string DescribeState(const ContainerState& state, WallTime now) {
  if (state.running) return "Running (" + HumanDuration(now - state.running->started_at) + ")";
  if (state.terminated) {
    const ContainerStateTerminated& t = *state.terminated;
    std::string detail = "exit " + std::to_string(t.exit_code);
    if (t.signal != 0) detail += ", signal " + std::to_string(t.signal);
    detail += ", " + HumanDuration(now - t.finished_at) + " ago";
    std::string reason = t.reason.empty() ? "Error" : t.reason;
    return "Terminated: " + reason + " (" + detail + ")";
  }
  if (state.waiting) {
    return state.waiting->reason.empty() ? "Waiting" : "Waiting: " + state.waiting->reason;
  }
  return "-";
}

namespace {

ContainerLine SummarizeContainer(const PodSpec& spec, const ContainerStatus& c, bool init_list,
                                 WallTime now) {
  bool sidecar = false;
  for (const auto& s : spec.init_containers) {
    if (s.name == c.name) sidecar = IsSidecar(s);
  }
  ContainerLine out;
  out.name = c.name;
  out.type = !init_list ? "container" : (sidecar ? "sidecar" : "init");
  out.ready = c.ready;
  out.started = c.started ? (*c.started ? "true" : "false") : "-";
  out.state = DescribeState(c.state, now);
  out.last_state = c.last_state.empty() ? "-" : DescribeState(c.last_state, now);
  out.restart_count = c.restart_count;
  // The container's own RESTARTS column: "3 (12s ago)", as the pod's.
  PodSummary own;
  own.restarts = c.restart_count;
  if (c.last_state.terminated) own.last_restart = c.last_state.terminated->finished_at;
  out.restarts = own.RestartsColumn(now);
  out.image = c.image;
  out.container_id = c.container_id;
  return out;
}

}  // namespace

PodLine SummarizePodLine(const PodSpec& spec, const PodStatus& status, const PodFacts& facts,
                         WallTime now) {
  PodSummary summary = SummarizePod(spec, status);
  // kubectl prints the phase reason the node controller sets for a lost node.
  if (status.phase == PodPhase::kUnknown) summary.status = "Unknown";
  PodLine line;
  line.name = facts.name;
  line.ready = summary.ReadyColumn();
  line.status = summary.status;
  line.restarts = summary.RestartsColumn(now);
  line.age = facts.created ? HumanDuration(now - *facts.created) : "-";
  line.node = facts.node;
  line.ip = facts.ip;
  for (const auto& c : status.init_container_statuses) {
    line.containers.push_back(SummarizeContainer(spec, c, true, now));
  }
  for (const auto& c : status.container_statuses) {
    line.containers.push_back(SummarizeContainer(spec, c, false, now));
  }
  return line;
}

}  // namespace podvisor::pod
