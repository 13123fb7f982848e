// Root-only: generated configs run by the real runc on this host (suite
// "runc"). A busybox image is built from Debian's busybox-static; each
// container prints what it sees from inside, and the test asserts it:
// user and groups, CapEff, Seccomp mode, NoNewPrivs, oom_score_adj, the
// memory limit, both volume kinds, the termination-message file, and that
// overlay roots of one image are isolated. Each instance is prepared by
// PrepareContainerInstance from PlanContainerConfig's plan, the path `run`
// takes (the Executor's PrepareInstance). Everything is removed in
// TearDown, whatever failed.
#include <sys/capability.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/mounts.h"
#include "hostfs/idmap.h"
#include "hostfs/idmapped_pod.h"
#include "hostfs/instance.h"
#include "hostfs/instance_plan.h"
#include "hostfs/volumes.h"
#include "oci/capabilities.h"
#include "oci/devices.h"
#include "oci/runtime_locator.h"
#include "pod/resources.h"

namespace podvisor::hostfs {
namespace {

constexpr int64_t kGi = 1024LL * 1024 * 1024;
constexpr const char* kApplets[] = {"sh",  "id",       "cat", "grep",  "echo", "test", "touch",
                                    "cut", "hostname", "ls",  "mkdir", "head", "stat"};

std::string ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// CapEff as /proc/self/status prints it, for a set of "CAP_..." names.
std::string CapMask(const std::vector<std::string>& names) {
  uint64_t mask = 0;
  for (const auto& n : names) {
    cap_value_t v = 0;
    EXPECT_EQ(cap_from_name(n.c_str(), &v), 0) << n;
    mask |= uint64_t{1} << v;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(mask));
  return buf;
}

class RuncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    auto runc = oci::FindInPath("runc");
    if (!runc) GTEST_SKIP() << "runc not installed";
    runc_ = *runc;
    if (::access("/bin/busybox", X_OK) != 0)
      GTEST_SKIP() << "busybox-static not installed (/bin/busybox)";
    char tmpl[] = "/tmp/podvisor-runc-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    tmp_ = tmpl;
    bundle_ = tmp_ / "bundle";
    MakeImage("busybox");
    // A reference with ':' exercises the overlay option escaping.
    MakeImage("registry.example/bb:1.36");
    layout_ = std::make_unique<PodLayout>(tmp_ / "state", "rt");
  }

  void TearDown() override {
    if (tmp_.empty()) return;
    for (const auto& id : started_) {
      std::string cmd = runc_.string() + " --root " + (tmp_ / "runc-root").string() +
                        " delete --force " + id + " >/dev/null 2>&1";
      (void)std::system(cmd.c_str());
    }
    if (layout_) {
      Status cleaned = CleanupPod(*layout_);
      EXPECT_TRUE(cleaned) << cleaned.error().message();
    }
    auto left = MountPointsUnder(tmp_);
    EXPECT_TRUE(left && left->empty()) << "mounts left under " << tmp_;
    if (left && left->empty()) std::filesystem::remove_all(tmp_);
  }

  void MakeImage(const std::string& ref) {
    auto rootfs = bundle_ / "images" / ref / "rootfs";
    for (const char* d : {"bin", "etc", "proc", "sys", "dev", "tmp", "data", "mem", "host"}) {
      std::filesystem::create_directories(rootfs / d);
    }
    std::filesystem::copy_file("/bin/busybox", rootfs / "bin/busybox");
    for (const char* applet : kApplets)
      std::filesystem::create_symlink("busybox", rootfs / "bin" / applet);
    std::ofstream(rootfs / "etc/passwd")
        << "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/:/bin/sh\n";
    std::ofstream(rootfs / "etc/group") << "root:x:0:\napp:x:1000:\naudio:x:29:app\n";
  }

  // Where `run` puts the first instance of `container` (the Executor's
  // CreateInstance): containers/<container>/<runtime id>.
  std::filesystem::path InstanceDir(const std::string& container) const {
    return layout_->ContainersDir() / container / InstanceRuntimeId("rt", container, 0, 1);
  }

