// Volumes, pod files and cleanup that need no root (volumes.h,
// etc_files.h, devices.h, mounts.h).
#include "hostfs/volumes.h"

#include <linux/magic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "common/fd.h"
#include "common/mounts.h"
#include "hostfs/etc_files.h"
#include "hostfs/instance_plan.h"
#include "oci/devices.h"

namespace podvisor::hostfs {
namespace {

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/podvisor-vol-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  unsigned Mode(const std::filesystem::path& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
  }
  std::filesystem::path dir_;
};

pod::Volume HostPath(std::string name, std::string path, std::string type) {
  return {std::move(name),
          std::nullopt,
          pod::HostPathVolumeSource{std::move(path), std::move(type)},
          {},
          {},
          {},
          {},
          {}};
}

using HostPathTypes = TempDir;

TEST_F(HostPathTypes, DirectoryOrCreateCreatesWith0755) {
  ::umask(077);
  auto target = dir_ / "a/b/c";
  ASSERT_TRUE(PrepareHostPath(HostPath("v", target, "DirectoryOrCreate")));
  EXPECT_TRUE(std::filesystem::is_directory(target));
  EXPECT_EQ(Mode(target), 0755u);
  EXPECT_TRUE(PrepareHostPath(HostPath("v", target, "DirectoryOrCreate"))) << "idempotent";
  std::ofstream(dir_ / "file") << "x";
  auto s = PrepareHostPath(HostPath("data", dir_ / "file", "DirectoryOrCreate"));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message(), "volume \"data\": hostPath " + (dir_ / "file").string() +
                                     ": is a file, not a directory (type DirectoryOrCreate)");
  ::umask(022);
}

TEST_F(HostPathTypes, FileOrCreateCreatesAnEmpty0644FileButNoParents) {
  ::umask(077);
  auto target = dir_ / "f.log";
  ASSERT_TRUE(PrepareHostPath(HostPath("v", target, "FileOrCreate")));
  EXPECT_TRUE(std::filesystem::is_regular_file(target));
  EXPECT_EQ(std::filesystem::file_size(target), 0u);
  EXPECT_EQ(Mode(target), 0644u);
  std::ofstream(target) << "keep";
  ASSERT_TRUE(PrepareHostPath(HostPath("v", target, "FileOrCreate")));
  EXPECT_EQ(std::filesystem::file_size(target), 4u) << "an existing file is left alone";
  auto orphan = PrepareHostPath(HostPath("v", dir_ / "missing/f", "FileOrCreate"));
  ASSERT_FALSE(orphan);
  EXPECT_NE(orphan.error().message().find("cannot be created"), std::string::npos);
  EXPECT_FALSE(PrepareHostPath(HostPath("v", dir_, "FileOrCreate"))) << "a directory is not a file";
  ::umask(022);
}

TEST_F(HostPathTypes, ExistenceTypesVerifyWithoutCreating) {
  std::ofstream(dir_ / "file") << "x";
  EXPECT_TRUE(PrepareHostPath(HostPath("v", dir_, "Directory")));
  EXPECT_TRUE(PrepareHostPath(HostPath("v", dir_ / "file", "File")));
  EXPECT_TRUE(PrepareHostPath(HostPath("v", "/dev/null", "CharDevice")));
  EXPECT_FALSE(PrepareHostPath(HostPath("v", "/dev/null", "BlockDevice")));
  EXPECT_FALSE(PrepareHostPath(HostPath("v", dir_ / "file", "Directory")));
  EXPECT_FALSE(PrepareHostPath(HostPath("v", dir_, "File")));
  EXPECT_FALSE(PrepareHostPath(HostPath("v", dir_ / "file", "Socket")));
  auto missing = PrepareHostPath(HostPath("cfg", dir_ / "nope", "Directory"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message(), "volume \"cfg\": hostPath " + (dir_ / "nope").string() +
                                           ": does not exist (type Directory)");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "nope"));
  EXPECT_TRUE(PrepareHostPath(HostPath("v", dir_ / "nope", ""))) << "no type: no check";
  EXPECT_FALSE(PrepareHostPath(HostPath("v", dir_, "Whatever")));
  EXPECT_FALSE(PrepareHostPath(HostPath("v", "relative", "")));
}

TEST_F(HostPathTypes, SocketTypeAcceptsAUnixSocket) {
  auto path = dir_ / "s.sock";
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_TRUE(PrepareHostPath(HostPath("v", path, "Socket")));
  EXPECT_FALSE(PrepareHostPath(HostPath("v", path, "File")));
}

