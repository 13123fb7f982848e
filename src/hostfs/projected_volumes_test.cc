// configMap, secret, downwardAPI and projected volumes (projected_volumes.h):
// which files, with which modes, in the kubelet's atomic-writer layout.
// The tmpfs of a secret volume and fsGroup ownership need root; those
// tests say so when skipped. S14.15: secret data only ever on a tmpfs.
#include "hostfs/projected_volumes.h"

#include <grp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/magic.h>

#include "common/mounts.h"
#include "hostfs/layout.h"
#include "hostfs/volumes.h"
#include "pod/parse.h"

namespace podvisor::hostfs {
namespace {

using testing::ElementsAre;
using testing::Field;
using testing::StartsWith;

pod::Pod ParsePod(std::string_view volumes, std::string_view extra = "") {
  std::string text = std::string(R"(apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {level: debug, "app.conf": "a=1\n"}
binaryData: {logo: iVBORw==}
---
apiVersion: v1
kind: Secret
metadata: {name: sec}
stringData: {user: admin, pass: s3cret}
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}, annotations: {a: b}}
spec:
)") + std::string(extra) +
                     R"(  containers:
    - name: app
      image: busybox
      resources: {limits: {memory: 64Mi}}
  volumes:
)" + std::string(volumes);
  auto out = pod::ParseManifest(text, pod::ManifestFormat::kYaml);
  EXPECT_TRUE(out) << out.error().message();
  if (!out) return {};
  for (const auto& e : out->errors) ADD_FAILURE() << e.ToString();
  return out->pod;
}

pod::DownwardApiNode Node() {
  pod::DownwardApiNode node;
  node.memory_bytes = int64_t{1} << 30;
  return node;
}

auto FileIs(std::string path, std::string content, uint32_t mode) {
  return testing::AllOf(Field(&ProjectedFile::path, path), Field(&ProjectedFile::content, content),
                        Field(&ProjectedFile::mode, mode));
}

TEST(ProjectedFiles, ConfigMapAllKeysOrItemsWithModes) {
  pod::Pod pod = ParsePod(R"(    - {name: all, configMap: {name: cfg}}
    - name: some
      configMap:
        name: cfg
        defaultMode: 0440
        items: [{key: level, path: conf/level}, {key: app.conf, path: app.conf, mode: 0600}]
    - {name: gone, configMap: {name: missing, optional: true}}
)");
  auto all = ProjectedVolumeFiles(pod, pod.spec.volumes[0], Node());
  ASSERT_TRUE(all) << all.error().message();
  EXPECT_THAT(*all, ElementsAre(FileIs("app.conf", "a=1\n", 0644), FileIs("level", "debug", 0644),
                                FileIs("logo", std::string("\x89PNG", 4), 0644)));
  auto some = ProjectedVolumeFiles(pod, pod.spec.volumes[1], Node());
  ASSERT_TRUE(some);
  EXPECT_THAT(*some,
              ElementsAre(FileIs("app.conf", "a=1\n", 0600), FileIs("conf/level", "debug", 0440)));
  auto gone = ProjectedVolumeFiles(pod, pod.spec.volumes[2], Node());
  ASSERT_TRUE(gone);
  EXPECT_TRUE(gone->empty());
}

TEST(ProjectedFiles, ProjectedSourcesAndDownwardApi) {
  pod::Pod pod = ParsePod(R"(    - name: p
      projected:
        defaultMode: 0400
        sources:
          - secret: {name: sec, items: [{key: pass, path: db/password}]}
          - downwardAPI:
              items:
                - {path: labels, fieldRef: {fieldPath: metadata.labels}}
                - {path: name, fieldRef: {fieldPath: metadata.name}, mode: 0444}
                - {path: mem, resourceFieldRef: {containerName: app, resource: limits.memory, divisor: 1Mi}}
          - serviceAccountToken: {path: token}
)");
  auto files = ProjectedVolumeFiles(pod, pod.spec.volumes[0], Node());
  ASSERT_TRUE(files) << files.error().message();
  EXPECT_THAT(*files, ElementsAre(FileIs("db/password", "s3cret", 0400),
                                  FileIs("labels", "app=\"web\"", 0400), FileIs("mem", "64", 0400),
                                  FileIs("name", "web", 0444)));
}

class AtomicWriter : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/podvisor-projected-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (layout_) {
      EXPECT_TRUE(CleanupPod(*layout_));
    }
    std::filesystem::remove_all(dir_);
    if (!shm_dir_.empty()) std::filesystem::remove_all(shm_dir_);
  }
  static unsigned Mode(const std::filesystem::path& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
  }
  static std::string Read(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::filesystem::path dir_;
  std::filesystem::path shm_dir_;  // a test's directory on /dev/shm
  std::optional<PodLayout> layout_;
};