  // The facts `run` plans an instance with, for a supervisor with its own
  // overlay roots but without the pod sandbox: runc makes each container's
  // namespaces. No cgroup parent: runc then uses /<id>, which `delete`
  // removes; a podvisor parent would be left in every v1 hierarchy of this
  // host.
  InstanceFacts Facts(const pod::Container& c) const {
    InstanceFacts facts;
    facts.bundle = bundle_;
    facts.runtime_id = InstanceRuntimeId("rt", c.name, 0, 1);
    facts.instance_dir = InstanceDir(c.name);
    facts.own_root = true;
    if (userns_) {
      facts.namespaces.user = userns_->path().string();
      facts.user_namespace = kUsernsIds;
    }
    return facts;
  }

  // S20: the pod's user namespace in config.json, where the config does
  // not have it yet (oci/spec_linux.cc's part of hostUsers: false).
  void AddUserNamespace(const std::filesystem::path& config_file) const {
    nlohmann::json config = nlohmann::json::parse(ReadAll(config_file));
    nlohmann::json& linux = config["linux"];
    for (const auto& ns : linux["namespaces"]) {
      if (ns["type"] == "user") return;
    }
    linux["namespaces"].push_back({{"type", "user"}, {"path", userns_->path().string()}});
    nlohmann::json map = nlohmann::json::array(
        {{{"containerID", 0}, {"hostID", kUsernsIds.host_uid}, {"size", kUsernsIds.size}}});
    linux["uidMappings"] = map;
    linux["gidMappings"] = map;
    std::ofstream(config_file) << config.dump(2);
  }

  HostFacts Host(const pod::Container& c) const {
    auto host = ReadHostFacts(c, layout_->dir());
    EXPECT_TRUE(host) << host.error().message();
    if (!host) return {};
    host->node_memory_bytes = 8 * kGi;
    host->node_hostname = "node";
    return *host;
  }

  // Prepares and runs one container to completion; returns its stdout+stderr.
  std::string Run(const pod::Pod& pod, const pod::Container& c, int* exit_code = nullptr) {
    auto image = image::LoadImage(bundle_, c.image);
    EXPECT_TRUE(image) << image.error().message();
    if (!image) return {};
    PreparedInstance inst;
    Status prepared = PrepareContainerInstance(pod, c, *image, *layout_, Facts(c), Host(c), inst);
    EXPECT_TRUE(prepared) << prepared.error().message();
    if (!prepared) return {};
    if (userns_) AddUserNamespace(inst.config_file);
    std::string id = "podvisor-test-" + std::to_string(::getpid()) + "-" + c.name;
    started_.push_back(id);
    std::string cmd = "timeout 20 " + runc_.string() + " --root " + (tmp_ / "runc-root").string() +
                      " run --bundle " + InstanceDir(c.name).string() + " " + id +
                      " </dev/null 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    EXPECT_NE(p, nullptr);
    if (!p) return {};
    std::string out;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    int status = ::pclose(p);
    if (exit_code) *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
  }

  static constexpr oci::PodUserNamespaceIds kUsernsIds{300000, 300000, 65536};
  std::filesystem::path runc_, tmp_, bundle_;
  std::unique_ptr<PodLayout> layout_;
  std::optional<ScratchUserNamespace> userns_;  // S20: hostUsers: false
  std::vector<std::string> started_;
};

pod::Container Shell(std::string name, std::string image, std::string script) {
  pod::Container c;
  c.name = std::move(name);
  c.image = std::move(image);
  c.command = {"/bin/sh", "-c", std::move(script)};
  return c;
}

