// The Kubernetes v1 Pod model podvisor understands: the subset of the API
// that a single-pod supervisor can honour, typed.
//
// Field names follow the API (camelCase in JSON, snake_case here). An
// std::optional is a field the manifest may leave out and whose absence
// means something different from any default (e.g. a container's own
// restartPolicy); fields with an API default hold that default after
// ApplyDefaults() (defaults.h). Every struct compares member-wise with ==
// (round-trip tests, change detection).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pod/quantity.h"

namespace podvisor::pod {

enum class RestartPolicy { kAlways, kOnFailure, kNever };
std::string_view RestartPolicyName(RestartPolicy p);  // "Always", ...

// A port given as a number or as the name of a container port.
struct IntOrString {
  bool is_string = false;
  int32_t int_value = 0;
  std::string string_value;

  static IntOrString Int(int32_t v) { return {false, v, {}}; }
  static IntOrString String(std::string s) { return {true, 0, std::move(s)}; }
  std::string ToString() const { return is_string ? string_value : std::to_string(int_value); }
  friend bool operator==(const IntOrString&, const IntOrString&) = default;
};

struct ObjectMeta {
  std::string name;
  std::string namespace_name = "default";
  std::string uid;  // generated at run time when absent
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  friend bool operator==(const ObjectMeta&, const ObjectMeta&) = default;
};

// The downward API: a field of the pod (fieldRef) or a resource of one of
// its containers (resourceFieldRef), resolved locally as the kubelet does.
struct ObjectFieldSelector {
  std::string api_version = "v1";  // default
  std::string field_path;          // "metadata.name", "metadata.labels['k']", ...
  friend bool operator==(const ObjectFieldSelector&, const ObjectFieldSelector&) = default;
};

struct ResourceFieldSelector {
  std::string container_name;  // required in volumes; env defaults to its own container
  std::string resource;        // "limits.cpu", "requests.memory", ...
  std::optional<Quantity> divisor;
  friend bool operator==(const ResourceFieldSelector&, const ResourceFieldSelector&) = default;
};

// configMapKeyRef and secretKeyRef: one key of a ConfigMap or Secret of
// the bundle.
struct KeySelector {
  std::string name;
  std::string key;
  std::optional<bool> optional;
  friend bool operator==(const KeySelector&, const KeySelector&) = default;
};

struct EnvVarSource {
  std::optional<ObjectFieldSelector> field_ref;
  std::optional<ResourceFieldSelector> resource_field_ref;
  std::optional<KeySelector> config_map_key_ref;
  std::optional<KeySelector> secret_key_ref;
  friend bool operator==(const EnvVarSource&, const EnvVarSource&) = default;
};

struct EnvVar {
  std::string name;
  std::string value;  // may contain $(VAR) references (expanded by oci/)
  std::optional<EnvVarSource> value_from;
  friend bool operator==(const EnvVar&, const EnvVar&) = default;
};

// envFrom's configMapRef and secretRef.
struct ObjectReference {
  std::string name;
  std::optional<bool> optional;
  friend bool operator==(const ObjectReference&, const ObjectReference&) = default;
};

struct EnvFromSource {
  std::string prefix;
  std::optional<ObjectReference> config_map_ref;
  std::optional<ObjectReference> secret_ref;
  friend bool operator==(const EnvFromSource&, const EnvFromSource&) = default;
};

struct ContainerPort {
  std::string name;
  int32_t container_port = 0;
  std::optional<int32_t> host_port;
  std::string protocol = "TCP";  // default
  std::string host_ip;
  friend bool operator==(const ContainerPort&, const ContainerPort&) = default;
};

// requests/limits: the two resources podvisor enforces are typed; any other
// (extended resources, ephemeral-storage, hugepages) is kept as given.
struct ResourceList {
  std::optional<Quantity> cpu;
  std::optional<Quantity> memory;
  std::map<std::string, Quantity> other;
  bool empty() const { return !cpu && !memory && other.empty(); }
  friend bool operator==(const ResourceList&, const ResourceList&) = default;
};

struct ResourceRequirements {
  ResourceList requests;
  ResourceList limits;
  friend bool operator==(const ResourceRequirements&, const ResourceRequirements&) = default;
};

struct VolumeMount {
  std::string name;
  std::string mount_path;
  bool read_only = false;
  std::string sub_path;
  std::string sub_path_expr;  // $(VAR) expanded from the container's env
  // "None" (or empty), "HostToContainer" or "Bidirectional".
  std::string mount_propagation;
  // "Disabled" (or empty), "IfPossible" (a plain read-only bind: the
  // runtimes podvisor drives cannot do better) or "Enabled" (refused).
  std::string recursive_read_only;
  friend bool operator==(const VolumeMount&, const VolumeMount&) = default;
};

struct ExecAction {
  std::vector<std::string> command;
  friend bool operator==(const ExecAction&, const ExecAction&) = default;
};

struct HttpHeader {
  std::string name;
  std::string value;
  friend bool operator==(const HttpHeader&, const HttpHeader&) = default;
};

struct HttpGetAction {
  std::string path;  // default "/" is applied by the prober, not the API
  IntOrString port;
  std::string host;             // empty: the pod address
  std::string scheme = "HTTP";  // default; "HTTP" or "HTTPS"
  std::vector<HttpHeader> http_headers;
  friend bool operator==(const HttpGetAction&, const HttpGetAction&) = default;
};

struct TcpSocketAction {
  IntOrString port;
  std::string host;
  friend bool operator==(const TcpSocketAction&, const TcpSocketAction&) = default;
};

struct GrpcAction {
  int32_t port = 0;
  std::optional<std::string> service;
  friend bool operator==(const GrpcAction&, const GrpcAction&) = default;
};

struct SleepAction {
  int64_t seconds = 0;
  friend bool operator==(const SleepAction&, const SleepAction&) = default;
};

// S6.2: where a preStop hook receives the pod's termination reason.
struct ReasonDelivery {
  std::optional<std::string> env;     // exec hooks; default KUBE_POD_TERM_REASON
  std::optional<std::string> header;  // httpGet hooks; default KUBE-POD-TERM-REASON
  friend bool operator==(const ReasonDelivery&, const ReasonDelivery&) = default;
};

// One probe or hook handler. The API allows exactly one of these to be set;
// every field is kept so validation can say which extra ones were given.
struct Handler {
  std::optional<ExecAction> exec;
  std::optional<HttpGetAction> http_get;
  std::optional<TcpSocketAction> tcp_socket;
  std::optional<GrpcAction> grpc;    // probes only
  std::optional<SleepAction> sleep;  // hooks only
  friend bool operator==(const Handler&, const Handler&) = default;
};

struct LifecycleHandler {
  Handler handler;
  std::optional<ReasonDelivery> reason_delivery;  // preStop only (S6.2)
  friend bool operator==(const LifecycleHandler&, const LifecycleHandler&) = default;
};

// lifecycle.type of the 2018–2020 sidecar draft (S12): a regular container
// marked Sidecar starts before and stops after the others. KEP-753's
// restartable init containers are the standard form; this one is read for
// the manifests that still carry it.
enum class LifecycleType { kStandard, kSidecar };
std::string_view LifecycleTypeName(LifecycleType t);  // "Standard", "Sidecar"

struct Lifecycle {
  std::optional<LifecycleHandler> post_start;
  std::optional<LifecycleHandler> pre_stop;
  std::optional<std::string> stop_signal;  // "SIGTERM", "SIGRTMIN+1", ...
  std::optional<LifecycleType> type;       // S12; absent means Standard
  friend bool operator==(const Lifecycle&, const Lifecycle&) = default;
};

struct Probe {
  Handler handler;
  int32_t initial_delay_seconds = 0;  // S7.1 defaults
  int32_t timeout_seconds = 1;
  int32_t period_seconds = 10;
  int32_t success_threshold = 1;
  int32_t failure_threshold = 3;
  std::optional<int64_t> termination_grace_period_seconds;
  friend bool operator==(const Probe&, const Probe&) = default;
};

struct Capabilities {
  std::vector<std::string> add;
  std::vector<std::string> drop;
  friend bool operator==(const Capabilities&, const Capabilities&) = default;
};

// securityContext.appArmorProfile (Kubernetes 1.30): Localhost names a
// profile loaded on the host; RuntimeDefault and Unconfined load nothing.
struct AppArmorProfile {
  std::string type;  // RuntimeDefault | Unconfined | Localhost
  std::optional<std::string> localhost_profile;
  friend bool operator==(const AppArmorProfile&, const AppArmorProfile&) = default;
};

struct SeccompProfile {
  std::string type;  // RuntimeDefault | Unconfined | Localhost
  std::optional<std::string> localhost_profile;
  friend bool operator==(const SeccompProfile&, const SeccompProfile&) = default;
};

struct SecurityContext {
  std::optional<int64_t> run_as_user;
  std::optional<int64_t> run_as_group;
  std::optional<bool> run_as_non_root;
  std::optional<bool> privileged;
  std::optional<bool> read_only_root_filesystem;
  std::optional<bool> allow_privilege_escalation;
  std::optional<Capabilities> capabilities;
  std::optional<SeccompProfile> seccomp_profile;
  std::optional<AppArmorProfile> app_armor_profile;
  // "Default" (or empty) or "Unmasked"; Unmasked needs hostUsers: false,
  // which podvisor refuses, so only the masked /proc is ever generated.
  std::string proc_mount;
  friend bool operator==(const SecurityContext&, const SecurityContext&) = default;
};

struct Sysctl {
  std::string name;
  std::string value;
  friend bool operator==(const Sysctl&, const Sysctl&) = default;
};

// Pod-level security settings; container-level fields override them.
struct PodSecurityContext {
  std::optional<int64_t> run_as_user;
  std::optional<int64_t> run_as_group;
  std::optional<bool> run_as_non_root;
  std::vector<int64_t> supplemental_groups;
  std::optional<SeccompProfile> seccomp_profile;
  std::optional<int64_t> fs_group;
  std::vector<Sysctl> sysctls;
  std::optional<AppArmorProfile> app_armor_profile;
  // "Always" or "OnRootMismatch" (empty: Always). Both mean the same here:
  // every volume podvisor gives the fsGroup is one it creates for the pod.
  std::string fs_group_change_policy;
  // "Merge" (or empty) or "Strict": Strict leaves out the groups the
  // image's /etc/group lists the user in.
  std::string supplemental_groups_policy;
  friend bool operator==(const PodSecurityContext&, const PodSecurityContext&) = default;
};

enum class TerminationMessagePolicy { kFile, kFallbackToLogsOnError };
std::string_view TerminationMessagePolicyName(TerminationMessagePolicy p);

// KEP-1287: whether a resize of one resource restarts the container
// (S17.3). Both words are the API's; an absent entry means NotRequired.
struct ContainerResizePolicy {
  std::string resource_name;   // "cpu" or "memory"
  std::string restart_policy;  // "NotRequired" or "RestartContainer"
  friend bool operator==(const ContainerResizePolicy&, const ContainerResizePolicy&) = default;
};

struct Container {
  std::string name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::string working_dir;
  std::vector<EnvFromSource> env_from;
  std::vector<EnvVar> env;
  std::vector<ContainerPort> ports;
  ResourceRequirements resources;
  std::vector<ContainerResizePolicy> resize_policy;  // S17.3
  std::vector<VolumeMount> volume_mounts;
  // Only for entries of spec.initContainers: "Always" makes it a sidecar.
  std::optional<RestartPolicy> restart_policy;
  std::optional<Lifecycle> lifecycle;
  std::optional<Probe> startup_probe;
  std::optional<Probe> readiness_probe;
  std::optional<Probe> liveness_probe;
  std::optional<SecurityContext> security_context;
  std::string termination_message_path = "/dev/termination-log";  // default
  TerminationMessagePolicy termination_message_policy = TerminationMessagePolicy::kFile;
  std::string image_pull_policy;  // accepted and ignored: images are local
  bool stdin = false;
  bool tty = false;
  friend bool operator==(const Container&, const Container&) = default;
};

struct EmptyDirVolumeSource {
  std::string medium;  // "" (disk) or "Memory" (tmpfs)
  std::optional<Quantity> size_limit;
  friend bool operator==(const EmptyDirVolumeSource&, const EmptyDirVolumeSource&) = default;
};

struct HostPathVolumeSource {
  std::string path;
  // "", DirectoryOrCreate, Directory, FileOrCreate, File, Socket, CharDevice,
  // BlockDevice.
  std::string type;
  friend bool operator==(const HostPathVolumeSource&, const HostPathVolumeSource&) = default;
};

// One key of a ConfigMap or Secret written to a relative path.
struct KeyToPath {
  std::string key;
  std::string path;
  std::optional<int32_t> mode;
  friend bool operator==(const KeyToPath&, const KeyToPath&) = default;
};

// configMap and secret volumes, and their projected forms (where
// default_mode is not allowed and the secret's name is "name").
struct ConfigMapVolumeSource {
  std::string name;
  std::vector<KeyToPath> items;
  std::optional<int32_t> default_mode;
  std::optional<bool> optional;
  friend bool operator==(const ConfigMapVolumeSource&, const ConfigMapVolumeSource&) = default;
};

struct SecretVolumeSource {
  std::string secret_name;
  std::vector<KeyToPath> items;
  std::optional<int32_t> default_mode;
  std::optional<bool> optional;
  friend bool operator==(const SecretVolumeSource&, const SecretVolumeSource&) = default;
};

struct DownwardAPIVolumeFile {
  std::string path;
  std::optional<ObjectFieldSelector> field_ref;
  std::optional<ResourceFieldSelector> resource_field_ref;
  std::optional<int32_t> mode;
  friend bool operator==(const DownwardAPIVolumeFile&, const DownwardAPIVolumeFile&) = default;
};

struct DownwardAPIVolumeSource {
  std::vector<DownwardAPIVolumeFile> items;
  std::optional<int32_t> default_mode;
  friend bool operator==(const DownwardAPIVolumeSource&, const DownwardAPIVolumeSource&) = default;
};

struct VolumeProjection {
  std::optional<ConfigMapVolumeSource> config_map;
  std::optional<SecretVolumeSource> secret;
  std::optional<DownwardAPIVolumeSource> downward_api;
  // A service account token needs an API server to issue it; the source is
  // skipped with a warning so that manifests from a cluster still run.
  bool service_account_token = false;
  friend bool operator==(const VolumeProjection&, const VolumeProjection&) = default;
};

struct ProjectedVolumeSource {
  std::vector<VolumeProjection> sources;
  std::optional<int32_t> default_mode;
  friend bool operator==(const ProjectedVolumeSource&, const ProjectedVolumeSource&) = default;
};

struct Volume {
  std::string name;
  std::optional<EmptyDirVolumeSource> empty_dir;
  std::optional<HostPathVolumeSource> host_path;
  std::optional<ConfigMapVolumeSource> config_map;
  std::optional<SecretVolumeSource> secret;
  std::optional<DownwardAPIVolumeSource> downward_api;
  std::optional<ProjectedVolumeSource> projected;
  // Other volume kinds named in the manifest ("persistentVolumeClaim", ...):
  // podvisor cannot provide them and validation rejects them by name.
  std::vector<std::string> unsupported_sources;
  friend bool operator==(const Volume&, const Volume&) = default;
};

// spec.os: only "linux" runs here.
struct PodOS {
  std::string name;
  friend bool operator==(const PodOS&, const PodOS&) = default;
};

struct PodReadinessGate {
  std::string condition_type;
  friend bool operator==(const PodReadinessGate&, const PodReadinessGate&) = default;
};

// spec.dnsConfig (docs/INTERFACE.md "Networking"): merged into the pod's
// resolv.conf by the kubelet's rules (network/dns.h).
struct PodDNSConfigOption {
  std::string name;
  std::optional<std::string> value;
  friend bool operator==(const PodDNSConfigOption&, const PodDNSConfigOption&) = default;
};

struct PodDNSConfig {
  std::vector<std::string> nameservers;
  std::vector<std::string> searches;
  std::vector<PodDNSConfigOption> options;
  friend bool operator==(const PodDNSConfig&, const PodDNSConfig&) = default;
};

// spec.hostAliases: extra /etc/hosts lines.
// spec.imagePullSecrets[]: a Secret of the bundle by name
// (registry/credentials.h reads it when pulling).
struct LocalObjectReference {
  std::string name;
  friend bool operator==(const LocalObjectReference&, const LocalObjectReference&) = default;
};

struct HostAlias {
  std::string ip;
  std::vector<std::string> hostnames;
  friend bool operator==(const HostAlias&, const HostAlias&) = default;
};

struct PodSpec {
  std::vector<Container> init_containers;
  std::vector<Container> containers;
  RestartPolicy restart_policy = RestartPolicy::kAlways;    // default
  std::optional<int64_t> termination_grace_period_seconds;  // defaulted to 30
  std::optional<int64_t> active_deadline_seconds;
  std::vector<Volume> volumes;
  bool host_network = false;
  bool host_ipc = false;
  bool host_pid = false;
  std::optional<bool> share_process_namespace;
  // Only true (the default) is accepted: podvisor does not run pods in
  // user namespaces, and running one as root on the host instead of the
  // namespace it asked for would be a silent loss of isolation.
  std::optional<bool> host_users;
  std::optional<PodOS> os;
  std::string hostname;
  std::string subdomain;
  // "" means the API server's default, ClusterFirst.
  std::string dns_policy;
  std::optional<PodDNSConfig> dns_config;
  std::vector<HostAlias> host_aliases;
  std::optional<bool> set_hostname_as_fqdn;
  ResourceList overhead;
  // spec.resources (KEP-2837): the pod's own requests and limits, cpu and
  // memory only (S10.5); empty when the manifest sets none.
  ResourceRequirements resources;
  std::vector<PodReadinessGate> readiness_gates;
  std::optional<PodSecurityContext> security_context;
  std::string service_account_name;  // only for the downward API
  std::vector<LocalObjectReference> image_pull_secrets;
  friend bool operator==(const PodSpec&, const PodSpec&) = default;
};

// A v1 ConfigMap or Secret document of the bundle. Values are bytes:
// binaryData and a Secret's data are stored base64-decoded, and a Secret's
// stringData is merged over its data as the API server does.
struct ConfigMap {
  std::string name;
  std::map<std::string, std::string> data;
  std::map<std::string, std::string> binary_data;
  bool immutable = false;
  friend bool operator==(const ConfigMap&, const ConfigMap&) = default;
};

struct Secret {
  std::string name;
  std::string type = "Opaque";  // default
  std::map<std::string, std::string> data;
  bool immutable = false;
  friend bool operator==(const Secret&, const Secret&) = default;
};

// The config objects a pod can read (env, volumes), by name. Not part of
// the Pod object: serialize.h never writes them, so a Secret's values
// cannot reach the status, events or logs.
struct ConfigObjects {
  std::map<std::string, ConfigMap> config_maps;
  std::map<std::string, Secret> secrets;
  friend bool operator==(const ConfigObjects&, const ConfigObjects&) = default;
};

// What a Job's controller would enforce on its pod (S3.6), kept when the
// manifest is a Job or CronJob (workloads.h); absent for any other pod.
struct JobLimits {
  int32_t backoff_limit = 6;  // batch/v1's default
  friend bool operator==(const JobLimits&, const JobLimits&) = default;
};

struct Pod {
  std::string api_version = "v1";
  std::string kind = "Pod";
  ObjectMeta metadata;
  PodSpec spec;
  // S13: the annotation (pod.beta.kubernetes.io/init-containers or the
  // alpha one) spec.initContainers was read from; empty when the manifest
  // set spec.initContainers itself. Validation names its errors after it.
  std::string init_containers_annotation;
  // The bundle's ConfigMaps and Secrets (config_objects.h), carried with
  // the pod to wherever env and volumes are built.
  ConfigObjects config;
  std::optional<JobLimits> job;  // S3.6: the pod is a Job's
  friend bool operator==(const Pod&, const Pod&) = default;
};

// Vocabulary of docs/SEMANTICS.md: an init-list entry with restartPolicy Always.
inline bool IsSidecar(const Container& c) {
  return c.restart_policy && *c.restart_policy == RestartPolicy::kAlways;
}

// S12: an entry of spec.containers with lifecycle.type Sidecar (the draft
// form). Everything else in spec.containers is a *standard* container.
inline bool IsDraftSidecar(const Container& c) {
  return c.lifecycle && c.lifecycle->type == LifecycleType::kSidecar;
}

}  // namespace podvisor::pod
