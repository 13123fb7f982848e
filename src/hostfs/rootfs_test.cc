// Writable roots over layered images (S16.3): the overlay shows the
// layers' merged tree (whiteouts and opaque directories honoured) through
// the new mount API and mount(2), a lower-directory list longer than one
// page mounts, and so does a stack beyond overlayfs's 500 layers (the
// bottom ones merged into one directory of the store). Mounting needs
// root: those tests skip without it.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/mounts.h"
#include "hostfs/idmap.h"
#include "hostfs/rootfs.h"
#include "image/layer_store.h"
#include "image/layout_builder_test_util.h"

namespace podvisor::hostfs {
namespace {

namespace fs = std::filesystem;
using image::testing::Dir;
using image::testing::File;
using image::testing::ReadFile;
using image::testing::TarEntry;

// Whether this kernel takes "lowerdir+" (Linux 6.8).
bool KernelHasLowerdirPlus() {
  Fd context(::fsopen("overlay", FSOPEN_CLOEXEC));
  return context && ::fsconfig(context.get(), FSCONFIG_SET_STRING, "lowerdir+", "/tmp", 0) == 0;
}

class LayeredRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (mounts an overlay)";
    char tmpl[] = "/tmp/podvisor-layered-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto store = image::LayerStore::Open(dir_ / "state" / ".images");
    ASSERT_TRUE(store) << store.error().message();
    store_.emplace(std::move(*store));
    builder_.emplace(dir_ / "layout");
  }
  void TearDown() override {
    if (dir_.empty()) return;
    // Never remove_all through a mount.
    if (Status s = UnmountAllUnder(dir_); !s) {
      ADD_FAILURE() << "left mounted: " << s.error().message();
      return;
    }
    fs::remove_all(dir_);
  }
  // Ingests `layers` (bottom first); returns their directories top first.
  std::vector<fs::path> Stack(const std::vector<std::vector<TarEntry>>& layers) {
    std::vector<fs::path> dirs;
    for (const auto& entries : layers) {
      auto d = builder_->Layer(entries);
      auto blob = image::ParseDigest(d["digest"].get<std::string>());
      auto diff_id = image::ParseDigest(
          "sha256:" + image::HashHex("sha256", image::testing::MakeTar(entries, false)));
      image::LayerDescriptor layer{{d["mediaType"], *blob, d["size"], std::nullopt, ""},
                                   image::LayerCompression::kGzip,
                                   *diff_id};
      Fd fd(::open(builder_->BlobFile(d).c_str(), O_RDONLY | O_CLOEXEC));
      image::LayerBudget budget;
      Status s = store_->IngestLayer(fd.get(), layer, budget);
      EXPECT_TRUE(s) << s.error().message();
      dirs.insert(dirs.begin(), store_->LayerDir(*diff_id));
    }
    return dirs;
  }
  WritableRootPaths Root(const std::vector<fs::path>& lowers, const std::string& name) {
    WritableRootPaths root{lowers.front(), dir_ / name / "upper", dir_ / name / "work",
                           dir_ / name / "rootfs"};
    root.lower_dirs = lowers;
    return root;
  }
  std::size_t FlatEntries() const {
    std::error_code ec;
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir_ / "state/.images/flat/sha256", ec)) {
      if (e.is_directory()) ++n;
    }
    return n;
  }
  // Layers each adding f<i> and replacing "v"; enough of them that their
  // list is `bytes` long at least.
  std::vector<std::vector<TarEntry>> ManyLayers(std::size_t count) {
    std::vector<std::vector<TarEntry>> layers;
    for (std::size_t i = 0; i < count; ++i) {
      layers.push_back({File("f" + std::to_string(i), std::to_string(i)),
                        File("v", "from layer " + std::to_string(i))});
    }
    return layers;
  }

  fs::path dir_;
  std::optional<image::LayerStore> store_;
  std::optional<image::testing::LayoutBuilder> builder_;
};

