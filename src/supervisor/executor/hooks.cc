// HooksAndProbes' lifecycle hooks (S8) and what hooks and probes
// (probes.cc) share: a RunHook runs the container's postStart or preStop
// handler once on the HandlerRunner and answers with HookFinished; a
// CancelHook (S5.6) drops it. The Executor's side of the exec is
// runtime_exec.cc.
#include "supervisor/executor/hooks_probes.h"

#include "oci/process_env.h"

namespace podvisor::supervisor::executor {
namespace {

constexpr const char* kDefaultReasonEnv = "KUBE_POD_TERM_REASON";     // S6.2
constexpr const char* kDefaultReasonHeader = "KUBE-POD-TERM-REASON";  // S6.2

std::string HookKey(std::string_view container, int instance, lifecycle::HookKind kind) {
  return std::string(container) + "#" + std::to_string(instance) + "/" +
         std::string(lifecycle::HookKindName(kind));
}

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

HooksAndProbes::HooksAndProbes(loop::EventLoop& loop, const pod::Pod& pod, Seams seams)
    : loop_(loop), pod_(pod), seams_(std::move(seams)) {}

HooksAndProbes::~HooksAndProbes() {
  Clear();  // before the runner their runs use
}

void HooksAndProbes::Clear() {
  probes_.clear();
  hooks_.clear();
}

const pod::Container* HooksAndProbes::ContainerSpec(std::string_view name) const {
  for (const auto* list : {&pod_.spec.init_containers, &pod_.spec.containers}) {
    for (const auto& c : *list) {
      if (c.name == name) return &c;
    }
  }
  return nullptr;
}

HandlerRunner& HooksAndProbes::Handlers() {
  if (!handlers_) handlers_ = std::make_unique<HandlerRunner>(loop_);
  return *handlers_;
}

void HooksAndProbes::RunHookAction(const lifecycle::RunHook& a) {
  const pod::Container* spec = ContainerSpec(a.container);
  std::unique_ptr<InstanceExec> exec = seams_.exec_in(a.container, a.instance);
  const auto& lc = spec ? spec->lifecycle : std::nullopt;
  const auto& handler_opt = a.kind == lifecycle::HookKind::kPostStart
                                ? (lc ? lc->post_start : std::nullopt)
                                : (lc ? lc->pre_stop : std::nullopt);
  std::string key = HookKey(a.container, a.instance, a.kind);
  auto finish = [this, key, container = a.container, instance = a.instance, kind = a.kind](
                    bool ok, const std::string& message) {
    if (!hooks_.erase(key)) return;  // cancelled meanwhile (S5.6)
    seams_.feed(lifecycle::HookFinished{container, instance, kind, ok, TruncateMessage(message)});
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
  if (!exec || !handler_opt) return succeed_soon();
  const pod::LifecycleHandler& lh = *handler_opt;
  if (!lh.handler.exec && !lh.handler.http_get && !lh.handler.sleep) {
    // S8.1: tcpSocket hooks are accepted and ignored, as the kubelet does.
    seams_.publish(lifecycle::Publish{
        lifecycle::EventType::kWarning, "InvalidHook", "container/" + a.container,
        std::string(lifecycle::HookKindName(a.kind)) + " tcpSocket hooks are not run"});
    return succeed_soon();
  }
  pod::Handler handler = lh.handler;  // the stop reason may expand into its arguments
  HandlerCall call;
  call.use = HandlerUse::kHook;
  call.name = lifecycle::HookKindName(a.kind);
  call.container = spec;
  // Hooks have no timeout of their own, as in the kubelet: a preStop is
  // bounded by its container's kill (S5.6), exec and sleep hooks likewise.
  call.timeout = Duration::zero();
  call.netns = seams_.netns_path();
  if (handler.exec) call.exec = std::move(exec);
  if (a.stop_reason) AddStopReason(lh, *a.stop_reason, call, handler);
  call.handler = &handler;
  h.run = Handlers().Start(std::move(call),
                           [finish](const HandlerOutcome& o) { finish(o.success, o.message); });
}

void HooksAndProbes::CancelHookAction(const lifecycle::CancelHook& a) {
  auto it = hooks_.find(HookKey(a.container, a.instance, a.kind));
  if (it == hooks_.end()) return;
  if (it->second->run) it->second->run->Abort();  // kills an exec hook's runtime exec
  hooks_.erase(it);                               // drops an httpGet request in flight
}

}  // namespace podvisor::supervisor::executor
