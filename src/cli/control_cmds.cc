// `podvisor status`, `stop`, `kill`, `list`: requests to a running pod's
// supervisor over its control socket (docs/INTERFACE.md).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <memory>

#include <yaml-cpp/yaml.h>

#include "cli/client.h"
#include "cli/commands.h"

namespace podvisor::cli {
namespace {

YAML::Node JsonToYaml(const nlohmann::json& j) {
  YAML::Node n;
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) n[k] = JsonToYaml(v);
  } else if (j.is_array()) {
    n = YAML::Node(YAML::NodeType::Sequence);
    for (const auto& v : j) n.push_back(JsonToYaml(v));
  } else if (j.is_string()) {
    n = j.get<std::string>();
  } else if (j.is_boolean()) {
    n = j.get<bool>();
  } else if (j.is_number_integer()) {
    n = j.get<int64_t>();
  } else if (j.is_number()) {
    n = j.get<double>();
  }
  return n;
}

int Fail(const Error& e) {
  std::fprintf(stderr, "podvisor: %s\n", e.message().c_str());
  return kExitFailed;
}

struct Common {
  std::string pod;
  std::string state_dir = kDefaultStateDir;
};

void AddCommon(CLI::App* cmd, Common& c, bool pod_positional = true) {
  if (pod_positional) cmd->add_option("POD", c.pod, "the pod (may be left out when one runs)");
  cmd->add_option("--state-dir", c.state_dir, "as given to run")->capture_default_str();
}

int Status(const Common& c, const std::string& output) {
  auto pod = ChoosePod(c.state_dir, c.pod, true);
  if (!pod) return Fail(pod.error());
  if (output == "json" || output == "yaml") {
    auto reply = AskSupervisor(c.state_dir, *pod, {{"op", "status"}});
    if (!reply) return Fail(reply.error());
    if (output == "json") {
      std::printf("%s\n", reply->dump(4).c_str());
    } else {
      YAML::Emitter out;
      out << JsonToYaml(*reply);
      std::printf("%s\n", out.c_str());
    }
    return kExitSucceeded;
  }
  auto s = AskSupervisor(c.state_dir, *pod, {{"op", "summary"}});
  if (!s) return Fail(s.error());
  const auto& j = *s;
  const bool wide = output == "wide";
  auto text = [](const nlohmann::json& obj, const char* key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::string("-");
    return it->is_string() ? it->get<std::string>() : it->dump();
  };
  // kubectl get pod's line; -o wide adds the pod IP and the node, as
  // kubectl's does ("<none>" without an address, -o wide of an older
  // supervisor without the field: "-").
  std::vector<std::vector<std::string>> pod_rows{
      {"NAME", "READY", "STATUS", "RESTARTS", "AGE"},
      {text(j, "name"), text(j, "ready"), text(j, "status"), text(j, "restarts"), text(j, "age")}};
  if (wide) {
    pod_rows[0].insert(pod_rows[0].end(), {"IP", "NODE"});
    pod_rows[1].insert(pod_rows[1].end(), {text(j, "ip"), text(j, "node")});
  }
  std::printf("%s", FormatTable(pod_rows).c_str());
  // Then one line per container, init list first in spec order.
  std::vector<std::vector<std::string>> rows;
  if (wide) {
    rows.push_back({"CONTAINER", "TYPE", "READY", "STARTED", "STATE", "RESTARTS", "LAST STATE",
                    "IMAGE", "CONTAINER ID"});
  } else {
    rows.push_back({"CONTAINER", "TYPE", "READY", "STATE", "RESTARTS"});
  }
  for (const auto& ct : j["containers"]) {
    // Older supervisors send only the restart count.
    std::string restarts =
        ct.contains("restartsColumn") ? text(ct, "restartsColumn") : text(ct, "restarts");
    if (wide) {
      std::string id = text(ct, "containerID");
      rows.push_back({text(ct, "name"), text(ct, "type"), text(ct, "ready"), text(ct, "started"),
                      text(ct, "state"), restarts, text(ct, "lastState"), text(ct, "image"),
                      id.empty() ? "-" : id});
    } else {
      rows.push_back({text(ct, "name"), text(ct, "type"), text(ct, "ready"), text(ct, "state"),
                      restarts});
    }
  }
  std::printf("\n%s", FormatTable(rows).c_str());
  return kExitSucceeded;
}

int Stop(const Common& c, const std::string& reason, std::optional<double> grace, bool no_wait) {
  auto pod = ChoosePod(c.state_dir, c.pod, true);
  if (!pod) return Fail(pod.error());
  nlohmann::json req = {{"op", "stop"}, {"wait", !no_wait}};
  if (!reason.empty()) req["reason"] = reason;
  if (grace) req["grace"] = *grace;
  auto reply = AskSupervisor(c.state_dir, *pod, req, /*wait_forever=*/!no_wait);
  if (!reply) return Fail(reply.error());
  if (no_wait) {
    std::printf("pod/%s stopping\n", pod->c_str());
    return kExitSucceeded;
  }
  std::string phase = (*reply)["status"].value("phase", "Unknown");
  std::printf("pod/%s stopped: phase %s\n", pod->c_str(), phase.c_str());
  return kExitSucceeded;
}

