#include "cli/rootless_run.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cgroups/self_parent.h"
#include "common/file_io.h"
#include "common/log.h"
#include "common/pod_dir.h"
#include "supervisor/executor/handover.h"
#include "supervisor/sandbox/sandbox.h"

namespace podvisor::cli {
namespace {

namespace fs = std::filesystem;

// The sandbox holder a supervisor of this pod recorded in this boot: the
// handover state's "sandbox" object, else the identity file written before
// it (as recovery reads them).
std::optional<std::pair<pid_t, uint64_t>> RecordedHolder(const fs::path& pod_state_dir) {
  const PodDir dir = PodDir::At(pod_state_dir);
  for (auto [file, key] :
       {std::pair{dir.SupervisorStateFile(), "sandbox"}, std::pair{dir.SandboxHolderFile(), ""}}) {
    auto text = ReadFileBounded(file, 64 * 1024 * 1024);
    if (!text) continue;
    nlohmann::json state = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!state.is_object()) continue;
    if (state.value("bootId", std::string()) != supervisor::executor::BootId()) continue;
    const nlohmann::json* holder = &state;
    if (*key != '\0') {
      auto it = state.find(key);
      if (it == state.end() || !it->is_object()) continue;
      holder = &*it;
    }
    const pid_t pid = holder->value("pid", 0);
    if (pid > 0) return std::make_pair(pid, holder->value("startTime", uint64_t{0}));
  }
  return std::nullopt;
}

}  // namespace

Result<RootlessRun> EnterRootless(const fs::path& pod_state_dir) {
  RootlessRun run;
  auto facts = process::ReadUserNamespaceFacts();
  if (!facts) return facts.take_error().Wrap("podvisor's user namespace");
  auto plan = process::PlanUserNamespace(*facts);
  if (!plan) return plan.take_error().Wrap("podvisor's user namespace");
  if (plan->mode == process::UserNamespaceMode::kNone) return run;
  run.active = true;
  run.mode = plan->mode;
  if (auto holder = RecordedHolder(pod_state_dir)) {
    // Pinned first: never the namespaces of a process that took a reused pid.
    if (auto pinned = supervisor::sandbox::PinHolder(holder->first, holder->second)) {
      if (auto s = process::JoinUserNamespaceOf(holder->first); s) {
        run.joined = true;
        run.joined_holder = holder->first;
        log::Info(
            "rootless: joined the user and mount namespaces of the sandbox holder (pid {}) a "
            "previous supervisor of this pod left (S21.9)",
            holder->first);
        return run;
      } else {
        log::Warn("rootless: cannot join the namespaces of the sandbox holder (pid {}): {}",
                  holder->first, s.error().message());
      }
    }
  }
  if (!plan->warning.empty()) log::Warn("rootless: {}", plan->warning);
  if (auto s = process::EnterUserNamespace(*plan); !s) {
    return s.take_error().Wrap("entering podvisor's user namespace");
  }
  log::Info("rootless: podvisor runs in a user namespace of its own ({}, uid map {})",
            process::UserNamespaceModeName(plan->mode), [&] {
              std::string text = process::FormatIdMap(plan->uid_map);
              for (char& c : text) {
                if (c == '\n') c = ',';
              }
              if (!text.empty()) text.pop_back();
              return text;
            }());
  return run;
}

std::optional<std::string> RootlessRefusal(const pod::Pod& pod, network::NetworkMode mode) {
  std::vector<std::string> causes;
  if (pod.spec.host_pid) {
    causes.emplace_back("spec.hostPID: a /proc of the host's PID namespace cannot be mounted");
  }
  if (pod.spec.host_ipc) {
    causes.emplace_back("spec.hostIPC: the host's IPC namespace's /dev/mqueue cannot be mounted");
  }
  if (mode == network::NetworkMode::kCni) {
    causes.emplace_back(
        "--network cni: CNI plugins make bridges and iptables rules on the host, which needs "
        "root");
  }
  for (const auto* list : {&pod.spec.init_containers, &pod.spec.containers}) {
    for (const auto& c : *list) {
      if (c.security_context && c.security_context->privileged.value_or(false)) {
        causes.push_back("container " + c.name +
                         ": securityContext.privileged: the host's devices and capabilities are "
                         "not podvisor's to give");
      }
    }
  }
  for (const auto& v : pod.spec.volumes) {
    if (!v.host_path) continue;
    // Judged as the user: a file the user cannot read is no file a pod of
    // the user's may have.
    const std::string& path = v.host_path->path;
    if (::access(path.c_str(), F_OK) == 0 && ::access(path.c_str(), R_OK) != 0) {
      causes.push_back("volume " + v.name + ": hostPath " + path + " is not readable by the user");
    }
  }
  if (causes.empty()) return std::nullopt;
  std::string message = "without root, podvisor cannot run this pod (S21.6): ";
  for (size_t i = 0; i < causes.size(); ++i) message += (i ? "; " : "") + causes[i];
  return message;
}

std::string RootlessCgroupParent(const cgroups::CgroupInfo& cg, const std::string& asked,
                                 std::string& warning) {
  warning.clear();
  if (asked.empty()) return "";
  std::string why = cgroups::SelfCgroupNotDelegated(cg, "/proc/self/cgroup");
  if (why.empty()) return cgroups::kSelfCgroupParent;
  warning = "rootless: no pod cgroup and no cgroup limits (S21.5): " + why +
            "; a systemd user service with Delegate=yes (or `systemd-run --user --scope -p "
            "Delegate=yes podvisor run ...`) on a cgroup v2 host gives them";
  return "";
}

}  // namespace podvisor::cli