using EmptyDir = TempDir;

TEST_F(EmptyDir, DiskVolumesAreWorldWritableDirectoriesInTheStateDir) {
  pod::Pod p;
  p.spec.volumes = {{"cache", pod::EmptyDirVolumeSource{}, std::nullopt, {}, {}, {}, {}, {}},
                    HostPath("h", dir_ / "host", "DirectoryOrCreate")};
  ASSERT_TRUE(PreparePodVolumes(p, dir_ / "volumes"));
  EXPECT_TRUE(std::filesystem::is_directory(dir_ / "volumes/cache"));
  EXPECT_EQ(Mode(dir_ / "volumes/cache"), 0777u);
  EXPECT_TRUE(std::filesystem::is_directory(dir_ / "host"));
  ASSERT_TRUE(PreparePodVolumes(p, dir_ / "volumes")) << "idempotent";
}

TEST_F(EmptyDir, DiskSizeLimitAndUnknownMediumAreRefused) {
  pod::EmptyDirVolumeSource limited;
  limited.size_limit = *pod::Quantity::Parse("1Gi");
  auto s = PrepareEmptyDir({"big", limited, std::nullopt, {}, {}, {}, {}, {}}, dir_, std::nullopt);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("sizeLimit"), std::string::npos);
  EXPECT_FALSE(PrepareEmptyDir(
      {"x", pod::EmptyDirVolumeSource{"HugePages", std::nullopt}, std::nullopt, {}, {}, {}, {}, {}},
      dir_, std::nullopt));
}

TEST(MemoryEmptyDir, S14_4_SizeIsTheSmallestOfNodePodLimitAndSizeLimit) {
  constexpr int64_t kMi = 1024 * 1024;
  auto limited = [](const char* size) {
    pod::EmptyDirVolumeSource ed{"Memory", std::nullopt};
    if (size) ed.size_limit = *pod::Quantity::Parse(size);
    return ed;
  };
  EXPECT_EQ(MemoryEmptyDirBytes(limited(nullptr), std::nullopt, 8192 * kMi), 8192 * kMi)
      << "no limit at all: the node's memory, not half of it per volume";
  EXPECT_EQ(MemoryEmptyDirBytes(limited(nullptr), 1024 * kMi, 8192 * kMi), 1024 * kMi);
  EXPECT_EQ(MemoryEmptyDirBytes(limited("512Mi"), 1024 * kMi, 8192 * kMi), 512 * kMi);
  EXPECT_EQ(MemoryEmptyDirBytes(limited("4Gi"), 1024 * kMi, 8192 * kMi), 1024 * kMi)
      << "sizeLimit is capped by the pod's limit";
  EXPECT_EQ(MemoryEmptyDirBytes(limited("16Gi"), std::nullopt, 8192 * kMi), 8192 * kMi);
  EXPECT_GT(MemoryEmptyDirBytes(limited(nullptr), std::nullopt, 0), 0) << "0: this host's RAM";
}

TEST_F(EmptyDir, S14_4_MemoryVolumeWithoutLimitsGetsTheNodeMemoryAsItsSize) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (mounts a tmpfs)";
  pod::Pod p;
  p.spec.volumes = {
      {"mem", pod::EmptyDirVolumeSource{"Memory", std::nullopt}, std::nullopt, {}, {}, {}, {}, {}}};
  p.spec.containers.push_back({});
  p.spec.containers.back().name = "app";
  constexpr int64_t kNode = 96 * 1024 * 1024;
  ASSERT_TRUE(PreparePodVolumes(p, dir_ / "volumes", {}, kNode));
  struct statfs fs {};
  ASSERT_EQ(::statfs((dir_ / "volumes/mem").c_str(), &fs), 0);
  int64_t size = static_cast<int64_t>(fs.f_blocks) * fs.f_bsize;
  EXPECT_TRUE(Unmount(dir_ / "volumes/mem"));
  EXPECT_EQ(fs.f_type, TMPFS_MAGIC);
  EXPECT_EQ(size, kNode) << "a container without a memory limit: bounded by the node's memory";
}

using PodFiles = TempDir;

