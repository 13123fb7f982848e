#include "supervisor/control/control_api.h"

#include <csignal>
#include <variant>

#include "common/log.h"
#include "common/signal_names.h"

namespace podvisor::supervisor::control {
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

// A stop's "reason" and "grace"; the error reply when one is bad.
std::variant<StopOrder, nlohmann::json> ReadStopOrder(const nlohmann::json& request) {
  StopOrder stop;
  if (auto r = request.find("reason"); r != request.end() && !r->is_null()) {
    if (!r->is_string()) return BadRequest("\"reason\" must be a string");
    if (auto bad = CheckReason(r->get<std::string>())) return BadRequest(*bad);
    stop.reason = r->get<std::string>();
  }
  if (auto g = request.find("grace"); g != request.end() && !g->is_null()) {
    if (!g->is_number() || g->get<double>() < 0 || g->get<double>() > 1e9) {
      return BadRequest("\"grace\" must be a number of seconds >= 0");
    }
    stop.grace =
        std::chrono::duration_cast<Duration>(std::chrono::duration<double>(g->get<double>()));
  }
  return stop;
}

// kill's "signal": a number or a name, SIGKILL when absent; the error
// reply when it is no signal.
std::variant<int, nlohmann::json> ReadSignal(const nlohmann::json& request) {
  int signo = SIGKILL;
  if (auto s = request.find("signal"); s != request.end() && !s->is_null()) {
    if (s->is_number_integer()) {
      signo = s->get<int>();
    } else if (s->is_string()) {
      auto parsed = ParseSignal(s->get<std::string>());
      if (!parsed) return BadRequest("unknown signal " + s->get<std::string>());
      signo = *parsed;
    } else {
      return BadRequest("\"signal\" must be a number or a name");
    }
  }
  if (signo < 1 || signo > SIGRTMAX) return BadRequest("signal out of range");
  return signo;
}

// exec's fields but the container's state; the error reply when one is bad.
std::variant<ExecOrder, nlohmann::json> ReadExecOrder(const nlohmann::json& request) {
  ExecOrder order;
  auto c = request.find("container");
  auto a = request.find("args");
  if (c == request.end() || !c->is_string()) return BadRequest("\"container\" must be a string");
  if (a == request.end() || !a->is_array() || a->empty()) {
    return BadRequest("\"args\" must be a non-empty array of strings");
  }
  for (const auto& arg : *a) {
    if (!arg.is_string()) return BadRequest("\"args\" must be a non-empty array of strings");
    order.args.push_back(arg.get<std::string>());
  }
  if (auto t = request.find("tty"); t != request.end() && t->is_boolean())
    order.tty = t->get<bool>();
  if (auto s = request.find("console_socket"); s != request.end() && s->is_string()) {
    order.console_socket = s->get<std::string>();
  }
  if (order.tty && order.console_socket.empty()) {
    return BadRequest("a terminal needs \"console_socket\"");
  }
  order.container = c->get<std::string>();
  // The client's window size, set by the runtime before CMD starts (a
  // resize after the start would race with CMD's first look at it). One
  // out of range is left out, not refused.
  if (auto size = request.find("console_size");
      order.tty && size != request.end() && size->is_object()) {
    int height = size->value("height", 0), width = size->value("width", 0);
    if (height > 0 && width > 0 && height < 65536 && width < 65536) {
      order.console_size = {height, width};
    }
  }
  return order;
}

// upgrade's "binary" and "timeout_ms" (S15.2); the error reply when one is
// bad. The binary itself (there, executable, able to read the handover)
// is the supervisor's to check: only it knows what it runs.
std::variant<UpgradeOrder, nlohmann::json> ReadUpgradeOrder(const nlohmann::json& request) {
  UpgradeOrder order{std::nullopt, std::chrono::milliseconds(kDefaultUpgradeTimeoutMs)};
  if (auto b = request.find("binary"); b != request.end() && !b->is_null()) {
    if (!b->is_string() || b->get<std::string>().empty() || b->get<std::string>().front() != '/' ||
        b->get<std::string>().find('\0') != std::string::npos) {
      return BadRequest("\"binary\" must be an absolute path");
    }
    order.binary = b->get<std::string>();
  }
  if (auto t = request.find("timeout_ms"); t != request.end() && !t->is_null()) {
    if (!t->is_number_integer() || t->get<int64_t>() < 1 ||
        t->get<int64_t>() > kMaxUpgradeTimeoutMs) {
      return BadRequest("\"timeout_ms\" must be an integer from 1 to " +
                        std::to_string(kMaxUpgradeTimeoutMs));
    }
    order.timeout = std::chrono::milliseconds(t->get<int64_t>());
  }
  return order;
}

}  // namespace

void ControlApi::Handle(const nlohmann::json& request, ControlServer::Responder respond) {
  auto op_it = request.find("op");
  if (op_it == request.end() || !op_it->is_string()) {
    respond(BadRequest("request needs a string \"op\""));
    return;
  }
  const std::string op = op_it->get<std::string>();
  if (op == "status") return Status(request, respond);
  if (op == "summary") return respond(pod_.Summary());
  if (op == "stop") return Stop(request, std::move(respond));
  if (op == "kill") return Kill(request, respond);
  if (op == "exec") return respond(Exec(request));
  if (op == "upgrade") return Upgrade(request, std::move(respond));
  if (op == "resize") return respond(Resize(request));
  if (op == "netns") {
    // port-forward connects from inside the pod's network namespace; ""
    // is the host's (hostNetwork, or no sandbox).
    return respond(nlohmann::json{{"path", pod_.NetnsPath()}});
  }
  respond(ControlErrorReply(ControlCode::kUnimplemented, "unknown op \"" + op + "\""));
}

