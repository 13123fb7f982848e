// Golden config.json files: each pod below is generated and compared with
// testdata/golden/<name>.json structurally (nlohmann equality, so key order
// and whitespace do not matter). PODVISOR_UPDATE_GOLDEN=1 rewrites them;
// review the diff before committing. The goldens hold this host's
// architecture (x86_64) seccomp names and libcap's capability list, and
// are compared without x32, which RuntimeDefault lists only when the
// kernel runs it.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "oci/spec.h"

namespace podvisor::oci {
namespace {

using nlohmann::json;
using pod::Quantity;

constexpr int64_t kGi = 1024LL * 1024 * 1024;

std::filesystem::path TestData() {
  const char* dir = std::getenv("PODVISOR_OCI_TESTDATA");
  return dir ? std::filesystem::path(dir) : std::filesystem::path("src/oci/testdata");
}

Quantity Q(std::string_view text) {
  return *Quantity::Parse(text);
}

pod::Container MakeContainer(std::string name, std::string image) {
  pod::Container c;
  c.name = std::move(name);
  c.image = std::move(image);
  return c;
}

ContainerConfigInput MakeInput(const pod::Pod& pod, const pod::Container& c) {
  std::string dir = "/run/podvisor/" + pod.metadata.name;
  ContainerConfigInput in;
  in.bundle = TestData() / "bundle";
  in.root_path = dir + "/containers/" + c.name + "/0/rootfs";
  in.volumes_dir = dir + "/volumes";
  in.termination_message_file = dir + "/containers/" + c.name + "/0/termination-log";
  in.etc_hosts = dir + "/etc/hosts";
  in.etc_hostname = dir + "/etc/hostname";
  in.etc_resolv_conf = dir + "/etc/resolv.conf";
  in.pod_shm_dir = dir + "/shm";
  in.namespaces = {"/proc/4242/ns/net", "/proc/4242/ns/ipc", "/proc/4242/ns/uts", "", ""};
  in.cgroups_path = "/podvisor/" + pod.metadata.name + "/" + c.name;
  in.node_memory_bytes = 8 * kGi;
  in.node_hostname = "node-1";
  return in;
}

// busybox, no image.json: command + args with $(VAR), env referencing
// earlier env and escapes, Burstable resources, emptyDir + hostPath with
// subPath and readOnly, pod namespaces joined by path, pids limit.
pod::Pod BasicPod() {
  pod::Pod p;
  p.metadata.name = "web";
  pod::Container c = MakeContainer("app", "busybox");
  c.command = {"/bin/sh", "-c"};
  c.args = {"echo $(GREETING) from $(HOSTNAME) in $(DATA_DIR); echo $$(GREETING) $(UNDEFINED)"};
  c.env = {
      {"DATA_DIR", "/data", {}}, {"GREETING", "hello-$(DATA_DIR)", {}}, {"PATH", "/bin:/sbin", {}}};
  c.working_dir = "/data";
  c.resources.requests.cpu = Q("250m");
  c.resources.requests.memory = Q("64Mi");
  c.resources.limits.cpu = Q("500m");
  c.resources.limits.memory = Q("128Mi");
  c.volume_mounts = {{"scratch", "/data", false, "", "", "", ""},
                     {"host-logs", "/data/logs", true, "web", "", "", ""},
                     {"scratch", "/cache", false, "cache/dir", "", "", ""}};
  p.spec.containers = {c};
  pod::Volume scratch{"scratch", pod::EmptyDirVolumeSource{}, std::nullopt, {}, {}, {}, {}, {}};
  pod::Volume logs{"host-logs",
                   std::nullopt,
                   pod::HostPathVolumeSource{"/var/log/pods", "DirectoryOrCreate"},
                   {},
                   {},
                   {},
                   {},
                   {}};
  p.spec.volumes = {scratch, logs};
  return p;
}

// The "app" image (Entrypoint, Cmd, Env, WorkingDir, User "app:staff"):
// args only -> Entrypoint + args; user from the image's passwd/group with
// its member groups; Localhost seccomp in Docker's format; a sidecar with
// the image's Cmd; Guaranteed resources with huge pages.
pod::Pod ImagePod() {
  pod::Pod p;
  p.metadata.name = "api";
  p.metadata.namespace_name = "prod";
  p.spec.hostname = "api-host";
  pod::PodSecurityContext psc;
  psc.supplemental_groups = {5000, 29};
  psc.seccomp_profile = pod::SeccompProfile{"Localhost", "docker-style.json"};
  p.spec.security_context = psc;
  pod::Container app = MakeContainer("server", "app");
  app.args = {"--port", "$(PORT)", "--home=$(APP_HOME)"};
  app.env = {{"PORT", "9090", {}}, {"LANG", "en_US.UTF-8", {}}};
  app.resources.limits.cpu = Q("2");
  app.resources.limits.memory = Q("1Gi");
  app.resources.limits.other["hugepages-2Mi"] = Q("64Mi");
  app.resources.requests = app.resources.limits;  // what API defaulting gives
  pod::Container sidecar = MakeContainer("log-shipper", "app");
  sidecar.restart_policy = pod::RestartPolicy::kAlways;
  sidecar.command = {"/app/bin/shipper"};  // command without args: the image Cmd is ignored
  sidecar.resources.limits.cpu = Q("100m");
  sidecar.resources.limits.memory = Q("64Mi");
  sidecar.resources.requests = sidecar.resources.limits;
  p.spec.init_containers = {sidecar};
  p.spec.containers = {app};
  return p;
}

// Locked down: runAsUser/runAsGroup/runAsNonRoot at pod level overridden
// per container, readOnlyRootFilesystem, drop ALL + add NET_BIND_SERVICE,
// allowPrivilegeEscalation false, Unconfined seccomp, a custom
// terminationMessagePath, a Memory emptyDir at /dev/shm, shared pid ns.
pod::Pod LockedDownPod() {
  pod::Pod p;
  p.metadata.name = "locked";
  p.spec.share_process_namespace = true;
  pod::PodSecurityContext psc;
  psc.run_as_user = 2000;
  psc.run_as_group = 3000;
  psc.run_as_non_root = true;
  p.spec.security_context = psc;
  pod::Container c = MakeContainer("worker", "busybox");
  c.command = {"/bin/worker"};
  pod::SecurityContext sc;
  sc.run_as_user = 33;  // www in the image: its gid 33 is overridden by the pod's runAsGroup
  sc.read_only_root_filesystem = true;
  sc.allow_privilege_escalation = false;
  sc.capabilities = pod::Capabilities{{"net_bind_service"}, {"ALL"}};
  sc.seccomp_profile = pod::SeccompProfile{"Unconfined", std::nullopt};
  c.security_context = sc;
  c.termination_message_path = "/tmp/status/message";
  c.volume_mounts = {{"shm", "/dev/shm", false, "", "", "", ""}};
  p.spec.containers = {c};
  pod::EmptyDirVolumeSource mem{"Memory", Q("32Mi")};
  p.spec.volumes = {{"shm", mem, std::nullopt, {}, {}, {}, {}, {}}};
  return p;
}

// Privileged on the host's network and IPC: every capability, no seccomp,
// no masked paths, rw sysfs, host devices, the node's hostname; caps added
// on top are checked but change nothing.
pod::Pod PrivilegedPod() {
  pod::Pod p;
  p.metadata.name = "node-agent";
  p.spec.host_network = true;
  p.spec.host_ipc = true;
  p.spec.host_pid = true;
  pod::Container c = MakeContainer("agent", "busybox");
  c.command = {"/bin/agent"};
  pod::SecurityContext sc;
  sc.privileged = true;
  sc.capabilities = pod::Capabilities{{"SYS_ADMIN"}, {}};
  c.security_context = sc;
  c.ports = {{"metrics", 9100, 9100, "TCP", ""}};
  p.spec.containers = {c};
  return p;
}

// RuntimeDefault with extra capabilities: the cap-conditional syscalls
// (mount & co. with CAP_SYS_ADMIN, ptrace helpers with CAP_SYS_PTRACE)
// appear and clone is no longer filtered; CAP_KILL dropped.
pod::Pod CapsPod() {
  pod::Pod p;
  p.metadata.name = "debugger";
  pod::Container c = MakeContainer("gdb", "busybox");
  c.command = {"/bin/sh"};
  pod::SecurityContext sc;
  sc.capabilities = pod::Capabilities{{"SYS_ADMIN", "CAP_SYS_PTRACE"}, {"KILL", "cap_mknod"}};
  sc.seccomp_profile = pod::SeccompProfile{"RuntimeDefault", std::nullopt};
  c.security_context = sc;
  p.spec.containers = {c};
  return p;
}

struct GoldenCase {
  std::string name;
  pod::Pod (*make)();
  std::string container;  // name
  void (*tweak)(ContainerConfigInput&) = nullptr;
};

void PrintTo(const GoldenCase& gc, std::ostream* os) {
  *os << gc.name;
}

const pod::Container& Find(const pod::Pod& p, const std::string& name) {
  for (const auto& c : p.spec.init_containers)
    if (c.name == name) return c;
  for (const auto& c : p.spec.containers)
    if (c.name == name) return c;
  throw std::runtime_error("no container " + name);
}

class Golden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(Golden, MatchesFile) {
  const GoldenCase& gc = GetParam();
  pod::Pod p = gc.make();
  const pod::Container& c = Find(p, gc.container);
  auto image = image::LoadImage(TestData() / "bundle", c.image);
  ASSERT_TRUE(image) << image.error().message();
  ContainerConfigInput in = MakeInput(p, c);
  if (gc.tweak) gc.tweak(in);
  auto config = GenerateConfig(p, c, *image, in);
  ASSERT_TRUE(config) << config.error().message();

