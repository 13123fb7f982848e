// Capability math (capabilities.h) and seccomp profiles (seccomp_profile.h).
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "oci/capabilities.h"
#include "oci/seccomp_profile.h"

namespace podvisor::oci {
namespace {

using nlohmann::json;

pod::SecurityContext Caps(std::vector<std::string> add, std::vector<std::string> drop) {
  pod::SecurityContext sc;
  sc.capabilities = pod::Capabilities{std::move(add), std::move(drop)};
  return sc;
}

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(Capabilities, DefaultIsContainerdsFourteen) {
  auto caps = ComputeCapabilities(nullptr, "f");
  ASSERT_TRUE(caps);
  EXPECT_EQ(*caps,
            (std::vector<std::string>{
                "CAP_AUDIT_WRITE", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID",
                "CAP_KILL", "CAP_MKNOD", "CAP_NET_BIND_SERVICE", "CAP_NET_RAW", "CAP_SETFCAP",
                "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID", "CAP_SYS_CHROOT"}));
}

TEST(Capabilities, AddAndDropAcceptAnySpelling) {
  auto sc = Caps({"net_admin", "CAP_SYS_TIME", "Sys_Ptrace"}, {"KILL", "cap_chown"});
  auto caps = ComputeCapabilities(&sc, "f");
  ASSERT_TRUE(caps) << caps.error().message();
  EXPECT_TRUE(Contains(*caps, "CAP_NET_ADMIN"));
  EXPECT_TRUE(Contains(*caps, "CAP_SYS_TIME"));
  EXPECT_TRUE(Contains(*caps, "CAP_SYS_PTRACE"));
  EXPECT_FALSE(Contains(*caps, "CAP_KILL"));
  EXPECT_FALSE(Contains(*caps, "CAP_CHOWN"));
  EXPECT_EQ(caps->size(), 14u + 3 - 2);
  EXPECT_TRUE(std::is_sorted(caps->begin(), caps->end()));
}

TEST(Capabilities, S14_35_AnAddedCapabilityOutsideTheBoundingSetIsNamedUpFront) {
  pod::PodSpec spec;
  spec.init_containers.push_back(pod::Container{});
  spec.init_containers[0].name = "setup";
  spec.containers.push_back(pod::Container{});
  spec.containers[0].name = "app";
  spec.containers.push_back(pod::Container{});
  spec.containers[1].name = "tuner";
  spec.containers[1].security_context = Caps({"NET_ADMIN", "sys_resource"}, {});
  const std::vector<std::string> lacking = {"CAP_CHOWN", "CAP_NET_ADMIN"};
  Status s = CheckCapabilitiesAvailable(spec, lacking);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message(),
            "spec.containers[1].securityContext.capabilities.add[1]: CAP_SYS_RESOURCE is not in "
            "podvisor's own bounding set on this host, so no container can have it");
  EXPECT_TRUE(CheckCapabilitiesAvailable(spec, AllCapabilities()));
}

TEST(Capabilities, DropAllThenAddKeepsOnlyTheAdded) {
  auto sc = Caps({"NET_BIND_SERVICE"}, {"ALL"});
  EXPECT_EQ(*ComputeCapabilities(&sc, "f"), std::vector<std::string>{"CAP_NET_BIND_SERVICE"});
}

TEST(Capabilities, AddAllThenDropRemovesFromEverything) {
  auto sc = Caps({"all"}, {"CHOWN"});
  auto caps = ComputeCapabilities(&sc, "f");
  ASSERT_TRUE(caps);
  EXPECT_EQ(caps->size(), AllCapabilities().size() - 1);
  EXPECT_FALSE(Contains(*caps, "CAP_CHOWN"));
  EXPECT_TRUE(Contains(*caps, "CAP_SYS_ADMIN"));
}

TEST(Capabilities, AllMeansWhatThisHostCanGrant) {
  std::vector<std::string> available = {"CAP_CHOWN", "CAP_KILL", "CAP_NET_ADMIN", "CAP_SETUID"};
  auto all = Caps({"ALL"}, {});
  EXPECT_EQ(*ComputeCapabilities(&all, "f", &available), available);
  auto none = Caps({}, {});
  EXPECT_EQ(*ComputeCapabilities(&none, "f", &available),
            (std::vector<std::string>{"CAP_CHOWN", "CAP_KILL", "CAP_SETUID"}))
      << "defaults the host lacks are left out";
  auto missing = Caps({"NET_ADMIN", "SYS_RESOURCE"}, {});
  auto err = ComputeCapabilities(&missing, "sc.capabilities", &available);
  ASSERT_FALSE(err);
  EXPECT_EQ(err.error().message().rfind("sc.capabilities.add[1]: CAP_SYS_RESOURCE is not in", 0),
            0u)
      << err.error().message();
  auto bounding = CurrentBoundingCapabilities();
  auto known = AllCapabilities();
  EXPECT_FALSE(bounding.empty());
  EXPECT_TRUE(std::includes(known.begin(), known.end(), bounding.begin(), bounding.end()));
}

TEST(Capabilities, AllKnowsTheModernOnes) {
  auto all = AllCapabilities();
  EXPECT_GE(all.size(), 38u);
  EXPECT_TRUE(Contains(all, "CAP_BPF"));
  EXPECT_TRUE(Contains(all, "CAP_SYS_ADMIN"));
}

TEST(Capabilities, UnknownNamesAreErrorsNamingTheField) {
  auto sc = Caps({"NET_ADMIN", "FLY"}, {});
  auto caps = ComputeCapabilities(&sc, "spec.containers[0].securityContext.capabilities");
  ASSERT_FALSE(caps);
  EXPECT_EQ(caps.error().message(),
            "spec.containers[0].securityContext.capabilities.add[1]: unknown capability \"FLY\"");
  auto numeric = Caps({}, {"12"});
  EXPECT_FALSE(ComputeCapabilities(&numeric, "f")) << "libcap accepts numbers; Kubernetes does not";
  EXPECT_FALSE(CanonicalCapabilityName("CAP_"));
}

std::vector<std::string> AllowedUnconditionally(const json& profile) {
  std::vector<std::string> names;
  for (const json& rule : profile["syscalls"]) {
    if (rule["action"] == "SCMP_ACT_ALLOW" && !rule.contains("args")) {
      for (const json& n : rule["names"]) names.push_back(n.get<std::string>());
    }
  }
  return names;
}

TEST(Seccomp, RuntimeDefaultIsAnAllowListThatExcludesDangerousSyscalls) {
  json p = RuntimeDefaultSeccompProfile(DefaultCapabilities());
  EXPECT_EQ(p["defaultAction"], "SCMP_ACT_ERRNO");
  EXPECT_EQ(p["defaultErrnoRet"], 1);
  auto allowed = AllowedUnconditionally(p);
  for (const char* name : {"read", "write", "openat", "execve", "exit_group", "futex", "chroot"}) {
    EXPECT_TRUE(Contains(allowed, name)) << name;
  }
  for (const char* name : {"kexec_load", "init_module", "finit_module", "mount", "umount2",
                           "reboot", "unshare", "setns", "bpf", "keyctl", "add_key",
                           "open_by_handle_at", "io_uring_setup", "ptrace_no_such", "clone"}) {
    EXPECT_FALSE(Contains(allowed, name)) << name;
  }
}

TEST(Seccomp, EveryNameResolvesOnThisArchitecture) {
  json p = RuntimeDefaultSeccompProfile(AllCapabilities());
  for (const json& rule : p["syscalls"]) {
    for (const json& n : rule["names"]) EXPECT_TRUE(SyscallKnownOnHost(n.get<std::string>())) << n;
  }
#if defined(__x86_64__)
  auto allowed = AllowedUnconditionally(p);
  EXPECT_FALSE(Contains(allowed, "chown32")) << "i386-only names are skipped on x86_64";
  EXPECT_TRUE(Contains(allowed, "arch_prctl"));
  EXPECT_TRUE(p["architectures"] == json({"SCMP_ARCH_X86_64", "SCMP_ARCH_X86"}) ||
              p["architectures"] == json({"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"}))
      << p["architectures"];
#endif
}

#if defined(__x86_64__)
// x32 is listed exactly when the kernel runs x32 system calls: asked here
// the way the profile asks (this test process has no seccomp filter of its
// own in CI; with one, x32 is always listed).
TEST(Seccomp, X32IsListedWhenTheKernelRunsIt) {
  std::ifstream status("/proc/self/status");
  std::string line;
  bool filtered = false;
  while (std::getline(status, line)) {
    if (line.rfind("Seccomp:", 0) == 0) filtered = line.find('0') == std::string::npos;
  }
  const bool runs = filtered || ::syscall(0x40000000 | SYS_getpid) >= 0;
  EXPECT_EQ(KernelRunsX32Syscalls(), runs);
  const json arches = RuntimeDefaultSeccompProfile(AllCapabilities())["architectures"];
  EXPECT_EQ(arches, runs ? json({"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"})
                         : json({"SCMP_ARCH_X86_64", "SCMP_ARCH_X86"}));
}
#endif

TEST(Seccomp, CapabilitiesUnlockTheirSyscallGroups) {
  std::vector<std::string> caps = DefaultCapabilities();
  caps.push_back("CAP_SYS_ADMIN");
  caps.push_back("CAP_SYS_BOOT");
  json p = RuntimeDefaultSeccompProfile(caps);
  auto allowed = AllowedUnconditionally(p);
  EXPECT_TRUE(Contains(allowed, "mount"));
  EXPECT_TRUE(Contains(allowed, "clone")) << "unfiltered clone with CAP_SYS_ADMIN";
  EXPECT_TRUE(Contains(allowed, "reboot"));
  EXPECT_FALSE(Contains(allowed, "kexec_load")) << "never, even with CAP_SYS_BOOT";
  EXPECT_FALSE(Contains(allowed, "init_module"));
}

// The profile is built once per set of capabilities: the same set in
// another order gets the same profile, another set its own, and a name is
// listed once even when two groups allow it.
TEST(Seccomp, ProfilesPerCapabilitySetDoNotLeakIntoEachOther) {
  std::vector<std::string> caps = DefaultCapabilities();
  json plain = RuntimeDefaultSeccompProfile(caps);
  caps.push_back("CAP_SYS_ADMIN");
  json admin = RuntimeDefaultSeccompProfile(caps);
  std::reverse(caps.begin(), caps.end());
  EXPECT_EQ(RuntimeDefaultSeccompProfile(caps), admin);
  EXPECT_NE(plain, admin);
  EXPECT_FALSE(Contains(AllowedUnconditionally(plain), "mount"));
  EXPECT_EQ(RuntimeDefaultSeccompProfile(DefaultCapabilities()), plain);
  auto names = AllowedUnconditionally(admin);
  std::vector<std::string> sorted(names.begin(), names.end());
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
}

TEST(Seccomp, CloneIsFilteredAndClone3ReturnsEnosysWithoutSysAdmin) {
  json p = RuntimeDefaultSeccompProfile(DefaultCapabilities());
  bool clone_filtered = false, clone3_enosys = false;
  for (const json& rule : p["syscalls"]) {
    if (rule["names"] == json({"clone"})) {
      clone_filtered =
          rule["args"][0]["op"] == "SCMP_CMP_MASKED_EQ" && rule["args"][0]["valueTwo"] == 0;
    }
    if (rule["names"] == json({"clone3"})) clone3_enosys = rule["errnoRet"] == 38;
  }
  EXPECT_TRUE(clone_filtered);
  EXPECT_TRUE(clone3_enosys);
}

TEST(Seccomp, ConvertsDockerFormatProfiles) {
  json docker = json::parse(R"({
    "defaultAction": "SCMP_ACT_ERRNO",
    "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86"]}],
    "syscalls": [
      {"names": ["read", "not_a_syscall"], "action": "SCMP_ACT_ALLOW", "comment": "x"},
      {"names": ["mount"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
      {"name": "kill", "action": "SCMP_ACT_ERRNO", "errnoRet": 13, "excludes": {"caps": ["CAP_SYS_ADMIN"]}}
    ]})");
  auto out = ConvertSeccompProfile(docker, DefaultCapabilities(), "p.json");
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ((*out)["syscalls"].size(), 2u);
  EXPECT_EQ((*out)["syscalls"][0]["names"], json({"read"}));
  EXPECT_EQ((*out)["syscalls"][1],
            json::parse(R"({"names": ["kill"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13})"));
