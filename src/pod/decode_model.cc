// The model half of DecodePod's Decoder (decode_internal.h): one field table
// per model type, naming which JSON member goes to which model member, and
// the Kubernetes fields podvisor knows but deliberately does not implement,
// each with the reason its warning gives. How a single value is read (types,
// nulls, quantities, enumerations) is in parse.cc.
#include "pod/decode_internal.h"
#include "pod/defaults.h"
#include "pod/parse.h"

namespace podvisor::pod::internal {
namespace {

// Kubernetes fields podvisor knows and deliberately does not implement.
// They get a warning that says why, instead of "unknown field".
constexpr std::string_view kNoScheduler = "ignored: podvisor runs a single pod without a scheduler";
constexpr std::string_view kNoApiServer =
    "ignored: podvisor has no API server (no service accounts, secrets or services)";
constexpr std::string_view kSetByServer = "ignored: set by the API server, not by a manifest";
constexpr std::string_view kNoSelinux =
    "ignored: podvisor sets no SELinux labels (nor do the kubelet's runtimes on a host without "
    "SELinux, such as Debian's)";

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
    {"serviceAccount", "ignored: deprecated alias of serviceAccountName"},
    {"automountServiceAccountToken", kNoApiServer},
    {"enableServiceLinks", kNoApiServer},
    {"resourceClaims", "ignored: podvisor has no dynamic resource allocation"},
    {"runtimeClassName", "ignored: podvisor's runtime is chosen with --runtime"},
    {"ephemeralContainers", "ignored: podvisor has no ephemeral (debug) containers"},
};

constexpr IgnoredField kContainerIgnored[] = {
    {"volumeDevices", "ignored: raw block volumes are not supported"},
    {"stdinOnce", "ignored: podvisor does not attach to containers"},
};

constexpr IgnoredField kResourcesIgnored[] = {
    {"claims", "ignored: podvisor has no dynamic resource allocation"},
};

constexpr IgnoredField kSecurityContextIgnored[] = {
    {"seLinuxOptions", kNoSelinux},
    {"windowsOptions", "ignored: podvisor runs Linux containers"},
};

constexpr IgnoredField kPodSecurityContextIgnored[] = {
    {"seLinuxOptions", kNoSelinux},
    {"seLinuxChangePolicy", kNoSelinux},
    {"windowsOptions", "ignored: podvisor runs Linux containers"},
};

// S13: before spec.initContainers (Kubernetes 1.6), init containers were a
// JSON array of v1 Containers in one of these annotations. The API server
// of 1.5 read the beta one when both were there; so does podvisor.
constexpr std::string_view kInitContainerAnnotations[] = {
    "pod.beta.kubernetes.io/init-containers",
    "pod.alpha.kubernetes.io/init-containers",
};

// The same init list once defaulted: the API server wrote both forms from
// one list, and `status -o json` shows the spec with its defaults.
bool SameInitContainers(const std::vector<Container>& a, const std::vector<Container>& b) {
  Pod pa;
  Pod pb;
  pa.spec.init_containers = a;
  pb.spec.init_containers = b;
  ApplyDefaults(pa);
  ApplyDefaults(pb);
  return pa.spec.init_containers == pb.spec.init_containers;
}

}  // namespace

// S13.1–S13.3.
void Decoder::DecodeInitContainerAnnotations(Pod& pod) {
  const bool spec_has_list = !pod.spec.init_containers.empty();
  for (std::string_view key : kInitContainerAnnotations) {
    auto it = pod.metadata.annotations.find(std::string(key));
    if (it == pod.metadata.annotations.end()) continue;
    const std::string path = Key("metadata.annotations", key);
    if (!spec_has_list && !pod.init_containers_annotation.empty()) {
      warnings.push_back({path, "ignored: " + pod.init_containers_annotation +
                                    " is used, as the API server of Kubernetes 1.5 did"});
      continue;
    }
    Result<json> doc = ParseJsonText(it->second);
    if (!doc) {
      errors.push_back(
          Invalid(path, "", "must be a JSON array of containers: " + doc.error().message()));
      continue;
    }
    if (!doc->is_array()) {
      TypeError(path, *doc, "must be a JSON array of containers");
      continue;
    }
    std::vector<Container> list;
    Decode(*doc, path, list);
    if (spec_has_list) {
      if (SameInitContainers(list, pod.spec.init_containers)) {
        warnings.push_back({path, "ignored: the same containers as spec.initContainers"});
      } else {
        errors.push_back(
            Invalid(path, "", "differs from spec.initContainers; set only one of them"));
      }
      continue;
    }
    pod.spec.init_containers = std::move(list);
    pod.init_containers_annotation = std::string(key);
    warnings.push_back({path,
                        "read as spec.initContainers: this annotation is the Kubernetes 1.3-1.5 "
                        "form of init containers (S13)"});
  }
}

