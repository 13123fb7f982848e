// The Executor's control socket requests (docs/INTERFACE.md "Control socket").
#include <csignal>

#include "common/log.h"

#include "common/signal_names.h"

#include "oci/spec.h"
#include "pod/serialize.h"
#include "pod/status_summary.h"
#include "supervisor/executor/internal.h"

namespace podvisor::supervisor {
namespace {

constexpr std::size_t kMaxReasonBytes = 256;  // S6.1

nlohmann::json BadRequest(std::string message) {
  return ControlErrorReply(ControlCode::kInvalidArgument, std::move(message));
}

nlohmann::json NoContainer(const std::string& name) {
  return ControlErrorReply(ControlCode::kNotFound, "no container named " + name);
}

nlohmann::json NotRunning(const std::string& name) {
  return ControlErrorReply(ControlCode::kFailedPrecondition,
                           "container " + name + " is not running");
}

// S6.1: any non-empty string of printable ASCII up to 256 bytes.
std::optional<std::string> CheckReason(const std::string& reason) {
  if (reason.empty()) return "reason must not be empty";
  if (reason.size() > kMaxReasonBytes) return "reason is longer than 256 bytes";
  for (unsigned char c : reason) {
    if (c < 0x20 || c > 0x7e) return "reason must be printable ASCII";
  }
  return std::nullopt;
}

}  // namespace

// What `podvisor status` and `list` print: kubectl's columns, from the
// typed status at hand by the summariser the CLI uses on a record
// (pod/status_summary.h).
nlohmann::json Executor::SummaryJson() const {
  pod::PodStatus status = lifecycle_.Status();
  WallTime now = loop_.clock().WallNow();
  pod::PodFacts facts{pod_.metadata.name, created_at_, options_.node_hostname,
                      pod_ips_.empty() ? std::string("<none>") : pod_ips_.front()};
  const pod::PodLine line = pod::SummarizePodLine(pod_.spec, status, facts, now);
  nlohmann::json out = {{"name", line.name},
                        {"ready", line.ready},
                        {"status", line.status},
                        {"restarts", line.restarts},
                        {"age", line.age},
                        {"node", line.node},
                        {"ip", line.ip},
                        {"phase", std::string(pod::PodPhaseName(status.phase))},
                        {"containers", nlohmann::json::array()}};
  for (const pod::ContainerLine& c : line.containers) {
    out["containers"].push_back({{"name", c.name},
                                 {"type", c.type},
                                 {"ready", c.ready},
                                 {"started", c.started},
                                 {"state", c.state},
                                 {"lastState", c.last_state},
                                 {"restarts", c.restart_count},
                                 {"restartsColumn", c.restarts},
                                 {"image", c.image},
                                 {"containerID", c.container_id}});
  }
  return out;
}

void Executor::OnControlRequest(const nlohmann::json& request, ControlServer::Responder respond) {
  auto op_it = request.find("op");
  if (op_it == request.end() || !op_it->is_string()) {
    respond(BadRequest("request needs a string \"op\""));
    return;
  }
  const std::string op = op_it->get<std::string>();
  if (op == "status") {
    auto output = request.find("output");
    if (output == request.end() || output->is_null()) {
      // Serialized once per state change, however many clients ask.
      if (!status_reply_) status_reply_.emplace(StatusJson());
      return respond(*status_reply_);
    }
    // The text `podvisor status` prints, for a client that does not
    // format it itself (cli/early_client.h).
    if (!output->is_string() || (*output != "table" && *output != "wide")) {
      return respond(BadRequest("\"output\" must be \"table\" or \"wide\""));
    }
    if (!options_.status_text)
      return respond(
          ControlErrorReply(ControlCode::kUnimplemented, "this supervisor prints no status text"));
    return respond(nlohmann::json{{"text", options_.status_text(StatusJson(), *output == "wide")}});
  }
  if (op == "summary") {
    respond(SummaryJson());
    return;
  }
  if (op == "stop") {
    StopRequested stop;
    if (auto r = request.find("reason"); r != request.end() && !r->is_null()) {
      if (!r->is_string()) return respond(BadRequest("\"reason\" must be a string"));
      if (auto bad = CheckReason(r->get<std::string>())) return respond(BadRequest(*bad));
      stop.reason = r->get<std::string>();
    }
    if (auto g = request.find("grace"); g != request.end() && !g->is_null()) {
      if (!g->is_number() || g->get<double>() < 0 || g->get<double>() > 1e9) {
        return respond(BadRequest("\"grace\" must be a number of seconds >= 0"));
      }
      stop.grace =
          std::chrono::duration_cast<Duration>(std::chrono::duration<double>(g->get<double>()));
    }
    bool wait = true;
    if (auto w = request.find("wait"); w != request.end() && w->is_boolean()) wait = w->get<bool>();
    if (finished_) return respond(StatusJson());
    // `stop --no-wait` gets its answer before the log line, as kill does.
    if (wait) {
      stop_waiters_.push_back(std::move(respond));
    } else {
      respond(nlohmann::json{{"stopping", true}});
    }
    log::Info("stop requested{}", stop.reason ? " (reason " + *stop.reason + ")" : "");
    Feed(std::move(stop));
    return;
  }
  if (op == "kill") {
    auto c = request.find("container");
    auto s = request.find("signal");
    if (c == request.end() || !c->is_string())
      return respond(BadRequest("\"container\" must be a string"));
    int signo = SIGKILL;
    if (s != request.end() && !s->is_null()) {
      if (s->is_number_integer()) {
        signo = s->get<int>();
      } else if (s->is_string()) {
        auto parsed = ParseSignal(s->get<std::string>());
        if (!parsed) return respond(BadRequest("unknown signal " + s->get<std::string>()));
        signo = *parsed;
      } else {
        return respond(BadRequest("\"signal\" must be a number or a name"));
      }
    }
    if (signo < 1 || signo > SIGRTMAX) return respond(BadRequest("signal out of range"));
    std::string name = c->get<std::string>();
    if (!ContainerSpec(name)) return respond(NoContainer(name));
    if (lifecycle_.StateOf(name) != RunState::kRunning &&
        lifecycle_.StateOf(name) != RunState::kStarting) {
      return respond(NotRunning(name));
    }
    Instance* inst = FindInstance(name, lifecycle_.InstanceOf(name));
    if (!inst || !inst->init || inst->state.Exited()) return respond(NotRunning(name));
    if (auto sent = inst->init->SendSignal(signo); !sent)
      return respond(ControlErrorReply(ControlCode::kInternal, sent.error().message()));
    // The answer first: the client (podvisor kill) is waiting for it, the
    // log line is not.
    respond(nlohmann::json{{"container", name}, {"signal", SignalName(signo)}});
    log::Info("delivered {} to container {} on request", SignalName(signo), name);
    return;
  }
  if (op == "exec") return respond(ExecCommand(request));
  if (op == "netns") {
    // port-forward connects from inside the pod's network namespace; ""
    // is the host's (hostNetwork, or no sandbox).
    return respond(nlohmann::json{{"path", NetnsPath()}});
  }
  respond(ControlErrorReply(ControlCode::kUnimplemented, "unknown op \"" + op + "\""));
}

// `podvisor exec` (docs/INTERFACE.md): the runtime command line that runs
// `args` in the container's current instance, with the container's own
// process settings (env, user, cwd, capabilities) as the kubelet's exec
// uses them. The client runs it, so its stdin and terminal are the
// process's; the supervisor only writes the process file beside the
// instance's bundle. S14.13: the file holds the container's environment:
// it is removed once the client's runtime has had time to read it, by the
// client when its command ends, and with the instance's delete.
nlohmann::json Executor::ExecCommand(const nlohmann::json& request) {
  auto c = request.find("container");
  auto a = request.find("args");
  if (c == request.end() || !c->is_string()) return BadRequest("\"container\" must be a string");
  if (a == request.end() || !a->is_array() || a->empty()) {
    return BadRequest("\"args\" must be a non-empty array of strings");
  }
  std::vector<std::string> args;
  for (const auto& arg : *a) {
    if (!arg.is_string()) return BadRequest("\"args\" must be a non-empty array of strings");
    args.push_back(arg.get<std::string>());
  }
  bool tty = false;
  if (auto t = request.find("tty"); t != request.end() && t->is_boolean()) tty = t->get<bool>();
  std::string console_socket;
  if (auto s = request.find("console_socket"); s != request.end() && s->is_string()) {
    console_socket = s->get<std::string>();
  }
  if (tty && console_socket.empty()) return BadRequest("a terminal needs \"console_socket\"");
  std::string name = c->get<std::string>();
  if (!ContainerSpec(name)) return NoContainer(name);
  Instance* inst = FindInstance(name, lifecycle_.InstanceOf(name));
  if (lifecycle_.StateOf(name) != RunState::kRunning || !inst || !inst->init ||
      inst->state.Exited()) {
    return NotRunning(name);
  }
  static uint64_t seq = 0;
  nlohmann::json process = inst->process;
  process["args"] = args;
  process["terminal"] = tty;
  // The client's window size, set by the runtime before CMD starts (a
  // resize after the start would race with CMD's first look at it).
  if (auto size = request.find("console_size"); tty && size != request.end() && size->is_object()) {
    int height = size->value("height", 0), width = size->value("width", 0);
    if (height > 0 && width > 0 && height < 65536 && width < 65536) {
      process["consoleSize"] = {{"height", height}, {"width", width}};
    }
  }
  std::filesystem::path file = inst->dir / ("exec-client-" + std::to_string(++seq) + ".json");
  if (auto s = oci::WriteConfigFile(process, file); !s) {
    std::error_code ec;
    // S14.13: a partial write (WriteConfigFile writes FILE.tmp, then renames).
    std::filesystem::remove(file, ec);
    std::filesystem::remove(std::filesystem::path(file) += ".tmp", ec);
    return ControlErrorReply(ControlCode::kInternal, s.error().message());
  }
  ExpireExecFile(file);
  std::vector<std::string> argv = Runtime().Exec(inst->id, file).argv;
  // The id stays last. runc and crun take a console socket only when they
  // detach: the process then outlives them, and the client, a child
  // subreaper, collects its exit (exec_cmd.cc).
  if (tty) {
    argv.insert(argv.end() - 1, {"--detach", "--console-socket", console_socket, "--pid-file",
                                 std::filesystem::path(console_socket).parent_path() / "exec.pid"});
  }
  log::Info("exec in container {}: {}", name, args.front());
  return {{"argv", argv}, {"processFile", file.string()}};
}

}  // namespace podvisor::supervisor