#if defined(__x86_64__)
  EXPECT_EQ((*out)["architectures"], json({"SCMP_ARCH_X86_64", "SCMP_ARCH_X86"}));
#endif
}

TEST(Seccomp, RejectsMalformedProfiles) {
  auto bad = [](const char* text) {
    return ConvertSeccompProfile(json::parse(text), {}, "p.json");
  };
  EXPECT_FALSE(bad(R"({"syscalls": []})"));
  EXPECT_FALSE(bad(R"({"defaultAction": "SCMP_ACT_MAYBE"})"));
  EXPECT_FALSE(bad(R"({"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_PDP11"]})"));
  EXPECT_FALSE(bad(
      R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"], "action": "NOPE"}]})"));
  EXPECT_FALSE(bad(
      R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ERRNO", "args": [{"index": 9, "value": 1, "op": "SCMP_CMP_EQ"}]}]})"));
  EXPECT_FALSE(bad(R"({"defaultAction": "SCMP_ACT_ALLOW", "listenerPath": "/x"})"));
  auto msg = bad(
      R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": "read", "action": "SCMP_ACT_ALLOW"}]})");
  ASSERT_FALSE(msg);
  EXPECT_EQ(msg.error().message(), "p.json: syscalls[0].names: must be an array of strings");
}

class LocalhostProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/podvisor-seccomp-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    bundle_ = tmpl;
    std::filesystem::create_directories(bundle_ / "seccomp/sub");
    std::ofstream(bundle_ / "seccomp/sub/p.json") << R"({"defaultAction": "SCMP_ACT_LOG"})";
    std::ofstream(bundle_ / "secret.json") << R"({"defaultAction": "SCMP_ACT_ALLOW"})";
  }
  void TearDown() override { std::filesystem::remove_all(bundle_); }
  std::filesystem::path bundle_;
};

TEST_F(LocalhostProfile, LoadsFromBundleSeccompDir) {
  auto p = LoadLocalhostSeccompProfile(bundle_, "sub/p.json", {});
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ((*p)["defaultAction"], "SCMP_ACT_LOG");
}

TEST_F(LocalhostProfile, MustNotEscapeTheSeccompDir) {
  EXPECT_FALSE(LoadLocalhostSeccompProfile(bundle_, "../secret.json", {}));
  EXPECT_FALSE(LoadLocalhostSeccompProfile(bundle_, (bundle_ / "secret.json").string(), {}));
  std::filesystem::create_symlink(bundle_ / "secret.json", bundle_ / "seccomp/link.json");
  auto via_link = LoadLocalhostSeccompProfile(bundle_, "link.json", {});
  ASSERT_FALSE(via_link);
  EXPECT_NE(via_link.error().message().find("outside"), std::string::npos);
  EXPECT_FALSE(LoadLocalhostSeccompProfile(bundle_, "missing.json", {}));
}

}  // namespace
}  // namespace podvisor::oci