  std::filesystem::path file = TestData() / "golden" / (gc.name + ".json");
  if (std::getenv("PODVISOR_UPDATE_GOLDEN")) {
    std::ofstream(file) << config->dump(2) << "\n";
    GTEST_SKIP() << "rewrote " << file;
  }
  std::ifstream in_file(file);
  ASSERT_TRUE(in_file) << "missing " << file << " (run with PODVISOR_UPDATE_GOLDEN=1)";
  json expected = json::parse(in_file, nullptr, false);
  ASSERT_FALSE(expected.is_discarded()) << file << " is not JSON";
  // Whether RuntimeDefault lists x32 depends on this kernel
  // (KernelRunsX32Syscalls, checked by security_test.cc): compared without.
  json generated = *config;
  for (json* doc : {&expected, &generated}) {
    json* arches = doc->contains("linux") && (*doc)["linux"].contains("seccomp")
                       ? &(*doc)["linux"]["seccomp"]["architectures"]
                       : nullptr;
    if (arches != nullptr && arches->is_array()) {
      arches->erase(std::remove(arches->begin(), arches->end(), "SCMP_ARCH_X32"), arches->end());
    }
  }
  EXPECT_EQ(generated, expected) << "differences (JSON patch from golden to generated):\n"
                                 << json::diff(expected, generated).dump(2);
}

TEST(ConfigResources, S10_4_MemoryOomGroupGoesToUnifiedOnlyOnCgroupV2) {
  pod::Pod p = BasicPod();
  const pod::Container& c = Find(p, "app");
  auto image = image::LoadImage(TestData() / "bundle", c.image);
  ASSERT_TRUE(image) << image.error().message();
  ContainerConfigInput in = MakeInput(p, c);
  auto plain = GenerateConfig(p, c, *image, in);
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_FALSE((*plain)["linux"]["resources"].contains("unified"));
  in.memory_oom_group = true;
  auto v2 = GenerateConfig(p, c, *image, in);
  ASSERT_TRUE(v2) << v2.error().message();
  EXPECT_EQ((*v2)["linux"]["resources"]["unified"], json({{"memory.oom.group", "1"}}));
}

// S10.3: without CAP_SYS_RESOURCE the runtime cannot lower oom_score_adj
// below the supervisor's own: the config asks for no less.
TEST(ConfigResources, S10_3_OomScoreAdjIsRaisedToTheHostsFloor) {
  pod::Pod p = BasicPod();
  pod::Container& c = p.spec.containers.at(0);
  // Guaranteed: -997 wanted, less than an unprivileged supervisor's own.
  c.resources.limits.cpu = pod::Quantity::Parse("1").value();
  c.resources.limits.memory = pod::Quantity::Parse("64Mi").value();
  c.resources.requests = c.resources.limits;
  auto image = image::LoadImage(TestData() / "bundle", c.image);
  ASSERT_TRUE(image) << image.error().message();
  ContainerConfigInput in = MakeInput(p, c);
  auto free = GenerateConfig(p, c, *image, in);
  ASSERT_TRUE(free) << free.error().message();
  const int wanted = (*free)["process"]["oomScoreAdj"].get<int>();
  EXPECT_EQ(wanted, -997);
  in.oom_score_adj_floor = 0;
  auto clamped = GenerateConfig(p, c, *image, in);
  ASSERT_TRUE(clamped) << clamped.error().message();
  EXPECT_EQ((*clamped)["process"]["oomScoreAdj"], 0);
  in.oom_score_adj_floor = wanted - 1;  // no lower than asked: unchanged
  auto above = GenerateConfig(p, c, *image, in);
  ASSERT_TRUE(above) << above.error().message();
  EXPECT_EQ((*above)["process"]["oomScoreAdj"], wanted);
}

// mountPropagation: the bind's option and the root's propagation as
// containerd's CRI gives them, once the source is on a mount that
// propagates; a private source is refused with the mount to fix.
TEST(ConfigMounts, MountPropagationSetsBindAndRootPropagation) {
  const std::filesystem::path mountinfo =
      std::filesystem::path(::testing::TempDir()) / "podvisor-mountinfo";
  std::ofstream(mountinfo) << "27 1 254:0 / / rw shared:1 - ext4 /dev/vda rw\n"
                              "40 27 0:50 / /var/log rw - tmpfs tmpfs rw\n";
  pod::Pod p = BasicPod();
  p.spec.containers[0].volume_mounts[0].mount_propagation = "HostToContainer";
  const pod::Container& c = Find(p, "app");
  auto image = image::LoadImage(TestData() / "bundle", c.image);
  ASSERT_TRUE(image) << image.error().message();
  ContainerConfigInput in = MakeInput(p, c);
  in.mountinfo = mountinfo;
  auto slave = GenerateConfig(p, c, *image, in);
  ASSERT_TRUE(slave) << slave.error().message();
  EXPECT_EQ((*slave)["linux"]["rootfsPropagation"], "rslave");
  for (const json& m : (*slave)["mounts"]) {
    if (m["destination"] == "/data") {
      EXPECT_EQ(m["options"], json({"rbind", "rslave", "rw"}));
    } else if (m["type"] == "bind") {
      EXPECT_EQ(m["options"][1], "rprivate") << m.dump();
    }
  }

  pod::Pod bidi = BasicPod();
  bidi.spec.containers[0].volume_mounts[0].mount_propagation = "Bidirectional";
  auto shared = GenerateConfig(bidi, bidi.spec.containers[0], *image, in);
  ASSERT_TRUE(shared) << shared.error().message();
  EXPECT_EQ((*shared)["linux"]["rootfsPropagation"], "rshared");

  // /var/log/pods (the hostPath of mount 1) is on the private /var/log.
  pod::Pod host = BasicPod();
  host.spec.containers[0].volume_mounts[1].mount_propagation = "HostToContainer";
  auto refused = GenerateConfig(host, host.spec.containers[0], *image, in);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("spec.containers[0].volumeMounts[1].mountPropagation: "
                                           "HostToContainer: /var/log/pods/web is on the mount "
                                           "/var/log, which is not a shared or slave mount"),
            std::string::npos)
      << refused.error().message();
  std::filesystem::remove(mountinfo);
}

// S20.22: a hostUsers: false pod's containers bind each volume from its
// idmapped mount, the subPath joined below it (for display; a created
// container gets the bound source of S20.24).
TEST(ConfigMounts, IdmappedVolumeSourcesReplaceTheVolumesPaths) {
  pod::Pod p = BasicPod();
  p.spec.containers[0].volume_mounts[1].sub_path = "app";
  const pod::Container& c = p.spec.containers[0];
  auto image = image::LoadImage(TestData() / "bundle", c.image);
  ASSERT_TRUE(image) << image.error().message();
  ContainerConfigInput in = MakeInput(p, c);
  in.idmapped_volume_sources = {{"scratch", "/state/web/idmapped/volumes/scratch"},
                                {"host-logs", "/state/web/idmapped/volumes/host-logs"}};
  auto config = GenerateConfig(p, c, *image, in);
  ASSERT_TRUE(config) << config.error().message();
  std::map<std::string, std::string> sources;
  for (const json& m : (*config)["mounts"]) sources[m["destination"]] = m["source"];
  EXPECT_EQ(sources["/data"], "/state/web/idmapped/volumes/scratch");
  EXPECT_EQ(sources["/data/logs"], "/state/web/idmapped/volumes/host-logs/app");
  EXPECT_EQ(sources["/cache"], "/state/web/idmapped/volumes/scratch/cache/dir");
}

// appArmorProfile Localhost: the profile's name for runc once the host has
// AppArmor on and the profile loaded; otherwise an error naming which.
TEST(ConfigSecurity, AppArmorLocalhostProfileMustBeLoaded) {
  const std::filesystem::path tmp = ::testing::TempDir();
  const std::filesystem::path enabled = tmp / "podvisor-aa-enabled";
  const std::filesystem::path profiles = tmp / "podvisor-aa-profiles";
  std::ofstream(enabled) << "Y\n";
  std::ofstream(profiles) << "docker-default (enforce)\nk8s apparmor example (complain)\n";
  pod::Pod p = BasicPod();
  pod::PodSecurityContext psc;
  psc.app_armor_profile = pod::AppArmorProfile{"Localhost", "k8s apparmor example"};
  p.spec.security_context = psc;
  const pod::Container& c = p.spec.containers[0];
  auto image = image::LoadImage(TestData() / "bundle", c.image);
  ASSERT_TRUE(image) << image.error().message();
  ContainerConfigInput in = MakeInput(p, c);
  in.apparmor_enabled = enabled;
  in.apparmor_profiles = profiles;
  auto loaded = GenerateConfig(p, c, *image, in);
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_EQ((*loaded)["process"]["apparmorProfile"], "k8s apparmor example");

  // The container's own setting wins; RuntimeDefault loads nothing.
  p.spec.containers[0].security_context = pod::SecurityContext{};
  p.spec.containers[0].security_context->app_armor_profile =
      pod::AppArmorProfile{"RuntimeDefault", std::nullopt};
  auto runtime_default = GenerateConfig(p, p.spec.containers[0], *image, in);
  ASSERT_TRUE(runtime_default) << runtime_default.error().message();
  EXPECT_FALSE((*runtime_default)["process"].contains("apparmorProfile"));

  p.spec.containers[0].security_context->app_armor_profile =
      pod::AppArmorProfile{"Localhost", "missing"};
  auto missing = GenerateConfig(p, p.spec.containers[0], *image, in);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message(),
            "spec.containers[0].securityContext.appArmorProfile: Localhost profile \"missing\" "
            "is not loaded (load it with apparmor_parser)");
  std::ofstream(enabled) << "N\n";
  auto off = GenerateConfig(p, p.spec.containers[0], *image, in);
  ASSERT_FALSE(off);
  EXPECT_NE(off.error().message().find("AppArmor is not enabled on this host"), std::string::npos);
  std::filesystem::remove(enabled);
  std::filesystem::remove(profiles);
}

