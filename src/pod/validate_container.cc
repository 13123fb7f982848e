// Container checks of ValidatePod: image, restartPolicy vocabulary (S1),
// env, ports, volume mounts, resources, lifecycle hooks with reasonDelivery
// (S6.3), probes (S7.1), and the container and pod security contexts. The
// Validator and the name rules they use are in validate_internal.h.
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/signal_names.h"
#include "pod/config_objects.h"
#include "pod/env_resolution.h"
#include "pod/validate.h"
#include "pod/validate_internal.h"

namespace podvisor::pod::internal {
namespace {

// Not an API limit: a header name longer than this is a mistake, and HTTP
// servers commonly cap a whole header line at a few KiB.
constexpr std::size_t kReasonHeaderMaxLength = 256;

// Native resources are unprefixed or in the kubernetes.io domain; anything
// else with a domain prefix is an extended resource (a device plugin's).
bool IsNativeResource(std::string_view name) {
  return name.find('/') == std::string_view::npos ||
         name.find("kubernetes.io/") != std::string_view::npos;
}

}  // namespace

void Validator::CheckContainer(const Container& c, const std::string& path, Role role) {
  if (c.image.empty()) {
    Add(Required(path + ".image"));
  } else if (c.image.find_first_of(" \t\n\r\f\v") == 0 ||
             c.image.find_last_of(" \t\n\r\f\v") == c.image.size() - 1) {
    Add(Invalid(path + ".image", Q(c.image), "must not have leading or trailing whitespace"));
  }
  // S1 vocabulary: only an init-list entry may carry restartPolicy, and only
  // "Always" (which makes it a sidecar).
  if (c.restart_policy) {
    if (role == Role::kRegular) {
      Add(Forbidden(path + ".restartPolicy", "may not be set for non-init containers"));
    } else if (role == Role::kInit) {
      Add(Unsupported(path + ".restartPolicy", Q(RestartPolicyName(*c.restart_policy)),
                      {"Always"}));
    }
  }
  if (!c.working_dir.empty() && c.working_dir.front() != '/') {
    Add(Invalid(path + ".workingDir", Q(c.working_dir), kAbsolutePathMsg));
  }
  if (c.termination_message_path.empty()) {
    Add(Required(path + ".terminationMessagePath"));
  } else if (c.termination_message_path.front() != '/') {
    Add(Invalid(path + ".terminationMessagePath", Q(c.termination_message_path), kAbsolutePathMsg));
  }
  CheckEnv(c, path);
  CheckPorts(c, path);
  CheckResources(c.resources, path + ".resources");
  CheckResizePolicy(c, path + ".resizePolicy", role);
  CheckMounts(c, path);
  // podvisor's own limits (docs/INTERFACE.md): a container's output goes
  // through pipes to its log, and nothing attaches to it.
  if (c.tty) {
    Add(Forbidden(path + ".tty",
                  "podvisor gives containers pipes to their log, not a terminal; "
                  "remove tty: true"));
  }
  if (c.stdin) {
    Add(Forbidden(path + ".stdin",
                  "podvisor attaches nothing to a container's stdin; remove "
                  "stdin: true"));
  }

  CheckProbesAndHooks(c, path, role);
  if (c.security_context) CheckContainerSecurity(*c.security_context, path + ".securityContext");

  CheckNonRootUser(c, path);
}

void Validator::CheckProbesAndHooks(const Container& c, const std::string& path, Role role) {
  PortNames ports;
  for (const auto& p : c.ports)
    if (!p.name.empty()) ports.insert(p.name);
  // S12.7: the draft's Sidecar type belongs to spec.containers; on the init
  // list, restartPolicy: Always (KEP-753) is what makes a sidecar.
  if (role != Role::kRegular && c.lifecycle && c.lifecycle->type == LifecycleType::kSidecar) {
    Add(Forbidden(path + ".lifecycle.type",
                  "may not be Sidecar for init containers; use restartPolicy: Always"));
  }
  if (role == Role::kInit) {
    // S7.1: probes and hooks need a long-running container; a plain init
    // container runs to completion.
    const char* msg = "may not be set for init containers without restartPolicy=Always";
    if (c.lifecycle) Add(Forbidden(path + ".lifecycle", msg));
    if (c.liveness_probe) Add(Forbidden(path + ".livenessProbe", msg));
    if (c.readiness_probe) Add(Forbidden(path + ".readinessProbe", msg));
    if (c.startup_probe) Add(Forbidden(path + ".startupProbe", msg));
  } else {
    if (c.lifecycle) CheckLifecycle(*c.lifecycle, ports, path + ".lifecycle");
    if (c.liveness_probe) {
      CheckProbe(*c.liveness_probe, ProbeKind::kLiveness, ports, path + ".livenessProbe");
    }
    if (c.readiness_probe) {
      CheckProbe(*c.readiness_probe, ProbeKind::kReadiness, ports, path + ".readinessProbe");
    }
    if (c.startup_probe) {
      CheckProbe(*c.startup_probe, ProbeKind::kStartup, ports, path + ".startupProbe");
    }
  }
}

void Validator::CheckNonRootUser(const Container& c, const std::string& path) {
  // runAsNonRoot with uid 0 is rejected by the kubelet at start; podvisor
  // knows both values up front (unless the uid comes from the image).
  const auto& psc = pod_.spec.security_context;
  const auto& sc = c.security_context;
  std::optional<bool> non_root;
  std::optional<int64_t> uid;
  if (psc) {
    non_root = psc->run_as_non_root;
    uid = psc->run_as_user;
  }
  if (sc && sc->run_as_non_root) non_root = sc->run_as_non_root;
  if (sc && sc->run_as_user) uid = sc->run_as_user;
  if (sc && non_root.value_or(false) && uid.value_or(-1) == 0) {
    if (sc->run_as_user) {
      Add(Invalid(path + ".securityContext.runAsUser", "0",
                  "must not be 0 when runAsNonRoot is true"));
    } else if (sc->run_as_non_root) {
      Add(Invalid(path + ".securityContext.runAsNonRoot", "true",
                  "cannot be true when runAsUser is 0"));
    }
  }
}

void Validator::CheckEnv(const Container& c, const std::string& path) {
  for (std::size_t i = 0; i < c.env.size(); ++i) {
    const EnvVar& e = c.env[i];
    const std::string epath = Idx(path + ".env", i);
    if (e.name.empty()) {
      Add(Required(epath + ".name"));
    } else {
      AddEach(epath + ".name", Q(e.name), EnvVarNameMessages(e.name));
    }
    if (e.value_from) CheckEnvSource(e, epath);
  }
  CheckEnvFrom(c, path);
}

void Validator::CheckPorts(const Container& c, const std::string& path) {
  static const std::vector<std::string> kProtocols = {"SCTP", "TCP", "UDP"};
  PortNames names;
  for (std::size_t i = 0; i < c.ports.size(); ++i) {
    const ContainerPort& p = c.ports[i];
    const std::string ppath = Idx(path + ".ports", i);
    if (!p.name.empty()) {
      Messages msgs = PortNameMessages(p.name);
      AddEach(ppath + ".name", Q(p.name), msgs);
      if (msgs.empty() && !names.insert(p.name).second) {
        Add(Duplicate(ppath + ".name", Q(p.name)));
      }
    }
    if (p.container_port == 0) {
      Add(Required(ppath + ".containerPort"));
    } else if (p.container_port < 1 || p.container_port > 65535) {
      Add(Invalid(ppath + ".containerPort", N(p.container_port), kPortRangeMsg));
    }
    if (p.host_port && *p.host_port != 0 && (*p.host_port < 1 || *p.host_port > 65535)) {
      Add(Invalid(ppath + ".hostPort", N(*p.host_port), kPortRangeMsg));
    }
    if (p.protocol.empty()) {
      Add(Required(ppath + ".protocol"));
    } else if (std::find(kProtocols.begin(), kProtocols.end(), p.protocol) == kProtocols.end()) {
      Add(Unsupported(ppath + ".protocol", Q(p.protocol), kProtocols));
    }
  }
}

void Validator::CheckRelativePath(const std::string& value, const std::string& path) {
  // validateLocalDescendingPath: stays below the directory it is joined to.
  if (!value.empty() && value.front() == '/') {
    Add(Invalid(path, Q(value), "must be a relative path"));
  }
  if (HasDotDotComponent(value)) Add(Invalid(path, Q(value), "must not contain '..'"));
}

bool Validator::DefinesEnv(const Container& c, const std::string& name) const {
  for (const EnvVar& e : c.env) {
    if (e.name == name) return true;
  }
  for (const EnvFromSource& from : c.env_from) {
    if (!name.starts_with(from.prefix)) continue;
    std::string key = name.substr(from.prefix.size());
    if (from.config_map_ref) {
      const ConfigMap* cm = FindConfigMap(pod_.config, from.config_map_ref->name);
      if (cm && cm->data.contains(key)) return true;
    } else if (from.secret_ref) {
      const Secret* s = FindSecret(pod_.config, from.secret_ref->name);
      if (s && s->data.contains(key)) return true;
    }
  }
  return false;
}

void Validator::CheckMounts(const Container& c, const std::string& path) {
  std::set<std::string, std::less<>> mount_points;
  for (std::size_t i = 0; i < c.volume_mounts.size(); ++i) {
    const VolumeMount& m = c.volume_mounts[i];
    const std::string mpath = Idx(path + ".volumeMounts", i);
    if (m.name.empty()) {
      Add(Required(mpath + ".name"));
    } else if (!volume_names_.contains(m.name)) {
      Add(NotFound(mpath + ".name", Q(m.name)));
    }
    if (m.mount_path.empty()) {
      Add(Required(mpath + ".mountPath"));
    } else {
      if (m.mount_path.front() != '/') {
        Add(Invalid(mpath + ".mountPath", Q(m.mount_path), kAbsolutePathMsg));
      }
      if (!mount_points.insert(m.mount_path).second) {
        Add(Invalid(mpath + ".mountPath", Q(m.mount_path), "must be unique"));
      }
    }
    if (!m.sub_path.empty()) CheckRelativePath(m.sub_path, mpath + ".subPath");
    CheckMountPropagation(c, m, mpath + ".mountPropagation");
    CheckRecursiveReadOnly(m, mpath + ".recursiveReadOnly");
    if (!m.sub_path_expr.empty()) {
      if (!m.sub_path.empty()) {
        Add(Invalid(mpath + ".subPathExpr", Q(m.sub_path_expr),
                    "subPathExpr and subPath are mutually exclusive"));
      }
      CheckRelativePath(m.sub_path_expr, mpath + ".subPathExpr");
      // The kubelet fails the container on a variable it cannot expand;
      // one the container never defines is known now.
      for (const std::string& name : EnvReferences(m.sub_path_expr)) {
        if (!DefinesEnv(c, name)) {
          Add(Invalid(mpath + ".subPathExpr", Q(m.sub_path_expr),
                      "$(" + name + ") is not a variable of the container's env or envFrom"));
        }
      }
    }
  }
}

void Validator::CheckMountPropagation(const Container& c, const VolumeMount& m,
                                      const std::string& path) {
  if (m.mount_propagation.empty() || m.mount_propagation == "None" ||
      m.mount_propagation == "HostToContainer") {
    return;
  }
  if (m.mount_propagation != "Bidirectional") {
    Add(Unsupported(path, Q(m.mount_propagation), {"Bidirectional", "HostToContainer", "None"}));
    return;
  }
  // A mount that propagates back to the host is a way out of the
  // container; the API server keeps it to privileged containers.
  if (!c.security_context || c.security_context->privileged != true) {
    Add(Forbidden(path,
                  "Bidirectional mount propagation is available only to privileged "
                  "containers"));
  }
}

void Validator::CheckRecursiveReadOnly(const VolumeMount& m, const std::string& path) {
  const std::string& rro = m.recursive_read_only;
  if (rro.empty() || rro == "Disabled") return;
  if (rro != "IfPossible" && rro != "Enabled") {
    Add(Unsupported(path, Q(rro), {"Disabled", "IfPossible", "Enabled"}));
    return;
  }
  // The API server's two rules, then podvisor's: the kubelet fails an
  // Enabled mount at start when the runtime lacks "rro" mounts, and
  // neither runc 1.1 nor crun 1.8 (Debian 12's) has them.
  if (!m.read_only) {
    Add(Forbidden(path, "may only be specified when readOnly is true"));
  } else if (!m.mount_propagation.empty() && m.mount_propagation != "None") {
    Add(Forbidden(path, "may only be specified when mountPropagation is None or not specified"));
  } else if (rro == "Enabled") {
    Add(Invalid(path, Q(rro),
                "the OCI runtimes podvisor drives cannot make a mount recursively read-only; "
                "use IfPossible for a read-only mount whose submounts stay writable"));
  }
}

void Validator::CheckLifecycle(const Lifecycle& lc, const PortNames& ports,
                               const std::string& path) {
  if (lc.post_start) {
    CheckHandler(lc.post_start->handler, HandlerUse::kPostStart, ports, path + ".postStart");
    CheckReasonDelivery(*lc.post_start, HandlerUse::kPostStart, path + ".postStart");
  }
  if (lc.pre_stop) {
    CheckHandler(lc.pre_stop->handler, HandlerUse::kPreStop, ports, path + ".preStop");
    CheckReasonDelivery(*lc.pre_stop, HandlerUse::kPreStop, path + ".preStop");
  }
  if (lc.stop_signal && !ParseKubernetesSignalName(*lc.stop_signal)) {
    // The API server lists all 64 names; one example says the same.
    Add(Invalid(path + ".stopSignal", Q(*lc.stop_signal),
                "must be a Linux signal name such as \"SIGTERM\", \"SIGUSR1\" or "
                "\"SIGRTMIN+1\""));
  }
}

// S6.3. reasonDelivery is podvisor's extension of the preStop handler.
void Validator::CheckReasonDelivery(const LifecycleHandler& lh, HandlerUse use,
                                    const std::string& path) {
  if (!lh.reason_delivery) return;
  const ReasonDelivery& rd = *lh.reason_delivery;
  const std::string rpath = path + ".reasonDelivery";
  if (use != HandlerUse::kPreStop) {
    Add(Forbidden(rpath, "may only be set on preStop hooks"));
    return;
  }
  const Handler& h = lh.handler;
  if (!h.exec && !h.http_get) {
    Add(Forbidden(rpath, "may only be set for exec and httpGet handlers"));
    return;
  }
  if (rd.env && rd.header) Add(Forbidden(rpath, "may not set both env and header"));
  if (rd.env) {
    if (!h.exec) Add(Forbidden(rpath + ".env", "may only be set for exec handlers"));
    if (rd.env->empty()) {
      Add(Required(rpath + ".env"));
    } else if (!IsCIdentifier(*rd.env)) {
      Add(Invalid(rpath + ".env", Q(*rd.env), kCIdentifierMsg));
    }
  }
  if (rd.header) {
    if (!h.http_get) Add(Forbidden(rpath + ".header", "may only be set for httpGet handlers"));
    if (rd.header->empty()) {
      Add(Required(rpath + ".header"));
    } else {
      if (rd.header->size() > kReasonHeaderMaxLength) {
        Add(Invalid(rpath + ".header", Q(*rd.header), MaxLenMsg(kReasonHeaderMaxLength)));
      }
      if (!IsHttpToken(*rd.header)) Add(Invalid(rpath + ".header", Q(*rd.header), kHttpTokenMsg));
    }
  }
}

void Validator::CheckProbe(const Probe& p, ProbeKind kind, const PortNames& ports,
                           const std::string& path) {
  CheckHandler(p.handler, HandlerUse::kProbe, ports, path);
  if (p.initial_delay_seconds < 0) {
    Add(Invalid(path + ".initialDelaySeconds", N(p.initial_delay_seconds), kNegativeMsg));
  }
  // The API server accepts 0 because its defaulting turns an explicit 0 into
  // the default; ApplyDefaults does the same, so a 0 left here would make the
  // prober spin (period, timeout) or never decide (thresholds).
  for (const auto& [field, value] : {std::pair{".timeoutSeconds", p.timeout_seconds},
                                     std::pair{".periodSeconds", p.period_seconds},
                                     std::pair{".successThreshold", p.success_threshold},
                                     std::pair{".failureThreshold", p.failure_threshold}}) {
    if (value < 1) {
      Add(Invalid(path + field, N(value),
                  value < 0 ? kNegativeMsg : "must be greater than or equal to 1"));
    }
  }
  if (p.termination_grace_period_seconds) {
    int64_t tgps = *p.termination_grace_period_seconds;
    if (kind == ProbeKind::kReadiness) {
      Add(Invalid(path + ".terminationGracePeriodSeconds", N(tgps),
                  "must not be set for readinessProbes"));
    } else if (tgps <= 0) {
      Add(Invalid(path + ".terminationGracePeriodSeconds", N(tgps), "must be greater than 0"));
    }
  }
  // S7.1: a liveness or startup result flips on the first success.
  if (kind != ProbeKind::kReadiness && p.success_threshold >= 1 && p.success_threshold != 1) {
    Add(Invalid(path + ".successThreshold", N(p.success_threshold), "must be 1"));
  }
}

void Validator::CheckHandler(const Handler& h, HandlerUse use, const PortNames& ports,
                             const std::string& path) {
  const bool probe = use == HandlerUse::kProbe;
  int count = 0;
  bool any = false;
  // One of exec/httpGet/tcpSocket/grpc/sleep, the API server's order; the
  // first is validated, every further one is Forbidden.
  auto take = [&](bool present, const char* name, bool allowed) {
    if (!present) return false;
    any = true;
    if (!allowed) {
      Add(Forbidden(path + "." + name,
                    probe ? "may not be used in probes" : "may not be used in lifecycle hooks"));
      return false;
    }
    if (count++ > 0) {
      Add(Forbidden(path + "." + name, "may not specify more than 1 handler type"));
      return false;
    }
    return true;
  };
  if (take(h.exec.has_value(), "exec", true) && h.exec->command.empty()) {
    Add(Required(path + ".exec.command"));
  }
  if (take(h.http_get.has_value(), "httpGet", true)) {
    const HttpGetAction& g = *h.http_get;
    CheckPortRef(g.port, ports, path + ".httpGet.port");
    if (g.scheme != "HTTP" && g.scheme != "HTTPS") {
      Add(Unsupported(path + ".httpGet.scheme", Q(g.scheme), {"HTTP", "HTTPS"}));
    }
    for (const auto& header : g.http_headers) {
      if (!IsHttpHeaderName(header.name)) {
        Add(Invalid(path + ".httpGet.httpHeaders", Q(header.name), kHttpHeaderNameMsg));
      }
    }
  }
  if (take(h.tcp_socket.has_value(), "tcpSocket", true)) {
    CheckPortRef(h.tcp_socket->port, ports, path + ".tcpSocket.port");
  }
  if (take(h.grpc.has_value(), "grpc", probe) && (h.grpc->port < 1 || h.grpc->port > 65535)) {
    Add(Invalid(path + ".grpc.port", N(h.grpc->port), kPortRangeMsg));
  }
  // The hook's sleep counts against the pod's grace period (S5.1), so a
  // longer one could never finish.
  if (take(h.sleep.has_value(), "sleep", !probe) &&
      (h.sleep->seconds < 0 || h.sleep->seconds > grace_)) {
    Add(Invalid(
        path + ".sleep", N(h.sleep->seconds),
        "must be non-negative and less than terminationGracePeriodSeconds (" + N(grace_) + ")"));
  }
  if (!any) Add(Required(path, "must specify a handler type"));
}

void Validator::CheckPortRef(const IntOrString& port, const PortNames& ports,
                             const std::string& path) {
  if (!port.is_string) {
    if (port.int_value < 1 || port.int_value > 65535) {
      Add(Invalid(path, N(port.int_value), kPortRangeMsg));
    }
    return;
  }
  Messages msgs = PortNameMessages(port.string_value);
  AddEach(path, Q(port.string_value), msgs);
  // The prober resolves the name among the container's own ports; one that
  // matches none could never be probed.
  if (msgs.empty() && !ports.contains(port.string_value)) {
    Add({FieldErrorType::kNotFound, path, Q(port.string_value),
         "must name one of the container's ports"});
  }
}

void Validator::CheckResourceEntry(const std::string& name, Quantity q, const std::string& path) {
  if (name.find('/') == std::string::npos) {
    if (name != "cpu" && name != "memory" && name != "ephemeral-storage" &&
        !name.starts_with("hugepages-")) {
      Add(Invalid(path, Q(name), "must be a standard resource type or fully qualified"));
    }
  } else {
    AddEach(path, Q(name), QualifiedNameMessages(name));
  }
  if (q.milli() < 0) Add(Invalid(path, Q(q.ToString()), kNegativeMsg));
  // Extended resources are counted devices: whole numbers only.
  if (!IsNativeResource(name) && q.milli() % 1000 != 0) {
    Add(Invalid(path, Q(q.ToString()), "must be an integer"));
  }
}

// S17.3, the API server's validateResizePolicy: each resource once, cpu
// or memory, NotRequired or RestartContainer; a pod that never restarts
// cannot restart a container to resize it. A plain init container is
// never resized (KEP-1287), so it has no policy.
void Validator::CheckResizePolicy(const Container& c, const std::string& path, Role role) {
  if (c.resize_policy.empty()) return;
  if (role == Role::kInit) {
    Add(Forbidden(path, "may not be set for init containers without restartPolicy=Always"));
    return;
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < c.resize_policy.size(); ++i) {
    const ContainerResizePolicy& p = c.resize_policy[i];
    const std::string at = path + "[" + std::to_string(i) + "]";
    if (!seen.insert(p.resource_name).second) Add(Duplicate(at, Q(p.resource_name)));
    if (p.resource_name.empty()) {
      Add(Required(at + ".resourceName"));
    } else if (p.resource_name != "cpu" && p.resource_name != "memory") {
      Add(Unsupported(at + ".resourceName", Q(p.resource_name), {"cpu", "memory"}));
    }
    if (p.restart_policy.empty()) {
      Add(Required(at + ".restartPolicy"));
    } else if (p.restart_policy != "NotRequired" && p.restart_policy != "RestartContainer") {
      Add(Unsupported(at + ".restartPolicy", Q(p.restart_policy),
                      {"NotRequired", "RestartContainer"}));
    } else if (role == Role::kRegular && pod_.spec.restart_policy == RestartPolicy::kNever &&
               p.restart_policy != "NotRequired") {
      Add(Invalid(at + ".restartPolicy", Q(p.restart_policy),
                  "must be 'NotRequired' when `restartPolicy` is 'Never'"));
    }
  }
}

void Validator::CheckResources(const ResourceRequirements& r, const std::string& path,
                               bool pod_level) {
  auto entries = [](const ResourceList& l) {
    std::vector<std::pair<std::string, Quantity>> out;
    if (l.cpu) out.emplace_back("cpu", *l.cpu);
    if (l.memory) out.emplace_back("memory", *l.memory);
    for (const auto& [name, q] : l.other) out.emplace_back(name, q);
    return out;
  };
  auto lookup = [](const ResourceList& l, const std::string& name) -> std::optional<Quantity> {
    if (name == "cpu") return l.cpu;
    if (name == "memory") return l.memory;
    auto it = l.other.find(name);
    return it == l.other.end() ? std::nullopt : std::optional<Quantity>(it->second);
  };
  const std::string lim_path = path + ".limits", req_path = path + ".requests";
  bool cpu_or_memory = false, hugepages = false;
  // S10.5: spec.resources names only what a pod cgroup enforces; the
  // quantity rules are the containers'.
  auto check_entry = [&](const std::string& name, Quantity q, const std::string& entry_path) {
    if (pod_level) {
      CheckPodResourceName(name, entry_path);
      if (q.milli() < 0) Add(Invalid(entry_path, Q(q.ToString()), kNegativeMsg));
    } else {
      CheckResourceEntry(name, q, entry_path);
    }
  };
  for (const auto& [name, q] : entries(r.limits)) {
    check_entry(name, q, Key(lim_path, name));
    cpu_or_memory |= name == "cpu" || name == "memory";
    hugepages |= name.starts_with("hugepages-");
  }
  for (const auto& [name, q] : entries(r.requests)) {
    check_entry(name, q, Key(req_path, name));
    cpu_or_memory |= name == "cpu" || name == "memory";
    hugepages |= name.starts_with("hugepages-");
    // Devices and huge pages cannot be overcommitted: request == limit.
    bool overcommit = IsNativeResource(name) && !name.starts_with("hugepages-");
    if (auto limit = lookup(r.limits, name)) {
      if (!overcommit && q != *limit) {
        Add(Invalid(req_path, Q(q.ToString()),
                    "must be equal to " + name + " limit of " + limit->ToString()));
      } else if (q > *limit) {
        Add(Invalid(req_path, Q(q.ToString()),
                    "must be less than or equal to " + name + " limit of " + limit->ToString()));
      }
    } else if (!overcommit) {
      Add(Required(lim_path, "Limit must be set for non overcommitable resources"));
    }
  }
  if (hugepages && !cpu_or_memory) Add(Forbidden(path, "HugePages require cpu or memory"));
}

}  // namespace podvisor::pod::internal
