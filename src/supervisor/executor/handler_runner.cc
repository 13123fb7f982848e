#include "supervisor/executor/handler_runner.h"

#include "supervisor/lifecycle/types.h"
#include "supervisor/probes/grpc_health.h"
#include "supervisor/probes/http_get.h"

namespace podvisor::supervisor::executor {

std::string TruncateMessage(std::string message, std::size_t max) {
  if (message.size() > max) message.resize(max);
  return message;
}

int ResolvePort(const pod::IntOrString& port, const pod::Container& container) {
  if (!port.is_string) return port.int_value;
  for (const auto& p : container.ports) {
    if (p.name == port.string_value) return p.container_port;
  }
  return 0;
}

namespace {

int PortOf(const pod::IntOrString& port, const pod::Container* container) {
  if (container) return ResolvePort(port, *container);
  return port.is_string ? 0 : port.int_value;
}

}  // namespace

HandlerRun::~HandlerRun() {
  *alive_ = false;
  if (timer_) loop_.CancelTimer(timer_);
}

void HandlerRun::Abort() {
  done_ = nullptr;
  // Killing the runtime's exec ends the wait for it; the process inside
  // the container may linger until the container stops.
  if (exec_pid_ && exec_) exec_->Kill(exec_pid_);
  exec_pid_ = 0;
  if (timer_) loop_.CancelTimer(timer_);
  timer_ = 0;
  check_.reset();
  http_.reset();
}

void HandlerRun::Finish(const HandlerOutcome& outcome) {
  // Moved out first: the callback may destroy this run, and with it done_.
  Done done = std::move(done_);
  done_ = nullptr;
  if (done) done(outcome);
}

void HandlerRun::FinishSoon(HandlerOutcome outcome, Duration after) {
  timer_ = loop_.AddTimer(loop_.Now() + after, [this, outcome = std::move(outcome)] {
    timer_ = 0;
    Finish(outcome);
  });
}

std::unique_ptr<HandlerRun> HandlerRunner::Start(HandlerCall call, HandlerRun::Done done) {
  std::unique_ptr<HandlerRun> run(new HandlerRun(loop_, std::move(done)));
  const pod::Handler& h = *call.handler;
  if (h.exec) {
    StartExec(*run, call);
  } else if (h.http_get) {
    StartHttpGet(*run, call);
  } else if (h.grpc) {
    StartGrpc(*run, call);
  } else if (h.tcp_socket) {
    StartTcpSocket(*run, call);
  } else if (h.sleep) {
    // A sleep does not fail (S8.2).
    run->FinishSoon(HandlerOutcome{true, "", false},
                    lifecycle::ClampedSeconds(h.sleep->seconds));  // S14.14
  } else {
    // Validation refuses a handler without an action.
    run->FinishSoon(HandlerOutcome{false, "the handler has no action", false});
  }
  return run;
}

void HandlerRunner::StartExec(HandlerRun& run, HandlerCall& call) {
  if (!call.exec) {
    run.FinishSoon(HandlerOutcome{false, "no container instance to exec in", false});
    return;
  }
  run.exec_ = std::move(call.exec);
  std::optional<Duration> timeout;
  if (call.timeout > Duration::zero()) timeout = call.timeout;
  HandlerRun* target = &run;
  std::weak_ptr<bool> alive = run.alive_;
  run.exec_pid_ = run.exec_->Start(call.name, call.handler->exec->command, call.exec_env, timeout,
                                   [target, alive](bool ok, std::string output) {
                                     auto live = alive.lock();
                                     if (!live || !*live) return;  // cancelled meanwhile
                                     target->exec_pid_ = 0;
                                     target->Finish(HandlerOutcome{ok, std::move(output), false});
                                   });
}

void HandlerRunner::StartHttpGet(HandlerRun& run, const HandlerCall& call) {
  const pod::HttpGetAction& get = *call.handler->http_get;
  bool probe = call.use == HandlerUse::kProbe;
  probes::HttpRequest req = probes::HttpGetRequest(
      get, PortOf(get.port, call.container),
      probe ? probes::kProbeUserAgent : probes::kHookUserAgent, call.timeout, call.netns);
  for (const auto& header : call.http_headers) req.headers.push_back(header);
  std::string why;
  probes::HttpClient* http = Http(why);
  if (!http) {
    run.FinishSoon(HandlerOutcome{false, why, false});
    return;
  }
  HandlerRun* target = &run;
  run.http_ = http->Start(req, [target, req, probe](const probes::HttpResponse& r) {
    // S7.2 for probes; S8.2: a hook fails on transport errors only.
    probes::HttpGetVerdict v =
        probe ? probes::JudgeHttpProbe(req, r) : probes::JudgeHttpHook(req, r);
    target->Finish(HandlerOutcome{v.success, v.message, probe && v.warning});
  });
}

void HandlerRunner::StartGrpc(HandlerRun& run, const HandlerCall& call) {
  std::string why;
  probes::HttpClient* http = Http(why);
  if (!http) {
    run.FinishSoon(HandlerOutcome{false, why, false});
    return;
  }
  probes::GrpcHealthCheck check;
  check.port = call.handler->grpc->port;
  check.service = call.handler->grpc->service.value_or("");
  check.timeout = call.timeout;
  check.netns = call.netns;
  HandlerRun* target = &run;
  run.http_ =
      probes::StartGrpcHealthCheck(*http, check, [target](const probes::GrpcHealthResult& r) {
        target->Finish(HandlerOutcome{r.serving, r.message, false});  // S7.1: SERVING succeeds
      });
}

void HandlerRunner::StartTcpSocket(HandlerRun& run, const HandlerCall& call) {
  const pod::TcpSocketAction& tcp = *call.handler->tcp_socket;
  probes::NetCheckSpec check;
  check.host = tcp.host.empty() ? "127.0.0.1" : tcp.host;
  check.port = PortOf(tcp.port, call.container);
  HandlerRun* target = &run;
  run.check_ = probes::NetCheck::Start(
      loop_, call.netns, check, call.timeout, [target](const probes::NetCheckResult& r) {
        // S7.2: tcpSocket succeeds on connect.
        target->Finish(HandlerOutcome{r.connected, r.message, false});
      });
}

probes::HttpClient* HandlerRunner::Http(std::string& why) {
  if (!http_) {
    auto client = probes::HttpClient::Create(loop_);
    if (!client) {
      why = client.error().message();
      return nullptr;
    }
    http_ = std::move(*client);
  }
  return http_.get();
}

}  // namespace podvisor::supervisor::executor