int Kill(const Common& c, const std::vector<std::string>& args) {
  // [POD] CONTAINER [SIGNAL]: the pod is optional, so count the words.
  std::string pod_name = c.pod, container, signal = "SIGKILL";
  if (args.size() == 3) {
    pod_name = args[0];
    container = args[1];
    signal = args[2];
  } else if (args.size() == 2) {
    // CONTAINER SIGNAL, or POD CONTAINER. Container names are lowercase
    // DNS labels, so a number or an upper-case word is a signal.
    bool second_is_signal =
        std::all_of(args[1].begin(), args[1].end(), [](unsigned char ch) {
          return std::isdigit(ch) || std::isupper(ch) || ch == '+' || ch == '-';
        });
    if (second_is_signal) {
      container = args[0];
      signal = args[1];
    } else {
      pod_name = args[0];
      container = args[1];
    }
  } else if (args.size() == 1) {
    container = args[0];
  } else {
    std::fprintf(stderr, "podvisor: kill takes [POD] CONTAINER [SIGNAL]\n");
    return kExitUsage;
  }
  auto pod = ChoosePod(c.state_dir, pod_name, true);
  if (!pod) return Fail(pod.error());
  auto reply = AskSupervisor(c.state_dir, *pod,
                             {{"op", "kill"}, {"container", container}, {"signal", signal}});
  if (!reply) return Fail(reply.error());
  std::printf("%s delivered to %s/%s\n", (*reply)["signal"].get<std::string>().c_str(),
              pod->c_str(), container.c_str());
  return kExitSucceeded;
}

int List(const Common& c) {
  std::vector<std::vector<std::string>> rows{{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}};
  for (const auto& pod : RunningPods(c.state_dir)) {
    auto s = AskSupervisor(c.state_dir, pod, {{"op", "summary"}});
    if (!s) {
      rows.push_back({pod, "-", "Unknown", "-", "-"});
      continue;
    }
    rows.push_back({(*s)["name"], (*s)["ready"], (*s)["status"], (*s)["restarts"], (*s)["age"]});
  }
  if (rows.size() == 1) {
    std::fprintf(stderr, "No pods are running under %s.\n", c.state_dir.c_str());
    return kExitSucceeded;
  }
  std::printf("%s", FormatTable(rows).c_str());
  return kExitSucceeded;
}

}  // namespace

void AddControlCommands(CLI::App& app, int& exit_code) {
  {
    auto c = std::make_shared<Common>();
    auto output = std::make_shared<std::string>("table");
    CLI::App* cmd = app.add_subcommand("status", "Show the pod's state (kubectl get pod)");
    AddCommon(cmd, *c);
    cmd->add_option("-o,--output", *output,
                    "table, wide (more per-container detail), json (a v1 Pod) or yaml")
        ->check(CLI::IsMember({"table", "wide", "json", "yaml"}))
        ->capture_default_str();
    cmd->callback([c, output, &exit_code] { exit_code = Status(*c, *output); });
  }
  {
    auto c = std::make_shared<Common>();
    auto reason = std::make_shared<std::string>();
    auto grace = std::make_shared<std::optional<double>>();
    auto no_wait = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand(
        "stop", "Terminate the pod; returns when it has ended (SEMANTICS S5, S6)");
    AddCommon(cmd, *c);
    cmd->add_option("--reason", *reason,
                    "termination reason for preStop hooks (Eviction, Decommissioned, ...)");
    cmd->add_option("--grace", *grace, "seconds; may only shorten the pod's grace period")
        ->check(CLI::NonNegativeNumber);
    cmd->add_flag("--no-wait", *no_wait, "return once the supervisor accepted the request");
    cmd->callback([c, reason, grace, no_wait, &exit_code] {
      exit_code = Stop(*c, *reason, *grace, *no_wait);
    });
  }
  {
    auto c = std::make_shared<Common>();
    auto args = std::make_shared<std::vector<std::string>>();
    CLI::App* cmd = app.add_subcommand(
        "kill", "Deliver a signal (default SIGKILL) to a container's init process directly");
    AddCommon(cmd, *c, false);
    cmd->add_option("ARGS", *args, "[POD] CONTAINER [SIGNAL]")->required()->expected(1, 3);
    cmd->callback([c, args, &exit_code] { exit_code = Kill(*c, *args); });
  }
  {
    auto c = std::make_shared<Common>();
    CLI::App* cmd = app.add_subcommand("list", "List the pods this host's supervisors run");
    AddCommon(cmd, *c, false);
    cmd->callback([c, &exit_code] { exit_code = List(*c); });
  }
}

}  // namespace podvisor::cli
