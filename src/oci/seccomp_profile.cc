#include "oci/seccomp_profile.h"

#include <seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>

#include "common/file_io.h"

namespace podvisor::oci {
namespace {

using nlohmann::json;

constexpr std::string_view kActions[] = {
    "SCMP_ACT_KILL",  "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_TRAP",
    "SCMP_ACT_ERRNO", "SCMP_ACT_TRACE",        "SCMP_ACT_ALLOW",       "SCMP_ACT_LOG"};
constexpr std::string_view kOperators[] = {"SCMP_CMP_NE",       "SCMP_CMP_LT", "SCMP_CMP_LE",
                                           "SCMP_CMP_EQ",       "SCMP_CMP_GE", "SCMP_CMP_GT",
                                           "SCMP_CMP_MASKED_EQ"};
constexpr std::string_view kFlags[] = {"SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG",
                                       "SECCOMP_FILTER_FLAG_SPEC_ALLOW"};

template <std::size_t N>
bool OneOf(const std::string_view (&set)[N], std::string_view v) {
  return std::find(std::begin(set), std::end(set), v) != std::end(set);
}

// Docker's archMap and includes/excludes name architectures the way the
// OCI spec does ("SCMP_ARCH_X86_64"); libseccomp wants "x86_64".
bool ArchKnown(std::string_view scmp_name) {
  if (scmp_name.rfind("SCMP_ARCH_", 0) != 0) return false;
  std::string lower(scmp_name.substr(10));
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return seccomp_arch_resolve_name(lower.c_str()) != 0;
}

std::string NativeArchName() {
  switch (seccomp_arch_native()) {
    case SCMP_ARCH_X86_64:
      return "SCMP_ARCH_X86_64";
    case SCMP_ARCH_X86:
      return "SCMP_ARCH_X86";
    case SCMP_ARCH_AARCH64:
      return "SCMP_ARCH_AARCH64";
    case SCMP_ARCH_ARM:
      return "SCMP_ARCH_ARM";
    case SCMP_ARCH_PPC64LE:
      return "SCMP_ARCH_PPC64LE";
    case SCMP_ARCH_S390X:
      return "SCMP_ARCH_S390X";
    case SCMP_ARCH_RISCV64:
      return "SCMP_ARCH_RISCV64";
    default:
      return "SCMP_ARCH_NATIVE";
  }
}

Status CheckStringArray(const json& v, std::string_view what) {
  if (!v.is_array()) return Error(std::string(what) + ": must be an array of strings");
  for (const json& item : v) {
    if (!item.is_string()) return Error(std::string(what) + ": must be an array of strings");
  }
  return Ok();
}

// Docker's conditional entries: "includes"/"excludes" with "caps" and
// "arches" (minKernel is ignored: every kernel podvisor supports is newer
// than any minKernel in Docker's profile).
Result<bool> ConditionHolds(const json& cond, bool include, const std::vector<std::string>& caps,
                            const std::string& native, std::string_view where) {
  if (!cond.is_object()) return Error(std::string(where) + ": must be an object");
  auto any_in = [](const json& list, auto pred) {
    return std::any_of(list.begin(), list.end(),
                       [&](const json& x) { return pred(x.get<std::string>()); });
  };
  auto all_in = [](const json& list, auto pred) {
    return std::all_of(list.begin(), list.end(),
                       [&](const json& x) { return pred(x.get<std::string>()); });
  };
  auto has_cap = [&](const std::string& c) {
    return std::find(caps.begin(), caps.end(), c) != caps.end();
  };
  auto is_native = [&](const std::string& a) { return a == native; };
  bool holds = true;
  if (auto it = cond.find("caps"); it != cond.end()) {
    if (Status s = CheckStringArray(*it, std::string(where) + ".caps"); !s) return s.take_error();
    // includes: every listed cap present; excludes: none of them present.
    holds = holds && (include ? all_in(*it, has_cap) : !any_in(*it, has_cap));
  }
  if (auto it = cond.find("arches"); it != cond.end()) {
    if (Status s = CheckStringArray(*it, std::string(where) + ".arches"); !s) return s.take_error();
    // includes: the host is one of them; excludes: it is none of them.
    holds = holds && (include ? any_in(*it, is_native) : !any_in(*it, is_native));
  }
  return holds;
}

Result<json> ConvertArg(const json& arg, std::string_view where) {
  if (!arg.is_object()) return Error(std::string(where) + ": must be an object");
  json out = json::object();
  for (const char* key : {"index", "value", "valueTwo"}) {
    auto it = arg.find(key);
    if (it == arg.end()) continue;
    if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0)) {
      return Error(std::string(where) + "." + key + ": must be a non-negative integer");
    }
    out[key] = it->get<uint64_t>();
  }
  if (!out.contains("index") || out["index"].get<uint64_t>() > 5) {
    return Error(std::string(where) + ".index: must be 0 to 5");
  }
  auto op = arg.find("op");
  if (op == arg.end() || !op->is_string() || !OneOf(kOperators, op->get<std::string>())) {
    return Error(std::string(where) +
                 ".op: must be one of SCMP_CMP_NE, _LT, _LE, _EQ, _GE, _GT, _MASKED_EQ");
  }
  out["op"] = *op;
  return out;
}

