// The Executor's lifecycle hooks (S8) on the HandlerRunner, and what hooks
// and probes (probes.cc) share: the exec through the runtime that the
// runner reaches through InstanceExec, the container's spec, the pod's
// network namespace.
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/log.h"

#include "oci/process_env.h"
#include "oci/spec.h"
#include "signals/spawn.h"
#include "supervisor/executor/internal.h"

namespace podvisor::supervisor {
namespace {

constexpr std::size_t kExecOutputMax = 10 * 1024;  // probe output kept for events

constexpr const char* kDefaultReasonEnv = "KUBE_POD_TERM_REASON";     // S6.2
constexpr const char* kDefaultReasonHeader = "KUBE-POD-TERM-REASON";  // S6.2

std::string HookKey(std::string_view container, int instance, HookKind kind) {
  return InstanceKey(container, instance) + "/" + std::string(HookKindName(kind));
}

// The process of an exec: the container's own, with other arguments and
// more environment, and no terminal.
nlohmann::json ExecProcess(const nlohmann::json& container_process,
                           const std::vector<std::string>& args,
                           const std::vector<std::string>& extra_env) {
  nlohmann::json process = container_process;
  process["args"] = args;
  process["terminal"] = false;
  for (const auto& v : extra_env) process["env"].push_back(v);
  return process;
}

// S14.13: the exec's process file holds the container's environment; it
// goes when the exec could not start, when it ended, or once the runtime
// has read it.
void RemoveExecFile(const std::filesystem::path& file) {
  std::error_code ec;
  std::filesystem::remove(file, ec);
  std::filesystem::remove(std::filesystem::path(file) += ".tmp", ec);  // WriteConfigFile's
}

}  // namespace

// InstanceExec through the runtime's exec, by runtime id: a failed create
// is retried under the same instance number with a new id.
class Executor::RuntimeExec final : public InstanceExec {
 public:
  RuntimeExec(Executor& executor, std::string id) : executor_(executor), id_(std::move(id)) {}

  pid_t Start(std::string_view name, const std::vector<std::string>& args,
              const std::vector<std::string>& extra_env, std::optional<Duration> timeout,
              Done done) override {
    Instance* inst = executor_.FindById(id_);
    if (!inst) {
      executor_.loop_.AddTimer(executor_.loop_.Now(),
                               [done] { done(false, "the container instance is gone"); });
      return 0;
    }
    return executor_.ExecInContainer(*inst, name, args, extra_env, timeout, done);
  }

  void Kill(pid_t pid) override {
    if (auto call = executor_.calls_.find(pid); call != executor_.calls_.end()) {
      (void)call->second->process.SendSignal(SIGKILL);
    }
  }