void Decoder::DecodeRoot(const json& doc, Pod& pod) {
  if (!doc.is_object()) {
    TypeError("<manifest>", doc, "must be an object (a v1 Pod)");
    return;
  }
  // apiVersion and kind accept one value each: podvisor reads v1 Pods only.
  auto exactly = [this](std::string& out, std::string_view expected) {
    return [this, &out, expected](const json& value, const std::string& path) {
      if (Decode(value, path, out) && out != expected) {
        errors.push_back(Unsupported(path, QuoteValue(out), {std::string(expected)}));
      }
    };
  };
  Struct(doc, "", pod, kPodIgnored, Custom("apiVersion", exactly(pod.api_version, "v1")),
         Custom("kind", exactly(pod.kind, "Pod")), Field("metadata", &Pod::metadata),
         Field("spec", &Pod::spec));
  // null counts as absent, as everywhere else.
  for (const char* required : {"apiVersion", "kind", "spec"}) {
    auto it = doc.find(required);
    if (it == doc.end() || it->is_null()) errors.push_back(Required(required));
  }
  DecodeInitContainerAnnotations(pod);
}

bool Decoder::Decode(const json& v, const std::string& path, ObjectMeta& meta) {
  return Struct(v, path, meta, kMetadataIgnored, Field("name", &ObjectMeta::name),
                Field("namespace", &ObjectMeta::namespace_name), Field("uid", &ObjectMeta::uid),
                Field("labels", &ObjectMeta::labels),
                Field("annotations", &ObjectMeta::annotations));
}

bool Decoder::Decode(const json& v, const std::string& path, PodSpec& spec) {
  using S = PodSpec;
  auto restart_policy = [&](const json& value, const std::string& p) {
    DecodeRestartPolicy(value, p, spec.restart_policy, true, {"Always", "OnFailure", "Never"});
  };
  return Struct(
      v, path, spec, kPodSpecIgnored, Field("initContainers", &S::init_containers),
      Field("containers", &S::containers), Custom("restartPolicy", restart_policy),
      Field("terminationGracePeriodSeconds", &S::termination_grace_period_seconds),
      Field("activeDeadlineSeconds", &S::active_deadline_seconds), Field("volumes", &S::volumes),
      Field("hostNetwork", &S::host_network), Field("hostIPC", &S::host_ipc),
      Field("hostPID", &S::host_pid), Field("shareProcessNamespace", &S::share_process_namespace),
      Field("hostUsers", &S::host_users), Field("os", &S::os), Field("hostname", &S::hostname),
      Field("subdomain", &S::subdomain), Field("dnsPolicy", &S::dns_policy),
      Field("dnsConfig", &S::dns_config), Field("hostAliases", &S::host_aliases),
      Field("setHostnameAsFQDN", &S::set_hostname_as_fqdn), Field("overhead", &S::overhead),
      Field("resources", &S::resources), Field("readinessGates", &S::readiness_gates),
      Field("serviceAccountName", &S::service_account_name),
      Field("imagePullSecrets", &S::image_pull_secrets),
      Field("securityContext", &S::security_context));
}

bool Decoder::Decode(const json& v, const std::string& path, PodDNSConfig& dns) {
  return Struct(v, path, dns, {}, Field("nameservers", &PodDNSConfig::nameservers),
                Field("searches", &PodDNSConfig::searches),
                Field("options", &PodDNSConfig::options));
}