// readOnlyRootFilesystem holds for sidecars as for any container: their
// root and the pod files they get are read-only.
TEST(ConfigMounts, ReadOnlyRootFilesystemOnASidecar) {
  pod::Pod p = ImagePod();
  pod::SecurityContext sc;
  sc.read_only_root_filesystem = true;
  p.spec.init_containers[0].security_context = sc;
  const pod::Container& c = Find(p, "log-shipper");
  auto image = image::LoadImage(TestData() / "bundle", c.image);
  ASSERT_TRUE(image) << image.error().message();
  auto config = GenerateConfig(p, c, *image, MakeInput(p, c));
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_EQ((*config)["root"]["readonly"], true);
  for (const json& m : (*config)["mounts"]) {
    if (m["destination"] == "/etc/hosts" || m["destination"] == "/etc/resolv.conf") {
      EXPECT_EQ(m["options"][2], "ro") << m.dump();
    }
  }
}

// S20.8: hostUsers: false joins the pod's user namespace (first, by its
// holder's path) with the block's mappings for uids and gids.
TEST(ConfigUserNamespace, S20_8_TheUserNamespaceAndItsMappings) {
  pod::Pod p = BasicPod();
  p.spec.host_users = false;
  const pod::Container& c = Find(p, "app");
  auto image = image::LoadImage(TestData() / "bundle", c.image);
  ASSERT_TRUE(image) << image.error().message();
  ContainerConfigInput in = MakeInput(p, c);
  auto host = GenerateConfig(p, c, *image, in);
  ASSERT_TRUE(host) << host.error().message();
  EXPECT_FALSE((*host)["linux"].contains("uidMappings"));
  for (const json& ns : (*host)["linux"]["namespaces"]) EXPECT_NE(ns["type"], "user");

  in.namespaces.user = "/proc/4242/ns/user";
  in.user_namespace = PodUserNamespaceIds{196608, 196608, 65536};
  auto own = GenerateConfig(p, c, *image, in);
  ASSERT_TRUE(own) << own.error().message();
  const json& linux = (*own)["linux"];
  EXPECT_EQ(linux["namespaces"][0], json({{"type", "user"}, {"path", "/proc/4242/ns/user"}}));
  const json mapping = json::array({{{"containerID", 0}, {"hostID", 196608}, {"size", 65536}}});
  EXPECT_EQ(linux["uidMappings"], mapping);
  EXPECT_EQ(linux["gidMappings"], mapping);
  // The masked paths stay: procMount is Default.
  EXPECT_TRUE(linux.contains("maskedPaths"));
}