Result<json> ConvertRule(const json& rule, const std::vector<std::string>& caps,
                         const std::string& native, const std::string& where) {
  if (!rule.is_object()) return Error(where + ": must be an object");
  for (const char* key : {"includes", "excludes"}) {
    auto it = rule.find(key);
    if (it == rule.end()) continue;
    auto holds =
        ConditionHolds(*it, std::string(key) == "includes", caps, native, where + "." + key);
    if (!holds) return holds.take_error();
    if (!*holds) return json();  // not for this container
  }
  std::vector<std::string> names;
  if (auto it = rule.find("names"); it != rule.end()) {
    if (Status s = CheckStringArray(*it, where + ".names"); !s) return s.take_error();
    for (const json& n : *it) names.push_back(n.get<std::string>());
  }
  if (auto it = rule.find("name"); it != rule.end()) {
    if (!it->is_string()) return Error(where + ".name: must be a string");
    names.push_back(it->get<std::string>());
  }
  std::vector<std::string> known;
  for (const auto& n : names) {
    if (SyscallKnownOnHost(n)) known.push_back(n);
  }
  if (known.empty()) return json();  // nothing this architecture has
  json out{{"names", known}};
  auto action = rule.find("action");
  if (action == rule.end() || !action->is_string() ||
      !OneOf(kActions, action->get<std::string>())) {
    return Error(where +
                 ".action: must be one of SCMP_ACT_ALLOW, _ERRNO, _KILL, _KILL_PROCESS, "
                 "_KILL_THREAD, _TRAP, _TRACE, _LOG");
  }
  out["action"] = *action;
  if (auto it = rule.find("errnoRet"); it != rule.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0)
      return Error(where + ".errnoRet: must be a non-negative integer");
    out["errnoRet"] = it->get<uint64_t>();
  }
  if (auto it = rule.find("args"); it != rule.end() && !it->is_null()) {
    if (!it->is_array()) return Error(where + ".args: must be an array");
    json args = json::array();
    for (std::size_t i = 0; i < it->size(); ++i) {
      auto arg = ConvertArg((*it)[i], where + ".args[" + std::to_string(i) + "]");
      if (!arg) return arg.take_error();
      args.push_back(std::move(*arg));
    }
    out["args"] = std::move(args);
  }
  return out;
}

}  // namespace

bool KernelRunsX32Syscalls() {
#if defined(__x86_64__)
  static const bool runs = [] {
    // "Seccomp:\t0": no filter applies to this process.
    // Modes 0, 1 (strict), 2 (filter); unreadable counts as filtered.
    auto status = ReadFlatKeyed("/proc/self/status");
    std::optional<std::string_view> mode;
    if (status) mode = status->Find("Seccomp");
    if (!mode || *mode != "0") return true;
    constexpr long kX32SyscallBit = 0x40000000;  // __X32_SYSCALL_BIT
    return ::syscall(kX32SyscallBit | SYS_getpid) >= 0;
  }();
  return runs;
#else
  return false;
#endif
}