 private:
  Executor& executor_;
  std::string id_;
};

std::unique_ptr<InstanceExec> Executor::ExecIn(const Instance& inst) {
  return std::make_unique<RuntimeExec>(*this, inst.id);
}

const pod::Container* Executor::ContainerSpec(std::string_view name) const {
  for (const auto* list : {&pod_.spec.init_containers, &pod_.spec.containers}) {
    for (const auto& c : *list) {
      if (c.name == name) return &c;
    }
  }
  return nullptr;
}

HandlerRunner& Executor::Handlers() {
  if (!handlers_) handlers_ = std::make_unique<HandlerRunner>(loop_);
  return *handlers_;
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
    loop_.AddTimer(loop_.Now(), [done, why] { done(false, why); });
    return pid_t{0};
  };
  std::filesystem::path file =
      inst.dir / ("exec-" + std::string(name) + "-" + std::to_string(++seq) + ".json");
  auto remove_file = [file] { RemoveExecFile(file); };
  if (auto s = oci::WriteConfigFile(ExecProcess(inst.process, args, extra_env), file); !s) {
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
      std::string out = TruncateMessage(*output, kExecOutputMax);
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
    *timer = loop_.AddTimer(loop_.Now() + *timeout, [this, pid, timed_out, timer] {
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

namespace {

// S6.2: a preStop hook learns why the pod stops, through an environment
// variable (and $(NAME) in its arguments, so it can be passed as a flag)
// or an httpGet header.
void AddStopReason(const pod::LifecycleHandler& lh, const std::string& reason, HandlerCall& call,
                   pod::Handler& handler) {
  if (handler.exec) {
    std::string name = lh.reason_delivery && lh.reason_delivery->env ? *lh.reason_delivery->env
                                                                     : kDefaultReasonEnv;
    call.exec_env.push_back(name + "=" + reason);
    auto lookup = [&name, &reason](std::string_view var) -> std::optional<std::string> {
      if (var == name) return reason;
      return std::nullopt;  // other references stay as written
    };
    for (auto& arg : handler.exec->command) arg = oci::ExpandVars(arg, lookup);
  } else if (handler.http_get) {
    std::string name = lh.reason_delivery && lh.reason_delivery->header
                           ? *lh.reason_delivery->header
                           : kDefaultReasonHeader;
    call.http_headers.emplace_back(name, reason);
  }
}

}  // namespace

void Executor::RunHookAction(const RunHook& a) {
  const pod::Container* spec = ContainerSpec(a.container);
  Instance* inst = FindInstance(a.container, a.instance);
  const auto& lc = spec ? spec->lifecycle : std::nullopt;
  const auto& handler_opt = a.kind == HookKind::kPostStart ? (lc ? lc->post_start : std::nullopt)
                                                           : (lc ? lc->pre_stop : std::nullopt);
  std::string key = HookKey(a.container, a.instance, a.kind);
  auto finish = [this, key, container = a.container, instance = a.instance, kind = a.kind](
                    bool ok, const std::string& message) {
    if (!hooks_.erase(key)) return;  // cancelled meanwhile (S5.6)
    Feed(HookFinished{container, instance, kind, ok, TruncateMessage(message)});
  };
  auto succeed_soon = [this, finish] {
    loop_.AddTimer(loop_.Now(), [finish] { finish(true, ""); });
  };
  auto hook = std::make_unique<Hook>();
  hook->container = a.container;
  hook->instance = a.instance;
  hook->kind = a.kind;
  Hook& h = *hook;
  hooks_[key] = std::move(hook);
  if (!inst || !handler_opt) return succeed_soon();
  const pod::LifecycleHandler& lh = *handler_opt;
  if (!lh.handler.exec && !lh.handler.http_get && !lh.handler.sleep) {
    // S8.1: tcpSocket hooks are accepted and ignored, as the kubelet does.
    OnPublish(Publish{EventType::kWarning, "InvalidHook", "container/" + a.container,
                      std::string(HookKindName(a.kind)) + " tcpSocket hooks are not run"});
    return succeed_soon();
  }
  pod::Handler handler = lh.handler;  // the stop reason may expand into its arguments
  HandlerCall call;
  call.use = HandlerUse::kHook;
  call.name = HookKindName(a.kind);
  call.container = spec;
  // Hooks have no timeout of their own, as in the kubelet: a preStop is
  // bounded by its container's kill (S5.6), exec and sleep hooks likewise.
  call.timeout = Duration::zero();
  call.netns = NetnsPath();
  if (handler.exec) call.exec = ExecIn(*inst);
  if (a.stop_reason) AddStopReason(lh, *a.stop_reason, call, handler);
  call.handler = &handler;
  h.run = Handlers().Start(std::move(call),
                           [finish](const HandlerOutcome& o) { finish(o.success, o.message); });
}

void Executor::CancelHookAction(const CancelHook& a) {
  auto it = hooks_.find(HookKey(a.container, a.instance, a.kind));
  if (it == hooks_.end()) return;
  if (it->second->run) it->second->run->Abort();  // kills an exec hook's runtime exec
  hooks_.erase(it);                               // drops an httpGet request in flight
}

}  // namespace podvisor::supervisor
