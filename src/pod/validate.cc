// Pod validation after k8s.io/kubernetes pkg/apis/core/validation (v1.33):
// same checks, same field paths, same wording, so a manifest kubectl would
// reject is rejected here with the line kubectl would print. Where podvisor
// adds a rule (absolute paths, supported volume kinds, reasonDelivery S6.3,
// capability names) the message says what podvisor needs.
//
// Every check appends to one list and carries on; nothing stops at the first
// problem. Go iterates maps in random order; here resources come out as
// cpu, memory, then the rest sorted, so the output is stable for tests.
//
// Image references are checked in two places that never overlap: ValidatePod
// requires a non-empty, trimmed image; everything about where it points
// ("..", outside BUNDLE/images, missing rootfs/) is ValidateImages', so a
// caller running both prints each problem once.
//
// The checks are split by concern: validate_names.cc (name rules and their
// messages), validate_container.cc (everything inside one container), and
// this file (pod-level fields, volumes, host ports, the entry points).
#include "pod/validate.h"

#include <arpa/inet.h>

#include <algorithm>
#include <set>
#include <system_error>
#include <utility>

#include "pod/bundle.h"
#include "pod/defaults.h"
#include "pod/pod_order.h"
#include "pod/validate_internal.h"

namespace podvisor::pod {
namespace internal {

Validator::Validator(const Pod& pod) : pod_(pod) {
  grace_ =
      pod.spec.termination_grace_period_seconds.value_or(kDefaultTerminationGracePeriodSeconds);
}

FieldErrors Validator::Run() {
  const PodSpec& spec = pod_.spec;
  CheckMetadata();
  CheckVolumes();
  CheckContainers(spec.init_containers, InitContainersPath(pod_), true);
  CheckContainers(spec.containers, "spec.containers", false);
  if (spec.containers.empty()) Add(Required("spec.containers"));
  // S12.7: phase and completion follow the standard containers (S12.3,
  // S12.4), so a pod of draft sidecars only would complete at once.
  if (!spec.containers.empty() &&
      std::all_of(spec.containers.begin(), spec.containers.end(), IsDraftSidecar)) {
    Add(Required("spec.containers", "a container without lifecycle.type Sidecar"));
  }
  CheckHostPorts();
  CheckDns();
  CheckPodResources();

  if (spec.termination_grace_period_seconds && *spec.termination_grace_period_seconds < 0) {
    Add(Invalid("spec.terminationGracePeriodSeconds", N(*spec.termination_grace_period_seconds),
                kNegativeMsg));
  }
  if (spec.active_deadline_seconds &&
      (*spec.active_deadline_seconds < 1 || *spec.active_deadline_seconds > kMaxId)) {
    Add(Invalid("spec.activeDeadlineSeconds", N(*spec.active_deadline_seconds),
                "must be between 1 and 2147483647, inclusive"));
  }
  // The sandbox uses these as the UTS hostname and its search domain.
  if (!spec.hostname.empty()) {
    AddEach("spec.hostname", Q(spec.hostname), Dns1123LabelMessages(spec.hostname));
  }
  if (!spec.subdomain.empty()) {
    AddEach("spec.subdomain", Q(spec.subdomain), Dns1123LabelMessages(spec.subdomain));
  }
  for (std::size_t i = 0; i < spec.readiness_gates.size(); ++i) {
    const std::string path = Idx("spec.readinessGates", i) + ".conditionType";
    const std::string& type = spec.readiness_gates[i].condition_type;
    if (type.empty()) {
      Add(Required(path));
    } else {
      AddEach(path, Q(type), QualifiedNameMessages(type));
    }
  }
  // The API server checks overhead as limits ("spec.overhead.limits[cpu]");
  // podvisor names the field the manifest actually has.
  for (const auto& [name, q] :
       std::initializer_list<std::pair<std::string, std::optional<Quantity>>>{
           {"cpu", spec.overhead.cpu}, {"memory", spec.overhead.memory}}) {
    if (q) CheckResourceEntry(name, *q, Key("spec.overhead", name));
  }
  for (const auto& [name, q] : spec.overhead.other) {
    CheckResourceEntry(name, q, Key("spec.overhead", name));
  }
  if (spec.share_process_namespace.value_or(false) && spec.host_pid) {
    Add(Invalid("spec.shareProcessNamespace", "true",
                "ShareProcessNamespace and HostPID cannot both be enabled"));
  }
  if (spec.os) {
    if (spec.os->name != "linux" && spec.os->name != "windows") {
      Add(Unsupported("spec.os.name", Q(spec.os->name), {"linux", "windows"}));
    } else if (spec.os->name == "windows") {
      Add(Forbidden("spec.os.name", "podvisor runs Linux containers"));
    }
  }
  if (spec.host_users == false) {
    // S20.1: the API server's validateHostUsers, with its field paths (the
    // capitals of HostPID and HostIPC are its own) and its current message.
    constexpr const char* kWithUserNamespace = "when `hostUsers` is false";
    if (spec.host_network) Add(Forbidden("spec.hostNetwork", kWithUserNamespace));
    if (spec.host_pid) Add(Forbidden("spec.HostPID", kWithUserNamespace));
    if (spec.host_ipc) Add(Forbidden("spec.HostIPC", kWithUserNamespace));
  }
  if (spec.security_context) CheckPodSecurity(*spec.security_context, "spec.securityContext");
  return std::move(errs_);
}

void Validator::CheckMetadata() {
  const ObjectMeta& m = pod_.metadata;
  // A subdomain (<= 253) as in Kubernetes: podvisor also uses the name as a
  // directory and a cgroup name, and 253 fits the 255-byte NAME_MAX.
  if (m.name.empty()) {
    Add(Required("metadata.name", "name or generateName is required"));
  } else {
    AddEach("metadata.name", Q(m.name), Dns1123SubdomainMessages(m.name));
  }
  if (!m.namespace_name.empty()) {
    AddEach("metadata.namespace", Q(m.namespace_name), Dns1123LabelMessages(m.namespace_name));
  }
  for (const auto& [key, value] : m.labels) {
    AddEach("metadata.labels", Q(key), QualifiedNameMessages(key));
    AddEach("metadata.labels", Q(value), LabelValueMessages(value));
  }
  for (const auto& [key, value] : m.annotations) {
    std::string lower = key;
    for (char& c : lower)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    AddEach("metadata.annotations", Q(key), QualifiedNameMessages(lower));
  }
  for (FieldError& e : ValidateAfterAnnotation(pod_)) Add(std::move(e));  // S19.2
}

void Validator::CheckVolumes() {
  static const std::vector<std::string> kMedia = {"", "Memory"};
  static const std::vector<std::string> kHostPathTypes = {
      "",     "BlockDevice",  "CharDevice", "Directory", "DirectoryOrCreate",
      "File", "FileOrCreate", "Socket"};
  const auto& volumes = pod_.spec.volumes;
  for (std::size_t i = 0; i < volumes.size(); ++i) {
    const Volume& v = volumes[i];
    const std::string path = Idx("spec.volumes", i);
    // Sources in the API server's order: hostPath before emptyDir.
    int sources = 0;
    if (v.host_path) {
      ++sources;
      const std::string hp = path + ".hostPath";
      if (v.host_path->path.empty()) {
        Add(Required(hp + ".path"));
      } else {
        if (HasDotDotComponent(v.host_path->path)) {
          Add(Invalid(hp + ".path", Q(v.host_path->path), "must not contain '..'"));
        }
        if (v.host_path->path.front() != '/') {
          Add(Invalid(hp + ".path", Q(v.host_path->path), kAbsolutePathMsg));
        }
        const std::string& type = v.host_path->type;
        if (std::find(kHostPathTypes.begin(), kHostPathTypes.end(), type) == kHostPathTypes.end()) {
          Add(Unsupported(hp + ".type", Q(type), kHostPathTypes));
        }
      }
    }
    if (v.empty_dir) {
      if (sources++ > 0) {
        Add(Forbidden(path + ".emptyDir", "may not specify more than 1 volume type"));
      } else {
        const std::string& medium = v.empty_dir->medium;
        if (std::find(kMedia.begin(), kMedia.end(), medium) == kMedia.end()) {
          Add(Unsupported(path + ".emptyDir.medium", Q(medium), kMedia));
        }
        if (v.empty_dir->size_limit && v.empty_dir->size_limit->milli() < 0) {
          Add(Forbidden(path + ".emptyDir.sizeLimit",
                        "SizeLimit field must be a valid resource quantity"));
        }
      }
    }
    CheckConfigVolume(v, path, sources);
    for (const auto& kind : v.unsupported_sources) {
      ++sources;
      std::string field = path;
      field.append(".").append(kind);
      Add(Forbidden(field,
                    "podvisor supports only emptyDir, hostPath, configMap, secret, "
                    "downwardAPI and projected volumes"));
    }
    if (sources == 0) Add(Required(path, "must specify a volume type"));

    if (v.name.empty()) {
      Add(Required(path + ".name"));
    } else {
      AddEach(path + ".name", Q(v.name), Dns1123LabelMessages(v.name));
      if (!volume_names_.insert(v.name).second) Add(Duplicate(path + ".name", Q(v.name)));
    }
  }
}

void Validator::CheckContainers(const std::vector<Container>& list, const std::string& path,
                                bool init) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Container& c = list[i];
    const std::string cpath = Idx(path, i);
    // Names are unique across both lists; init containers come first, so a
    // clash is reported on the later entry, as the API server does.
    if (c.name.empty()) {
      Add(Required(cpath + ".name"));
    } else {
      AddEach(cpath + ".name", Q(c.name), Dns1123LabelMessages(c.name));
      if (!container_names_.insert(c.name).second) Add(Duplicate(cpath + ".name", Q(c.name)));
    }
    Role role = !init ? Role::kRegular : IsSidecar(c) ? Role::kSidecar : Role::kInit;
    CheckContainer(c, cpath, role);
  }
}