TEST_F(PodFiles, WritesHostsHostnameAndACopyOfResolvConf) {
  std::ofstream(dir_ / "resolv.conf") << "nameserver 192.0.2.53\n";
  std::ofstream(dir_ / "hosts") << "10.0.0.1 node\n";
  PodLayout layout(dir_ / "state", "web");
  HostEtcFiles host{dir_ / "hosts", dir_ / "resolv.conf"};
  ASSERT_TRUE(WritePodEtcFiles(layout, "web-0", false, host));
  auto read = [](const std::filesystem::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(read(layout.HostnameFile()), "web-0\n");
  EXPECT_NE(read(layout.HostsFile()).find("127.0.0.1\tlocalhost\n"), std::string::npos);
  EXPECT_NE(read(layout.HostsFile()).find("127.0.1.1\tweb-0\n"), std::string::npos);
  EXPECT_EQ(read(layout.ResolvConfFile()), "nameserver 192.0.2.53\n");
  ASSERT_TRUE(WritePodEtcFiles(layout, "node", true, host));
  EXPECT_EQ(read(layout.HostsFile()), "10.0.0.1 node\n") << "hostNetwork: the host's hosts file";
}

TEST_F(PodFiles, CleanupRemovesWhatOciCreatedAndIsIdempotent) {
  PodLayout layout(dir_, "web");
  std::filesystem::create_directories(layout.InstanceDir("app", "web_app_0_1") / "upper");
  std::filesystem::create_directories(layout.VolumesDir() / "cache");
  ASSERT_TRUE(WritePodEtcFiles(layout, "web", false, {dir_ / "none", dir_ / "none"}));
  std::ofstream(layout.dir() / "events.jsonl") << "{}\n";
  ASSERT_TRUE(CleanupPod(layout));
  EXPECT_FALSE(std::filesystem::exists(layout.ContainersDir()));
  EXPECT_FALSE(std::filesystem::exists(layout.VolumesDir()));
  EXPECT_FALSE(std::filesystem::exists(layout.EtcDir()));
  EXPECT_TRUE(std::filesystem::exists(layout.dir() / "events.jsonl"))
      << "the supervisor's files stay";
  EXPECT_TRUE(CleanupPod(layout));
  EXPECT_TRUE(CleanupPod(PodLayout(dir_, "never-existed")));
}

TEST(Layout, InstanceFilesFollowTheDocumentedTree) {
  PodLayout layout("/run/podvisor", "web");
  const auto dir = layout.InstanceDir("app", "web_app_2_1");
  EXPECT_EQ(dir / InstanceFile::kConfig,
            "/run/podvisor/web/containers/app/web_app_2_1/config.json");
  EXPECT_EQ(TerminationMessageFile(dir),
            "/run/podvisor/web/containers/app/web_app_2_1/termination-log");
  image::Image image;
  image.rootfs = "/b/images/busybox/rootfs";
  auto root = InstanceRoot(dir, image);
  EXPECT_EQ(root.lower, "/b/images/busybox/rootfs");
  EXPECT_EQ(root.merged, "/run/podvisor/web/containers/app/web_app_2_1/rootfs");
  EXPECT_EQ(root.upper.parent_path(), root.work.parent_path()) << "overlayfs: same filesystem";
}

TEST(Mounts, ListsMountPointsAndFindsRoot) {
  auto points = ListMountPoints();
  ASSERT_TRUE(points) << points.error().message();
  EXPECT_NE(std::find(points->begin(), points->end(), "/"), points->end());
  EXPECT_TRUE(IsMountPoint("/"));
  EXPECT_TRUE(IsMountPoint("/proc"));
  EXPECT_FALSE(IsMountPoint("/proc/self/fd"));
  auto under = MountPointsUnder("/proc");
  ASSERT_TRUE(under);
  EXPECT_FALSE(under->empty());
  EXPECT_TRUE(Unmount("/tmp/definitely-not-mounted-podvisor"));
}

TEST(Devices, ScanFindsCharacterDevicesAndSkipsPts) {
  auto devices = oci::ScanHostDevices();
  ASSERT_TRUE(devices) << devices.error().message();
  auto null_dev = std::find_if(devices->begin(), devices->end(),
                               [](const oci::HostDevice& d) { return d.path == "/dev/null"; });
  ASSERT_NE(null_dev, devices->end());
  EXPECT_EQ(null_dev->type, 'c');
  EXPECT_EQ(null_dev->major, 1);
  EXPECT_EQ(null_dev->minor, 3);
  for (const auto& d : *devices) {
    EXPECT_NE(d.path.rfind("/dev/pts/", 0), 0u) << d.path;
    EXPECT_NE(d.path, "/dev/console");
  }
}

}  // namespace
}  // namespace podvisor::hostfs
