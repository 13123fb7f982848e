// hostUsers: false (S20.20-S20.25): the idmapped overlay root and the
// pod's idmapped volumes on the real kernel, with a user namespace made
// by the test (0 -> kHostId, 65536 ids) and, for "container root", a
// child process that joins it (setns) and becomes its root. Needs root;
// every mount made is gone at the end of each test.
#include "hostfs/idmap.h"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/mounts.h"
#include "hostfs/idmapped_pod.h"
#include "hostfs/instance.h"
#include "hostfs/rootfs.h"
#include "hostfs/volumes.h"
#include "pod/parse.h"

namespace podvisor::hostfs {
namespace {

namespace fs = std::filesystem;
using testing::AllOf;
using testing::HasSubstr;

constexpr uint32_t kHostId = 300000;
const oci::PodUserNamespaceIds kIds{kHostId, kHostId, 65536};

bool KernelHasLowerdirPlus() {
  Fd context(::fsopen("overlay", FSOPEN_CLOEXEC));
  return context && ::fsconfig(context.get(), FSCONFIG_SET_STRING, "lowerdir+", "/tmp", 0) == 0;
}

struct stat Stat(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

class Idmapped : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (user namespaces' maps, mounts)";
    char tmpl[] = "/tmp/podvisor-idmap-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // The pod's root must pass through to what it is given, as `run`'s
    // state directory lets it.
    ASSERT_EQ(::chmod(dir_.c_str(), 0711), 0);
    auto ns = ScratchUserNamespace::Create(kIds);
    ASSERT_TRUE(ns) << ns.error().message();
    userns_.emplace(std::move(*ns));
  }
  void TearDown() override {
    if (dir_.empty()) return;
    if (Status s = UnmountAllUnder(dir_); !s) {
      ADD_FAILURE() << "left mounted: " << s.error().message();
      return;
    }
    fs::remove_all(dir_);
  }

  // Runs `body` in a child that is root of the pod's user namespace (host
  // id kHostId); its return value is the child's exit code.
  int AsContainerRoot(const std::function<int()>& body) const {
    pid_t pid = ::fork();
    if (pid == 0) {
      if (::setns(userns_->fd(), CLONE_NEWUSER) != 0) ::_exit(101);
      if (::setgroups(0, nullptr) != 0 || ::setresgid(0, 0, 0) != 0 || ::setresuid(0, 0, 0) != 0)
        ::_exit(102);
      ::_exit(body());
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  static void WriteFile(const fs::path& path, const std::string& text, mode_t mode = 0644) {
    std::ofstream(path) << text;
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
  }

  fs::path dir_;
  std::optional<ScratchUserNamespace> userns_;
};

// S20.21: both mount APIs (a deep stack: rootfs_test.cc).
void ExpectIdmappedRoot(const WritableRootPaths& root, const fs::path& file) {
  EXPECT_TRUE(IsMountPoint(root.merged));
  EXPECT_EQ(Stat(root.merged / file).st_uid, kHostId) << "a layer's root file";
  EXPECT_EQ(Stat(root.merged / file).st_gid, kHostId);
  EXPECT_EQ(Stat(root.merged).st_uid, kHostId) << "the root directory";
  EXPECT_EQ(Stat(root.upper).st_uid, kHostId) << "upper/'s root";
  EXPECT_EQ(Stat(root.work).st_uid, 0u) << "work/ stays plain";
}

TEST_F(Idmapped, LayerFilesOwnedByRootAreThePodsHostUidInTheOverlay) {
  fs::create_directories(dir_ / "image" / "etc");
  WriteFile(dir_ / "image" / "etc" / "passwd", "root:x:0:0::/:/bin/sh\n");
  std::vector<OverlayMountApi> apis = {OverlayMountApi::kMountData};
  if (KernelHasLowerdirPlus()) apis.push_back(OverlayMountApi::kNewApi);
  for (OverlayMountApi api : apis) {
    SCOPED_TRACE(api == OverlayMountApi::kNewApi ? "new mount API" : "mount(2)");
    fs::path inst = dir_ / (api == OverlayMountApi::kNewApi ? "new" : "data");
    WritableRootPaths root{dir_ / "image", inst / "upper", inst / "work", inst / "rootfs"};
    Status s = MountWritableRoot(root, api, RootIdmap{userns_->path(), kIds});
    ASSERT_TRUE(s) << s.error().message();
    ExpectIdmappedRoot(root, "etc/passwd");
    EXPECT_EQ(Stat(dir_ / "image" / "etc" / "passwd").st_uid, 0u) << "the image is untouched";
    // Container root writes into its root; the file lands in upper/ with
    // the host id of its range.
    EXPECT_EQ(AsContainerRoot([&] {
                int fd = ::open((root.merged / "etc" / "new").c_str(), O_CREAT | O_WRONLY, 0644);
                return fd >= 0 ? 0 : 1;
              }),
              0);
    EXPECT_EQ(Stat(root.upper / "etc" / "new").st_uid, kHostId);
    Status removed = RemoveWritableRoot(root);
    EXPECT_TRUE(removed) << removed.error().message();
    EXPECT_FALSE(IsMountPoint(root.merged));
  }
}

pod::Pod ParsePod(std::string_view text) {
  auto out = pod::ParseManifest(text, pod::ManifestFormat::kYaml);
  EXPECT_TRUE(out) << out.error().message();
  if (!out) return {};
  for (const auto& e : out->errors) ADD_FAILURE() << e.ToString();
  return out->pod;
}

class IdmappedPod : public Idmapped {
 protected:
  void SetUp() override {
    Idmapped::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    host_ = dir_ / "host";
    fs::create_directories(host_);
    ASSERT_EQ(::chmod(host_.c_str(), 0755), 0);
    layout_.emplace(dir_ / "state", "web");
    fs::create_directories(layout_->dir());
    ASSERT_EQ(::chmod((dir_ / "state").c_str(), 0711), 0);
    ASSERT_EQ(::chmod(layout_->dir().c_str(), 0711), 0);
    pod_ = ParsePod(R"(apiVersion: v1
kind: Secret
metadata: {name: sec}
stringData: {key: s3cret}
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  securityContext: {fsGroup: 2000}
  containers:
    - name: app
      image: img
      command: [/bin/sh]
      volumeMounts:
        - {name: host, mountPath: /host}
        - {name: host, mountPath: /sub, subPath: made/below}
        - {name: secret, mountPath: /secret}
        - {name: scratch, mountPath: /scratch}
  volumes:
    - {name: host, hostPath: {path: )" +
                    host_.string() + R"(, type: Directory}}
    - {name: secret, secret: {secretName: sec, defaultMode: 0400}}
    - {name: scratch, emptyDir: {}}
    - {name: unused, hostPath: {path: /proc}}
)");
    HostEtcFiles etc{dir_ / "hosts", dir_ / "resolv.conf"};
    WriteFile(etc.hosts, "127.0.0.1 localhost\n");
    WriteFile(etc.resolv_conf, "nameserver 192.0.2.53\n");
    Status s = PreparePodFiles(pod_, *layout_, "node", etc, userns_->path());
    ASSERT_TRUE(s) << s.error().message();
  }
  void TearDown() override {
    if (layout_) {
      Status s = CleanupPod(*layout_);
      EXPECT_TRUE(s) << s.error().message();
      auto left = MountPointsUnder(dir_);
      ASSERT_TRUE(left);
      EXPECT_TRUE(left->empty()) << "left mounted after CleanupPod: " << left->front();
      EXPECT_FALSE(fs::exists(layout_->IdmappedDir()));
    }
    Idmapped::TearDown();
  }

  fs::path host_;
  std::optional<PodLayout> layout_;
  pod::Pod pod_;
};

TEST_F(IdmappedPod, ContainerRootWritesAHostPathAsHostRoot) {
  const fs::path view = layout_->IdmappedVolume("host");
  EXPECT_TRUE(IsMountPoint(view));
  EXPECT_EQ(AsContainerRoot([&] {
              int fd = ::open((view / "written").c_str(), O_CREAT | O_WRONLY | O_EXCL, 0644);
              return fd >= 0 ? 0 : 1;
            }),
            0);
  struct stat st = Stat(host_ / "written");
  EXPECT_EQ(st.st_uid, 0u) << "container root is host root on disk";
  EXPECT_EQ(st.st_gid, 0u);
  // Without the idmap container root is no one to the hostPath (0755).
  EXPECT_NE(AsContainerRoot([&] {
              int fd = ::open((host_ / "plain").c_str(), O_CREAT | O_WRONLY | O_EXCL, 0644);
              return fd >= 0 ? 0 : 1;
            }),
            0);
  // The emptyDir and the /etc files the same way.
  EXPECT_EQ(Stat(layout_->IdmappedVolume("scratch")).st_gid, kHostId + 2000) << "fsGroup";
  EXPECT_EQ(Stat(layout_->IdmappedEtcDir() / "hosts").st_uid, kHostId);
  EXPECT_EQ(AsContainerRoot([&] {
              int fd = ::open((layout_->IdmappedEtcDir() / "hosts").c_str(), O_WRONLY | O_APPEND);
              return fd >= 0 ? 0 : 1;
            }),
            0)
      << "container root writes its /etc/hosts, as without a user namespace";
  EXPECT_FALSE(fs::exists(layout_->IdmappedVolume("unused"))) << "no container mounts it";
  // Idempotent: an adopting supervisor keeps what is there.
  auto before = MountPointsUnder(layout_->IdmappedDir());
  ASSERT_TRUE(before);
  EXPECT_EQ(before->size(), 4u) << "host, secret, scratch, etc";
  Status again = IdmapPodMounts(pod_, *layout_, userns_->path());
  EXPECT_TRUE(again) << again.error().message();
  auto after = MountPointsUnder(layout_->IdmappedDir());
  ASSERT_TRUE(after);
  EXPECT_EQ(*after, *before);
}

TEST_F(IdmappedPod, SecretOnlyItsOwnerMayReadIsReadableByContainerRoot) {
  const fs::path file = layout_->VolumesDir() / "secret" / "key";
  struct stat st = Stat(layout_->VolumesDir() / "secret" / "..data" / "key");
  EXPECT_EQ(st.st_mode & 07777, 0440u) << "0400, group-readable for fsGroup";
  EXPECT_EQ(st.st_gid, 2000u);
  auto read_as_root = [&](const fs::path& path) {
    return AsContainerRoot([path] {
      int fd = ::open(path.c_str(), O_RDONLY);
      return fd >= 0 ? 0 : 1;
    });
  };
  EXPECT_EQ(read_as_root(layout_->IdmappedVolume("secret") / "key"), 0);
  EXPECT_NE(read_as_root(file), 0) << "the plain volume is no one's to container root";
  EXPECT_EQ(Stat(layout_->IdmappedVolume("secret") / "..data" / "key").st_gid, kHostId + 2000);
}

TEST_F(IdmappedPod, SubPathIsBoundFromTheIdmappedViewAndItsDirectoriesMadeAsRoot) {
  const fs::path mounts = dir_ / "instance" / "subpaths";
  fs::create_directories(mounts.parent_path());
  auto bound = BindSubPaths(pod_, pod_.spec.containers[0], layout_->VolumesDir(), mounts, {},
                            IdmappedVolumeSources(pod_, *layout_));
  ASSERT_TRUE(bound) << bound.error().message();
  ASSERT_EQ(bound->count(1), 1u);
  EXPECT_EQ(Stat(host_ / "made" / "below").st_uid, 0u) << "made on disk as root";
  EXPECT_EQ(Stat(bound->at(1)).st_uid, kHostId) << "bound from the idmapped view";
  // The runtime opens a bind's source before it enters the user
  // namespace (subpaths/ is 0700, host root's); so does this test.
  Fd source(::open(bound->at(1).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(source);
  EXPECT_EQ(AsContainerRoot([&] {
              int fd = ::openat(source.get(), "f", O_CREAT | O_WRONLY, 0644);
              return fd >= 0 ? 0 : 1;
            }),
            0);
  EXPECT_EQ(Stat(host_ / "made" / "below" / "f").st_uid, 0u);
  EXPECT_TRUE(UnbindSubPaths(mounts));
}

TEST_F(IdmappedPod, InstanceRootAndBindsGoWithRemoveContainerInstance) {
  fs::path rootfs = dir_ / "bundle" / "images" / "img" / "rootfs";
  fs::create_directories(rootfs / "etc");
  WriteFile(rootfs / "etc" / "passwd", "root:x:0:0::/:/bin/sh\n");
  WriteFile(rootfs / "etc" / "group", "root:x:0:\n");
  image::Image image;
  image.rootfs = rootfs;
  InstanceFacts facts;
  facts.bundle = dir_ / "bundle";
  facts.runtime_id = InstanceRuntimeId("web", "app", 0, 1);
  facts.instance_dir = layout_->InstanceDir("app", facts.runtime_id);
  facts.own_root = true;
  facts.namespaces.user = userns_->path().string();
  facts.user_namespace = kIds;
  HostFacts host;
  host.node_memory_bytes = int64_t{1} << 30;
  ASSERT_TRUE(MakeDirs(layout_->ContainersDir(), 0700));
  PreparedInstance prepared;
  Status s = PrepareContainerInstance(pod_, pod_.spec.containers[0], image, *layout_, facts, host,
                                      prepared);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(Stat(facts.instance_dir).st_mode & 07777, 0711u);
  EXPECT_EQ(Stat(layout_->ContainersDir()).st_mode & 07777, 0711u) << "the pod's root passes";
  EXPECT_EQ(Stat(prepared.root.merged / "etc" / "passwd").st_uid, kHostId);
  const std::string config = prepared.config["mounts"].dump();
  EXPECT_THAT(config, AllOf(HasSubstr(layout_->IdmappedVolume("host").string()),
                            HasSubstr(layout_->IdmappedVolume("secret").string()),
                            HasSubstr((layout_->IdmappedEtcDir() / "hosts").string())));
  EXPECT_THAT(config, testing::Not(HasSubstr("\"" + host_.string() + "\"")));

  Status removed = RemoveContainerInstance(facts.instance_dir);
  EXPECT_TRUE(removed) << removed.error().message();
  auto left = MountPointsUnder(layout_->ContainersDir());
  ASSERT_TRUE(left);
  EXPECT_TRUE(left->empty()) << left->front();

  facts.own_root = false;
  facts.instance_dir = layout_->InstanceDir("app", "shared");
  Status shared = PrepareContainerInstance(pod_, pod_.spec.containers[0], image, *layout_, facts,
                                           host, prepared);
  ASSERT_FALSE(shared);
  EXPECT_THAT(shared.error().message(), HasSubstr("hostUsers: false needs a root of its own"));
}

TEST_F(Idmapped, FileSystemThatCannotBeIdmappedIsNamedWithTheVolume) {
  PodLayout layout(dir_ / "state", "p");
  pod::Pod pod = ParsePod(R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
    - {name: app, image: img, volumeMounts: [{name: kernel, mountPath: /k}]}
  volumes:
    - {name: kernel, hostPath: {path: /proc}}
)");
  fs::create_directories(layout.EtcDir());
  Status s = IdmapPodMounts(pod, layout, userns_->path());
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), AllOf(HasSubstr("volume \"kernel\": hostPath /proc"),
                                         HasSubstr("file system (proc) cannot be idmapped")));
  EXPECT_TRUE(CleanupPod(layout));

  Status checked = CheckPodIdmappable(pod, layout);
  ASSERT_FALSE(checked);
  EXPECT_THAT(checked.error().message(), HasSubstr("volume \"kernel\": hostPath /proc"));
  Status sys = CheckIdmappable("/sys/kernel", "the probe");
  ASSERT_FALSE(sys);
  EXPECT_THAT(sys.error().message(), HasSubstr("(sysfs) cannot be idmapped"));
  Status ok = CheckIdmappable(dir_ / "not" / "yet", "a path run creates");
  EXPECT_TRUE(ok) << ok.error().message();
  auto mounts = MountPointsUnder(dir_);
  ASSERT_TRUE(mounts);
  EXPECT_TRUE(mounts->empty());
}

}  // namespace
}  // namespace podvisor::hostfs
