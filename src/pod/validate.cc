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
#include "pod/validate.h"

#include <algorithm>
#include <array>
#include <set>
#include <system_error>
#include <utility>

#include "common/signal_names.h"
#include "pod/bundle.h"
#include "pod/defaults.h"

namespace podvisor::pod {
namespace {

// --- Name rules (k8s.io/apimachinery/pkg/util/validation) -----------------

constexpr std::size_t kDns1123LabelMaxLength = 63;
constexpr std::size_t kDns1123SubdomainMaxLength = 253;
constexpr std::size_t kQualifiedNameMaxLength = 63;
constexpr std::size_t kPortNameMaxLength = 15;
// Not an API limit: a header name longer than this is a mistake, and HTTP
// servers commonly cap a whole header line at a few KiB.
constexpr std::size_t kReasonHeaderMaxLength = 256;
constexpr int64_t kMaxId = 2147483647;  // IsValidUserID / IsValidGroupID

constexpr const char* kDns1123LabelMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
constexpr const char* kDns1123SubdomainMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
constexpr const char* kQualifiedNameMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
constexpr const char* kLabelValueMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  "
    "or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
constexpr const char* kEnvVarNameMsg =
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', "
    "or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or "
    "'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')";
constexpr const char* kCIdentifierMsg =
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for "
    "validation is '[A-Za-z_][A-Za-z0-9_]*')";
constexpr const char* kHttpHeaderNameMsg =
    "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', "
    "regex used for validation is '[-A-Za-z0-9]+')";
constexpr const char* kHttpTokenMsg =
    "a valid HTTP header name must be an RFC 7230 token: alphanumeric characters or any of "
    "!#$%&'*+-.^_`|~";
constexpr const char* kNegativeMsg = "must be greater than or equal to 0";
constexpr const char* kPortRangeMsg = "must be between 1 and 65535, inclusive";
constexpr const char* kIdRangeMsg = "must be between 0 and 2147483647, inclusive";
constexpr const char* kAbsolutePathMsg = "must be an absolute path";

using Messages = std::vector<std::string>;

bool IsLowerAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool IsAlpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsAlnum(char c) {
  return IsAlpha(c) || IsDigit(c);
}

std::string MaxLenMsg(std::size_t n) {
  return "must be no more than " + std::to_string(n) + " characters";
}

// [a-z0-9]([-a-z0-9]*[a-z0-9])?, no length limit.
bool MatchesLabel(std::string_view s) {
  if (s.empty() || !IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) return false;
  for (char c : s)
    if (!IsLowerAlnum(c) && c != '-') return false;
  return true;
}

bool MatchesSubdomain(std::string_view s) {
  std::size_t start = 0;
  for (;;) {
    std::size_t dot = s.find('.', start);
    if (!MatchesLabel(s.substr(start, dot == std::string_view::npos ? dot : dot - start)))
      return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool MatchesQualifiedNamePart(std::string_view s) {
  if (s.empty() || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s)
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

Messages Dns1123LabelMessages(std::string_view s) {
  Messages out;
  if (s.size() > kDns1123LabelMaxLength) out.push_back(MaxLenMsg(kDns1123LabelMaxLength));
  if (!MatchesLabel(s)) {
    // A valid subdomain that is not a label can only be wrong by its dots.
    out.push_back(MatchesSubdomain(s) ? "must not contain dots" : kDns1123LabelMsg);
  }
  return out;
}

Messages Dns1123SubdomainMessages(std::string_view s) {
  Messages out;
  if (s.size() > kDns1123SubdomainMaxLength) {
    out.push_back(MaxLenMsg(kDns1123SubdomainMaxLength));
  }
  if (!MatchesSubdomain(s)) out.push_back(kDns1123SubdomainMsg);
  return out;
}

// IsQualifiedName: "name" or "dns.subdomain/name".
Messages QualifiedNameMessages(std::string_view s) {
  Messages out;
  std::string_view name = s;
  std::size_t slash = s.find('/');
  if (slash != std::string_view::npos) {
    if (s.find('/', slash + 1) != std::string_view::npos) {
      out.push_back(std::string("a qualified name ") + kQualifiedNameMsg +
                    " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
      return out;
    }
    std::string_view prefix = s.substr(0, slash);
    name = s.substr(slash + 1);
    if (prefix.empty()) {
      out.push_back("prefix part must be non-empty");
    } else {
      for (const auto& msg : Dns1123SubdomainMessages(prefix)) out.push_back("prefix part " + msg);
    }
  }
  if (name.empty()) {
    out.push_back("name part must be non-empty");
  } else if (name.size() > kQualifiedNameMaxLength) {
    out.push_back("name part " + MaxLenMsg(kQualifiedNameMaxLength));
  }
  if (!MatchesQualifiedNamePart(name)) out.push_back(std::string("name part ") + kQualifiedNameMsg);
  return out;
}

Messages LabelValueMessages(std::string_view s) {
  Messages out;
  if (s.size() > kQualifiedNameMaxLength) out.push_back(MaxLenMsg(kQualifiedNameMaxLength));
  if (!s.empty() && !MatchesQualifiedNamePart(s)) out.push_back(kLabelValueMsg);
  return out;
}

// IsValidPortName: an IANA_SVC_NAME.
Messages PortNameMessages(std::string_view s) {
  Messages out;
  if (s.size() > kPortNameMaxLength) out.push_back(MaxLenMsg(kPortNameMaxLength));
  bool charset_ok = !s.empty(), has_letter = false;
  for (char c : s) {
    if (!IsLowerAlnum(c) && c != '-') charset_ok = false;
    if (c >= 'a' && c <= 'z') has_letter = true;
  }
  if (!charset_ok) {
    out.push_back("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
  }
  if (!has_letter) out.push_back("must contain at least one letter (a-z)");
  if (s.find("--") != std::string_view::npos) out.push_back("must not contain consecutive hyphens");
  if (!s.empty() && (s.front() == '-' || s.back() == '-')) {
    out.push_back("must not begin or end with a hyphen");
  }
  return out;
}

bool MatchesEnvVarName(std::string_view s) {
  if (s.empty() || IsDigit(s.front())) return false;
  for (char c : s)
    if (!IsAlnum(c) && c != '-' && c != '.' && c != '_') return false;
  return true;
}

Messages EnvVarNameMessages(std::string_view s) {
  Messages out;
  if (!MatchesEnvVarName(s)) out.push_back(kEnvVarNameMsg);
  // hasChDirPrefix: such names would be taken as paths by some tools.
  if (s == ".") {
    out.push_back("must not be '.'");
  } else if (s == "..") {
    out.push_back("must not be '..'");
  } else if (s.starts_with("..")) {
    out.push_back("must not start with '..'");
  }
  return out;
}

bool IsHttpHeaderName(std::string_view s) {  // K8s httpGet.httpHeaders: [-A-Za-z0-9]+
  if (s.empty()) return false;
  for (char c : s)
    if (!IsAlnum(c) && c != '-') return false;
  return true;
}

bool HasDotDotComponent(std::string_view p) {
  std::size_t start = 0;
  while (start <= p.size()) {
    std::size_t end = p.find('/', start);
    if (end == std::string_view::npos) end = p.size();
    if (p.substr(start, end - start) == "..") return true;
    start = end + 1;
  }
  return false;
}

// The 41 capabilities of linux/capability.h up to CAP_CHECKPOINT_RESTORE
// (Linux 5.9). A static table because the pod library does not link libcap;
// oci/ maps them to numbers when it builds the runtime config.
// clang-format off
constexpr std::array<std::string_view, 41> kCapabilities = {
    "CHOWN",           "DAC_OVERRIDE",     "DAC_READ_SEARCH", "FOWNER",        "FSETID",
    "KILL",            "SETGID",           "SETUID",          "SETPCAP",       "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE", "NET_BROADCAST",   "NET_ADMIN",       "NET_RAW",       "IPC_LOCK",
    "IPC_OWNER",       "SYS_MODULE",       "SYS_RAWIO",       "SYS_CHROOT",    "SYS_PTRACE",
    "SYS_PACCT",       "SYS_ADMIN",        "SYS_BOOT",        "SYS_NICE",      "SYS_RESOURCE",
    "SYS_TIME",        "SYS_TTY_CONFIG",   "MKNOD",           "LEASE",         "AUDIT_WRITE",
    "AUDIT_CONTROL",   "SETFCAP",          "MAC_OVERRIDE",    "MAC_ADMIN",     "SYSLOG",
    "WAKE_ALARM",      "BLOCK_SUSPEND",    "AUDIT_READ",      "PERFMON",       "BPF",
    "CHECKPOINT_RESTORE",
};
// clang-format on

// Kubernetes passes capability names through to the runtime, which accepts
// them with or without "CAP_"; podvisor checks them here so a typo fails
// validation instead of the container start. Upper case only, as the
// kernel and the OCI spec spell them.
bool IsCapabilityName(std::string_view name) {
  if (name == "ALL") return true;
  if (name.starts_with("CAP_")) name.remove_prefix(4);
  for (std::string_view cap : kCapabilities)
    if (cap == name) return true;
  return false;
}

// Native resources are unprefixed or in the kubernetes.io domain; anything
// else with a domain prefix is an extended resource (a device plugin's).
bool IsNativeResource(std::string_view name) {
  return name.find('/') == std::string_view::npos ||
         name.find("kubernetes.io/") != std::string_view::npos;
}

// --- Field paths and error helpers -----------------------------------------

std::string Idx(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}
std::string Key(const std::string& path, std::string_view key) {
  return path + "[" + std::string(key) + "]";
}
std::string Q(std::string_view v) {
  return QuoteValue(v);
}
std::string N(int64_t v) {
  return std::to_string(v);
}

// Ports of one container, for resolving named probe and hook ports.
using PortNames = std::set<std::string, std::less<>>;

class Validator {
 public:
  explicit Validator(const Pod& pod) : pod_(pod) {
    grace_ =
        pod.spec.termination_grace_period_seconds.value_or(kDefaultTerminationGracePeriodSeconds);
  }

  FieldErrors Run();

 private:
  enum class Role { kInit, kSidecar, kRegular };
  enum class HandlerUse { kProbe, kPostStart, kPreStop };
  enum class ProbeKind { kLiveness, kReadiness, kStartup };

  void Add(FieldError e) { errs_.push_back(std::move(e)); }
  void AddEach(const std::string& path, const std::string& value, const Messages& msgs) {
    for (const auto& m : msgs) Add(Invalid(path, value, m));
  }

  void CheckMetadata();
  void CheckVolumes();
  void CheckContainers(const std::vector<Container>& list, const std::string& path, bool init);
  void CheckContainer(const Container& c, const std::string& path, Role role);
  void CheckEnv(const Container& c, const std::string& path);
  void CheckPorts(const Container& c, const std::string& path);
  void CheckMounts(const Container& c, const std::string& path);
  void CheckLifecycle(const Lifecycle& lc, const PortNames& ports, const std::string& path);
  void CheckProbe(const Probe& p, ProbeKind kind, const PortNames& ports, const std::string& path);
  void CheckHandler(const Handler& h, HandlerUse use, const PortNames& ports,
                    const std::string& path);
  void CheckPortRef(const IntOrString& port, const PortNames& ports, const std::string& path);
  void CheckReasonDelivery(const LifecycleHandler& lh, HandlerUse use, const std::string& path);
  void CheckResourceEntry(const std::string& name, Quantity q, const std::string& path);
  void CheckResources(const ResourceRequirements& r, const std::string& path);
  void CheckSeccomp(const SeccompProfile& sp, const std::string& path);
  void CheckIds(const std::optional<int64_t>& user, const std::optional<int64_t>& group,
                const std::string& path);
  void CheckContainerSecurity(const SecurityContext& sc, const std::string& path);
  void CheckPodSecurity(const PodSecurityContext& sc, const std::string& path);
  void CheckRelativePath(const std::string& value, const std::string& path);
  void CheckHostPorts();

  const Pod& pod_;
  int64_t grace_;
  std::set<std::string, std::less<>> volume_names_;
  std::set<std::string, std::less<>> container_names_;
  FieldErrors errs_;
};

FieldErrors Validator::Run() {
  const PodSpec& spec = pod_.spec;
  CheckMetadata();
  CheckVolumes();
  CheckContainers(spec.init_containers, "spec.initContainers", true);
  CheckContainers(spec.containers, "spec.containers", false);
  if (spec.containers.empty()) Add(Required("spec.containers"));
  CheckHostPorts();

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
    for (const auto& kind : v.unsupported_sources) {
      ++sources;
      Add(Forbidden(path + "." + kind, "podvisor supports only emptyDir and hostPath volumes"));
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
  CheckMounts(c, path);

  PortNames ports;
  for (const auto& p : c.ports)
    if (!p.name.empty()) ports.insert(p.name);
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
  if (c.security_context) CheckContainerSecurity(*c.security_context, path + ".securityContext");

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
    if (e.has_value_from) {
      Add(Forbidden(epath + ".valueFrom",
                    "podvisor has no API server to resolve valueFrom; use value"));
    }
  }
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
  for (const auto& [list, name] : {std::pair{&pod_.spec.init_containers, "spec.initContainers"},
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

void Validator::CheckRelativePath(const std::string& value, const std::string& path) {
  // validateLocalDescendingPath: stays below the directory it is joined to.
  if (!value.empty() && value.front() == '/') {
    Add(Invalid(path, Q(value), "must be a relative path"));
  }
  if (HasDotDotComponent(value)) Add(Invalid(path, Q(value), "must not contain '..'"));
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

void Validator::CheckResources(const ResourceRequirements& r, const std::string& path) {
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
  for (const auto& [name, q] : entries(r.limits)) {
    CheckResourceEntry(name, q, Key(lim_path, name));
    cpu_or_memory |= name == "cpu" || name == "memory";
    hugepages |= name.starts_with("hugepages-");
  }
  for (const auto& [name, q] : entries(r.requests)) {
    CheckResourceEntry(name, q, Key(req_path, name));
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

void Validator::CheckSeccomp(const SeccompProfile& sp, const std::string& path) {
  if (sp.type.empty()) {
    Add(Required(path + ".type", "type is required when seccompProfile is set"));
  } else if (sp.type != "Localhost" && sp.type != "RuntimeDefault" && sp.type != "Unconfined") {
    Add(Unsupported(path + ".type", Q(sp.type), {"Localhost", "RuntimeDefault", "Unconfined"}));
  }
  const std::string lpath = path + ".localhostProfile";
  if (sp.type == "Localhost") {
    if (!sp.localhost_profile || sp.localhost_profile->empty()) {
      Add(Required(lpath, "must be set when seccomp type is Localhost"));
    } else {
      CheckRelativePath(*sp.localhost_profile, lpath);
    }
  } else if (sp.localhost_profile) {
    Add(Invalid(lpath, Q(*sp.localhost_profile), "can only be set when seccomp type is Localhost"));
  }
}

void Validator::CheckIds(const std::optional<int64_t>& user, const std::optional<int64_t>& group,
                         const std::string& path) {
  if (user && (*user < 0 || *user > kMaxId)) {
    Add(Invalid(path + ".runAsUser", N(*user), kIdRangeMsg));
  }
  if (group && (*group < 0 || *group > kMaxId)) {
    Add(Invalid(path + ".runAsGroup", N(*group), kIdRangeMsg));
  }
}

void Validator::CheckContainerSecurity(const SecurityContext& sc, const std::string& path) {
  CheckIds(sc.run_as_user, sc.run_as_group, path);
  if (sc.seccomp_profile) CheckSeccomp(*sc.seccomp_profile, path + ".seccompProfile");
  if (sc.capabilities) {
    for (const auto& [list, name] : {std::pair{&sc.capabilities->add, ".capabilities.add"},
                                     std::pair{&sc.capabilities->drop, ".capabilities.drop"}}) {
      for (std::size_t i = 0; i < list->size(); ++i) {
        if (!IsCapabilityName((*list)[i])) {
          Add(Invalid(Idx(path + name, i), Q((*list)[i]),
                      "must be a Linux capability name such as 'NET_ADMIN' or 'CAP_NET_ADMIN', "
                      "or 'ALL'"));
        }
      }
    }
  }
  // no_new_privs cannot coexist with a privileged container, and with
  // CAP_SYS_ADMIN the container could lift it again.
  if (sc.allow_privilege_escalation == false) {
    if (sc.privileged == true) {
      Add(Invalid(path, {},
                  "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"));
    }
    if (sc.capabilities) {
      for (const auto& cap : sc.capabilities->add) {
        if (cap == "CAP_SYS_ADMIN" || cap == "SYS_ADMIN") {
          Add(Invalid(path, {},
                      "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` "
                      "CAP_SYS_ADMIN"));
        }
      }
    }
  }
}

void Validator::CheckPodSecurity(const PodSecurityContext& sc, const std::string& path) {
  CheckIds(sc.run_as_user, sc.run_as_group, path);
  for (std::size_t i = 0; i < sc.supplemental_groups.size(); ++i) {
    int64_t gid = sc.supplemental_groups[i];
    if (gid < 0 || gid > kMaxId) {
      Add(Invalid(Idx(path + ".supplementalGroups", i), N(gid), kIdRangeMsg));
    }
  }
  if (sc.seccomp_profile) CheckSeccomp(*sc.seccomp_profile, path + ".seccompProfile");
  if (sc.run_as_non_root == true && sc.run_as_user == 0) {
    Add(Invalid(path + ".runAsUser", "0", "must not be 0 when runAsNonRoot is true"));
  }
}

}  // namespace

FieldErrors ValidatePod(const Pod& pod) {
  return Validator(pod).Run();
}

FieldErrors ValidateImages(const Pod& pod, const std::filesystem::path& bundle) {
  FieldErrors errs;
  for (const auto& [list, name] : {std::pair{&pod.spec.init_containers, "spec.initContainers"},
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
      std::error_code ec;
      std::string detail;
      if (!std::filesystem::is_directory(*dir, ec)) {
        detail = "image directory " + dir->string() +
                 (std::filesystem::exists(*dir, ec) ? " is not a directory" : " does not exist");
      } else if (!std::filesystem::is_directory(*dir / "rootfs", ec)) {
        detail = "image directory " + dir->string() + " has no rootfs/ directory";
      }
      if (!detail.empty()) errs.push_back({FieldErrorType::kNotFound, path, Q(image), detail});
    }
  }
  return errs;
}

bool IsDns1123Label(std::string_view s) {
  return s.size() <= kDns1123LabelMaxLength && MatchesLabel(s);
}

bool IsDns1123Subdomain(std::string_view s) {
  return s.size() <= kDns1123SubdomainMaxLength && MatchesSubdomain(s);
}

bool IsCIdentifier(std::string_view s) {
  if (s.empty() || IsDigit(s.front())) return false;
  for (char c : s)
    if (!IsAlnum(c) && c != '_') return false;
  return true;
}

bool IsEnvVarName(std::string_view s) {
  return EnvVarNameMessages(s).empty();
}

bool IsHttpToken(std::string_view s) {
  // RFC 7230 section 3.2.6: token = 1*tchar.
  static constexpr std::string_view kTcharPunct = "!#$%&'*+-.^_`|~";
  if (s.empty()) return false;
  for (char c : s)
    if (!IsAlnum(c) && kTcharPunct.find(c) == std::string_view::npos) return false;
  return true;
}

}  // namespace podvisor::pod
