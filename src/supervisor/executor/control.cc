// The Executor's control socket requests (docs/INTERFACE.md "Control socket").
#include <csignal>

#include <spdlog/spdlog.h>

#include "common/signal_names.h"

#include "pod/serialize.h"
#include "supervisor/executor/internal.h"

namespace podvisor::supervisor {
namespace {

constexpr std::size_t kMaxReasonBytes = 256;  // S6.1

nlohmann::json ErrorReply(std::string message) { return {{"error", std::move(message)}}; }

// S6.1: any non-empty string of printable ASCII up to 256 bytes.
std::optional<std::string> CheckReason(const std::string& reason) {
  if (reason.empty()) return "reason must not be empty";
  if (reason.size() > kMaxReasonBytes) return "reason is longer than 256 bytes";
  for (unsigned char c : reason) {
    if (c < 0x20 || c > 0x7e) return "reason must be printable ASCII";
  }
  return std::nullopt;
}

// One container state in a few words, kubectl describe's way:
// "Running (5m)", "Waiting: CrashLoopBackOff", "Terminated: Error (exit 1, 12s ago)".
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

}  // namespace

nlohmann::json Executor::StatusJson() const {
  nlohmann::json pod = pod::ToJson(pod_);
  pod["metadata"]["uid"] = uid_;
  pod["metadata"]["creationTimestamp"] = FormatRfc3339(created_at_);
  pod::PodStatus status = lifecycle_.Status();
  status.host_ips = host_ips_;
  status.pod_ips = pod_ips_;
  pod::AddStatusToPodJson(status, pod);
  return pod;
}

// What `podvisor status` and `list` print: kubectl's columns, computed here
// where the typed status is at hand.
nlohmann::json Executor::SummaryJson() const {
  pod::PodStatus status = lifecycle_.Status();
  pod::PodSummary summary = pod::SummarizePod(pod_.spec, status);
  WallTime now = std::chrono::system_clock::now();
  nlohmann::json out = {{"name", pod_.metadata.name},
                        {"ready", summary.ReadyColumn()},
                        {"status", summary.status},
                        {"restarts", summary.RestartsColumn(now)},
                        {"age", pod::HumanDuration(now - created_at_)},
                        {"node", options_.node_hostname},
                        {"ip", pod_ips_.empty() ? std::string("<none>") : pod_ips_.front()},
                        {"phase", std::string(pod::PodPhaseName(status.phase))},
                        {"containers", nlohmann::json::array()}};
  auto add = [&](const std::vector<pod::ContainerStatus>& list, bool init_list) {
    for (const auto& c : list) {
      const pod::Container* spec = ContainerSpec(c.name);
      std::string type =
          !init_list ? "container" : (spec && pod::IsSidecar(*spec) ? "sidecar" : "init");
      // The container's own RESTARTS column: "3 (12s ago)", as the pod's.
      pod::PodSummary own;
      own.restarts = c.restart_count;
      if (c.last_state.terminated) own.last_restart = c.last_state.terminated->finished_at;
      out["containers"].push_back({{"name", c.name},
                                   {"type", type},
                                   {"ready", c.ready},
                                   {"started", c.started ? (*c.started ? "true" : "false") : "-"},
                                   {"state", DescribeState(c.state, now)},
                                   {"lastState",
                                    c.last_state.empty() ? "-" : DescribeState(c.last_state, now)},
                                   {"restarts", c.restart_count},
                                   {"restartsColumn", own.RestartsColumn(now)},
                                   {"image", c.image},
                                   {"containerID", c.container_id}});
    }
  };
  add(status.init_container_statuses, true);
  add(status.container_statuses, false);
  return out;
}

void Executor::OnControlRequest(const nlohmann::json& request, ControlServer::Responder respond) {
  auto op_it = request.find("op");
  if (op_it == request.end() || !op_it->is_string()) {
    respond(ErrorReply("request needs a string \"op\""));
    return;
  }
  const std::string op = op_it->get<std::string>();
  if (op == "status") {
    // Serialized once per state change, however many clients ask.
    if (!status_reply_) status_reply_.emplace(StatusJson());
    respond(*status_reply_);
    return;
  }
  if (op == "summary") {
    respond(SummaryJson());
    return;
  }
  if (op == "stop") {
    StopRequested stop;
    if (auto r = request.find("reason"); r != request.end() && !r->is_null()) {
      if (!r->is_string()) return respond(ErrorReply("\"reason\" must be a string"));
      if (auto bad = CheckReason(r->get<std::string>())) return respond(ErrorReply(*bad));
      stop.reason = r->get<std::string>();
    }
    if (auto g = request.find("grace"); g != request.end() && !g->is_null()) {
      if (!g->is_number() || g->get<double>() < 0 || g->get<double>() > 1e9) {
        return respond(ErrorReply("\"grace\" must be a number of seconds >= 0"));
      }
      stop.grace = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(g->get<double>()));
    }
    bool wait = true;
    if (auto w = request.find("wait"); w != request.end() && w->is_boolean()) wait = w->get<bool>();
    if (finished_) return respond(StatusJson());
    spdlog::info("stop requested{}", stop.reason ? " (reason " + *stop.reason + ")" : "");
    if (wait) {
      stop_waiters_.push_back(std::move(respond));
    } else {
      respond(nlohmann::json{{"stopping", true}});
    }
    Feed(std::move(stop));
    return;
  }
  if (op == "kill") {
    auto c = request.find("container");
    auto s = request.find("signal");
    if (c == request.end() || !c->is_string()) return respond(ErrorReply("\"container\" must be a string"));
    int signo = SIGKILL;
    if (s != request.end() && !s->is_null()) {
      if (s->is_number_integer()) {
        signo = s->get<int>();
      } else if (s->is_string()) {
        auto parsed = ParseSignal(s->get<std::string>());
        if (!parsed) return respond(ErrorReply("unknown signal " + s->get<std::string>()));
        signo = *parsed;
      } else {
        return respond(ErrorReply("\"signal\" must be a number or a name"));
      }
    }
    if (signo < 1 || signo > SIGRTMAX) return respond(ErrorReply("signal out of range"));
    std::string name = c->get<std::string>();
    if (!ContainerSpec(name)) return respond(ErrorReply("no container named " + name));
    if (lifecycle_.StateOf(name) != RunState::kRunning && lifecycle_.StateOf(name) != RunState::kStarting) {
      return respond(ErrorReply("container " + name + " is not running"));
    }
    Instance* inst = FindInstance(name, lifecycle_.InstanceOf(name));
    if (!inst || !inst->init || inst->exited) return respond(ErrorReply("container " + name + " is not running"));
    if (auto sent = inst->init->SendSignal(signo); !sent) return respond(ErrorReply(sent.error().message()));
    spdlog::info("delivered {} to container {} on request", SignalName(signo), name);
    respond(nlohmann::json{{"container", name}, {"signal", SignalName(signo)}});
    return;
  }
  respond(ErrorReply("unknown op \"" + op + "\""));
}

}  // namespace podvisor::supervisor