TEST_F(RuncTest, RootContainerSeesDefaultCapsSeccompOomLimitsAndVolumes) {
  pod::Pod pod;
  pod.metadata.name = "rt";
  pod::Container c =
      Shell("probe", "busybox",
            "id; grep -E '^(CapEff|Seccomp|NoNewPrivs):' /proc/self/status; "
            "echo oom=$(cat /proc/self/oom_score_adj); "
            "echo memlimit=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes); "
            "echo disk > /data/f && echo data=$(cat /data/f); "
            "echo mem > /mem/f && echo memfs=$(grep ' /mem ' /proc/mounts | cut -d' ' -f3); "
            "echo host > /host/f; echo hostname=$(hostname); "
            "echo bye > /dev/termination-log; "
            "mkdir /proc/nope 2>/dev/null || echo proc-ro");
  c.resources.requests.memory = *pod::Quantity::Parse("32Mi");
  c.resources.limits.memory = *pod::Quantity::Parse("64Mi");
  c.volume_mounts = {{"scratch", "/data", false, "", "", "", ""},
                     {"ram", "/mem", false, "", "", "", ""},
                     {"host", "/host", false, "", "", "", ""}};
  pod.spec.containers = {c};
  pod::EmptyDirVolumeSource ram{"Memory", *pod::Quantity::Parse("16Mi")};
  pod.spec.volumes = {{"scratch", pod::EmptyDirVolumeSource{}, std::nullopt, {}, {}, {}, {}, {}},
                      {"ram", ram, std::nullopt, {}, {}, {}, {}, {}},
                      {"host",
                       std::nullopt,
                       pod::HostPathVolumeSource{(tmp_ / "hostdir").string(), "DirectoryOrCreate"},
                       {},
                       {},
                       {},
                       {},
                       {}}};
  ASSERT_TRUE(PreparePodFiles(pod, *layout_, "node"));

  int code = -1;
  std::string out = Run(pod, pod.spec.containers[0], &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("uid=0(root) gid=0(root)"), std::string::npos) << out;
  EXPECT_NE(out.find("CapEff:\t" + CapMask(oci::DefaultCapabilities())), std::string::npos) << out;
  EXPECT_NE(out.find("Seccomp:\t2"), std::string::npos) << "RuntimeDefault filter: " << out;
  EXPECT_NE(out.find("NoNewPrivs:\t1"), std::string::npos) << out;
  int oom = pod::ComputeOomScoreAdj(pod.spec, pod.spec.containers[0], 8 * kGi);
  EXPECT_NE(out.find("oom=" + std::to_string(oom) + "\n"), std::string::npos) << out;
  EXPECT_NE(out.find("memlimit=67108864\n"), std::string::npos) << out;
  EXPECT_NE(out.find("data=disk\n"), std::string::npos) << out;
  EXPECT_NE(out.find("memfs=tmpfs\n"), std::string::npos) << out;
  EXPECT_NE(out.find("hostname=rt\n"), std::string::npos) << out;
  EXPECT_NE(out.find("proc-ro"), std::string::npos) << out;
  // The writes landed where the volumes live on the host.
  EXPECT_EQ(ReadAll(layout_->VolumesDir() / "scratch/f"), "disk\n");
  EXPECT_EQ(ReadAll(layout_->VolumesDir() / "ram/f"), "mem\n");
  EXPECT_EQ(FilesystemType(layout_->VolumesDir() / "ram"), 0x01021994) << "TMPFS_MAGIC";
  EXPECT_EQ(ReadAll(tmp_ / "hostdir/f"), "host\n");
  EXPECT_EQ(ReadAll(TerminationMessageFile(InstanceDir("probe"))), "bye\n");
}