void ControlApi::Status(const nlohmann::json& request, const ControlServer::Responder& respond) {
  auto output = request.find("output");
  if (output == request.end() || output->is_null()) return respond(pod_.StatusReply());
  // The text `podvisor status` prints, for a client that does not format
  // it itself (cli/early_client.h).
  if (!output->is_string() || (*output != "table" && *output != "wide")) {
    return respond(BadRequest("\"output\" must be \"table\" or \"wide\""));
  }
  std::optional<std::string> text = pod_.StatusText(*output == "wide");
  if (!text) {
    return respond(
        ControlErrorReply(ControlCode::kUnimplemented, "this supervisor prints no status text"));
  }
  respond(nlohmann::json{{"text", *text}});
}

void ControlApi::Stop(const nlohmann::json& request, ControlServer::Responder respond) {
  auto read = ReadStopOrder(request);
  if (auto* bad = std::get_if<nlohmann::json>(&read)) return respond(*bad);
  StopOrder stop = std::get<StopOrder>(std::move(read));
  bool wait = true;
  if (auto w = request.find("wait"); w != request.end() && w->is_boolean()) wait = w->get<bool>();
  if (auto final_status = pod_.FinalStatus()) return respond(*final_status);
  // `stop --no-wait` gets its answer before the log line, as kill does.
  if (!wait) {
    respond(nlohmann::json{{"stopping", true}});
    respond = nullptr;
  }
  log::Info("stop requested{}", stop.reason ? " (reason " + *stop.reason + ")" : "");
  pod_.RequestStop(std::move(stop), std::move(respond));
}

void ControlApi::Kill(const nlohmann::json& request, const ControlServer::Responder& respond) {
  auto c = request.find("container");
  if (c == request.end() || !c->is_string()) {
    return respond(BadRequest("\"container\" must be a string"));
  }
  auto read = ReadSignal(request);
  if (auto* bad = std::get_if<nlohmann::json>(&read)) return respond(*bad);
  const int signo = std::get<int>(read);
  const std::string name = c->get<std::string>();
  switch (pod_.RunOf(name)) {
    case ContainerRun::kUnknown:
      return respond(NoContainer(name));
    case ContainerRun::kNotRunning:
      return respond(NotRunning(name));
    case ContainerRun::kStarting:
    case ContainerRun::kRunning:
      break;
  }
  if (auto sent = pod_.SignalContainer(name, signo); !sent) {
    return respond(ControlErrorReply(ControlCode::kInternal, sent.error().message()));
  }
  // The answer first: the client (podvisor kill) is waiting for it, the
  // log line is not.
  respond(nlohmann::json{{"container", name}, {"signal", SignalName(signo)}});
  log::Info("delivered {} to container {} on request", SignalName(signo), name);
}

void ControlApi::Upgrade(const nlohmann::json& request, ControlServer::Responder respond) {
  auto read = ReadUpgradeOrder(request);
  if (auto* bad = std::get_if<nlohmann::json>(&read)) return respond(*bad);
  UpgradeOrder order = std::get<UpgradeOrder>(std::move(read));
  log::Info("upgrade requested ({}, timeout {} ms)",
            order.binary ? "binary " + *order.binary : "the binary at the original path",
            std::chrono::duration_cast<std::chrono::milliseconds>(order.timeout).count());
  pod_.RequestUpgrade(std::move(order), std::move(respond));
}

// S17: `podvisor patch --subresource resize`. The request's shape is
// checked here (InvalidArgument, as the API server answers a patch it
// cannot decode); the API server's rules on the merged pod are the pod's.
ControlReply ControlApi::Resize(const nlohmann::json& request) {
  auto containers = request.find("containers");
  if (containers == request.end()) return BadRequest("\"containers\" must be a list");
  auto patch = pod::ParseResizeContainers(*containers);
  if (!patch) return BadRequest(patch.error().message());
  for (const pod::ContainerResizePatch& p : *patch) {
    if (pod_.RunOf(p.name) == ContainerRun::kUnknown) return NoContainer(p.name);
  }
  return pod_.Resize(*patch);
}

// `podvisor exec` (docs/INTERFACE.md): the runtime command line that runs
// `args` in the container's current instance; the client runs it, so its
// stdin and terminal are the process's.
nlohmann::json ControlApi::Exec(const nlohmann::json& request) {
  auto read = ReadExecOrder(request);
  if (auto* bad = std::get_if<nlohmann::json>(&read)) return *bad;
  const ExecOrder& order = std::get<ExecOrder>(read);
  switch (pod_.RunOf(order.container)) {
    case ContainerRun::kUnknown:
      return NoContainer(order.container);
    case ContainerRun::kNotRunning:
    case ContainerRun::kStarting:
      return NotRunning(order.container);
    case ContainerRun::kRunning:
      break;
  }
  auto plan = pod_.PrepareExec(order);
  if (!plan) return ControlErrorReply(ControlCode::kInternal, plan.error().message());
  log::Info("exec in container {}: {}", order.container, order.args.front());
  nlohmann::json reply = {{"argv", plan->argv}, {"processFile", plan->process_file}};
  if (plan->join_namespaces_of > 0) reply["joinNamespacesOf"] = plan->join_namespaces_of;
  return reply;
}

}  // namespace podvisor::supervisor::control
