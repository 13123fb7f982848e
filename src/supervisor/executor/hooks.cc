// The Executor's hooks (S8) and probes (S7): exec through the runtime,
// httpGet, gRPC and tcpSocket by podvisor itself from the pod's network
// namespace (HttpClient, NetCheck), sleep on the loop's timers.
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cctype>

#include "common/log.h"

#include "oci/process_env.h"
#include "oci/spec.h"
#include "signals/spawn.h"
#include "supervisor/executor/internal.h"
#include "supervisor/probes/grpc_health.h"
#include "supervisor/probes/http_get.h"

namespace podvisor::supervisor {
namespace {

constexpr std::size_t kExecOutputMax = 10 * 1024;  // probe output kept for events
constexpr std::size_t kHookMessageMax = 1024;      // S8.4

// Probe runs are moved up to the next multiple of kProbeTick on the
// monotonic clock, so that the runs of different containers falling in
// the same tick share one wakeup of the loop, and their connects and
// replies are handled in the same batches. Wakeups, not the probes' own
// syscalls, are most of what probing costs the supervisor (bench/: 100
// containers probed every second). No run is early; none is later than
// one tick, small against periodSeconds' one-second unit, and the period
// itself is kept, since run times stay on the grid.
constexpr Duration kProbeTick = std::chrono::milliseconds(100);

MonoTime OnProbeTick(MonoTime t) {
  auto ticks = (t.time_since_epoch() + kProbeTick - Duration(1)) / kProbeTick;
  return MonoTime(ticks * kProbeTick);
}

constexpr const char* kDefaultReasonEnv = "KUBE_POD_TERM_REASON";     // S6.2
constexpr const char* kDefaultReasonHeader = "KUBE-POD-TERM-REASON";  // S6.2
// Hooks have no timeout of their own, as in the kubelet: a preStop is
// bounded by its container's kill (S5.6), exec and sleep hooks likewise.
constexpr Duration kNoTimeout{0};

std::string Truncate(std::string s, std::size_t max) {
  if (s.size() > max) s.resize(max);
  return s;
}

// "Liveness", as in the kubelet's event messages.
std::string ProbeTitle(ProbeKind kind) {
  std::string name(ProbeKindName(kind));
  if (!name.empty()) name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
  return name;
}

// The port of an httpGet/tcpSocket action: a number, or the name of one of
// the container's ports (validation made sure it exists).
int ResolvePort(const pod::IntOrString& port, const pod::Container& c) {
  if (!port.is_string) return port.int_value;
  for (const auto& p : c.ports) {
    if (p.name == port.string_value) return p.container_port;
  }
  return 0;
}

std::string ProbeKey(std::string_view container, int instance, ProbeKind kind) {
  return InstanceKey(container, instance) + "/" + std::string(ProbeKindName(kind));
}

std::string HookKey(std::string_view container, int instance, HookKind kind) {
  return InstanceKey(container, instance) + "/" + std::string(HookKindName(kind));
}

}  // namespace

const pod::Container* Executor::ContainerSpec(std::string_view name) const {
  for (const auto* list : {&pod_.spec.init_containers, &pod_.spec.containers}) {
    for (const auto& c : *list) {
      if (c.name == name) return &c;
    }
  }
  return nullptr;
}

HttpClient* Executor::Http(std::string& why) {
  if (!http_) {
    auto client = HttpClient::Create(loop_);
    if (!client) {
      why = client.error().message();
      return nullptr;
    }
    http_ = std::move(*client);
  }
  return http_.get();
}

std::string Executor::NetnsPath() const {
  return sandbox_ && sandbox_->network_ns() ? sandbox_->network_ns()->string() : std::string();
}

pid_t Executor::ExecInContainer(Instance& inst, std::string_view name,
                                const std::vector<std::string>& args,
                                const std::vector<std::string>& extra_env,
                                std::optional<Duration> timeout,
                                const std::function<void(bool ok, std::string output)>& done) {
  static uint64_t seq = 0;
  auto fail_soon = [this, done](const std::string& why) {
    loop_.AddTimer(std::chrono::steady_clock::now(), [done, why] { done(false, why); });
    return pid_t{0};
  };
  nlohmann::json process = inst.process;
  process["args"] = args;
  process["terminal"] = false;
  for (const auto& v : extra_env) process["env"].push_back(v);
  std::filesystem::path file =
      inst.dir / ("exec-" + std::string(name) + "-" + std::to_string(++seq) + ".json");
  // S14.13: the file holds the container's environment; it goes when the
  // exec could not start, when it ended, or once the runtime has read it.
  auto remove_file = [file] {
    std::error_code ec;
    std::filesystem::remove(file, ec);
    std::filesystem::remove(std::filesystem::path(file) += ".tmp", ec);  // WriteConfigFile's
  };
  if (auto s = oci::WriteConfigFile(process, file); !s) {
    remove_file();  // a partial write
    return fail_soon(s.error().message());
  }

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    remove_file();
    return fail_soon(Error::FromErrno("pipe2").message());
  }
  Fd out_r(fds[0]), out_w(fds[1]);
  auto output = std::make_shared<std::string>();
  auto timed_out = std::make_shared<bool>(false);
  int read_fd = out_r.get();
  auto pipe_holder = std::make_shared<Fd>(std::move(out_r));
  auto drain = [output, read_fd] {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(read_fd, buf, sizeof buf)) > 0) {
      if (output->size() < kExecOutputMax) output->append(buf, static_cast<std::size_t>(n));
    }
  };
  (void)loop_.Add(read_fd, EPOLLIN, [drain](uint32_t) { drain(); });

  oci::RuntimeCli cli = Runtime();
  auto timer = std::make_shared<EventLoop::TimerId>(0);
  auto finished = [this, drain, read_fd, pipe_holder, output, timed_out, timer, file, done,
                   timeout](const signals::ExitInfo& exit) {
    drain();
    loop_.Remove(read_fd);
    pipe_holder->Reset();
    if (*timer) loop_.CancelTimer(*timer);
    std::error_code ec;
    std::filesystem::remove(file, ec);
    if (*timed_out) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*timeout).count();
      done(false, "command timed out after " + std::to_string(ms) + "ms");
    } else {
      std::string out = Truncate(*output, kExecOutputMax);
      if (!exit.success() && out.empty()) out = "command " + exit.ToString();
      done(exit.success(), out);
    }
  };
  // Hooks and probes must not write into the container log (S8.4): their
  // output goes to our pipe.
  auto spawned = SpawnRuntime(cli.Exec(inst.id, file), {}, out_w.get(), out_w.get(), finished);
  if (!spawned) {
    loop_.Remove(read_fd);
    remove_file();
    return fail_soon(spawned.error().message());
  }
  ExpireExecFile(file);
  pid_t pid = *spawned;
  if (timeout) {
    *timer =
        loop_.AddTimer(std::chrono::steady_clock::now() + *timeout, [this, pid, timed_out, timer] {
          *timer = 0;
          *timed_out = true;
          // Killing the runtime's exec ends the wait for it; the process inside
          // the container may linger until the container stops.
          if (auto it = calls_.find(pid); it != calls_.end())
            (void)it->second->process.SendSignal(SIGKILL);
        });
  }
  return pid;
}