bool Decoder::Decode(const json& v, const std::string& path, PodDNSConfigOption& option) {
  return Struct(v, path, option, {}, Field("name", &PodDNSConfigOption::name),
                Field("value", &PodDNSConfigOption::value));
}

bool Decoder::Decode(const json& v, const std::string& path, LocalObjectReference& ref) {
  return Struct(v, path, ref, {}, Field("name", &LocalObjectReference::name));
}

bool Decoder::Decode(const json& v, const std::string& path, HostAlias& alias) {
  return Struct(v, path, alias, {}, Field("ip", &HostAlias::ip),
                Field("hostnames", &HostAlias::hostnames));
}

bool Decoder::Decode(const json& v, const std::string& path, PodReadinessGate& gate) {
  return Struct(v, path, gate, {}, Field("conditionType", &PodReadinessGate::condition_type));
}

bool Decoder::Decode(const json& v, const std::string& path, PodOS& os) {
  return Struct(v, path, os, {}, Field("name", &PodOS::name));
}

bool Decoder::Decode(const json& v, const std::string& path, Volume& volume) {
  return Fields(
      v, path, {}, [&](const std::string& key, const json& value, const std::string& child) {
        if (Apply(Field("name", &Volume::name), key, value, child, volume) ||
            Apply(Field("emptyDir", &Volume::empty_dir), key, value, child, volume) ||
            Apply(Field("hostPath", &Volume::host_path), key, value, child, volume) ||
            Apply(Field("configMap", &Volume::config_map), key, value, child, volume) ||
            Apply(Field("secret", &Volume::secret), key, value, child, volume) ||
            Apply(Field("downwardAPI", &Volume::downward_api), key, value, child, volume) ||
            Apply(Field("projected", &Volume::projected), key, value, child, volume)) {
          return true;
        }
        // persistentVolumeClaim, nfs, ...: validation names
        // them in its error, so they are kept rather than warned about.
        if (!value.is_null()) volume.unsupported_sources.push_back(key);
        return true;
      });
}

bool Decoder::Decode(const json& v, const std::string& path, EmptyDirVolumeSource& dir) {
  return Struct(v, path, dir, {}, Field("medium", &EmptyDirVolumeSource::medium),
                Field("sizeLimit", &EmptyDirVolumeSource::size_limit));
}

bool Decoder::Decode(const json& v, const std::string& path, HostPathVolumeSource& host) {
  return Struct(v, path, host, {}, Field("path", &HostPathVolumeSource::path),
                Field("type", &HostPathVolumeSource::type));
}

bool Decoder::Decode(const json& v, const std::string& path, KeyToPath& item) {
  return Struct(v, path, item, {}, Field("key", &KeyToPath::key), Field("path", &KeyToPath::path),
                Field("mode", &KeyToPath::mode));
}

bool Decoder::Decode(const json& v, const std::string& path, ConfigMapVolumeSource& source) {
  using S = ConfigMapVolumeSource;
  return Struct(v, path, source, {}, Field("name", &S::name), Field("items", &S::items),
                Field("defaultMode", &S::default_mode), Field("optional", &S::optional));
}

bool Decoder::Decode(const json& v, const std::string& path, SecretVolumeSource& source) {
  using S = SecretVolumeSource;
  // A secret volume names its Secret "secretName", a projection "name";
  // the model keeps one member and validation says which one is missing.
  return Struct(v, path, source, {}, Field("secretName", &S::secret_name),
                Field("name", &S::secret_name), Field("items", &S::items),
                Field("defaultMode", &S::default_mode), Field("optional", &S::optional));
}

bool Decoder::Decode(const json& v, const std::string& path, DownwardAPIVolumeFile& file) {
  using F = DownwardAPIVolumeFile;
  return Struct(v, path, file, {}, Field("path", &F::path), Field("fieldRef", &F::field_ref),
                Field("resourceFieldRef", &F::resource_field_ref), Field("mode", &F::mode));
}

bool Decoder::Decode(const json& v, const std::string& path, DownwardAPIVolumeSource& source) {
  return Struct(v, path, source, {}, Field("items", &DownwardAPIVolumeSource::items),
                Field("defaultMode", &DownwardAPIVolumeSource::default_mode));
}