TEST_F(AtomicWriter, DataLinkToATimestampedDirectoryAndOneLinkPerTopLevelName) {
  ::umask(077);
  std::vector<ProjectedFile> files = {
      {"a/b/c", "deep", 0600}, {"a/d", "x", 0644}, {"top", "t", 0400}};
  ASSERT_TRUE(WriteAtomically(dir_, files, std::nullopt));
  ::umask(022);
  std::string payload = std::filesystem::read_symlink(dir_ / "..data").string();
  EXPECT_THAT(payload, StartsWith(".."));
  EXPECT_TRUE(std::filesystem::is_directory(dir_ / payload));
  EXPECT_EQ(std::filesystem::read_symlink(dir_ / "a"), "..data/a");
  EXPECT_EQ(std::filesystem::read_symlink(dir_ / "top"), "..data/top");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "..data_tmp"));
  EXPECT_EQ(Read(dir_ / "a/b/c"), "deep");
  EXPECT_EQ(Mode(dir_ / "a/b/c"), 0600u) << "modes are not reduced by the umask";
  EXPECT_EQ(Mode(dir_ / "a/d"), 0644u);
  EXPECT_EQ(Mode(dir_ / "top"), 0400u);
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_THAT(names, ElementsAre(payload, "..data", "a", "top"));
}

TEST_F(AtomicWriter, RefusesPathsOutsideTheVolume) {
  for (std::string bad : {"../x", "/etc/passwd", "a/../../x", "..hidden"}) {
    EXPECT_FALSE(WriteAtomically(dir_ / "", {{bad, "x", 0644}}, std::nullopt)) << bad;
  }
}

TEST_F(AtomicWriter, SecretVolumesAreTmpfsAndFsGroupOwnsEverything) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting tmpfs and chown need root";
  pod::Pod pod = ParsePod(R"(    - {name: s, secret: {secretName: sec, defaultMode: 0400}}
    - {name: c, configMap: {name: cfg, items: [{key: level, path: conf/level}]}}
    - {name: e, emptyDir: {}}
)",
                          "  securityContext: {fsGroup: 4321}\n");
  layout_.emplace(dir_, "web");
  ASSERT_TRUE(PreparePodVolumes(pod, layout_->VolumesDir()));
  std::filesystem::path s = layout_->VolumesDir() / "s";
  struct statfs fs {};
  ASSERT_EQ(::statfs(s.c_str(), &fs), 0);
  EXPECT_EQ(fs.f_type, TMPFS_MAGIC) << "secret values stay in memory";
  EXPECT_EQ(Read(s / "pass"), "s3cret");
  struct stat st {};
  ASSERT_EQ(::stat((s / "pass").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 4321u);
  EXPECT_EQ(st.st_mode & 07777, 0440u) << "0400 plus group read for the fsGroup";
  std::filesystem::path c = layout_->VolumesDir() / "c";
  ASSERT_EQ(::statfs(c.c_str(), &fs), 0);
  EXPECT_NE(fs.f_type, TMPFS_MAGIC);
  ASSERT_EQ(::stat((c / "conf").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 4321u);
  EXPECT_TRUE(st.st_mode & S_ISGID);
  ASSERT_EQ(::stat((layout_->VolumesDir() / "e").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 4321u);
  EXPECT_EQ(st.st_mode & 07777, 02777u);
  // A second start (recovery, restart of the supervisor) rewrites cleanly.
  ASSERT_TRUE(PreparePodVolumes(pod, layout_->VolumesDir()));
  std::size_t payloads = 0;
  for (const auto& e : std::filesystem::directory_iterator(c)) {
    if (e.path().filename().string().starts_with("..2")) ++payloads;
  }
  EXPECT_EQ(payloads, 1u);
}

long FsType(const std::filesystem::path& p) {
  struct statfs fs {};
  EXPECT_EQ(::statfs(p.c_str(), &fs), 0) << p;
  return static_cast<long>(fs.f_type);
}

constexpr const char* kSecretAndConfigMapProjection = R"(    - name: p
      projected:
        sources:
          - configMap: {name: cfg, items: [{key: level, path: level}]}
          - secret: {name: sec}
    - name: plain
      projected:
        sources:
          - configMap: {name: cfg, items: [{key: level, path: level}]}
)";

TEST_F(AtomicWriter, S14_15_AProjectedVolumeWithASecretSourceIsATmpfsGoneWithThePod) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting tmpfs needs root";
  pod::Pod pod = ParsePod(kSecretAndConfigMapProjection);
  layout_.emplace(dir_, "web");
  ASSERT_TRUE(PreparePodVolumes(pod, layout_->VolumesDir()));
  std::filesystem::path p = layout_->VolumesDir() / "p";
  EXPECT_EQ(FsType(p), TMPFS_MAGIC) << "secret values stay in memory";
  EXPECT_EQ(Read(p / "pass"), "s3cret");
  EXPECT_EQ(Read(p / "level"), "debug");
  EXPECT_NE(FsType(layout_->VolumesDir() / "plain"), TMPFS_MAGIC)
      << "without a secret source it is written as a configMap volume is";
  ASSERT_TRUE(CleanupPod(*layout_));
  EXPECT_FALSE(std::filesystem::exists(p));
  auto left = MountPointsUnder(dir_);
  ASSERT_TRUE(left);
  EXPECT_TRUE(left->empty()) << "a tmpfs is left mounted";
  layout_.reset();
}