// The API server's DNS rules (ValidatePodDNSConfig, validateHostAliases),
// with the limits of Kubernetes 1.28+ (ExpandedDNSConfig).
void Validator::CheckDns() {
  const PodSpec& spec = pod_.spec;
  static constexpr const char* kPolicies[] = {"ClusterFirst", "ClusterFirstWithHostNet", "Default",
                                              "None"};
  if (!spec.dns_policy.empty() && std::find(std::begin(kPolicies), std::end(kPolicies),
                                            spec.dns_policy) == std::end(kPolicies)) {
    Add(Unsupported("spec.dnsPolicy", Q(spec.dns_policy),
                    {"ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"}));
  }
  auto is_ip = [](const std::string& ip) {
    unsigned char buf[sizeof(in6_addr)];
    return ::inet_pton(AF_INET, ip.c_str(), buf) == 1 ||
           ::inet_pton(AF_INET6, ip.c_str(), buf) == 1;
  };
  if (spec.dns_policy == "None") {
    if (!spec.dns_config) {
      Add(Required("spec.dnsConfig", "must provide `dnsConfig` when `dnsPolicy` is None"));
    } else if (spec.dns_config->nameservers.empty()) {
      Add(Required("spec.dnsConfig.nameservers",
                   "must provide at least one DNS nameserver when `dnsPolicy` is None"));
    }
  }
  if (spec.dns_config) {
    const PodDNSConfig& dns = *spec.dns_config;
    if (dns.nameservers.size() > 3) {
      Add(Invalid("spec.dnsConfig.nameservers", "", "must not have more than 3 nameservers"));
    }
    for (std::size_t i = 0; i < dns.nameservers.size(); ++i) {
      if (!is_ip(dns.nameservers[i])) {
        Add(Invalid(Idx("spec.dnsConfig.nameservers", i), Q(dns.nameservers[i]),
                    "must be a valid IP address"));
      }
    }
    if (dns.searches.size() > 32) {
      Add(Invalid("spec.dnsConfig.searches", "", "must not have more than 32 search paths"));
    }
    std::size_t chars = 0;
    for (std::size_t i = 0; i < dns.searches.size(); ++i) {
      chars += dns.searches[i].size() + (i ? 1 : 0);
      std::string domain = dns.searches[i];
      if (domain.size() > 1 && domain.back() == '.') domain.pop_back();
      AddEach(Idx("spec.dnsConfig.searches", i), Q(dns.searches[i]),
              Dns1123SubdomainMessages(domain));
    }
    if (chars > 2048) {
      Add(Invalid("spec.dnsConfig.searches", "",
                  "must not have more than 2048 characters (including spaces) in the search list"));
    }
    for (std::size_t i = 0; i < dns.options.size(); ++i) {
      if (dns.options[i].name.empty()) {
        Add(Required(Idx("spec.dnsConfig.options", i), "Option.Name must not be empty"));
      }
    }
  }
  for (std::size_t i = 0; i < spec.host_aliases.size(); ++i) {
    const HostAlias& alias = spec.host_aliases[i];
    std::string path = Idx("spec.hostAliases", i);
    if (!is_ip(alias.ip)) Add(Invalid(path + ".ip", Q(alias.ip), "must be valid IP address"));
    for (std::size_t j = 0; j < alias.hostnames.size(); ++j) {
      AddEach(Idx(path + ".hostnames", j), Q(alias.hostnames[j]),
              Dns1123SubdomainMessages(alias.hostnames[j]));
    }
  }
  // The kubelet refuses a FQDN longer than the kernel's 64-byte hostname.
  if (spec.set_hostname_as_fqdn.value_or(false) && !spec.subdomain.empty()) {
    std::string host = spec.hostname.empty() ? pod_.metadata.name : spec.hostname;
    std::string fqdn = host + "." + spec.subdomain + "." +
                       (pod_.metadata.namespace_name.empty() ? std::string("default")
                                                             : pod_.metadata.namespace_name) +
                       ".svc.cluster.local";
    if (fqdn.size() > 64) {
      Add(Invalid("spec.setHostnameAsFQDN", "true",
                  "the pod's FQDN " + Q(fqdn) + " is longer than 64 characters"));
    }
  }
}

