// `podvisor describe [POD]`: kubectl describe pod's layout, from the pod's
// v1 Pod (its supervisor's reply, or the kept record of an ended pod) and
// its events.jsonl. Secret values never appear: an env var from a Secret is
// shown as kubectl shows it, by reference ("<set to the key 'k' in secret
// 's'>"); and a value written inline is the manifest's, already in the spec.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/events_table.h"
#include "cli/pod_records.h"
#include "cli/pod_summary.h"
#include "cli/user_dirs.h"
#include "common/pod_dir.h"
#include "common/terminal_text.h"

namespace podvisor::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Key-value lines whose values line up, as kubectl's tabwriter aligns them
// within one block; `indent` spaces before the key. S14.20: keys, values
// and raw lines are shown TerminalSafe, so a value is one line whatever
// its text (a termination message's newline cannot forge a "Ready: True"
// line); a value of several lines (labels, annotations) is a list, each
// item on its own line under the first.
class Block {
 public:
  explicit Block(int indent) : indent_(indent) {}
  void Add(const std::string& key, const std::string& value) {
    rows_.push_back({false, TerminalSafe(key), {TerminalSafe(value)}});
  }
  void AddList(const std::string& key, const std::vector<std::string>& values) {
    Row row{false, TerminalSafe(key), {}};
    for (const auto& v : values) row.values.push_back(TerminalSafe(v));
    rows_.push_back(std::move(row));
  }
  void Raw(const std::string& line) { rows_.push_back({true, TerminalSafe(line), {}}); }
  std::string Render() const {
    std::size_t width = 0;
    for (const Row& r : rows_) {
      if (!r.raw) width = std::max(width, DisplayWidth(r.key) + 1);
    }
    std::string out;
    for (const Row& r : rows_) {
      if (r.raw) {
        out += r.key + "\n";
        continue;
      }
      std::string line = std::string(indent_, ' ') + r.key + ":";
      const std::string pad(indent_ + width + 2, ' ');
      for (std::size_t i = 0; i < r.values.size(); ++i) {
        if (r.values[i].empty()) continue;
        line += i == 0 ? std::string(width - DisplayWidth(r.key) + 1, ' ') : "\n" + pad;
        line += r.values[i];
      }
      out += line + "\n";
    }
    return out;
  }

 private:
  struct Row {
    bool raw;
    std::string key;  // a raw row's whole line
    std::vector<std::string> values;
  };
  int indent_;
  std::vector<Row> rows_;
};

std::string Str(const json& j, const char* key, const std::string& fallback = "") {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// kubectl describe's time: RFC 1123 with a numeric zone, in UTC.
std::string DescribeTime(const std::string& rfc3339) {
  auto t = ParseRfc3339(rfc3339);
  if (!t) return rfc3339;
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const UtcFields f = ToUtcFields(*t);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s, %02u %s %04d %02u:%02u:%02u +0000", kDays[f.weekday % 7],
                f.day, kMonths[(f.month + 11) % 12], f.year, f.hour, f.minute, f.second);
  return buf;
}

// "k=v" items of a map (labels, annotations, node selectors), one a line.
std::vector<std::string> Map(const json& m) {
  if (!m.is_object() || m.empty()) return {"<none>"};
  std::vector<std::string> items;
  for (const auto& [k, v] : m.items()) {
    items.push_back(k + "=" + (v.is_string() ? v.get<std::string>() : v.dump()));
  }
  return items;
}