void Executor::RunHookAction(const RunHook& a) {
  const pod::Container* spec = ContainerSpec(a.container);
  Instance* inst = FindInstance(a.container, a.instance);
  const auto& lc = spec ? spec->lifecycle : std::nullopt;
  const auto& handler_opt = a.kind == HookKind::kPostStart ? (lc ? lc->post_start : std::nullopt)
                                                           : (lc ? lc->pre_stop : std::nullopt);
  std::string key = HookKey(a.container, a.instance, a.kind);
  std::string container = a.container;
  int instance = a.instance;
  HookKind kind = a.kind;
  auto finish = [this, key, container, instance, kind](bool ok, std::string message) {
    if (!hooks_.erase(key)) return;  // cancelled meanwhile (S5.6)
    Feed(
        HookFinished{container, instance, kind, ok, Truncate(std::move(message), kHookMessageMax)});
  };
  auto hook = std::make_unique<Hook>();
  hook->container = a.container;
  hook->instance = a.instance;
  hook->kind = a.kind;
  Hook& h = *hook;
  hooks_[key] = std::move(hook);
  if (!inst || !handler_opt) {
    loop_.AddTimer(std::chrono::steady_clock::now(), [finish] { finish(true, ""); });
    return;
  }
  const pod::LifecycleHandler& lh = *handler_opt;
  if (lh.handler.exec) {
    std::vector<std::string> args = lh.handler.exec->command;
    std::vector<std::string> env;
    if (a.stop_reason) {
      // S6.2: the reason as an environment variable, and $(NAME) in the
      // arguments, so it can be passed as a flag.
      std::string name = lh.reason_delivery && lh.reason_delivery->env ? *lh.reason_delivery->env
                                                                       : kDefaultReasonEnv;
      env.push_back(name + "=" + *a.stop_reason);
      std::string reason = *a.stop_reason;
      auto lookup = [&name, &reason](std::string_view var) -> std::optional<std::string> {
        if (var == name) return reason;
        return std::nullopt;  // other references stay as written
      };
      for (auto& arg : args) arg = oci::ExpandVars(arg, lookup);
    }
    h.exec_pid = ExecInContainer(*inst, HookKindName(a.kind), args, env, std::nullopt, finish);
  } else if (lh.handler.http_get) {
    const auto& get = *lh.handler.http_get;
    HttpRequest req =
        HttpGetRequest(get, ResolvePort(get.port, *spec), kHookUserAgent, kNoTimeout, NetnsPath());
    if (a.stop_reason) {
      std::string name = lh.reason_delivery && lh.reason_delivery->header
                             ? *lh.reason_delivery->header
                             : kDefaultReasonHeader;
      req.headers.emplace_back(name, *a.stop_reason);  // S6.2
    }
    std::string why;
    if (HttpClient* http = Http(why)) {
      // S8.2: an httpGet hook fails on transport errors only; the status is ignored.
      h.http = http->Start(req, [finish, req](const HttpResponse& r) {
        HttpGetVerdict v = JudgeHttpHook(req, r);
        finish(v.success, v.message);
      });
    } else {
      loop_.AddTimer(std::chrono::steady_clock::now(), [finish, why] { finish(false, why); });
    }
  } else if (lh.handler.sleep) {
    h.sleep_timer = loop_.AddTimer(
        std::chrono::steady_clock::now() + ClampedSeconds(lh.handler.sleep->seconds),  // S14.14
        [finish] { finish(true, ""); });
  } else {
    // S8.1: tcpSocket hooks are accepted and ignored, as the kubelet does.
    OnPublish(Publish{EventType::kWarning, "InvalidHook", "container/" + a.container,
                      std::string(HookKindName(a.kind)) + " tcpSocket hooks are not run"});
    loop_.AddTimer(std::chrono::steady_clock::now(), [finish] { finish(true, ""); });
  }
}