// S20.11: a read-only bind of a secret's tmpfs names the flags the tmpfs
// has, which a remount in a user namespace may not clear; the host's
// pods' binds stay as they were.
TEST(ConfigUserNamespace, S20_11_ProjectedVolumeBindsKeepTheirTmpfsFlags) {
  pod::Pod p = BasicPod();
  p.spec.host_users = false;
  pod::Volume token;
  token.name = "token";
  token.secret = pod::SecretVolumeSource{"token", {}, std::nullopt, std::nullopt};
  p.spec.volumes.push_back(token);
  p.spec.containers[0].volume_mounts.push_back({"token", "/token", false, "", "", "", ""});
  const pod::Container& c = Find(p, "app");
  auto image = image::LoadImage(TestData() / "bundle", c.image);
  ASSERT_TRUE(image) << image.error().message();
  ContainerConfigInput in = MakeInput(p, c);
  auto options_of = [&](const json& config) {
    for (const json& m : config["mounts"]) {
      if (m["destination"] == "/token") return m["options"];
    }
    return json();
  };
  auto host = GenerateConfig(p, c, *image, in);
  ASSERT_TRUE(host) << host.error().message();
  EXPECT_EQ(options_of(*host), json({"rbind", "rprivate", "ro"}));
  in.user_namespace = PodUserNamespaceIds{65536, 65536, 65536};
  auto own = GenerateConfig(p, c, *image, in);
  ASSERT_TRUE(own) << own.error().message();
  EXPECT_EQ(options_of(*own), json({"rbind", "rprivate", "ro", "nosuid", "nodev", "noexec"}));
}