// "http-get http://:8080/healthz delay=0s timeout=1s period=10s #success=1 #failure=3"
std::string ProbeLine(const json& p) {
  std::string what;
  if (auto h = p.find("httpGet"); h != p.end()) {
    std::string scheme = Str(*h, "scheme", "HTTP");
    for (auto& c : scheme) c = static_cast<char>(std::tolower(c));
    what = "http-get " + scheme + "://" + Str(*h, "host") + ":" + Str(*h, "port") +
           Str(*h, "path", "/");
  } else if (auto t = p.find("tcpSocket"); t != p.end()) {
    what = "tcp-socket " + Str(*t, "host") + ":" + Str(*t, "port");
  } else if (auto e = p.find("exec"); e != p.end()) {
    std::string cmd;
    for (const auto& a : e->value("command", json::array()))
      cmd += (cmd.empty() ? "" : " ") + a.get<std::string>();
    what = "exec [" + cmd + "]";
  } else if (auto g = p.find("grpc"); g != p.end()) {
    what = "grpc <pod>:" + Str(*g, "port") + " " + Str(*g, "service");
  }
  auto secs = [&](const char* key, int fallback) {
    return std::to_string(p.value(key, fallback)) + "s";
  };
  return what + " delay=" + secs("initialDelaySeconds", 0) +
         " timeout=" + secs("timeoutSeconds", 1) + " period=" + secs("periodSeconds", 10) +
         " #success=" + std::to_string(p.value("successThreshold", 1)) +
         " #failure=" + std::to_string(p.value("failureThreshold", 3));
}

void AddState(Block& b, const char* label, const json& state) {
  if (state.contains("running")) {
    b.Add(label, "Running");
    b.Add("  Started", DescribeTime(Str(state["running"], "startedAt")));
  } else if (state.contains("terminated")) {
    const json& t = state["terminated"];
    b.Add(label, "Terminated");
    b.Add("  Reason", Str(t, "reason"));
    if (t.contains("message")) b.Add("  Message", Str(t, "message"));
    b.Add("  Exit Code", Str(t, "exitCode"));
    if (t.contains("signal")) b.Add("  Signal", Str(t, "signal"));
    if (t.contains("startedAt")) b.Add("  Started", DescribeTime(Str(t, "startedAt")));
    b.Add("  Finished", DescribeTime(Str(t, "finishedAt")));
  } else if (state.contains("waiting")) {
    b.Add(label, "Waiting");
    if (state["waiting"].contains("reason")) b.Add("  Reason", Str(state["waiting"], "reason"));
    if (state["waiting"].contains("message")) b.Add("  Message", Str(state["waiting"], "message"));
  } else {
    b.Add(label, "");
  }
}

// One env var as kubectl describe prints it: a value, or where it comes
// from. A Secret's value is never read, let alone printed.
std::string EnvValue(const json& e) {
  if (e.contains("value")) return Str(e, "value");
  const json& from = e.value("valueFrom", json::object());
  if (auto s = from.find("secretKeyRef"); s != from.end()) {
    return "<set to the key '" + Str(*s, "key") + "' in secret '" + Str(*s, "name") +
           "'>  Optional: " + Str(*s, "optional", "false");
  }
  if (auto c = from.find("configMapKeyRef"); c != from.end()) {
    return "<set to the key '" + Str(*c, "key") + "' of config map '" + Str(*c, "name") +
           "'>  Optional: " + Str(*c, "optional", "false");
  }
  if (auto f = from.find("fieldRef"); f != from.end()) {
    return " (" + Str(*f, "apiVersion", "v1") + ":" + Str(*f, "fieldPath") + ")";
  }
  if (auto r = from.find("resourceFieldRef"); r != from.end()) {
    return Str(*r, "resource") + " (" + Str(*r, "containerName") + ")";
  }
  return "";
}