void Executor::CancelHookAction(const CancelHook& a) {
  auto it = hooks_.find(HookKey(a.container, a.instance, a.kind));
  if (it == hooks_.end()) return;
  Hook& h = *it->second;
  if (h.sleep_timer) loop_.CancelTimer(h.sleep_timer);
  if (h.exec_pid) {
    if (auto call = calls_.find(h.exec_pid); call != calls_.end()) {
      (void)call->second->process.SendSignal(SIGKILL);
    }
  }
  hooks_.erase(it);  // drops an httpGet check in flight
}

void Executor::StartProbesAction(const StartProbes& a) {
  const pod::Container* spec = ContainerSpec(a.container);
  if (!spec) return;
  const std::optional<pod::Probe>& p = a.kind == ProbeKind::kStartup     ? spec->startup_probe
                                       : a.kind == ProbeKind::kReadiness ? spec->readiness_probe
                                                                         : spec->liveness_probe;
  if (!p) return;
  auto probe = std::make_unique<Probe>(a.kind, *p);
  probe->key = ProbeKey(a.container, a.instance, a.kind);
  probe->container = a.container;
  probe->instance = a.instance;
  Probe& ref = *probe;
  probes_[probe->key] = std::move(probe);
  // S7.6: the first run initialDelaySeconds after the container started
  // (liveness and readiness may begin later, when the startup probe
  // succeeded: then at once if the delay has passed).
  MonoTime now = std::chrono::steady_clock::now();
  Duration delay = ClampedSeconds(ref.spec.initial_delay_seconds);
  ScheduleProbe(ref, a.container_started == MonoTime{}
                         ? now + delay
                         : std::max(now, a.container_started + delay));
}

void Executor::StopProbesAction(const StopProbes& a) {
  auto it = probes_.find(ProbeKey(a.container, a.instance, a.kind));
  if (it == probes_.end()) return;
  if (it->second->timer) loop_.CancelTimer(it->second->timer);
  probes_.erase(it);  // a run in flight finds no record and is dropped
}

void Executor::ScheduleProbe(Probe& probe, MonoTime at) {
  at = OnProbeTick(at);
  probe.next_run = at;
  std::string key = probe.key;
  probe.timer = loop_.AddTimer(at, [this, key] {
    auto it = probes_.find(key);
    if (it == probes_.end()) return;
    it->second->timer = 0;
    RunProbeOnce(*it->second);
  });
}

