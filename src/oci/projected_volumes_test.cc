// configMap, secret, downwardAPI and projected volumes (projected_volumes.h):
// which files, with which modes, in the kubelet's atomic-writer layout.
// The tmpfs of a secret volume and fsGroup ownership need root; those
// tests say so when skipped.
#include "oci/projected_volumes.h"

#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/magic.h>

#include "oci/layout.h"
#include "oci/volumes.h"
#include "pod/parse.h"

namespace podvisor::oci {
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

}  // namespace
}  // namespace podvisor::oci