std::vector<std::string> SeccompArchitectures() {
  switch (seccomp_arch_native()) {
    case SCMP_ARCH_X86_64:
      if (KernelRunsX32Syscalls()) return {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"};
      return {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86"};
    case SCMP_ARCH_AARCH64:
      return {"SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"};
    default:
      return {NativeArchName()};
  }
}

bool SyscallKnownOnHost(std::string_view name) {
  std::string n(name);
  // libseccomp answers with a negative pseudo-number for a name it knows
  // from another architecture ("chown32" on x86_64): not on this host.
  int nr = seccomp_syscall_resolve_name(n.c_str());
  return nr != __NR_SCMP_ERROR && nr >= 0;
}

Result<json> ConvertSeccompProfile(const json& profile, const std::vector<std::string>& caps,
                                   std::string_view source) {
  auto fail = [&](const std::string& msg) { return Error(std::string(source) + ": " + msg); };
  if (!profile.is_object()) return fail("must be a JSON object");
  json out = json::object();
  auto def = profile.find("defaultAction");
  if (def == profile.end() || !def->is_string() || !OneOf(kActions, def->get<std::string>())) {
    return fail(
        "defaultAction: must be one of SCMP_ACT_ALLOW, _ERRNO, _KILL, _KILL_PROCESS, "
        "_KILL_THREAD, _TRAP, _TRACE, _LOG");
  }
  out["defaultAction"] = *def;
  if (auto it = profile.find("defaultErrnoRet"); it != profile.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0)
      return fail("defaultErrnoRet: must be a non-negative integer");
    out["defaultErrnoRet"] = it->get<uint64_t>();
  }
  const std::string native = NativeArchName();
  std::vector<std::string> arches;
  if (auto it = profile.find("architectures"); it != profile.end() && !it->is_null()) {
    if (Status s = CheckStringArray(*it, "architectures"); !s) return fail(s.error().message());
    for (const json& a : *it) arches.push_back(a.get<std::string>());
  }
  if (auto it = profile.find("archMap"); it != profile.end() && !it->is_null()) {
    // Docker form: take the entry for the host and its sub-architectures.
    if (!it->is_array()) return fail("archMap: must be an array");
    for (const json& entry : *it) {
      if (!entry.is_object() || !entry.contains("architecture") ||
          !entry["architecture"].is_string()) {
        return fail("archMap: entries need an \"architecture\" string");
      }
      if (entry["architecture"] != native) continue;
      arches.push_back(native);
      if (auto sub = entry.find("subArchitectures"); sub != entry.end() && !sub->is_null()) {
        if (Status s = CheckStringArray(*sub, "archMap.subArchitectures"); !s)
          return fail(s.error().message());
        for (const json& a : *sub) arches.push_back(a.get<std::string>());
      }
    }
  }
  for (const auto& a : arches) {
    if (!ArchKnown(a)) return fail("architectures: unknown architecture \"" + a + "\"");
  }
  if (!arches.empty()) out["architectures"] = arches;
  if (auto it = profile.find("flags"); it != profile.end() && !it->is_null()) {
    if (Status s = CheckStringArray(*it, "flags"); !s) return fail(s.error().message());
    for (const json& f : *it) {
      if (!OneOf(kFlags, f.get<std::string>())) return fail("flags: unknown flag " + f.dump());
    }
    out["flags"] = *it;
  }
  if (profile.contains("listenerPath")) {
    return fail("listenerPath: seccomp notification is not supported by podvisor");
  }
  json syscalls = json::array();
  if (auto it = profile.find("syscalls"); it != profile.end() && !it->is_null()) {
    if (!it->is_array()) return fail("syscalls: must be an array");
    for (std::size_t i = 0; i < it->size(); ++i) {
      auto rule = ConvertRule((*it)[i], caps, native, "syscalls[" + std::to_string(i) + "]");
      if (!rule) return fail(rule.error().message());
      if (!rule->is_null()) syscalls.push_back(std::move(*rule));
    }
  }
  out["syscalls"] = std::move(syscalls);
  return out;
}

Result<json> LoadLocalhostSeccompProfile(const std::filesystem::path& bundle,
                                         std::string_view relative,
                                         const std::vector<std::string>& caps) {
  // Kubernetes resolves localhostProfile against the kubelet's seccomp
  // directory; podvisor's equivalent is BUNDLE/seccomp/.
  std::filesystem::path rel(relative);
  if (relative.empty() || rel.is_absolute()) {
    return Error("localhostProfile \"" + std::string(relative) +
                 "\": must be a path relative to BUNDLE/seccomp/");
  }
  for (const auto& part : rel) {
    if (part == "..")
      return Error("localhostProfile \"" + std::string(relative) + "\": must not contain '..'");
  }
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::weakly_canonical(bundle / "seccomp", ec);
  std::filesystem::path file = std::filesystem::weakly_canonical(bundle / "seccomp" / rel, ec);
  if (ec)
    return Error("localhostProfile \"" + std::string(relative) + "\": " + ec.message(), ec.value());
  // A symlink inside BUNDLE/seccomp may not lead out of it.
  auto inside = file.lexically_relative(dir);
  if (inside.empty() || *inside.begin() == "..") {
    return Error("localhostProfile \"" + std::string(relative) + "\": resolves outside " +
                 dir.string());
  }
  std::ifstream in(file);
  if (!in) return Error::FromErrno("localhostProfile: reading " + file.string());
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  json doc = json::parse(s.begin(), s.end(), nullptr, false);
  if (doc.is_discarded()) return Error("localhostProfile: " + file.string() + ": not valid JSON");
  return ConvertSeccompProfile(doc, caps, "localhostProfile: " + file.string());
}

}  // namespace podvisor::oci
