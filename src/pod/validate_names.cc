// The name rules of k8s.io/apimachinery/pkg/util/validation, with the
// messages kubectl prints for them, and the public Is* helpers of
// validate.h. The *Messages functions return every rule a value breaks, so a
// name that is too long and badly spelled gets both lines, as in Kubernetes.
#include <array>
#include <string>
#include <string_view>

#include "pod/validate.h"
#include "pod/validate_internal.h"

namespace podvisor::pod {
namespace {

// --- Name rules (k8s.io/apimachinery/pkg/util/validation) -----------------

constexpr std::size_t kDns1123LabelMaxLength = 63;
constexpr std::size_t kDns1123SubdomainMaxLength = 253;
constexpr std::size_t kQualifiedNameMaxLength = 63;
constexpr std::size_t kPortNameMaxLength = 15;

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

bool MatchesEnvVarName(std::string_view s) {
  if (s.empty() || IsDigit(s.front())) return false;
  for (char c : s)
    if (!IsAlnum(c) && c != '-' && c != '.' && c != '_') return false;
  return true;
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

}  // namespace

namespace internal {

std::string MaxLenMsg(std::size_t n) {
  return "must be no more than " + std::to_string(n) + " characters";
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

}  // namespace internal

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
  return internal::EnvVarNameMessages(s).empty();
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