std::string DescribeContainer(const json& spec, const json* status, bool sidecar) {
  Block b(4);
  b.Raw("  " + Str(spec, "name") + ":" + (sidecar ? "  (sidecar)" : ""));
  b.Add("Container ID", status ? Str(*status, "containerID") : "");
  b.Add("Image", Str(spec, "image"));
  b.Add("Image ID", status ? Str(*status, "imageID") : "");
  std::string ports;
  for (const auto& p : spec.value("ports", json::array())) {
    ports +=
        (ports.empty() ? "" : ", ") + Str(p, "containerPort") + "/" + Str(p, "protocol", "TCP");
  }
  b.Add("Port", ports.empty() ? "<none>" : ports);
  for (const char* key : {"command", "args"}) {
    if (!spec.contains(key)) continue;
    b.Add(std::string(1, static_cast<char>(std::toupper(key[0]))) + (key + 1), "");
    for (const auto& a : spec[key]) b.Raw("      " + a.get<std::string>());
  }
  if (status) {
    AddState(b, "State", status->value("state", json::object()));
    const json& last = status->value("lastState", json::object());
    if (!last.empty()) AddState(b, "Last State", last);
    b.Add("Ready", status->value("ready", false) ? "True" : "False");
    b.Add("Restart Count", Str(*status, "restartCount", "0"));
  } else {
    b.Add("State", "Waiting");
    b.Add("Ready", "False");
    b.Add("Restart Count", "0");
  }
  const json& res = spec.value("resources", json::object());
  for (const char* kind : {"limits", "requests"}) {
    if (!res.contains(kind) || res[kind].empty()) continue;
    b.Add(std::string(1, static_cast<char>(std::toupper(kind[0]))) + (kind + 1), "");
    for (const auto& [k, v] : res[kind].items())
      b.Raw("      " + k + ":  " + Str(res[kind], k.c_str()));
  }
  for (auto [key, label] :
       {std::pair{"livenessProbe", "Liveness"}, std::pair{"readinessProbe", "Readiness"},
        std::pair{"startupProbe", "Startup"}}) {
    if (spec.contains(key)) b.Add(label, ProbeLine(spec[key]));
  }
  const json& env_from = spec.value("envFrom", json::array());
  if (!env_from.empty()) {
    b.Add("Environment Variables from", "");
    for (const auto& e : env_from) {
      std::string kind = e.contains("secretRef") ? "Secret" : "ConfigMap";
      const json& ref =
          e.contains("secretRef") ? e["secretRef"] : e.value("configMapRef", json::object());
      b.Raw("      " + Str(ref, "name") + "  " + kind +
            "  Optional: " + Str(ref, "optional", "false"));
    }
  }
  const json& env = spec.value("env", json::array());
  b.Add("Environment", env.empty() ? "<none>" : "");
  for (const auto& e : env) b.Raw("      " + Str(e, "name") + ":  " + EnvValue(e));
  const json& mounts = spec.value("volumeMounts", json::array());
  b.Add("Mounts", mounts.empty() ? "<none>" : "");
  for (const auto& m : mounts) {
    std::string flags = m.value("readOnly", false) ? "ro" : "rw";
    if (m.contains("subPath")) flags += ",path=\"" + Str(m, "subPath") + "\"";
    b.Raw("      " + Str(m, "mountPath") + " from " + Str(m, "name") + " (" + flags + ")");
  }
  return b.Render();
}

std::string DescribeVolume(const json& v) {
  Block b(4);
  b.Raw("  " + Str(v, "name") + ":");
  if (auto e = v.find("emptyDir"); e != v.end()) {
    b.Add("Type", "EmptyDir (a temporary directory that shares a pod's lifetime)");
    b.Add("Medium", Str(*e, "medium"));
    b.Add("SizeLimit", Str(*e, "sizeLimit", "<unset>"));
  } else if (auto h = v.find("hostPath"); h != v.end()) {
    b.Add("Type", "HostPath (bare host directory volume)");
    b.Add("Path", Str(*h, "path"));
    b.Add("HostPathType", Str(*h, "type"));
  } else if (auto s = v.find("secret"); s != v.end()) {
    b.Add("Type", "Secret (a volume populated by a Secret)");
    b.Add("SecretName", Str(*s, "secretName"));
    b.Add("Optional", Str(*s, "optional", "false"));
  } else if (auto c = v.find("configMap"); c != v.end()) {
    b.Add("Type", "ConfigMap (a volume populated by a ConfigMap)");
    b.Add("Name", Str(*c, "name"));
    b.Add("Optional", Str(*c, "optional", "false"));
  } else if (v.contains("downwardAPI")) {
    b.Add("Type", "DownwardAPI (a volume populated by information about the pod)");
  } else if (v.contains("projected")) {
    b.Add("Type", "Projected (a volume that contains injected data from multiple sources)");
  }
  return b.Render();
}