TEST_F(LayeredRoot, S16_3_TheOverlayShowsTheLayersMerged) {
  auto lowers =
      Stack({{Dir("etc"), File("etc/passwd", "root:x:0:0::/:/bin/sh\n"), File("etc/keep", "k"),
              Dir("var"), File("var/old", "o")},
             {File("etc/.wh.passwd", ""), File("var/.wh..wh..opq", ""), File("var/new", "n")}});
  std::vector<OverlayMountApi> apis = {OverlayMountApi::kMountData};
  if (KernelHasLowerdirPlus()) apis.push_back(OverlayMountApi::kNewApi);
  int n = 0;
  for (OverlayMountApi api : apis) {
    WritableRootPaths root = Root(lowers, "i" + std::to_string(n++));
    Status s = MountWritableRoot(root, api);
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_FALSE(fs::exists(root.merged / "etc/passwd"));
    EXPECT_EQ(ReadFile(root.merged / "etc/keep"), "k");
    EXPECT_FALSE(fs::exists(root.merged / "var/old"));
    EXPECT_EQ(ReadFile(root.merged / "var/new"), "n");
    // Writes land in the instance's upper directory, never in a layer.
    image::testing::LayoutBuilder::Write(root.merged / "etc/keep", "changed");
    EXPECT_EQ(ReadFile(lowers.back() / "etc/keep"), "k");
    EXPECT_TRUE(RemoveWritableRoot(root));
  }
}

TEST_F(LayeredRoot, S16_3_AListLongerThanOnePageMounts) {
  auto lowers = Stack(ManyLayers(40));
  WritableRootPaths root = Root(lowers, "data");
  ASSERT_GT(OverlayMountData(root).size(), kMountDataMax);
  Status s = MountWritableRoot(root, OverlayMountApi::kMountData);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(ReadFile(root.merged / "f0"), "0");
  EXPECT_EQ(ReadFile(root.merged / "f39"), "39");
  EXPECT_EQ(ReadFile(root.merged / "v"), "from layer 39");
  EXPECT_EQ(FlatEntries(), 1u) << "the bottom layers merged once";
  EXPECT_TRUE(RemoveWritableRoot(root));

  if (!KernelHasLowerdirPlus()) GTEST_SKIP() << "no lowerdir+ (Linux 6.8) on this kernel";
  WritableRootPaths again = Root(lowers, "new-api");
  s = MountWritableRoot(again, OverlayMountApi::kNewApi);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(ReadFile(again.merged / "f0"), "0");
  EXPECT_EQ(ReadFile(again.merged / "v"), "from layer 39");
  EXPECT_EQ(FlatEntries(), 1u) << "one call per layer: nothing more to merge";
  EXPECT_TRUE(RemoveWritableRoot(again));
}

TEST_F(LayeredRoot, S16_3_MoreThan500LayersMount) {
  auto lowers = Stack(ManyLayers(kOverlayMaxLowerDirs + 20));
  std::vector<OverlayMountApi> apis = {OverlayMountApi::kMountData};
  if (KernelHasLowerdirPlus()) apis.push_back(OverlayMountApi::kNewApi);
  int n = 0;
  for (OverlayMountApi api : apis) {
    WritableRootPaths root = Root(lowers, "i" + std::to_string(n++));
    auto fitted = FitLowerDirs(root, api);
    ASSERT_TRUE(fitted) << fitted.error().message();
    EXPECT_LE(fitted->size(), kOverlayMaxLowerDirs);
    Status s = MountWritableRoot(root, api);
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_EQ(ReadFile(root.merged / "f0"), "0");
    EXPECT_EQ(ReadFile(root.merged / "f519"), "519");
    EXPECT_EQ(ReadFile(root.merged / "v"), "from layer 519");
    EXPECT_TRUE(RemoveWritableRoot(root));
  }
}

