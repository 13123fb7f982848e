// DecodePod: a JSON document to the typed Pod model.
//
// One overloaded Decode() per model type, so a field reads as
// `Decode(value, path, container.name)` whatever its type. Decode returns
// whether the value was present (not null) and of the right JSON type;
// problems are collected, never thrown, and decoding goes on with the next
// field so one run reports everything.
//
// Kubernetes quirks kept on purpose:
//  - null means "absent" for every field, as Go's encoding/json treats it;
//  - an integral float (80.0, what YAML tools sometimes emit) is accepted
//    for integer fields, a fractional one is not;
//  - quantities may be JSON numbers (`cpu: 1`, `memory: 1.5e9`);
//  - "" for pod restartPolicy and terminationMessagePolicy means the
//    default, as the API server's defaulting does.
#include <cmath>
#include <limits>
#include <span>

#include <nlohmann/json.hpp>

#include "pod/parse.h"

namespace podvisor::pod {
namespace {

using nlohmann::json;

// Kubernetes fields podvisor knows and deliberately does not implement.
// They get a warning that says why, instead of "unknown field".
struct IgnoredField {
  std::string_view name;
  std::string_view reason;
};

constexpr std::string_view kNoScheduler = "ignored: podvisor runs a single pod without a scheduler";
constexpr std::string_view kNoApiServer =
    "ignored: podvisor has no API server (no service accounts, secrets or services)";
constexpr std::string_view kNoDns = "ignored: podvisor does not manage the pod's DNS";
constexpr std::string_view kSetByServer = "ignored: set by the API server, not by a manifest";
constexpr std::string_view kNotSupported = "ignored: not supported by podvisor";

constexpr IgnoredField kPodIgnored[] = {
    {"status", "ignored: the status is computed by podvisor"},
};

constexpr IgnoredField kMetadataIgnored[] = {
    {"generateName", "ignored: podvisor needs metadata.name"},
    {"resourceVersion", kSetByServer},
    {"generation", kSetByServer},
    {"creationTimestamp", kSetByServer},
    {"deletionTimestamp", kSetByServer},
    {"deletionGracePeriodSeconds", kSetByServer},
    {"selfLink", kSetByServer},
    {"managedFields", kSetByServer},
    {"ownerReferences", "ignored: podvisor has no controllers or garbage collector"},
    {"finalizers", "ignored: podvisor has no controllers or garbage collector"},
};

constexpr IgnoredField kPodSpecIgnored[] = {
    {"nodeName", kNoScheduler},
    {"nodeSelector", kNoScheduler},
    {"affinity", kNoScheduler},
    {"tolerations", kNoScheduler},
    {"schedulerName", kNoScheduler},
    {"priority", kNoScheduler},
    {"priorityClassName", kNoScheduler},
    {"preemptionPolicy", kNoScheduler},
    {"topologySpreadConstraints", kNoScheduler},
    {"schedulingGates", kNoScheduler},
    {"serviceAccountName", kNoApiServer},
    {"serviceAccount", kNoApiServer},
    {"automountServiceAccountToken", kNoApiServer},
    {"imagePullSecrets", "ignored: podvisor runs images from the bundle and pulls nothing"},
    {"enableServiceLinks", kNoApiServer},
    {"resourceClaims", "ignored: podvisor has no dynamic resource allocation"},
    {"dnsPolicy", kNoDns},
    {"dnsConfig", kNoDns},
    {"hostAliases", kNoDns},
    {"setHostnameAsFQDN", kNoDns},
    {"runtimeClassName", "ignored: podvisor's runtime is chosen with --runtime"},
    {"os", kNotSupported},
    {"hostUsers", "ignored: podvisor does not use user namespaces"},
    {"ephemeralContainers", "ignored: podvisor has no ephemeral (debug) containers"},
    {"resources", "ignored: pod-level resources are not supported; set them per container"},
};

constexpr IgnoredField kContainerIgnored[] = {
    {"envFrom", "ignored: podvisor has no ConfigMaps or Secrets to read variables from"},
    {"volumeDevices", "ignored: raw block volumes are not supported"},
    {"resizePolicy", "ignored: podvisor does not resize containers in place"},
    {"stdinOnce", "ignored: podvisor does not attach to containers"},
};

constexpr IgnoredField kResourcesIgnored[] = {
    {"claims", "ignored: podvisor has no dynamic resource allocation"},
};

constexpr IgnoredField kVolumeMountIgnored[] = {
    {"mountPropagation", kNotSupported},
    {"subPathExpr", kNotSupported},
    {"recursiveReadOnly", kNotSupported},
};

constexpr IgnoredField kSecurityContextIgnored[] = {
    {"seLinuxOptions", kNotSupported},
    {"windowsOptions", kNotSupported},
    {"procMount", kNotSupported},
    {"appArmorProfile", kNotSupported},
};

constexpr IgnoredField kPodSecurityContextIgnored[] = {
    {"fsGroup", kNotSupported},
    {"fsGroupChangePolicy", kNotSupported},
    {"sysctls", kNotSupported},
    {"seLinuxOptions", kNotSupported},
    {"seLinuxChangePolicy", kNotSupported},
    {"windowsOptions", kNotSupported},
    {"appArmorProfile", kNotSupported},
    {"supplementalGroupsPolicy", kNotSupported},
};

std::string Child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}
std::string Index(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}
// Map keys (resource names, labels) print as the API server does:
// resources.limits[memory].
std::string Key(const std::string& path, std::string_view key) {
  return path + "[" + std::string(key) + "]";
}

// The value part of an error line: strings quoted, numbers as written,
// containers abbreviated.
std::string RenderValue(const json& v) {
  if (v.is_string()) return QuoteValue(v.get_ref<const std::string&>());
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  }
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 64) {
    // Cut at a character boundary: the value may end up in JSON output.
    std::size_t cut = 61;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
    text = text.substr(0, cut) + "...";
  }
  return text;
}

