// The Executor's side of the control socket (docs/INTERFACE.md "Control
// socket"): the PodControl that ControlApi acts on.
#include <unistd.h>

#include "oci/spec.h"
#include "pod/serialize.h"
#include "podvisor_version.h"
#include "supervisor/control/control_api.h"
#include "supervisor/executor/internal.h"

namespace podvisor::supervisor::executor {

// The control API's view of the pod (control/pod_control.h): what the
// socket may ask of the Executor, read and checked by ControlApi first.
class Executor::PodControlPort final : public control::PodControl {
 public:
  explicit PodControlPort(Executor& executor) : ex_(executor) {}

  control::ControlReply StatusReply() override {
    return ex_.record_.StatusReply(ex_.CurrentStatus());
  }
  std::optional<std::string> StatusText(bool wide) override {
    if (!ex_.options_.status_text) return std::nullopt;
    return ex_.options_.status_text(ex_.record_.PodJson(ex_.CurrentStatus()), wide);
  }
  nlohmann::json Summary() override {
    nlohmann::json summary = ex_.record_.Summary(ex_.CurrentStatus(), ex_.loop_.clock().WallNow());
    summary["supervisor"] = ex_.SupervisorSummary();
    return summary;
  }
  std::optional<nlohmann::json> FinalStatus() override {
    if (!ex_.finished_) return std::nullopt;
    return ex_.record_.PodJson(ex_.CurrentStatus());
  }
  void RequestStop(control::StopOrder order, control::ControlServer::Responder on_end) override {
    if (on_end) ex_.stop_waiters_.push_back(std::move(on_end));
    ex_.Feed(lifecycle::StopRequested{std::move(order.reason), order.grace});
  }
  control::ContainerRun RunOf(const std::string& container) override;
  Status SignalContainer(const std::string& container, int signo) override {
    Instance* inst = ex_.instances_.Find(container, ex_.lifecycle_.InstanceOf(container));
    if (!inst || !inst->init) return Error("container " + container + " is not running");
    return inst->init->SendSignal(signo);
  }
  Result<control::ExecPlan> PrepareExec(const control::ExecOrder& order) override;
  std::string NetnsPath() override { return ex_.NetnsPath(); }
  // S15.2 (upgrade.cc).
  void RequestUpgrade(control::UpgradeOrder order,
                      control::ControlServer::Responder respond) override {
    ex_.RequestUpgrade(order.binary, order.timeout, std::move(respond));
  }
  // S17 (resize.cc).
  control::ControlReply Resize(const std::vector<pod::ContainerResizePatch>& patch) override {
    return ex_.Resize(patch);
  }

 private:
  Executor& ex_;
};

// S15: the program serving the pod now, for `describe` and for
// `podvisor upgrade`, which waits until the new version answers.
nlohmann::json Executor::SupervisorSummary() const {
  nlohmann::json s = {{"version", PODVISOR_VERSION},
                      {"pid", ::getpid()},
                      {"upgrades", supervisor_.upgrades},
                      {"startedAt", FormatRfc3339(supervisor_.started_at)}};
  if (supervisor_.upgraded_at) s["upgradedAt"] = FormatRfc3339(*supervisor_.upgraded_at);
  return s;
}

control::ContainerRun Executor::PodControlPort::RunOf(const std::string& container) {
  if (!ex_.ContainerSpec(container)) return control::ContainerRun::kUnknown;
  const lifecycle::RunState state = ex_.lifecycle_.StateOf(container);
  const Instance* inst = ex_.instances_.Find(container, ex_.lifecycle_.InstanceOf(container));
  if (!inst || !inst->init || inst->state.Exited()) return control::ContainerRun::kNotRunning;
  if (state == lifecycle::RunState::kRunning) return control::ContainerRun::kRunning;
  if (state == lifecycle::RunState::kStarting) return control::ContainerRun::kStarting;
  return control::ContainerRun::kNotRunning;
}

// `podvisor exec` (docs/INTERFACE.md): the container's own process settings
// (env, user, cwd, capabilities) as the kubelet's exec uses them, with the
// client's args, in a process file beside the instance's bundle. S14.13:
// the file holds the container's environment: it is removed once the
// client's runtime has had time to read it, by the client when its command
// ends, and with the instance's delete.
Result<control::ExecPlan> Executor::PodControlPort::PrepareExec(const control::ExecOrder& order) {
  Instance* inst = ex_.instances_.Find(order.container, ex_.lifecycle_.InstanceOf(order.container));
  if (!inst) return Error("container " + order.container + " is not running");
  static uint64_t seq = 0;
  nlohmann::json process = inst->process;
  process["args"] = order.args;
  process["terminal"] = order.tty;
  if (order.tty) {
    // A terminal without TERM leaves curses programs, `clear` and shells'
    // line editing guessing; containerd and Docker give an exec with a tty
    // TERM=xterm unless the container set its own (S14.25).
    nlohmann::json& env = process["env"];
    if (!env.is_array()) env = nlohmann::json::array();
    bool has_term = false;
    for (const auto& e : env) {
      if (e.is_string() && e.get<std::string>().rfind("TERM=", 0) == 0) has_term = true;
    }
    if (!has_term) env.push_back("TERM=xterm");
  }
  if (order.console_size) {
    process["consoleSize"] = {{"height", order.console_size->first},
                              {"width", order.console_size->second}};
  }
  std::filesystem::path file = inst->dir / ("exec-client-" + std::to_string(++seq) + ".json");
  if (auto s = oci::WriteConfigFile(process, file); !s) {
    std::error_code ec;
    // S14.13: a partial write (WriteConfigFile writes FILE.tmp, then renames).
    std::filesystem::remove(file, ec);
    std::filesystem::remove(std::filesystem::path(file) += ".tmp", ec);
    return s.take_error();
  }
  ex_.instances_.ExpireExecFile(file);
  std::vector<std::string> argv = ex_.instances_.Runtime().Exec(inst->id, file).argv;
  // The id stays last. runc and crun take a console socket only when they
  // detach: the process then outlives them, and the client, a child
  // subreaper, collects its exit (exec_cmd.cc).
  if (order.tty) {
    argv.insert(argv.end() - 1,
                {"--detach", "--console-socket", order.console_socket, "--pid-file",
                 std::filesystem::path(order.console_socket).parent_path() / "exec.pid"});
  }
  control::ExecPlan plan{std::move(argv), file.string()};
  if (ex_.options_.rootless) plan.join_namespaces_of = static_cast<int>(::getpid());  // S21.11
  return plan;
}

control::ControlApi& Executor::Control() {
  if (!control_api_) {
    pod_control_ = std::make_unique<PodControlPort>(*this);
    control_api_ = std::make_unique<control::ControlApi>(*pod_control_);
  }
  return *control_api_;
}

const pod::Container* Executor::ContainerSpec(std::string_view name) const {
  for (const auto* list : {&pod_.spec.init_containers, &pod_.spec.containers}) {
    for (const auto& c : *list) {
      if (c.name == name) return &c;
    }
  }
  return nullptr;
}

std::string Executor::NetnsPath() const {
  return sandbox_ && sandbox_->network_ns() ? sandbox_->network_ns()->string() : std::string();
}

}  // namespace podvisor::supervisor::executor