// The kubelet's event reasons; the rest are podvisor's own
// (docs/INTERFACE.md "Events"). kubectl's From column says which.
std::string EventSource(const std::string& reason) {
  for (const char* r : {"Created", "Started", "Killing", "BackOff", "Unhealthy",
                        "FailedPostStartHook", "FailedPreStopHook", "OOMKilled", "DeadlineExceeded",
                        "Failed", "ResizeInfeasible", "ResizeDeferred"}) {
    if (reason == r) return "kubelet";
  }
  return "podvisor";
}

// S15.2: the line for the summary's "supervisor" object, which a running
// pod's supervisor sends (docs/INTERFACE.md); "" when there is none (an
// ended pod, a supervisor older than the object).
std::string DescribeSupervisor(const json& summary) {
  auto s = summary.find("supervisor");
  if (s == summary.end() || !s->is_object()) return "";
  std::string line = "podvisor " + Str(*s, "version", "<unknown>");
  if (auto pid = s->find("pid"); pid != s->end() && pid->is_number_integer()) {
    line += " (pid " + std::to_string(pid->get<long long>()) + ")";
  }
  if (s->contains("startedAt")) line += ", started " + DescribeTime(Str(*s, "startedAt"));
  long long upgrades = 0;
  if (auto u = s->find("upgrades"); u != s->end() && u->is_number_integer()) upgrades = *u;
  line += ", upgraded " + std::to_string(upgrades) + (upgrades == 1 ? " time" : " times");
  if (upgrades > 0 && s->contains("upgradedAt")) {
    line += " (last " + DescribeTime(Str(*s, "upgradedAt")) + ")";
  }
  return line;
}

std::string DescribeEvents(const fs::path& file, WallTime now) {
  std::ifstream in(file);
  std::vector<std::vector<std::string>> rows{{"Type", "Reason", "Age", "From", "Message"},
                                             {"----", "------", "----", "----", "-------"}};
  for (std::string line; std::getline(in, line);) {
    auto e = ParseEventLine(line);
    if (!e) continue;
    std::string age = e->time ? pod::HumanDuration(now - *e->time) : "<unknown>";
    rows.push_back({e->type, e->reason, age, EventSource(e->reason), e->message});
  }
  if (rows.size() == 2) return "Events:  <none>\n";
  std::string out = "Events:\n";
  std::string table = FormatTable(rows);
  std::size_t start = 0, nl;
  while ((nl = table.find('\n', start)) != std::string::npos) {
    out += "  " + table.substr(start, nl - start + 1);
    start = nl + 1;
  }
  return out;
}