// Field tables for Decoder::Struct(): Field("name", &Container::name) reads
// the JSON member "name" into that model member with Decode().
template <typename T, typename M>
struct MemberField {
  std::string_view name;
  M T::*member;
};
template <typename T, typename M>
MemberField<T, M> Field(std::string_view name, M T::*member) {
  return {name, member};
}

// A member that needs more than Decode(): FN(value, path).
template <typename Fn>
struct CustomField {
  std::string_view name;
  Fn fn;
};
template <typename Fn>
CustomField<Fn> Custom(std::string_view name, Fn fn) {
  return {name, std::move(fn)};
}

// The members of a Handler (exec, httpGet, ...), inlined into T.
template <typename T>
struct HandlerFields {
  Handler T::*member;
};
template <typename T>
HandlerFields<T> Handlers(Handler T::*member) {
  return {member};
}

class Decoder {
 public:
  FieldErrors errors;
  FieldWarnings warnings;

  void DecodeRoot(const json& doc, Pod& pod) {
    if (!doc.is_object()) {
      TypeError("<manifest>", doc, "must be an object (a v1 Pod)");
      return;
    }
    Fields(doc, "", kPodIgnored,
           [&](const std::string& key, const json& value, const std::string& path) {
             if (key == "apiVersion") {
               if (Decode(value, path, pod.api_version) && pod.api_version != "v1") {
                 errors.push_back(Unsupported(path, QuoteValue(pod.api_version), {"v1"}));
               }
             } else if (key == "kind") {
               if (Decode(value, path, pod.kind) && pod.kind != "Pod") {
                 errors.push_back(Unsupported(path, QuoteValue(pod.kind), {"Pod"}));
               }
             } else if (key == "metadata") {
               Decode(value, path, pod.metadata);
             } else if (key == "spec") {
               Decode(value, path, pod.spec);
             } else {
               return false;
             }
             return true;
           });
    // null counts as absent, as everywhere else.
    for (const char* required : {"apiVersion", "kind", "spec"}) {
      auto it = doc.find(required);
      if (it == doc.end() || it->is_null()) errors.push_back(Required(required));
    }
  }

