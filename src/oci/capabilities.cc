#include "oci/capabilities.h"

#include <linux/capability.h>
#include <sys/capability.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>

namespace podvisor::oci {
namespace {

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool IsAll(std::string_view name) {
  return Upper(name) == "ALL";
}

// libcap's cap_to_name() returns a decimal number for a value it has no
// name for; those are not capabilities podvisor can ask a runtime for.
std::optional<std::string> NameOf(cap_value_t value) {
  char* raw = cap_to_name(value);
  if (!raw) return std::nullopt;
  std::string name(raw);
  cap_free(raw);
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return std::nullopt;
  return Upper(name);
}

}  // namespace

std::vector<std::string> DefaultCapabilities() {
  std::vector<std::string> caps = {
      "CAP_AUDIT_WRITE", "CAP_CHOWN",   "CAP_DAC_OVERRIDE",     "CAP_FOWNER",    "CAP_FSETID",
      "CAP_KILL",        "CAP_MKNOD",   "CAP_NET_BIND_SERVICE", "CAP_NET_RAW",   "CAP_SETFCAP",
      "CAP_SETGID",      "CAP_SETPCAP", "CAP_SETUID",           "CAP_SYS_CHROOT"};
  std::sort(caps.begin(), caps.end());
  return caps;
}

std::vector<std::string> AllCapabilities() {
  // CAP_LAST_CAP from the kernel headers podvisor was built with, not
  // cap_max_bits() of the running kernel: the set (and so the golden
  // configs) must not change with the machine a config is generated on.
  std::vector<std::string> caps;
  for (cap_value_t v = 0; v <= CAP_LAST_CAP; ++v) {
    if (auto name = NameOf(v)) caps.push_back(*name);
  }
  std::sort(caps.begin(), caps.end());
  return caps;
}

std::vector<std::string> CurrentBoundingCapabilities() {
  std::vector<std::string> caps;
  for (cap_value_t v = 0; v <= CAP_LAST_CAP; ++v) {
    if (cap_get_bound(v) != 1) continue;
    if (auto name = NameOf(v)) caps.push_back(*name);
  }
  std::sort(caps.begin(), caps.end());
  return caps;
}

namespace {

bool InInitialUserNamespace() {
  std::ifstream in("/proc/self/uid_map");
  uint64_t inside = 1, outside = 1, count = 0;
  if (!(in >> inside >> outside >> count)) return true;  // no user namespaces at all
  std::string more;
  return inside == 0 && outside == 0 && count == 4294967295ULL && !(in >> more);
}

}  // namespace

std::optional<int> OomScoreAdjFloor() {
  cap_t caps = cap_get_proc();
  if (!caps) return std::nullopt;
  cap_flag_value_t has = CAP_CLEAR;
  cap_get_flag(caps, CAP_SYS_RESOURCE, CAP_EFFECTIVE, &has);
  cap_free(caps);
  // S21.7: lowering oom_score_adj needs CAP_SYS_RESOURCE in the initial
  // user namespace; root of podvisor's own (rootless, or PID 1 of an
  // unprivileged container) has it only there, where it does not count.
  if (has == CAP_SET && InInitialUserNamespace()) return std::nullopt;
  std::ifstream in("/proc/self/oom_score_adj");
  int own = 0;
  if (!(in >> own)) return std::nullopt;
  return own;
}

Result<std::string> CanonicalCapabilityName(std::string_view name) {
  std::string upper = Upper(name);
  if (upper.rfind("CAP_", 0) != 0) upper = "CAP_" + upper;
  // cap_from_name also accepts numbers ("12"); Kubernetes only has names.
  bool word = upper.size() > 4 && std::all_of(upper.begin() + 4, upper.end(), [](char c) {
                return std::isupper(static_cast<unsigned char>(c)) || c == '_';
              });
  cap_value_t value = 0;
  if (!word || cap_from_name(upper.c_str(), &value) != 0) {
    return Error("unknown capability \"" + std::string(name) + "\"");
  }
  auto canonical = NameOf(value);
  if (!canonical) return Error("unknown capability \"" + std::string(name) + "\"");
  return *canonical;
}

Result<std::vector<std::string>> ComputeCapabilities(const pod::SecurityContext* security,
                                                     std::string_view field,
                                                     const std::vector<std::string>* available) {
  std::vector<std::string> all = available ? *available : AllCapabilities();
  auto is_available = [&](const std::string& cap) {
    return std::find(all.begin(), all.end(), cap) != all.end();
  };
  std::vector<std::string> defaults = DefaultCapabilities();
  std::set<std::string> caps;
  // A default missing from this host's bounding set is left out rather than
  // failing every container; an explicit add of it is an error below.
  for (const auto& cap : defaults) {
    if (is_available(cap)) caps.insert(cap);
  }
  if (!security || !security->capabilities)
    return std::vector<std::string>(caps.begin(), caps.end());
  const pod::Capabilities& c = *security->capabilities;

  auto check = [&](const std::vector<std::string>& names, const char* list,
                   std::vector<std::string>& out) -> Status {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (IsAll(names[i])) continue;
      auto canonical = CanonicalCapabilityName(names[i]);
      if (!canonical) {
        return canonical.error().Wrap(std::string(field) + "." + list + "[" + std::to_string(i) +
                                      "]");
      }
      out.push_back(*canonical);
    }
    return Ok();
  };
  std::vector<std::string> add, drop;
  if (Status s = check(c.add, "add", add); !s) return s.take_error();
  for (std::size_t i = 0, j = 0; i < c.add.size(); ++i) {
    if (IsAll(c.add[i])) continue;
    if (!is_available(add[j])) {
      return Error(
          std::string(field) + ".add[" + std::to_string(i) + "]: " + add[j] +
          " is not in podvisor's own bounding set on this host, so no container can have it");
    }
    ++j;
  }
  if (Status s = check(c.drop, "drop", drop); !s) return s.take_error();

  if (std::any_of(c.add.begin(), c.add.end(), IsAll)) caps.insert(all.begin(), all.end());
  if (std::any_of(c.drop.begin(), c.drop.end(), IsAll)) caps.clear();
  caps.insert(add.begin(), add.end());
  for (const auto& name : drop) caps.erase(name);
  return std::vector<std::string>(caps.begin(), caps.end());
}

Status CheckCapabilitiesAvailable(const pod::PodSpec& spec,
                                  const std::vector<std::string>& available) {
  for (const auto& [list, name] :
       {std::pair{&spec.init_containers, "initContainers"}, {&spec.containers, "containers"}}) {
    for (std::size_t i = 0; i < list->size(); ++i) {
      const pod::Container& c = (*list)[i];
      if (!c.security_context) continue;
      const std::string field =
          std::string("spec.") + name + "[" + std::to_string(i) + "].securityContext.capabilities";
      if (auto caps = ComputeCapabilities(&*c.security_context, field, &available); !caps) {
        return caps.take_error();
      }
    }
  }
  return Ok();
}

}  // namespace podvisor::oci