void Executor::RunProbeOnce(Probe& probe) {
  const pod::Container* spec = ContainerSpec(probe.container);
  Instance* inst = FindInstance(probe.container, probe.instance);
  if (!spec || !inst) return;
  std::string key = probe.key;
  MonoTime started = std::chrono::steady_clock::now();
  Duration timeout = ClampedSeconds(std::max(1, probe.spec.timeout_seconds));
  auto done = [this, key](bool ok, const std::string& message) {
    OnProbeOutcome(key, ok, message);
  };
  // From the time it was due, not from now: the period stays on the tick
  // grid, and a late run does not push every later one back.
  probe.next_run += ClampedSeconds(std::max(1, probe.spec.period_seconds));
  const pod::Handler& h = probe.spec.handler;
  if (h.exec) {
    probe.exec_pid =
        ExecInContainer(*inst, ProbeKindName(probe.kind), h.exec->command, {}, timeout, done);
  } else if (h.tcp_socket) {
    NetCheckSpec check;
    check.host = h.tcp_socket->host.empty() ? "127.0.0.1" : h.tcp_socket->host;
    check.port = ResolvePort(h.tcp_socket->port, *spec);
    probe.check =
        NetCheck::Start(loop_, NetnsPath(), check, timeout, [done](const NetCheckResult& r) {
          done(r.connected, r.message);  // S7.2: tcpSocket succeeds on connect
        });
  } else if (h.http_get || h.grpc) {
    std::string why;
    HttpClient* http = Http(why);
    if (!http) {
      loop_.AddTimer(started, [done, why] { done(false, why); });
    } else if (h.http_get) {
      HttpRequest req = HttpGetRequest(*h.http_get, ResolvePort(h.http_get->port, *spec),
                                       kProbeUserAgent, timeout, NetnsPath());
      std::string container = probe.container;
      ProbeKind kind = probe.kind;
      probe.http = http->Start(req, [this, done, req, container, kind](const HttpResponse& r) {
        HttpGetVerdict v = JudgeHttpProbe(req, r);  // S7.2
        if (v.warning) {
          OnPublish(Publish{EventType::kWarning, "ProbeWarning", "container/" + container,
                            ProbeTitle(kind) + " probe warning: " + v.message});
        }
        done(v.success, v.message);
      });
    } else {
      GrpcHealthCheck check;
      check.port = h.grpc->port;
      check.service = h.grpc->service.value_or("");
      check.timeout = timeout;
      check.netns = NetnsPath();
      probe.http = StartGrpcHealthCheck(*http, check, [done](const GrpcHealthResult& r) {
        done(r.serving, r.message);  // S7.1: SERVING succeeds
      });
    }
  }
}

void Executor::OnProbeOutcome(const std::string& key, bool success, const std::string& message) {
  auto it = probes_.find(key);
  if (it == probes_.end()) return;  // stopped meanwhile
  Probe& probe = *it->second;
  probe.exec_pid = 0;
  probe.check.reset();
  probe.http.reset();
  if (!success) {
    // Every failed run is an Unhealthy event, as in the kubelet; the
    // Lifecycle hears only of changes of the stored result (S7.3).
    OnPublish(
        Publish{EventType::kWarning, "Unhealthy", "container/" + probe.container,
                ProbeTitle(probe.kind) + " probe failed: " + Truncate(message, kHookMessageMax)});
  }
  std::string container = probe.container;
  int instance = probe.instance;
  ProbeKind kind = probe.kind;
  auto changed = probe.state.Record(success ? ProbeOutcome::kSuccess : ProbeOutcome::kFailure);
  // S7.4: the startup probe pauses after its result, liveness after a
  // failure, until the next instance (the Lifecycle expects no more).
  bool paused =
      changed && (kind == ProbeKind::kStartup || (kind == ProbeKind::kLiveness && !*changed));
  if (paused) {
    probes_.erase(it);
  } else {
    ScheduleProbe(probe, std::max(probe.next_run, std::chrono::steady_clock::now()));
  }
  // S7.3: only changes of the stored result reach the Lifecycle. Feeding
  // may stop this very probe, so it comes last.
  if (changed)
    Feed(ProbeResult{container, instance, kind, *changed, Truncate(message, kHookMessageMax)});
}

}  // namespace podvisor::supervisor