 private:
  void TypeError(const std::string& path, const json& v, std::string detail) {
    errors.push_back({FieldErrorType::kTypeInvalid, path, RenderValue(v), std::move(detail)});
  }

  void Unknown(const std::string& key, const std::string& path,
               std::span<const IgnoredField> ignored) {
    for (const IgnoredField& f : ignored) {
      if (f.name == key) {
        warnings.push_back({path, std::string(f.reason)});
        return;
      }
    }
    warnings.push_back({path, "unknown field"});
  }

  // Calls FIELD(key, value, path) for every member of the object V; FIELD
  // returns false for a key it does not know.
  template <typename Fn>
  bool Fields(const json& v, const std::string& path, std::span<const IgnoredField> ignored,
              Fn&& field) {
    if (v.is_null()) return false;
    if (!v.is_object()) {
      TypeError(path, v, "must be an object");
      return false;
    }
    for (const auto& [key, value] : v.items()) {
      std::string child = Child(path, key);
      if (!field(key, value, child)) Unknown(key, child, ignored);
    }
    return true;
  }

  // Scalars.

  bool Decode(const json& v, const std::string& path, std::string& out) {
    if (v.is_null()) return false;
    if (!v.is_string()) {
      TypeError(path, v, "must be a string");
      return false;
    }
    out = v.get<std::string>();
    return true;
  }

  bool Decode(const json& v, const std::string& path, bool& out) {
    if (v.is_null()) return false;
    if (!v.is_boolean()) {
      TypeError(path, v, "must be a boolean");
      return false;
    }
    out = v.get<bool>();
    return true;
  }