bool Decoder::Decode(const json& v, const std::string& path, VolumeProjection& projection) {
  using P = VolumeProjection;
  auto token = [&](const json& value, const std::string& p) {
    if (value.is_null()) return;
    projection.service_account_token = true;
    warnings.push_back({p,
                        "skipped: podvisor has no API server to issue service account tokens; "
                        "the volume is written without the token (and without the cluster CA "
                        "kube-root-ca.crt unless the bundle has that ConfigMap)"});
  };
  constexpr IgnoredField kProjectionIgnored[] = {
      {"clusterTrustBundle", "ignored: podvisor has no API server (no cluster trust bundles)"},
      {"podCertificate", "ignored: podvisor has no API server (no pod certificates)"},
  };
  return Struct(v, path, projection, kProjectionIgnored, Field("configMap", &P::config_map),
                Field("secret", &P::secret), Field("downwardAPI", &P::downward_api),
                Custom("serviceAccountToken", token));
}

bool Decoder::Decode(const json& v, const std::string& path, ProjectedVolumeSource& source) {
  return Struct(v, path, source, {}, Field("sources", &ProjectedVolumeSource::sources),
                Field("defaultMode", &ProjectedVolumeSource::default_mode));
}

bool Decoder::Decode(const json& v, const std::string& path, Sysctl& sysctl) {
  return Struct(v, path, sysctl, {}, Field("name", &Sysctl::name), Field("value", &Sysctl::value));
}

bool Decoder::Decode(const json& v, const std::string& path, PodSecurityContext& sc) {
  using S = PodSecurityContext;
  return Struct(v, path, sc, kPodSecurityContextIgnored, Field("runAsUser", &S::run_as_user),
                Field("runAsGroup", &S::run_as_group), Field("runAsNonRoot", &S::run_as_non_root),
                Field("supplementalGroups", &S::supplemental_groups),
                Field("seccompProfile", &S::seccomp_profile), Field("fsGroup", &S::fs_group),
                Field("sysctls", &S::sysctls),
                Field("fsGroupChangePolicy", &S::fs_group_change_policy),
                Field("appArmorProfile", &S::app_armor_profile),
                Field("supplementalGroupsPolicy", &S::supplemental_groups_policy));
}

bool Decoder::Decode(const json& v, const std::string& path, AppArmorProfile& profile) {
  return Struct(v, path, profile, {}, Field("type", &AppArmorProfile::type),
                Field("localhostProfile", &AppArmorProfile::localhost_profile));
}

bool Decoder::Decode(const json& v, const std::string& path, SeccompProfile& profile) {
  return Struct(v, path, profile, {}, Field("type", &SeccompProfile::type),
                Field("localhostProfile", &SeccompProfile::localhost_profile));
}

bool Decoder::Decode(const json& v, const std::string& path, Container& c) {
  using C = Container;
  // A container's own restartPolicy only exists to mark sidecars (S1.3);
  // OnFailure and Never decode so validation can name the container.
  auto restart_policy = [&](const json& value, const std::string& p) {
    RestartPolicy policy{};
    if (DecodeRestartPolicy(value, p, policy, false, {"Always"})) c.restart_policy = policy;
  };
  return Struct(
      v, path, c, kContainerIgnored, Field("name", &C::name), Field("image", &C::image),
      Field("command", &C::command), Field("args", &C::args), Field("workingDir", &C::working_dir),
      Field("env", &C::env), Field("envFrom", &C::env_from), Field("ports", &C::ports),
      Field("resources", &C::resources), Field("resizePolicy", &C::resize_policy),
      Field("volumeMounts", &C::volume_mounts), Custom("restartPolicy", restart_policy),
      Field("lifecycle", &C::lifecycle), Field("startupProbe", &C::startup_probe),
      Field("readinessProbe", &C::readiness_probe), Field("livenessProbe", &C::liveness_probe),
      Field("securityContext", &C::security_context),
      Field("terminationMessagePath", &C::termination_message_path),
      Field("terminationMessagePolicy", &C::termination_message_policy),
      Field("imagePullPolicy", &C::image_pull_policy), Field("stdin", &C::stdin),
      Field("tty", &C::tty));
}