TEST_F(AtomicWriter, S14_15_AnOldPayloadOnDiskIsRemovedBeforeTheTmpfsCoversIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting tmpfs needs root";
  pod::Pod pod = ParsePod("    - {name: s, secret: {secretName: sec}}\n");
  layout_.emplace(dir_, "web");
  std::filesystem::path s = layout_->VolumesDir() / "s";
  std::filesystem::create_directories(s / "..2020_01_01_00_00_00.1");
  std::ofstream(s / "..2020_01_01_00_00_00.1" / "pass") << "old-s3cret";
  ASSERT_TRUE(PreparePodVolumes(pod, layout_->VolumesDir()));
  EXPECT_EQ(FsType(s), TMPFS_MAGIC);
  ASSERT_EQ(::umount2(s.c_str(), 0), 0) << std::strerror(errno);
  EXPECT_TRUE(std::filesystem::is_empty(s)) << "an old payload was left on the disk, hidden";
}

// Runs FN as nobody in a child when we are root, in this process
// otherwise: as a user without the privilege to mount. Returns FN's
// error message, or "" when it succeeded.
std::string Unprivileged(const std::function<Status()>& fn) {
  if (::geteuid() != 0) {
    Status s = fn();
    return s ? "" : s.error().message();
  }
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65534, 65534, 65534) != 0) {
      ::_exit(2);
    }
    Status s = fn();
    std::string out = s ? "" : s.error().message();
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the unprivileged child failed";
  return out;
}

// A directory `nobody` may write in.
std::filesystem::path DirForNobody(const std::filesystem::path& path) {
  std::filesystem::create_directories(path);
  if (::geteuid() == 0) {
    EXPECT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  }
  return path;
}

TEST_F(AtomicWriter, S14_15_WithoutPrivilegeSecretDataGoesOnlyToATmpfsTheCallerProvides) {
  pod::Pod pod = ParsePod(kSecretAndConfigMapProjection);
  ::chmod(dir_.c_str(), 0755);
  // On the disk: refused, naming the volume, and nothing written.
  std::filesystem::path disk = DirForNobody(dir_ / "disk");
  ASSERT_NE(FsType(disk), TMPFS_MAGIC) << "the test's temp dir must be on a disk";
  std::string refused =
      Unprivileged([&] { return PrepareProjectedVolume(pod, pod.spec.volumes[0], disk, Node()); });
  EXPECT_THAT(refused, testing::HasSubstr("volume \"p\""));
  EXPECT_THAT(refused, testing::HasSubstr("secret data is only written to a tmpfs"));
  for (const auto& e : std::filesystem::recursive_directory_iterator(disk)) {
    EXPECT_FALSE(e.is_regular_file()) << e.path() << " written to the disk";
  }
  // A projection without secrets is written there as before.
  EXPECT_EQ(
      Unprivileged([&] { return PrepareProjectedVolume(pod, pod.spec.volumes[1], disk, Node()); }),
      "");
  // A state directory on a tmpfs (a --state-dir under $XDG_RUNTIME_DIR)
  // keeps secret bytes in memory without a mount of our own.
  if (FsType("/dev/shm") != TMPFS_MAGIC) GTEST_SKIP() << "/dev/shm is not a tmpfs here";
  char tmpl[] = "/dev/shm/podvisor-projected-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  shm_dir_ = tmpl;
  ::chmod(shm_dir_.c_str(), 0755);
  std::filesystem::path in_memory = DirForNobody(shm_dir_ / "volumes");
  EXPECT_EQ(Unprivileged([&] {
              return PrepareProjectedVolume(pod, pod.spec.volumes[0], in_memory, Node());
            }),
            "");
  EXPECT_EQ(Read(in_memory / "p" / "pass"), "s3cret");
  EXPECT_FALSE(IsMountPoint(in_memory / "p")) << "no mount of its own without privilege";
}

}  // namespace
}  // namespace podvisor::hostfs