  template <typename Int>
  bool DecodeInteger(const json& v, const std::string& path, Int& out) {
    using Limits = std::numeric_limits<Int>;
    if (v.is_null()) return false;
    auto out_of_range = [&] {
      TypeError(path, v,
                "must be an integer between " + std::to_string(Limits::min()) + " and " +
                    std::to_string(Limits::max()));
      return false;
    };
    if (v.is_number_unsigned()) {
      auto u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(Limits::max())) return out_of_range();
      out = static_cast<Int>(u);
    } else if (v.is_number_integer()) {
      auto i = v.get<int64_t>();
      if (i < Limits::min() || i > Limits::max()) return out_of_range();
      out = static_cast<Int>(i);
    } else if (v.is_number_float()) {
      double d = v.get<double>();
      if (!std::isfinite(d) || d != std::trunc(d)) {
        TypeError(path, v, "must be an integer");
        return false;
      }
      // -2^63 and 2^63 are exact doubles; max() is not.
      if (d < static_cast<double>(Limits::min()) || d >= -static_cast<double>(Limits::min())) {
        return out_of_range();
      }
      out = static_cast<Int>(d);
    } else {
      TypeError(path, v, "must be an integer");
      return false;
    }
    return true;
  }
  bool Decode(const json& v, const std::string& path, int32_t& out) {
    return DecodeInteger(v, path, out);
  }
  bool Decode(const json& v, const std::string& path, int64_t& out) {
    return DecodeInteger(v, path, out);
  }

  bool Decode(const json& v, const std::string& path, IntOrString& out) {
    if (v.is_null()) return false;
    if (v.is_string()) {
      out = IntOrString::String(v.get<std::string>());
      return true;
    }
    if (!v.is_number()) {
      TypeError(path, v, "must be an integer or a string");
      return false;
    }
    int32_t port = 0;
    if (!Decode(v, path, port)) return false;
    out = IntOrString::Int(port);
    return true;
  }

  bool Decode(const json& v, const std::string& path, Quantity& out) {
    if (v.is_null()) return false;
    std::string text;
    if (v.is_string()) {
      text = v.get<std::string>();
    } else if (v.is_number() && (!v.is_number_float() || std::isfinite(v.get<double>()))) {
      // Kubernetes reads `cpu: 1` and `memory: 1.5e9` through the quantity
      // parser too; dump() gives the shortest exact spelling.
      text = v.dump();
    } else {
      TypeError(path, v, "must be a quantity: a string such as \"500m\" or \"128Mi\", or a number");
      return false;
    }
    Result<Quantity> q = Quantity::Parse(text);
    if (!q) {
      errors.push_back(Invalid(path, RenderValue(v), q.error().message()));
      return false;
    }
    out = *q;
    return true;
  }

  // Containers of values.

  template <typename T>
  bool Decode(const json& v, const std::string& path, std::optional<T>& out) {
    if (v.is_null()) return false;
    T value{};
    if (!Decode(v, path, value)) return false;
    out = std::move(value);
    return true;
  }

  template <typename T>
  bool Decode(const json& v, const std::string& path, std::vector<T>& out) {
    if (v.is_null()) return false;
    if (!v.is_array()) {
      TypeError(path, v, "must be a list");
      return false;
    }
    out.clear();
    for (std::size_t i = 0; i < v.size(); ++i) {
      // A null entry decodes to the zero value, as in Go.
      T item{};
      Decode(v[i], Index(path, i), item);
      out.push_back(std::move(item));
    }
    return true;
  }

  bool Decode(const json& v, const std::string& path, std::map<std::string, std::string>& out) {
    if (v.is_null()) return false;
    if (!v.is_object()) {
      TypeError(path, v, "must be an object of strings");
      return false;
    }
    for (const auto& [key, value] : v.items()) {
      std::string text;
      Decode(value, Key(path, key), text);
      out[key] = std::move(text);
    }
    return true;
  }

  bool Decode(const json& v, const std::string& path, ResourceList& out) {
    if (v.is_null()) return false;
    if (!v.is_object()) {
      TypeError(path, v, "must be an object of resource quantities");
      return false;
    }
    for (const auto& [name, value] : v.items()) {
      Quantity q;
      if (!Decode(value, Key(path, name), q)) continue;
      if (name == "cpu") {
        out.cpu = q;
      } else if (name == "memory") {
        out.memory = q;
      } else {
        out.other[name] = q;
      }
    }
    return true;
  }

  // Enumerations.

  bool DecodeRestartPolicy(const json& v, const std::string& path, RestartPolicy& out,
                           bool empty_is_default, const std::vector<std::string>& supported) {
    std::string name;
    if (!Decode(v, path, name)) return false;
    if (name == "Always" || (empty_is_default && name.empty())) {
      out = RestartPolicy::kAlways;
    } else if (name == "OnFailure") {
      out = RestartPolicy::kOnFailure;
    } else if (name == "Never") {
      out = RestartPolicy::kNever;
    } else {
      errors.push_back(Unsupported(path, QuoteValue(name), supported));
      return false;
    }
    return true;
  }

  bool Decode(const json& v, const std::string& path, TerminationMessagePolicy& out) {
    std::string name;
    if (!Decode(v, path, name)) return false;
    if (name == "File" || name.empty()) {
      out = TerminationMessagePolicy::kFile;
    } else if (name == "FallbackToLogsOnError") {
      out = TerminationMessagePolicy::kFallbackToLogsOnError;
    } else {
      errors.push_back(Unsupported(path, QuoteValue(name), {"File", "FallbackToLogsOnError"}));
      return false;
    }
    return true;
  }

  // Model objects, as field tables: Struct() maps each JSON member to a
  // Decode() of the named model member.

  template <typename T, typename... Specs>
  bool Struct(const json& v, const std::string& path, T& obj, std::span<const IgnoredField> ignored,
              const Specs&... specs) {
    return Fields(v, path, ignored,
                  [&](const std::string& key, const json& value, const std::string& child) {
                    return (Apply(specs, key, value, child, obj) || ...);
                  });
  }

  template <typename T, typename M>
  bool Apply(const MemberField<T, M>& f, const std::string& key, const json& value,
             const std::string& path, T& obj) {
    if (key != f.name) return false;
    Decode(value, path, obj.*f.member);
    return true;
  }

  template <typename Fn, typename T>
  bool Apply(const CustomField<Fn>& f, const std::string& key, const json& value,
             const std::string& path, T&) {
    if (key != f.name) return false;
    f.fn(value, path);
    return true;
  }

  // Probes and hooks carry their handler's members inline. All five kinds
  // are read everywhere; validation says which kind is not allowed where.
  template <typename T>
  bool Apply(const HandlerFields<T>& f, const std::string& key, const json& value,
             const std::string& path, T& obj) {
    Handler& h = obj.*f.member;
    if (key == "exec") {
      Decode(value, path, h.exec);
    } else if (key == "httpGet") {
      Decode(value, path, h.http_get);
    } else if (key == "tcpSocket") {
      Decode(value, path, h.tcp_socket);
    } else if (key == "grpc") {
      Decode(value, path, h.grpc);
    } else if (key == "sleep") {
      Decode(value, path, h.sleep);
    } else {
      return false;
    }
    return true;
  }

  bool Decode(const json& v, const std::string& path, ObjectMeta& meta) {
    return Struct(v, path, meta, kMetadataIgnored, Field("name", &ObjectMeta::name),
                  Field("namespace", &ObjectMeta::namespace_name), Field("uid", &ObjectMeta::uid),
                  Field("labels", &ObjectMeta::labels),
                  Field("annotations", &ObjectMeta::annotations));
  }

  bool Decode(const json& v, const std::string& path, PodSpec& spec) {
    using S = PodSpec;
    auto restart_policy = [&](const json& value, const std::string& p) {
      DecodeRestartPolicy(value, p, spec.restart_policy, true, {"Always", "OnFailure", "Never"});
    };
    return Struct(v, path, spec, kPodSpecIgnored, Field("initContainers", &S::init_containers),
                  Field("containers", &S::containers), Custom("restartPolicy", restart_policy),
                  Field("terminationGracePeriodSeconds", &S::termination_grace_period_seconds),
                  Field("activeDeadlineSeconds", &S::active_deadline_seconds),
                  Field("volumes", &S::volumes), Field("hostNetwork", &S::host_network),
                  Field("hostIPC", &S::host_ipc), Field("hostPID", &S::host_pid),
                  Field("shareProcessNamespace", &S::share_process_namespace),
                  Field("hostname", &S::hostname), Field("subdomain", &S::subdomain),
                  Field("overhead", &S::overhead), Field("readinessGates", &S::readiness_gates),
                  Field("securityContext", &S::security_context));
  }

  bool Decode(const json& v, const std::string& path, PodReadinessGate& gate) {
    return Struct(v, path, gate, {}, Field("conditionType", &PodReadinessGate::condition_type));
  }

  bool Decode(const json& v, const std::string& path, Volume& volume) {
    if (v.is_null()) return false;
    if (!v.is_object()) {
      TypeError(path, v, "must be an object");
      return false;
    }
    for (const auto& [key, value] : v.items()) {
      std::string child = Child(path, key);
      if (key == "name") {
        Decode(value, child, volume.name);
      } else if (key == "emptyDir") {
        Decode(value, child, volume.empty_dir);
      } else if (key == "hostPath") {
        Decode(value, child, volume.host_path);
      } else if (!value.is_null()) {
        // configMap, secret, persistentVolumeClaim, ...: validation names
        // them in its error, so they are kept rather than warned about.
        volume.unsupported_sources.push_back(key);
      }
    }
    return true;
  }

  bool Decode(const json& v, const std::string& path, EmptyDirVolumeSource& dir) {
    return Struct(v, path, dir, {}, Field("medium", &EmptyDirVolumeSource::medium),
                  Field("sizeLimit", &EmptyDirVolumeSource::size_limit));
  }

  bool Decode(const json& v, const std::string& path, HostPathVolumeSource& host) {
    return Struct(v, path, host, {}, Field("path", &HostPathVolumeSource::path),
                  Field("type", &HostPathVolumeSource::type));
  }

  bool Decode(const json& v, const std::string& path, PodSecurityContext& sc) {
    using S = PodSecurityContext;
    return Struct(v, path, sc, kPodSecurityContextIgnored, Field("runAsUser", &S::run_as_user),
                  Field("runAsGroup", &S::run_as_group), Field("runAsNonRoot", &S::run_as_non_root),
                  Field("supplementalGroups", &S::supplemental_groups),
                  Field("seccompProfile", &S::seccomp_profile));
  }

  bool Decode(const json& v, const std::string& path, SeccompProfile& profile) {
    return Struct(v, path, profile, {}, Field("type", &SeccompProfile::type),
                  Field("localhostProfile", &SeccompProfile::localhost_profile));
  }

  bool Decode(const json& v, const std::string& path, Container& c) {
    using C = Container;
    // A container's own restartPolicy only exists to mark sidecars (S1.3);
    // OnFailure and Never decode so validation can name the container.
    auto restart_policy = [&](const json& value, const std::string& p) {
      RestartPolicy policy{};
      if (DecodeRestartPolicy(value, p, policy, false, {"Always"})) c.restart_policy = policy;
    };
    return Struct(
        v, path, c, kContainerIgnored, Field("name", &C::name), Field("image", &C::image),
        Field("command", &C::command), Field("args", &C::args),
        Field("workingDir", &C::working_dir), Field("env", &C::env), Field("ports", &C::ports),
        Field("resources", &C::resources), Field("volumeMounts", &C::volume_mounts),
        Custom("restartPolicy", restart_policy), Field("lifecycle", &C::lifecycle),
        Field("startupProbe", &C::startup_probe), Field("readinessProbe", &C::readiness_probe),
        Field("livenessProbe", &C::liveness_probe), Field("securityContext", &C::security_context),
        Field("terminationMessagePath", &C::termination_message_path),
        Field("terminationMessagePolicy", &C::termination_message_policy),
        Field("imagePullPolicy", &C::image_pull_policy), Field("stdin", &C::stdin),
        Field("tty", &C::tty));
  }

  bool Decode(const json& v, const std::string& path, EnvVar& env) {
    // valueFrom needs a cluster (secrets, the downward API); validation
    // rejects it, so only its presence is recorded.
    auto value_from = [&](const json& value, const std::string& p) {
      if (value.is_null()) return;
      if (!value.is_object()) {
        TypeError(p, value, "must be an object");
        return;
      }
      env.has_value_from = true;
    };
    return Struct(v, path, env, {}, Field("name", &EnvVar::name), Field("value", &EnvVar::value),
                  Custom("valueFrom", value_from));
  }

  bool Decode(const json& v, const std::string& path, ContainerPort& port) {
    using P = ContainerPort;
    return Struct(v, path, port, {}, Field("name", &P::name),
                  Field("containerPort", &P::container_port), Field("hostPort", &P::host_port),
                  Field("protocol", &P::protocol), Field("hostIP", &P::host_ip));
  }

  bool Decode(const json& v, const std::string& path, ResourceRequirements& r) {
    return Struct(v, path, r, kResourcesIgnored, Field("requests", &ResourceRequirements::requests),
                  Field("limits", &ResourceRequirements::limits));
  }

  bool Decode(const json& v, const std::string& path, VolumeMount& mount) {
    using M = VolumeMount;
    return Struct(v, path, mount, kVolumeMountIgnored, Field("name", &M::name),
                  Field("mountPath", &M::mount_path), Field("readOnly", &M::read_only),
                  Field("subPath", &M::sub_path));
  }

  bool Decode(const json& v, const std::string& path, ExecAction& exec) {
    return Struct(v, path, exec, {}, Field("command", &ExecAction::command));
  }

  bool Decode(const json& v, const std::string& path, HttpHeader& header) {
    return Struct(v, path, header, {}, Field("name", &HttpHeader::name),
                  Field("value", &HttpHeader::value));
  }

  bool Decode(const json& v, const std::string& path, HttpGetAction& get) {
    using H = HttpGetAction;
    return Struct(v, path, get, {}, Field("path", &H::path), Field("port", &H::port),
                  Field("host", &H::host), Field("scheme", &H::scheme),
                  Field("httpHeaders", &H::http_headers));
  }

  bool Decode(const json& v, const std::string& path, TcpSocketAction& tcp) {
    return Struct(v, path, tcp, {}, Field("port", &TcpSocketAction::port),
                  Field("host", &TcpSocketAction::host));
  }

  bool Decode(const json& v, const std::string& path, GrpcAction& grpc) {
    return Struct(v, path, grpc, {}, Field("port", &GrpcAction::port),
                  Field("service", &GrpcAction::service));
  }

  bool Decode(const json& v, const std::string& path, SleepAction& sleep) {
    return Struct(v, path, sleep, {}, Field("seconds", &SleepAction::seconds));
  }

  bool Decode(const json& v, const std::string& path, ReasonDelivery& delivery) {
    return Struct(v, path, delivery, {}, Field("env", &ReasonDelivery::env),
                  Field("header", &ReasonDelivery::header));
  }

  bool Decode(const json& v, const std::string& path, LifecycleHandler& hook) {
    return Struct(v, path, hook, {}, Handlers(&LifecycleHandler::handler),
                  Field("reasonDelivery", &LifecycleHandler::reason_delivery));
  }

  bool Decode(const json& v, const std::string& path, Lifecycle& lifecycle) {
    return Struct(v, path, lifecycle, {}, Field("postStart", &Lifecycle::post_start),
                  Field("preStop", &Lifecycle::pre_stop),
                  Field("stopSignal", &Lifecycle::stop_signal));
  }

  bool Decode(const json& v, const std::string& path, Probe& probe) {
    using P = Probe;
    return Struct(v, path, probe, {}, Handlers(&P::handler),
                  Field("initialDelaySeconds", &P::initial_delay_seconds),
                  Field("timeoutSeconds", &P::timeout_seconds),
                  Field("periodSeconds", &P::period_seconds),
                  Field("successThreshold", &P::success_threshold),
                  Field("failureThreshold", &P::failure_threshold),
                  Field("terminationGracePeriodSeconds", &P::termination_grace_period_seconds));
  }

  bool Decode(const json& v, const std::string& path, Capabilities& caps) {
    return Struct(v, path, caps, {}, Field("add", &Capabilities::add),
                  Field("drop", &Capabilities::drop));
  }

  bool Decode(const json& v, const std::string& path, SecurityContext& sc) {
    using S = SecurityContext;
    return Struct(v, path, sc, kSecurityContextIgnored, Field("runAsUser", &S::run_as_user),
                  Field("runAsGroup", &S::run_as_group), Field("runAsNonRoot", &S::run_as_non_root),
                  Field("privileged", &S::privileged),
                  Field("readOnlyRootFilesystem", &S::read_only_root_filesystem),
                  Field("allowPrivilegeEscalation", &S::allow_privilege_escalation),
                  Field("capabilities", &S::capabilities),
                  Field("seccompProfile", &S::seccomp_profile));
  }
};

}  // namespace

ParseOutput DecodePod(const nlohmann::json& doc) {
  ParseOutput out;
  Decoder decoder;
  try {
    decoder.DecodeRoot(doc, out.pod);
  } catch (const std::exception& e) {
    // Only allocation failure can get here (every json access above is
    // type-checked first); report it rather than unwind past the API.
    decoder.errors.push_back(
        {FieldErrorType::kInvalid, "<manifest>", "", std::string("decoding failed: ") + e.what()});
  }
  out.errors = std::move(decoder.errors);
  out.warnings = std::move(decoder.warnings);
  return out;
}

}  // namespace podvisor::pod