// S20.9: procMount Unmasked is a /proc without masked or read-only paths.
TEST(ConfigUserNamespace, S20_9_UnmaskedProcHasNoMaskedOrReadonlyPaths) {
  pod::Pod p = BasicPod();
  p.spec.host_users = false;
  pod::SecurityContext sc;
  sc.proc_mount = "Unmasked";
  p.spec.containers[0].security_context = sc;
  const pod::Container& c = Find(p, "app");
  auto image = image::LoadImage(TestData() / "bundle", c.image);
  ASSERT_TRUE(image) << image.error().message();
  ContainerConfigInput in = MakeInput(p, c);
  in.user_namespace = PodUserNamespaceIds{65536, 65536, 65536};
  auto config = GenerateConfig(p, c, *image, in);
  ASSERT_TRUE(config) << config.error().message();
  EXPECT_FALSE((*config)["linux"].contains("maskedPaths"));
  EXPECT_FALSE((*config)["linux"].contains("readonlyPaths"));
  // Without a path (validate, oci-config) the runtime makes the namespace.
  EXPECT_EQ((*config)["linux"]["namespaces"][0], json({{"type", "user"}}));
}

INSTANTIATE_TEST_SUITE_P(
    Configs, Golden,
    ::testing::Values(
        GoldenCase{"basic", BasicPod, "app", [](ContainerConfigInput& in) { in.pids_limit = 256; }},
        GoldenCase{"image-defaults", ImagePod, "server"},
        GoldenCase{"sidecar-command-only", ImagePod, "log-shipper"},
        GoldenCase{"locked-down", LockedDownPod, "worker",
                   [](ContainerConfigInput& in) { in.namespaces.pid = "/proc/4242/ns/pid"; }},
        GoldenCase{"privileged-host", PrivilegedPod, "agent",
                   [](ContainerConfigInput& in) {
                     in.host_devices = {{"/dev/kmsg", 'c', 1, 11, 0644, 0, 0},
                                        {"/dev/sda", 'b', 8, 0, 0660, 0, 6}};
                   }},
        GoldenCase{"extra-capabilities", CapsPod, "gdb"}),
    [](const ::testing::TestParamInfo<GoldenCase>& info) {
      std::string n = info.param.name;
      for (char& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

}  // namespace
}  // namespace podvisor::oci