bool Decoder::Decode(const json& v, const std::string& path, ContainerResizePolicy& policy) {
  return Struct(v, path, policy, {}, Field("resourceName", &ContainerResizePolicy::resource_name),
                Field("restartPolicy", &ContainerResizePolicy::restart_policy));
}

bool Decoder::Decode(const json& v, const std::string& path, EnvVar& env) {
  return Struct(v, path, env, {}, Field("name", &EnvVar::name), Field("value", &EnvVar::value),
                Field("valueFrom", &EnvVar::value_from));
}

bool Decoder::Decode(const json& v, const std::string& path, EnvVarSource& source) {
  using S = EnvVarSource;
  constexpr IgnoredField kSourceIgnored[] = {
      {"fileKeyRef", "ignored: not supported by podvisor"},
  };
  return Struct(v, path, source, kSourceIgnored, Field("fieldRef", &S::field_ref),
                Field("resourceFieldRef", &S::resource_field_ref),
                Field("configMapKeyRef", &S::config_map_key_ref),
                Field("secretKeyRef", &S::secret_key_ref));
}

bool Decoder::Decode(const json& v, const std::string& path, ObjectFieldSelector& selector) {
  return Struct(v, path, selector, {}, Field("apiVersion", &ObjectFieldSelector::api_version),
                Field("fieldPath", &ObjectFieldSelector::field_path));
}

bool Decoder::Decode(const json& v, const std::string& path, ResourceFieldSelector& selector) {
  using S = ResourceFieldSelector;
  return Struct(v, path, selector, {}, Field("containerName", &S::container_name),
                Field("resource", &S::resource), Field("divisor", &S::divisor));
}

bool Decoder::Decode(const json& v, const std::string& path, KeySelector& selector) {
  return Struct(v, path, selector, {}, Field("name", &KeySelector::name),
                Field("key", &KeySelector::key), Field("optional", &KeySelector::optional));
}

bool Decoder::Decode(const json& v, const std::string& path, EnvFromSource& source) {
  using S = EnvFromSource;
  return Struct(v, path, source, {}, Field("prefix", &S::prefix),
                Field("configMapRef", &S::config_map_ref), Field("secretRef", &S::secret_ref));
}

bool Decoder::Decode(const json& v, const std::string& path, ObjectReference& ref) {
  return Struct(v, path, ref, {}, Field("name", &ObjectReference::name),
                Field("optional", &ObjectReference::optional));
}

bool Decoder::Decode(const json& v, const std::string& path, ContainerPort& port) {
  using P = ContainerPort;
  return Struct(v, path, port, {}, Field("name", &P::name),
                Field("containerPort", &P::container_port), Field("hostPort", &P::host_port),
                Field("protocol", &P::protocol), Field("hostIP", &P::host_ip));
}

bool Decoder::Decode(const json& v, const std::string& path, ResourceRequirements& r) {
  return Struct(v, path, r, kResourcesIgnored, Field("requests", &ResourceRequirements::requests),
                Field("limits", &ResourceRequirements::limits));
}

bool Decoder::Decode(const json& v, const std::string& path, VolumeMount& mount) {
  using M = VolumeMount;
  return Struct(v, path, mount, {}, Field("name", &M::name), Field("mountPath", &M::mount_path),
                Field("readOnly", &M::read_only), Field("subPath", &M::sub_path),
                Field("subPathExpr", &M::sub_path_expr),
                Field("mountPropagation", &M::mount_propagation),
                Field("recursiveReadOnly", &M::recursive_read_only));
}

bool Decoder::Decode(const json& v, const std::string& path, ExecAction& exec) {
  return Struct(v, path, exec, {}, Field("command", &ExecAction::command));
}

bool Decoder::Decode(const json& v, const std::string& path, HttpHeader& header) {
  return Struct(v, path, header, {}, Field("name", &HttpHeader::name),
                Field("value", &HttpHeader::value));
}

