#include "cli/pod_summary.h"

#include "cli/client.h"
#include "cli/events_table.h"
#include "cli/pod_records.h"

namespace podvisor::cli {

std::string DescribeState(const pod::ContainerState& state, WallTime now) {
  if (state.running) return "Running (" + pod::HumanDuration(now - state.running->started_at) + ")";
  if (state.terminated) {
    const pod::ContainerStateTerminated& t = *state.terminated;
    std::string detail = "exit " + std::to_string(t.exit_code);
    if (t.signal != 0) detail += ", signal " + std::to_string(t.signal);
    detail += ", " + pod::HumanDuration(now - t.finished_at) + " ago";
    std::string reason = t.reason.empty() ? "Error" : t.reason;
    return "Terminated: " + reason + " (" + detail + ")";
  }
  if (state.waiting) {
    return state.waiting->reason.empty() ? "Waiting" : "Waiting: " + state.waiting->reason;
  }
  return "-";
}

PodLine SummarizePodJson(const nlohmann::json& pod, WallTime now) {
  pod::PodSpec spec = SpecShapeFromPodJson(pod);
  pod::PodStatus status = StatusFromPodJson(pod);
  pod::PodSummary summary = pod::SummarizePod(spec, status);
  // A pod whose supervisor was lost is Unknown, whatever its containers
  // said last (kubectl prints the phase reason the node controller sets).
  if (status.phase == pod::PodPhase::kUnknown) summary.status = "Unknown";
  PodLine line;
  const nlohmann::json& meta = pod.value("metadata", nlohmann::json::object());
  line.name = meta.value("name", "");
  line.ready = summary.ReadyColumn();
  line.status = summary.status;
  line.restarts = summary.RestartsColumn(now);
  auto created = ParseRfc3339(meta.value("creationTimestamp", ""));
  line.age = created ? pod::HumanDuration(now - *created) : "-";
  line.node = pod.value("spec", nlohmann::json::object()).value("nodeName", "-");
  line.ip = pod.value("status", nlohmann::json::object()).value("podIP", "<none>");

  auto add = [&](const std::vector<pod::ContainerStatus>& list, bool init_list) {
    for (const auto& c : list) {
      bool sidecar = false;
      for (const auto& s : spec.init_containers) {
        if (s.name == c.name) sidecar = pod::IsSidecar(s);
      }
      ContainerLine out;
      out.name = c.name;
      out.type = !init_list ? "container" : (sidecar ? "sidecar" : "init");
      out.ready = c.ready;
      out.started = c.started ? (*c.started ? "true" : "false") : "-";
      out.state = DescribeState(c.state, now);
      out.last_state = c.last_state.empty() ? "-" : DescribeState(c.last_state, now);
      // The container's own RESTARTS column: "3 (12s ago)", as the pod's.
      pod::PodSummary own;
      own.restarts = c.restart_count;
      if (c.last_state.terminated) own.last_restart = c.last_state.terminated->finished_at;
      out.restarts = own.RestartsColumn(now);
      out.image = c.image;
      // The runtime's id, without the status' "runc://" scheme.
      std::string id = c.container_id;
      if (auto scheme = id.find("://"); scheme != std::string::npos) id = id.substr(scheme + 3);
      out.container_id = id.empty() ? "-" : id;
      line.containers.push_back(std::move(out));
    }
  };
  add(status.init_container_statuses, true);
  add(status.container_statuses, false);
  return line;
}

std::string StatusTable(const nlohmann::json& pod, bool wide, bool first, WallTime now) {
  const PodLine line = SummarizePodJson(pod, now);
  // kubectl get pod's line; -o wide adds the pod IP and the node, as
  // kubectl's does.
  std::vector<std::vector<std::string>> pod_rows{
      {"NAME", "READY", "STATUS", "RESTARTS", "AGE"},
      {line.name, line.ready, line.status, line.restarts, line.age}};
  if (wide) {
    pod_rows[0].insert(pod_rows[0].end(), {"IP", "NODE"});
    pod_rows[1].insert(pod_rows[1].end(), {line.ip, line.node});
  }
  std::string table = FormatTable(pod_rows);
  if (!first) return table.substr(table.find('\n') + 1);
  std::vector<std::vector<std::string>> rows;
  if (wide) {
    rows.push_back({"CONTAINER", "TYPE", "READY", "STARTED", "STATE", "RESTARTS", "LAST STATE",
                    "IMAGE", "CONTAINER ID"});
  } else {
    rows.push_back({"CONTAINER", "TYPE", "READY", "STATE", "RESTARTS"});
  }
  for (const ContainerLine& ct : line.containers) {
    const std::string ready = ct.ready ? "true" : "false";
    if (wide) {
      rows.push_back({ct.name, ct.type, ready, ct.started, ct.state, ct.restarts, ct.last_state,
                      ct.image, ct.container_id});
    } else {
      rows.push_back({ct.name, ct.type, ready, ct.state, ct.restarts});
    }
  }
  return table + "\n" + FormatTable(rows);
}

}  // namespace podvisor::cli