// S20.20-S20.25 with runc 1.1.5, which cannot idmap: container root in
// the pod's user namespace owns its root and the image's files, writes a
// hostPath (also through a subPath) as host root on disk, its emptyDir and
// /etc/hosts as root, reads a file only its owner (host root) may read,
// and writes the termination-message file; what it writes into its root
// is the pod's host uid in upper/.
TEST_F(RuncTest, S20_ContainerRootOfAUserNamespaceSeesFilesAsWithout) {
  auto userns = ScratchUserNamespace::Create(kUsernsIds);
  ASSERT_TRUE(userns) << userns.error().message();
  userns_.emplace(std::move(*userns));
  // S20.25: the directories above the pod's must let its root pass; the
  // pod's own and those below it PrepareContainerInstance opens.
  for (const auto& dir : {tmp_, tmp_ / "state", layout_->dir()}) {
    std::filesystem::create_directories(dir);
    ASSERT_EQ(::chmod(dir.c_str(), dir == layout_->dir() ? 0700 : 0711), 0);
  }
  const std::filesystem::path hostdir = tmp_ / "hostdir";
  std::filesystem::create_directories(hostdir / "only-root");
  std::ofstream(hostdir / "only-root" / "key") << "s3cret\n";
  ASSERT_EQ(::chmod((hostdir / "only-root" / "key").c_str(), 0400), 0);
  ASSERT_EQ(::chmod((hostdir / "only-root").c_str(), 0700), 0);
  pod::Pod pod;
  pod.metadata.name = "rt";
  pod::Container c = Shell("userns", "busybox",
                           "id -u; echo uid-map= $(cat /proc/self/uid_map); "
                           "echo root-owner=$(stat -c %u:%g /); "
                           "echo passwd-owner=$(stat -c %u:%g /etc/passwd); "
                           "echo h > /host/by-root && echo host-ok; "
                           "echo s > /sub/by-root && echo sub-ok; "
                           "echo d > /data/by-root && echo data-ok; "
                           "cat /host/only-root/key; "
                           "echo '# more' >> /etc/hosts && echo hosts-ok; "
                           "echo r > /in-root && echo rootfs-ok; "
                           "echo bye > /dev/termination-log");
  c.volume_mounts = {{"host", "/host", false, "", "", "", ""},
                     {"host", "/sub", false, "made/by/subpath", "", "", ""},
                     {"scratch", "/data", false, "", "", "", ""}};
  pod.spec.containers = {c};
  pod.spec.volumes = {{"scratch", pod::EmptyDirVolumeSource{}, std::nullopt, {}, {}, {}, {}, {}},
                      {"host",
                       std::nullopt,
                       pod::HostPathVolumeSource{hostdir.string(), "Directory"},
                       {},
                       {},
                       {},
                       {},
                       {}}};
  Status prepared = PreparePodFiles(pod, *layout_, "node", {}, userns_->path());
  ASSERT_TRUE(prepared) << prepared.error().message();

  int code = -1;
  std::string out = Run(pod, pod.spec.containers[0], &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("0\nuid-map= 0 300000 65536"), std::string::npos) << out;
  EXPECT_NE(out.find("root-owner=0:0"), std::string::npos) << out;
  EXPECT_NE(out.find("passwd-owner=0:0"), std::string::npos) << out;
  for (const char* ok : {"host-ok", "sub-ok", "data-ok", "s3cret", "hosts-ok", "rootfs-ok"})
    EXPECT_NE(out.find(ok), std::string::npos) << ok << ": " << out;
  struct stat st {};
  for (const auto& file : {hostdir / "by-root", hostdir / "made/by/subpath/by-root",
                           layout_->VolumesDir() / "scratch/by-root"}) {
    ASSERT_EQ(::stat(file.c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_uid, 0u) << file << ": host root on disk";
  }
  ASSERT_EQ(::stat((InstanceDir("userns") / "upper/in-root").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kUsernsIds.host_uid) << "the pod's host uid in upper/";
  EXPECT_EQ(ReadAll(TerminationMessageFile(InstanceDir("userns"))), "bye\n");
}

TEST_F(RuncTest, NonRootUserGroupsAndNoCapabilities) {
  pod::Pod pod;
  pod.metadata.name = "rt";
  pod::PodSecurityContext psc;
  psc.supplemental_groups = {2000};
  pod.spec.security_context = psc;
  pod::Container c = Shell("user", "busybox",
                           "id; grep -E '^(CapEff|CapBnd):' /proc/self/status; "
                           "echo msg > /dev/termination-log && echo tm-writable");
  pod::SecurityContext sc;
  sc.run_as_user = 1000;
  sc.run_as_non_root = true;
  sc.capabilities = pod::Capabilities{{"NET_ADMIN"}, {"ALL"}};
  c.security_context = sc;
  pod.spec.containers = {c};
  ASSERT_TRUE(PreparePodFiles(pod, *layout_, "node"));
  int code = -1;
  std::string out = Run(pod, pod.spec.containers[0], &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("uid=1000(app) gid=1000(app) groups=29(audio),1000(app),2000"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("CapEff:\t0000000000000000"), std::string::npos) << "non-root: " << out;
  EXPECT_NE(out.find("CapBnd:\t" + CapMask({"CAP_NET_ADMIN"})), std::string::npos) << out;
  EXPECT_NE(out.find("tm-writable"), std::string::npos) << out;
}

TEST_F(RuncTest, OverlayRootsOfOneImageAreIsolatedAndReadOnlyRootIsEnforced) {
  pod::Pod pod;
  pod.metadata.name = "rt";
  pod::Container writer = Shell("writer", "busybox", "echo a > /written-by-writer && echo wrote");
  pod::Container reader =
      Shell("reader", "busybox", "test -e /written-by-writer && echo visible || echo isolated");
  pod::Container other = Shell("other-image", "registry.example/bb:1.36", "echo escaped-ok");
  pod::Container ro = Shell("ro", "busybox",
                            "touch /x 2>/dev/null && echo rw || echo ro; "
                            "echo tm > /dev/termination-log && echo tm-ok");
  pod::SecurityContext sc;
  sc.read_only_root_filesystem = true;
  ro.security_context = sc;
  pod.spec.containers = {writer, reader, other, ro};
  ASSERT_TRUE(PreparePodFiles(pod, *layout_, "node"));

  EXPECT_NE(Run(pod, pod.spec.containers[0]).find("wrote"), std::string::npos);
  EXPECT_NE(Run(pod, pod.spec.containers[1]).find("isolated"), std::string::npos);
  EXPECT_NE(Run(pod, pod.spec.containers[2]).find("escaped-ok"), std::string::npos);
  std::string ro_out = Run(pod, pod.spec.containers[3]);
  EXPECT_NE(ro_out.find("ro\n"), std::string::npos) << ro_out;
  EXPECT_NE(ro_out.find("tm-ok"), std::string::npos) << ro_out;
  // The write went to the writer's upper layer, never to the image.
  EXPECT_TRUE(std::filesystem::exists(InstanceDir("writer") / "upper/written-by-writer"));
  EXPECT_FALSE(std::filesystem::exists(bundle_ / "images/busybox/rootfs/written-by-writer"));
  // Removing an instance unmounts its overlay.
  EXPECT_TRUE(IsMountPoint(InstanceDir("writer") / "rootfs"));
  ASSERT_TRUE(RemoveContainerInstance(InstanceDir("writer")));
  EXPECT_FALSE(std::filesystem::exists(InstanceDir("writer")));
  EXPECT_TRUE(RemoveContainerInstance(InstanceDir("writer"))) << "idempotent";
}

TEST_F(RuncTest, PrivilegedContainerHasEveryCapabilityNoSeccompAndHostDevices) {
  pod::Pod pod;
  pod.metadata.name = "rt";
  pod::Container c =
      Shell("priv", "busybox",
            "grep -E '^(CapEff|Seccomp|NoNewPrivs):' /proc/self/status; "
            "test -c /dev/kmsg && echo kmsg; "
            "touch /sys/fs/cgroup/x 2>/dev/null; mkdir /proc/acpi/x 2>/dev/null; echo done");
  pod::SecurityContext sc;
  sc.privileged = true;
  c.security_context = sc;
  pod.spec.containers = {c};
  ASSERT_TRUE(PreparePodFiles(pod, *layout_, "node"));
  int code = -1;
  std::string out = Run(pod, pod.spec.containers[0], &code);
  EXPECT_EQ(code, 0) << out;
  // Every capability podvisor itself has (a sandboxed host may lack some).
  EXPECT_NE(out.find("CapEff:\t" + CapMask(oci::CurrentBoundingCapabilities())), std::string::npos)
      << out;
  EXPECT_NE(out.find("Seccomp:\t0"), std::string::npos) << out;
  EXPECT_NE(out.find("NoNewPrivs:\t0"), std::string::npos) << out;
  EXPECT_NE(out.find("kmsg"), std::string::npos) << "host devices: " << out;
}

TEST_F(RuncTest, LocalhostSeccompProfileFromTheBundleIsEnforced) {
  std::filesystem::create_directories(bundle_ / "seccomp/profiles");
  // Docker's format: allow everything but mkdir/mkdirat, which get EACCES.
  std::ofstream(bundle_ / "seccomp/profiles/no-mkdir.json") << R"({
    "defaultAction": "SCMP_ACT_ALLOW",
    "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86"]}],
    "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}]})";
  pod::Pod pod;
  pod.metadata.name = "rt";
  pod::Container c =
      Shell("sc", "busybox", "grep '^Seccomp:' /proc/self/status; mkdir /tmp/d 2>&1; echo end");
  pod::SecurityContext sc;
  sc.seccomp_profile = pod::SeccompProfile{"Localhost", "profiles/no-mkdir.json"};
  c.security_context = sc;
  pod.spec.containers = {c};
  ASSERT_TRUE(PreparePodFiles(pod, *layout_, "node"));
  std::string out = Run(pod, pod.spec.containers[0]);
  EXPECT_NE(out.find("Seccomp:\t2"), std::string::npos) << out;
  EXPECT_NE(out.find("Permission denied"), std::string::npos) << out;
  EXPECT_NE(out.find("end"), std::string::npos) << out;
}

}  // namespace
}  // namespace podvisor::hostfs