bool Decoder::Decode(const json& v, const std::string& path, HttpGetAction& get) {
  using H = HttpGetAction;
  return Struct(v, path, get, {}, Field("path", &H::path), Field("port", &H::port),
                Field("host", &H::host), Field("scheme", &H::scheme),
                Field("httpHeaders", &H::http_headers));
}

bool Decoder::Decode(const json& v, const std::string& path, TcpSocketAction& tcp) {
  return Struct(v, path, tcp, {}, Field("port", &TcpSocketAction::port),
                Field("host", &TcpSocketAction::host));
}

bool Decoder::Decode(const json& v, const std::string& path, GrpcAction& grpc) {
  return Struct(v, path, grpc, {}, Field("port", &GrpcAction::port),
                Field("service", &GrpcAction::service));
}

bool Decoder::Decode(const json& v, const std::string& path, SleepAction& sleep) {
  return Struct(v, path, sleep, {}, Field("seconds", &SleepAction::seconds));
}

bool Decoder::Decode(const json& v, const std::string& path, ReasonDelivery& delivery) {
  return Struct(v, path, delivery, {}, Field("env", &ReasonDelivery::env),
                Field("header", &ReasonDelivery::header));
}

bool Decoder::Decode(const json& v, const std::string& path, LifecycleHandler& hook) {
  return Struct(v, path, hook, {}, Handlers(&LifecycleHandler::handler),
                Field("reasonDelivery", &LifecycleHandler::reason_delivery));
}

bool Decoder::Decode(const json& v, const std::string& path, Lifecycle& lifecycle) {
  // S12: the sidecar draft's lifecycle.type. "" is Standard, as Go's
  // omitempty wrote it; validation rejects Sidecar on an init container.
  auto type = [&](const json& value, const std::string& p) {
    std::string name;
    if (!Decode(value, p, name)) return;
    if (name.empty() || name == "Standard") {
      lifecycle.type = LifecycleType::kStandard;
    } else if (name == "Sidecar") {
      lifecycle.type = LifecycleType::kSidecar;
      warnings.push_back(
          {p,
           "\"Sidecar\" is the 2018-2020 sidecar draft: started before and stopped after the "
           "other containers (S12); the standard form is an initContainers entry with "
           "restartPolicy: Always (KEP-753)"});
    } else {
      errors.push_back(Unsupported(p, QuoteValue(name), {"Sidecar", "Standard"}));
    }
  };
  return Struct(v, path, lifecycle, {}, Field("postStart", &Lifecycle::post_start),
                Field("preStop", &Lifecycle::pre_stop),
                Field("stopSignal", &Lifecycle::stop_signal), Custom("type", type));
}

bool Decoder::Decode(const json& v, const std::string& path, Probe& probe) {
  using P = Probe;
  return Struct(v, path, probe, {}, Handlers(&P::handler),
                Field("initialDelaySeconds", &P::initial_delay_seconds),
                Field("timeoutSeconds", &P::timeout_seconds),
                Field("periodSeconds", &P::period_seconds),
                Field("successThreshold", &P::success_threshold),
                Field("failureThreshold", &P::failure_threshold),
                Field("terminationGracePeriodSeconds", &P::termination_grace_period_seconds));
}

bool Decoder::Decode(const json& v, const std::string& path, Capabilities& caps) {
  return Struct(v, path, caps, {}, Field("add", &Capabilities::add),
                Field("drop", &Capabilities::drop));
}

bool Decoder::Decode(const json& v, const std::string& path, SecurityContext& sc) {
  using S = SecurityContext;
  return Struct(v, path, sc, kSecurityContextIgnored, Field("runAsUser", &S::run_as_user),
                Field("runAsGroup", &S::run_as_group), Field("runAsNonRoot", &S::run_as_non_root),
                Field("privileged", &S::privileged),
                Field("readOnlyRootFilesystem", &S::read_only_root_filesystem),
                Field("allowPrivilegeEscalation", &S::allow_privilege_escalation),
                Field("capabilities", &S::capabilities),
                Field("seccompProfile", &S::seccomp_profile), Field("procMount", &S::proc_mount),
                Field("appArmorProfile", &S::app_armor_profile));
}

}  // namespace podvisor::pod::internal