// Host ports: unique among regular containers ("hostIP/protocol/port", as
// AccumulateUniqueHostPorts keys them), and equal to containerPort under
// hostNetwork, where the two are the same socket.
void Validator::CheckHostPorts() {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < pod_.spec.containers.size(); ++i) {
    const auto& ports = pod_.spec.containers[i].ports;
    for (std::size_t j = 0; j < ports.size(); ++j) {
      if (!ports[j].host_port || *ports[j].host_port == 0) continue;
      std::string key = ports[j].host_ip + "/" + ports[j].protocol + "/" + N(*ports[j].host_port);
      if (!seen.insert(key).second) {
        Add(Duplicate(Idx(Idx("spec.containers", i) + ".ports", j) + ".hostPort", Q(key)));
      }
    }
  }
  if (!pod_.spec.host_network) return;
  const std::string init_path = InitContainersPath(pod_);
  for (const auto& [list, name] : {std::pair{&pod_.spec.init_containers, init_path.c_str()},
                                   std::pair{&pod_.spec.containers, "spec.containers"}}) {
    for (std::size_t i = 0; i < list->size(); ++i) {
      const auto& ports = (*list)[i].ports;
      for (std::size_t j = 0; j < ports.size(); ++j) {
        int32_t host = ports[j].host_port.value_or(ports[j].container_port);
        if (host != ports[j].container_port) {
          Add(Invalid(Idx(Idx(name, i) + ".ports", j) + ".hostPort", N(host),
                      "must match `containerPort` when `hostNetwork` is true"));
        }
      }
    }
  }
}

}  // namespace internal