int Describe(const std::string& name, const std::string& state_dir) {
  auto pod = SelectPod(state_dir, name);
  if (!pod) {
    std::fprintf(stderr, "podvisor: %s\n", pod.error().message().c_str());
    return kExitFailed;
  }
  auto record = LoadPodRecord(state_dir, *pod);
  if (!record) {
    std::fprintf(stderr, "podvisor: %s\n", record.error().message().c_str());
    return kExitFailed;
  }
  const json& p = *record;
  const json& meta = p.value("metadata", json::object());
  const json& spec = p.value("spec", json::object());
  const json& status = p.value("status", json::object());
  const WallTime now = std::chrono::system_clock::now();

  Block top(0);
  top.Add("Name", Str(meta, "name"));
  top.Add("Namespace", Str(meta, "namespace", "default"));
  top.Add("Priority", Str(spec, "priority", "0"));
  top.Add("Service Account", Str(spec, "serviceAccountName", "default"));
  top.Add("Node", Str(spec, "nodeName", "<none>") +
                      (status.contains("hostIP") ? "/" + Str(status, "hostIP") : ""));
  if (status.contains("startTime")) top.Add("Start Time", DescribeTime(Str(status, "startTime")));
  // The supervisor that runs the pod now, from its summary: a pod that
  // does not run has none (no socket: the request fails at once).
  if (auto summary = AskSupervisor(state_dir, *pod, {{"op", "summary"}})) {
    if (std::string line = DescribeSupervisor(*summary); !line.empty()) {
      top.Add("Supervisor", line);
    }
  }
  // S20.7: the pod's own ids, from the annotation its supervisor set.
  const json annotations = meta.value("annotations", json::object());
  if (auto a = annotations.find("podvisor.io/user-namespace");
      a != annotations.end() && a->is_string()) {
    top.Add("User Namespace", "host ids " + a->get<std::string>() + " (uids and gids)");
  }
  top.AddList("Labels", Map(meta.value("labels", json::object())));
  top.AddList("Annotations", Map(meta.value("annotations", json::object())));
  // kubectl's "Terminating" while a deletion runs; an ended pod keeps
  // the deletion time of its stop request, and its phase says more.
  const std::string phase = Str(status, "phase", "Unknown");
  if (meta.contains("deletionTimestamp") && phase != "Succeeded" && phase != "Failed") {
    top.Add("Status", "Terminating");
    top.Add("Termination Grace Period", Str(spec, "terminationGracePeriodSeconds", "30") + "s");
  } else {
    top.Add("Status", phase);
  }
  if (status.contains("reason")) top.Add("Reason", Str(status, "reason"));
  if (status.contains("message")) top.Add("Message", Str(status, "message"));
  if (status.contains("stopReason")) top.Add("Stop Reason", Str(status, "stopReason"));
  top.Add("IP", Str(status, "podIP"));
  std::string out = top.Render();

  // Pointers into `status`, which lives as long as the record.
  auto find_status = [&](const char* list, const std::string& c) -> const json* {
    auto it = status.find(list);
    if (it == status.end() || !it->is_array()) return nullptr;
    for (const auto& s : *it) {
      if (Str(s, "name") == c) return &s;
    }
    return nullptr;
  };
  const json& inits = spec.value("initContainers", json::array());
  if (!inits.empty()) {
    out += "Init Containers:\n";
    for (const auto& c : inits) {
      out += DescribeContainer(c, find_status("initContainerStatuses", Str(c, "name")),
                               Str(c, "restartPolicy") == "Always");
    }
  }
  out += "Containers:\n";
  for (const auto& c : spec.value("containers", json::array())) {
    out += DescribeContainer(c, find_status("containerStatuses", Str(c, "name")), false);
  }
  out += "Conditions:\n";
  std::vector<std::vector<std::string>> conds{{"Type", "Status"}};
  for (const auto& c : status.value("conditions", json::array())) {
    conds.push_back({Str(c, "type"), Str(c, "status")});
  }
  std::string table = FormatTable(conds);
  for (std::size_t start = 0, nl; (nl = table.find('\n', start)) != std::string::npos;
       start = nl + 1) {
    out += "  " + table.substr(start, nl - start + 1);
  }
  const json& volumes = spec.value("volumes", json::array());
  out += volumes.empty() ? "Volumes:  <none>\n" : "Volumes:\n";
  for (const auto& v : volumes) out += DescribeVolume(v);
  Block tail(0);
  tail.Add("QoS Class", Str(status, "qosClass", "BestEffort"));
  tail.AddList("Node-Selectors", Map(spec.value("nodeSelector", json::object())));
  tail.Add("Tolerations", "<none>");
  out += tail.Render();
  out += DescribeEvents(PodDir(state_dir, *pod).EventsFile(), now);
  std::fputs(out.c_str(), stdout);
  return kExitSucceeded;
}

}  // namespace

void AddDescribeCommand(CLI::App& app, int& exit_code) {
  auto name = std::make_shared<std::string>();
  auto state_dir = std::make_shared<std::string>(DefaultStateDir());
  CLI::App* cmd = app.add_subcommand(
      "describe", "Show the pod in detail, running or ended (kubectl describe pod)");
  cmd->add_option("POD", *name, "the pod (may be left out when there is one)");
  cmd->add_option("--state-dir", *state_dir, "as given to run")->capture_default_str();
  cmd->callback([name, state_dir, &exit_code] { exit_code = Describe(*name, *state_dir); });
}

}  // namespace podvisor::cli
