// The model back to Kubernetes JSON, field by field, with the API server's
// omitempty rules: a member is left out when it holds its zero value,
// except where the API server always prints it (a container's
// `resources: {}`, defaulted fields such as terminationMessagePath,
// protocol, scheme and the probe thresholds). Optional members print
// whenever they are set, even when empty (`securityContext: {}`), so that
// DecodePod(ToJson(pod)) gives back the same model. One exception: a pod
// whose init list came from the 1.3–1.5 annotation (S13) prints it as
// spec.initContainers, and decoding that back finds the annotation equal
// to it, so init_containers_annotation comes back empty.
#include "pod/serialize.h"

namespace podvisor::pod {
namespace {

using nlohmann::json;

// Every model type's JSON, declared up front so the helpers below can
// format lists and optionals of any of them.
json ToJsonValue(const std::string& s);
json ToJsonValue(bool b);
json ToJsonValue(int32_t i);
json ToJsonValue(int64_t i);
json ToJsonValue(const Quantity& q);
json ToJsonValue(const IntOrString& v);
json ToJsonValue(const Container& c);
json ToJsonValue(const EnvVar& e);
json ToJsonValue(const ContainerPort& p);
json ToJsonValue(const ContainerResizePolicy& p);
json ToJsonValue(const VolumeMount& m);
json ToJsonValue(const ExecAction& e);
json ToJsonValue(const HttpHeader& h);
json ToJsonValue(const HttpGetAction& g);
json ToJsonValue(const TcpSocketAction& t);
json ToJsonValue(const GrpcAction& g);
json ToJsonValue(const SleepAction& s);
json ToJsonValue(const ReasonDelivery& r);
json ToJsonValue(const LifecycleHandler& l);
json ToJsonValue(const Lifecycle& l);
json ToJsonValue(const Probe& p);
json ToJsonValue(const Capabilities& c);
json ToJsonValue(const SeccompProfile& s);
json ToJsonValue(const AppArmorProfile& s);
json ToJsonValue(const SecurityContext& s);
json ToJsonValue(const PodSecurityContext& s);
json ToJsonValue(const EmptyDirVolumeSource& e);
json ToJsonValue(const HostPathVolumeSource& h);
json ToJsonValue(const Volume& v);
json ToJsonValue(const PodReadinessGate& g);
json ToJsonValue(const PodDNSConfig& d);
json ToJsonValue(const PodDNSConfigOption& o);
json ToJsonValue(const HostAlias& a);
json ToJsonValue(const LocalObjectReference& r);
json ToJsonValue(const EnvVarSource& e);
json ToJsonValue(const ObjectFieldSelector& f);
json ToJsonValue(const ResourceFieldSelector& r);
json ToJsonValue(const KeySelector& k);
json ToJsonValue(const EnvFromSource& e);
json ToJsonValue(const ObjectReference& r);
json ToJsonValue(const KeyToPath& k);
json ToJsonValue(const ConfigMapVolumeSource& c);
json ToJsonValue(const DownwardAPIVolumeFile& f);
json ToJsonValue(const DownwardAPIVolumeSource& d);
json ToJsonValue(const VolumeProjection& p);
json ToJsonValue(const ProjectedVolumeSource& p);
json ToJsonValue(const Sysctl& s);

void SetIfNotEmpty(json& out, const char* key, const std::string& value) {
  if (!value.empty()) out[key] = value;
}

template <typename T>
void SetIfNotEmpty(json& out, const char* key, const std::vector<T>& values) {
  if (values.empty()) return;
  json list = json::array();
  for (const T& v : values) list.push_back(ToJsonValue(v));
  out[key] = std::move(list);
}

void SetIfNotEmpty(json& out, const char* key, const std::map<std::string, std::string>& values) {
  if (!values.empty()) out[key] = values;
}

template <typename T>
void SetIfPresent(json& out, const char* key, const std::optional<T>& value) {
  if (value) out[key] = ToJsonValue(*value);
}

void SetIfTrue(json& out, const char* key, bool value) {
  if (value) out[key] = true;
}

json ToJsonValue(const std::string& s) {
  return s;
}
json ToJsonValue(bool b) {
  return b;
}
json ToJsonValue(int32_t i) {
  return i;
}
json ToJsonValue(int64_t i) {
  return i;
}
json ToJsonValue(const Quantity& q) {
  return q.ToString();
}
json ToJsonValue(const Container& c) {
  return ToJson(c);
}

json ToJsonValue(const IntOrString& v) {
  return v.is_string ? json(v.string_value) : json(v.int_value);
}

json ToJsonValue(const EnvVar& e) {
  json out = {{"name", e.name}};
  SetIfNotEmpty(out, "value", e.value);
  SetIfPresent(out, "valueFrom", e.value_from);
  return out;
}

json ToJsonValue(const EnvVarSource& e) {
  json out = json::object();
  SetIfPresent(out, "fieldRef", e.field_ref);
  SetIfPresent(out, "resourceFieldRef", e.resource_field_ref);
  SetIfPresent(out, "configMapKeyRef", e.config_map_key_ref);
  SetIfPresent(out, "secretKeyRef", e.secret_key_ref);
  return out;
}

json ToJsonValue(const ObjectFieldSelector& f) {
  return {{"apiVersion", f.api_version}, {"fieldPath", f.field_path}};
}

json ToJsonValue(const ResourceFieldSelector& r) {
  json out = {{"resource", r.resource}};
  SetIfNotEmpty(out, "containerName", r.container_name);
  SetIfPresent(out, "divisor", r.divisor);
  return out;
}

json ToJsonValue(const KeySelector& k) {
  json out = {{"key", k.key}};
  SetIfNotEmpty(out, "name", k.name);
  SetIfPresent(out, "optional", k.optional);
  return out;
}

json ToJsonValue(const EnvFromSource& e) {
  json out = json::object();
  SetIfNotEmpty(out, "prefix", e.prefix);
  SetIfPresent(out, "configMapRef", e.config_map_ref);
  SetIfPresent(out, "secretRef", e.secret_ref);
  return out;
}

json ToJsonValue(const ObjectReference& r) {
  json out = json::object();
  SetIfNotEmpty(out, "name", r.name);
  SetIfPresent(out, "optional", r.optional);
  return out;
}

json ToJsonValue(const KeyToPath& k) {
  json out = {{"key", k.key}, {"path", k.path}};
  SetIfPresent(out, "mode", k.mode);
  return out;
}

json ToJsonValue(const ConfigMapVolumeSource& c) {
  json out = json::object();
  SetIfNotEmpty(out, "name", c.name);
  SetIfNotEmpty(out, "items", c.items);
  SetIfPresent(out, "defaultMode", c.default_mode);
  SetIfPresent(out, "optional", c.optional);
  return out;
}

// A secret volume names its Secret "secretName", a projection "name".
json SecretSourceJson(const SecretVolumeSource& s, const char* name_key) {
  json out = json::object();
  SetIfNotEmpty(out, name_key, s.secret_name);
  SetIfNotEmpty(out, "items", s.items);
  SetIfPresent(out, "defaultMode", s.default_mode);
  SetIfPresent(out, "optional", s.optional);
  return out;
}

json ToJsonValue(const DownwardAPIVolumeFile& f) {
  json out = {{"path", f.path}};
  SetIfPresent(out, "fieldRef", f.field_ref);
  SetIfPresent(out, "resourceFieldRef", f.resource_field_ref);
  SetIfPresent(out, "mode", f.mode);
  return out;
}

json ToJsonValue(const DownwardAPIVolumeSource& d) {
  json out = json::object();
  SetIfNotEmpty(out, "items", d.items);
  SetIfPresent(out, "defaultMode", d.default_mode);
  return out;
}

json ToJsonValue(const VolumeProjection& p) {
  json out = json::object();
  SetIfPresent(out, "configMap", p.config_map);
  if (p.secret) out["secret"] = SecretSourceJson(*p.secret, "name");
  SetIfPresent(out, "downwardAPI", p.downward_api);
  // Only that it was there is kept: the source is skipped (model.h).
  if (p.service_account_token) out["serviceAccountToken"] = json::object();
  return out;
}

json ToJsonValue(const ProjectedVolumeSource& p) {
  json out = json::object();
  SetIfNotEmpty(out, "sources", p.sources);
  SetIfPresent(out, "defaultMode", p.default_mode);
  return out;
}

json ToJsonValue(const Sysctl& s) {
  return {{"name", s.name}, {"value", s.value}};
}

json ToJsonValue(const ContainerResizePolicy& p) {
  return {{"resourceName", p.resource_name}, {"restartPolicy", p.restart_policy}};
}

json ToJsonValue(const ContainerPort& p) {
  json out = {{"containerPort", p.container_port}, {"protocol", p.protocol}};
  SetIfNotEmpty(out, "name", p.name);
  SetIfPresent(out, "hostPort", p.host_port);
  SetIfNotEmpty(out, "hostIP", p.host_ip);
  return out;
}

json ToJsonValue(const VolumeMount& m) {
  json out = {{"name", m.name}, {"mountPath", m.mount_path}};
  SetIfTrue(out, "readOnly", m.read_only);
  SetIfNotEmpty(out, "subPath", m.sub_path);
  SetIfNotEmpty(out, "subPathExpr", m.sub_path_expr);
  SetIfNotEmpty(out, "mountPropagation", m.mount_propagation);
  SetIfNotEmpty(out, "recursiveReadOnly", m.recursive_read_only);
  return out;
}

json ToJsonValue(const ExecAction& e) {
  json out = json::object();
  SetIfNotEmpty(out, "command", e.command);
  return out;
}

json ToJsonValue(const HttpHeader& h) {
  return {{"name", h.name}, {"value", h.value}};
}

json ToJsonValue(const HttpGetAction& g) {
  json out = {{"port", ToJsonValue(g.port)}, {"scheme", g.scheme}};
  SetIfNotEmpty(out, "path", g.path);
  SetIfNotEmpty(out, "host", g.host);
  SetIfNotEmpty(out, "httpHeaders", g.http_headers);
  return out;
}

json ToJsonValue(const TcpSocketAction& t) {
  json out = {{"port", ToJsonValue(t.port)}};
  SetIfNotEmpty(out, "host", t.host);
  return out;
}

json ToJsonValue(const GrpcAction& g) {
  json out = {{"port", g.port}};
  SetIfPresent(out, "service", g.service);
  return out;
}

json ToJsonValue(const SleepAction& s) {
  return {{"seconds", s.seconds}};
}

// Handlers are inlined into their probe or hook, as in the API.
void AddHandler(json& out, const Handler& h) {
  SetIfPresent(out, "exec", h.exec);
  SetIfPresent(out, "httpGet", h.http_get);
  SetIfPresent(out, "tcpSocket", h.tcp_socket);
  SetIfPresent(out, "grpc", h.grpc);
  SetIfPresent(out, "sleep", h.sleep);
}

json ToJsonValue(const ReasonDelivery& r) {
  json out = json::object();
  SetIfPresent(out, "env", r.env);
  SetIfPresent(out, "header", r.header);
  return out;
}

json ToJsonValue(const LifecycleHandler& l) {
  json out = json::object();
  AddHandler(out, l.handler);
  SetIfPresent(out, "reasonDelivery", l.reason_delivery);
  return out;
}

json ToJsonValue(const Lifecycle& l) {
  json out = json::object();
  SetIfPresent(out, "postStart", l.post_start);
  SetIfPresent(out, "preStop", l.pre_stop);
  SetIfPresent(out, "stopSignal", l.stop_signal);
  if (l.type) out["type"] = std::string(LifecycleTypeName(*l.type));  // S12
  return out;
}

json ToJsonValue(const Probe& p) {
  json out = json::object();
  AddHandler(out, p.handler);
  // initialDelaySeconds is the one probe number without a non-zero
  // default; the API server omits it when 0 and prints the others (S7.1).
  if (p.initial_delay_seconds != 0) out["initialDelaySeconds"] = p.initial_delay_seconds;
  out["timeoutSeconds"] = p.timeout_seconds;
  out["periodSeconds"] = p.period_seconds;
  out["successThreshold"] = p.success_threshold;
  out["failureThreshold"] = p.failure_threshold;
  SetIfPresent(out, "terminationGracePeriodSeconds", p.termination_grace_period_seconds);
  return out;
}

json ToJsonValue(const Capabilities& c) {
  json out = json::object();
  SetIfNotEmpty(out, "add", c.add);
  SetIfNotEmpty(out, "drop", c.drop);
  return out;
}

json ToJsonValue(const AppArmorProfile& s) {
  json out = {{"type", s.type}};
  SetIfPresent(out, "localhostProfile", s.localhost_profile);
  return out;
}

json ToJsonValue(const SeccompProfile& s) {
  json out = {{"type", s.type}};
  SetIfPresent(out, "localhostProfile", s.localhost_profile);
  return out;
}

json ToJsonValue(const SecurityContext& s) {
  json out = json::object();
  SetIfPresent(out, "runAsUser", s.run_as_user);
  SetIfPresent(out, "runAsGroup", s.run_as_group);
  SetIfPresent(out, "runAsNonRoot", s.run_as_non_root);
  SetIfPresent(out, "privileged", s.privileged);
  SetIfPresent(out, "readOnlyRootFilesystem", s.read_only_root_filesystem);
  SetIfPresent(out, "allowPrivilegeEscalation", s.allow_privilege_escalation);
  SetIfPresent(out, "capabilities", s.capabilities);
  SetIfPresent(out, "seccompProfile", s.seccomp_profile);
  SetIfNotEmpty(out, "procMount", s.proc_mount);
  SetIfPresent(out, "appArmorProfile", s.app_armor_profile);
  return out;
}

json ToJsonValue(const PodSecurityContext& s) {
  json out = json::object();
  SetIfPresent(out, "runAsUser", s.run_as_user);
  SetIfPresent(out, "runAsGroup", s.run_as_group);
  SetIfPresent(out, "runAsNonRoot", s.run_as_non_root);
  SetIfNotEmpty(out, "supplementalGroups", s.supplemental_groups);
  SetIfPresent(out, "seccompProfile", s.seccomp_profile);
  SetIfPresent(out, "fsGroup", s.fs_group);
  SetIfNotEmpty(out, "sysctls", s.sysctls);
  SetIfNotEmpty(out, "fsGroupChangePolicy", s.fs_group_change_policy);
  SetIfNotEmpty(out, "supplementalGroupsPolicy", s.supplemental_groups_policy);
  SetIfPresent(out, "appArmorProfile", s.app_armor_profile);
  return out;
}

json ToJsonValue(const EmptyDirVolumeSource& e) {
  json out = json::object();
  SetIfNotEmpty(out, "medium", e.medium);
  SetIfPresent(out, "sizeLimit", e.size_limit);
  return out;
}

json ToJsonValue(const HostPathVolumeSource& h) {
  // The API server defaults an absent type to "" and prints it.
  return {{"path", h.path}, {"type", h.type}};
}

json ToJsonValue(const Volume& v) {
  json out = {{"name", v.name}};
  SetIfPresent(out, "emptyDir", v.empty_dir);
  SetIfPresent(out, "hostPath", v.host_path);
  SetIfPresent(out, "configMap", v.config_map);
  if (v.secret) out["secret"] = SecretSourceJson(*v.secret, "secretName");
  SetIfPresent(out, "downwardAPI", v.downward_api);
  SetIfPresent(out, "projected", v.projected);
  // Only the kind of an unsupported source is kept (validation rejects it).
  for (const std::string& kind : v.unsupported_sources) out[kind] = json::object();
  return out;
}

json ToJsonValue(const PodReadinessGate& g) {
  return {{"conditionType", g.condition_type}};
}

json ToJsonValue(const PodDNSConfigOption& o) {
  json out = {{"name", o.name}};
  SetIfPresent(out, "value", o.value);
  return out;
}

json ToJsonValue(const PodDNSConfig& d) {
  json out = json::object();
  SetIfNotEmpty(out, "nameservers", d.nameservers);
  SetIfNotEmpty(out, "searches", d.searches);
  SetIfNotEmpty(out, "options", d.options);
  return out;
}

json ToJsonValue(const LocalObjectReference& r) {
  return json{{"name", r.name}};
}

json ToJsonValue(const HostAlias& a) {
  json out = {{"ip", a.ip}};
  SetIfNotEmpty(out, "hostnames", a.hostnames);
  return out;
}

}  // namespace

json ToJson(const Quantity& q) {
  return q.ToString();
}

json ToJson(const ResourceList& r) {
  json out = json::object();
  if (r.cpu) out["cpu"] = r.cpu->ToString();
  if (r.memory) out["memory"] = r.memory->ToString();
  for (const auto& [name, q] : r.other) out[name] = q.ToString();
  return out;
}

json ToJson(const Container& c) {
  json out = {
      {"name", c.name},
      {"terminationMessagePath", c.termination_message_path},
      {"terminationMessagePolicy", TerminationMessagePolicyName(c.termination_message_policy)}};
  SetIfNotEmpty(out, "image", c.image);
  SetIfNotEmpty(out, "command", c.command);
  SetIfNotEmpty(out, "args", c.args);
  SetIfNotEmpty(out, "workingDir", c.working_dir);
  SetIfNotEmpty(out, "envFrom", c.env_from);
  SetIfNotEmpty(out, "env", c.env);
  SetIfNotEmpty(out, "ports", c.ports);
  // Like the API server, which never omits a container's resources.
  json resources = json::object();
  if (!c.resources.requests.empty()) resources["requests"] = ToJson(c.resources.requests);
  if (!c.resources.limits.empty()) resources["limits"] = ToJson(c.resources.limits);
  out["resources"] = std::move(resources);
  SetIfNotEmpty(out, "resizePolicy", c.resize_policy);
  SetIfNotEmpty(out, "volumeMounts", c.volume_mounts);
  if (c.restart_policy) out["restartPolicy"] = RestartPolicyName(*c.restart_policy);
  SetIfPresent(out, "lifecycle", c.lifecycle);
  SetIfPresent(out, "startupProbe", c.startup_probe);
  SetIfPresent(out, "readinessProbe", c.readiness_probe);
  SetIfPresent(out, "livenessProbe", c.liveness_probe);
  SetIfPresent(out, "securityContext", c.security_context);
  SetIfNotEmpty(out, "imagePullPolicy", c.image_pull_policy);
  SetIfTrue(out, "stdin", c.stdin);
  SetIfTrue(out, "tty", c.tty);
  return out;
}

json ToJson(const PodSpec& spec) {
  json out = {{"restartPolicy", RestartPolicyName(spec.restart_policy)}};
  SetIfNotEmpty(out, "initContainers", spec.init_containers);
  // containers is required; print it even empty so consumers find a list.
  out["containers"] = json::array();
  for (const Container& c : spec.containers) out["containers"].push_back(ToJson(c));
  SetIfPresent(out, "terminationGracePeriodSeconds", spec.termination_grace_period_seconds);
  SetIfPresent(out, "activeDeadlineSeconds", spec.active_deadline_seconds);
  SetIfNotEmpty(out, "volumes", spec.volumes);
  SetIfTrue(out, "hostNetwork", spec.host_network);
  SetIfTrue(out, "hostIPC", spec.host_ipc);
  SetIfTrue(out, "hostPID", spec.host_pid);
  SetIfPresent(out, "shareProcessNamespace", spec.share_process_namespace);
  SetIfPresent(out, "hostUsers", spec.host_users);
  if (spec.os) out["os"] = json{{"name", spec.os->name}};
  SetIfNotEmpty(out, "hostname", spec.hostname);
  SetIfNotEmpty(out, "subdomain", spec.subdomain);
  SetIfNotEmpty(out, "dnsPolicy", spec.dns_policy);
  SetIfPresent(out, "dnsConfig", spec.dns_config);
  SetIfNotEmpty(out, "hostAliases", spec.host_aliases);
  SetIfPresent(out, "setHostnameAsFQDN", spec.set_hostname_as_fqdn);
  if (!spec.overhead.empty()) out["overhead"] = ToJson(spec.overhead);
  if (!spec.resources.requests.empty() || !spec.resources.limits.empty()) {
    json resources = json::object();
    if (!spec.resources.requests.empty()) resources["requests"] = ToJson(spec.resources.requests);
    if (!spec.resources.limits.empty()) resources["limits"] = ToJson(spec.resources.limits);
    out["resources"] = std::move(resources);
  }
  SetIfNotEmpty(out, "readinessGates", spec.readiness_gates);
  SetIfPresent(out, "securityContext", spec.security_context);
  SetIfNotEmpty(out, "serviceAccountName", spec.service_account_name);
  SetIfNotEmpty(out, "imagePullSecrets", spec.image_pull_secrets);
  return out;
}

json ToJson(const ObjectMeta& meta) {
  json out = {{"name", meta.name}, {"namespace", meta.namespace_name}};
  SetIfNotEmpty(out, "uid", meta.uid);
  SetIfNotEmpty(out, "labels", meta.labels);
  SetIfNotEmpty(out, "annotations", meta.annotations);
  return out;
}

json ToJson(const Pod& pod) {
  return {{"apiVersion", pod.api_version},
          {"kind", pod.kind},
          {"metadata", ToJson(pod.metadata)},
          {"spec", ToJson(pod.spec)}};
}

}  // namespace podvisor::pod