std::string InitContainersPath(const Pod& pod) {
  if (pod.init_containers_annotation.empty()) return "spec.initContainers";
  return "metadata.annotations[" + pod.init_containers_annotation + "]";
}

FieldErrors ValidatePod(const Pod& pod) {
  return internal::Validator(pod).Run();
}

FieldErrors ValidateImages(const Pod& pod, const std::filesystem::path& bundle,
                           bool references_only) {
  using internal::Idx;
  using internal::Q;
  FieldErrors errs;
  const std::string init_path = InitContainersPath(pod);
  for (const auto& [list, name] : {std::pair{&pod.spec.init_containers, init_path.c_str()},
                                   std::pair{&pod.spec.containers, "spec.containers"}}) {
    for (std::size_t i = 0; i < list->size(); ++i) {
      const std::string& image = (*list)[i].image;
      const std::string path = Idx(name, i) + ".image";
      // An empty image is ValidatePod's "Required value"; not repeated here.
      if (image.empty()) continue;
      auto dir = ResolveImageDir(bundle, image);
      if (!dir) {
        errs.push_back(Invalid(path, Q(image), dir.error().message()));
        continue;
      }
      if (references_only) continue;
      std::error_code ec;
      std::string detail;
      // S16.4: nothing of that name in the bundle: a registry image, pulled
      // by run (its reference is checked by loading/, which knows registries).
      if (!std::filesystem::exists(*dir, ec)) continue;
      if (!std::filesystem::is_directory(*dir, ec)) {
        detail = "image directory " + dir->string() + " is not a directory";
      } else if (!std::filesystem::is_directory(*dir / "rootfs", ec) &&
                 !std::filesystem::is_regular_file(*dir / "oci-layout", ec)) {
        // An OCI image layout is checked (digests, platform) when run
        // unpacks it: that needs the state dir's cache.
        detail = "image directory " + dir->string() +
                 " has no rootfs/ directory and is not an OCI image layout (no oci-layout file)";
      }
      if (!detail.empty()) errs.push_back({FieldErrorType::kNotFound, path, Q(image), detail});
    }
  }
  return errs;
}

}  // namespace podvisor::pod