// S20.21: a deep stack of a hostUsers: false pod. The names of its
// attached idmapped clones do not fit one page of mount(2) data, so the
// bottom layers are merged; the layers and the merged directory alike are
// idmapped, and no clone stays attached once the overlay is mounted.
TEST_F(LayeredRoot, S20_21_AnIdmappedDeepStackMapsEveryLayer) {
  constexpr uint32_t kHostId = 300000;
  auto userns = ScratchUserNamespace::Create({kHostId, kHostId, 65536});
  ASSERT_TRUE(userns) << userns.error().message();
  auto lowers = Stack(ManyLayers(200));
  std::vector<OverlayMountApi> apis = {OverlayMountApi::kMountData};
  if (KernelHasLowerdirPlus()) apis.push_back(OverlayMountApi::kNewApi);
  int n = 0;
  for (OverlayMountApi api : apis) {
    WritableRootPaths root = Root(lowers, "i" + std::to_string(n++));
    auto fitted = FitLowerDirs(root, api, /*idmapped=*/true);
    ASSERT_TRUE(fitted) << fitted.error().message();
    if (api == OverlayMountApi::kMountData) {
      EXPECT_LT(fitted->size(), lowers.size()) << "the bottom layers merged";
    } else {
      EXPECT_EQ(fitted->size(), lowers.size());
    }
    Status s = MountWritableRoot(root, api, RootIdmap{userns->path(), {kHostId, kHostId, 65536}});
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_FALSE(fs::exists(root.work.parent_path() / "idmapped")) << "an attached clone left";
    struct stat st {};
    for (const char* file : {"f0", "f199", "v"}) {
      ASSERT_EQ(::stat((root.merged / file).c_str(), &st), 0) << file;
      EXPECT_EQ(st.st_uid, kHostId) << file;
      EXPECT_EQ(st.st_gid, kHostId) << file;
    }
    EXPECT_EQ(ReadFile(root.merged / "v"), "from layer 199");
    EXPECT_TRUE(RemoveWritableRoot(root));
  }
}

// S20.21: a clone its mounter left attached (killed mid-mount) goes with
// the instance's root, and nothing below it is touched.
TEST_F(LayeredRoot, S20_21_RemovingTheRootDetachesALeftIdmappedLower) {
  constexpr uint32_t kHostId = 310000;
  auto userns = ScratchUserNamespace::Create({kHostId, kHostId, 65536});
  ASSERT_TRUE(userns) << userns.error().message();
  auto lowers = Stack(ManyLayers(2));
  WritableRootPaths root = Root(lowers, "left");
  Status s = MountWritableRoot(root, OverlayMountApi::kAuto,
                               RootIdmap{userns->path(), {kHostId, kHostId, 65536}});
  ASSERT_TRUE(s) << s.error().message();
  const fs::path left = root.work.parent_path() / "idmapped" / "0";
  ASSERT_TRUE(fs::create_directories(left));
  auto ns = OpenUserNamespace(userns->path());
  ASSERT_TRUE(ns) << ns.error().message();
  auto clone = OpenIdmappedTree(lowers.front(), ns->get(), /*recursive=*/false);
  ASSERT_TRUE(clone) << clone.error().message();
  ASSERT_TRUE(AttachTree(*clone, left));
  ASSERT_TRUE(IsMountPoint(left));
  EXPECT_TRUE(RemoveWritableRoot(root));
  EXPECT_FALSE(fs::exists(left.parent_path()));
  EXPECT_TRUE(fs::exists(lowers.front() / "f1")) << "the layer itself is untouched";
}

TEST(OverlayData, APlainRootfsIsAListOfOne) {
  WritableRootPaths root{"/b/images/a:1/rootfs", "/s/upper", "/s/work", "/s/rootfs"};
  EXPECT_EQ(OverlayMountData(root),
            "lowerdir=/b/images/a\\:1/rootfs,upperdir=/s/upper,workdir=/s/work");
  root.lower_dirs = {"/l/top", "/l/bottom"};
  EXPECT_EQ(OverlayMountData(root), "lowerdir=/l/top:/l/bottom,upperdir=/s/upper,workdir=/s/work");
  auto fitted = FitLowerDirs(root, OverlayMountApi::kMountData);
  ASSERT_TRUE(fitted);
  EXPECT_EQ(*fitted, root.lower_dirs) << "fits: nothing merged";
}

}  // namespace
}  // namespace podvisor::hostfs
