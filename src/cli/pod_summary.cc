#include "cli/pod_summary.h"

#include "cli/client.h"
#include "cli/events_table.h"
#include "cli/pod_records.h"

namespace podvisor::cli {

pod::PodLine SummarizePodJson(const nlohmann::json& pod, WallTime now) {
  const nlohmann::json& meta = pod.value("metadata", nlohmann::json::object());
  pod::PodFacts facts;
  facts.name = meta.value("name", "");
  facts.created = ParseRfc3339(meta.value("creationTimestamp", ""));
  facts.node = pod.value("spec", nlohmann::json::object()).value("nodeName", "-");
  facts.ip = pod.value("status", nlohmann::json::object()).value("podIP", "<none>");
  return pod::SummarizePodLine(SpecShapeFromPodJson(pod), StatusFromPodJson(pod), facts, now);
}

std::string StatusTable(const nlohmann::json& pod, bool wide, bool first, WallTime now) {
  const pod::PodLine line = SummarizePodJson(pod, now);
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
  for (const pod::ContainerLine& ct : line.containers) {
    const std::string ready = ct.ready ? "true" : "false";
    // The runtime's id, without the status' "runc://" scheme.
    std::string id = ct.container_id;
    if (auto scheme = id.find("://"); scheme != std::string::npos) id = id.substr(scheme + 3);
    if (id.empty()) id = "-";
    if (wide) {
      rows.push_back({ct.name, ct.type, ready, ct.started, ct.state, ct.restarts, ct.last_state,
                      ct.image, id});
    } else {
      rows.push_back({ct.name, ct.type, ready, ct.state, ct.restarts});
    }
  }
  return table + "\n" + FormatTable(rows);
}

}  // namespace podvisor::cli
