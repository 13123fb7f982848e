// The layer store (S16.1-S16.3): one copy per diff id shared by images,
// overlayfs's on-disk format for whiteouts and opaque directories,
// nothing published on a bad blob, crashed scratch cleaned, concurrent
// ingests of one layer, names, and prune against holds.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "image/image_cache.h"
#include "image/layer_merge.h"
#include "image/layer_store.h"
#include "image/layer_view.h"
#include "image/layout_builder_test_util.h"

namespace podvisor::image {
namespace {

using namespace testing;  // NOLINT: the builder's vocabulary
using ::testing::HasSubstr;

class Store : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = LayerStore::Open(Root());
    ASSERT_TRUE(opened) << opened.error().message();
    store_.emplace(std::move(*opened));
    builder_.emplace(tmp_.path() / "layout");
  }
  fs::path Root() const { return tmp_.path() / "state" / ".images"; }

  // A layer of `entries` written to the layout, as IngestLayer takes it.
  LayerDescriptor Layer(const std::vector<TarEntry>& entries) {
    json d = builder_->Layer(entries);
    auto digest = ParseDigest(d["digest"].get<std::string>());
    auto diff_id = ParseDigest("sha256:" + HashHex("sha256", MakeTar(entries, false)));
    return {
        {d["mediaType"], *digest, d["size"], std::nullopt, ""}, LayerCompression::kGzip, *diff_id};
  }
  Status Ingest(const LayerDescriptor& layer) {
    Fd fd(::open(BlobPath(builder_->dir(), layer.blob.digest).c_str(), O_RDONLY | O_CLOEXEC));
    LayerBudget budget;
    return store_->IngestLayer(fd.get(), layer, budget);
  }
  // A layout image of `layers` (bottom first) loaded through the store.
  Result<Image> LoadLayout(const std::string& name,
                           const std::vector<std::vector<TarEntry>>& layers) {
    LayoutBuilder b(tmp_.path() / name);
    b.Simple(layers);
    return LoadOciLayoutImage(b.dir(), name, Root());
  }
  std::vector<std::string> LayerDirs() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(Root() / "layers" / "sha256", ec)) {
      if (e.is_directory()) out.push_back(e.path().filename().string());
    }
    return out;
  }

  TempDir tmp_;
  std::optional<LayerStore> store_;
  std::optional<LayoutBuilder> builder_;
};

TEST_F(Store, S16_2_TwoImagesOfOneBaseStoreTheBaseOnce) {
  const std::vector<TarEntry> base = {Dir("usr"), File("usr/big", std::string(1 << 20, 'b'))};
  auto one = LoadLayout("one", {base, {File("one", "1")}});
  ASSERT_TRUE(one) << one.error().message();
  auto two = LoadLayout("two", {base, {File("two", "2")}});
  ASSERT_TRUE(two) << two.error().message();
  ASSERT_EQ(one->layers.size(), 2u);
  ASSERT_EQ(two->layers.size(), 2u);
  EXPECT_EQ(one->layers.back(), two->layers.back()) << "one base directory";
  EXPECT_NE(one->layers.front(), two->layers.front());
  EXPECT_EQ(LayerDirs().size(), 3u);
  // The bytes too: the 1 MiB file is on disk once.
  const uint64_t used = LayerStore::DiskUsage(Root() / "layers");
  EXPECT_GE(used, uint64_t{1} << 20);
  EXPECT_LT(used, uint64_t{3} << 19);
  EXPECT_EQ(store_->List().size(), 2u);
  auto record = store_->FindByManifest(one->manifest_digest);
  ASSERT_TRUE(record);
  EXPECT_TRUE(record->names.empty()) << "a bundle's layout is not a registry name";
  EXPECT_EQ(record->diff_ids.size(), 2u);
  EXPECT_GT(record->unpacked_size, uint64_t{1} << 20);
}

TEST_F(Store, S16_1_WhiteoutsAndOpaqueDirectoriesTakeOverlayfsForm) {
  LayerDescriptor layer =
      Layer({Dir("etc"), File("etc/.wh.passwd", ""), Dir("var"), File("var/.wh..wh..opq", ""),
             File("var/new", "n"), File(".wh.gone", "")});
  ASSERT_TRUE(Ingest(layer));
  const fs::path dir = store_->LayerDir(*layer.diff_id);
  struct stat st {};
  ASSERT_EQ(::lstat((dir / "etc/passwd").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(0, 0));
  ASSERT_EQ(::lstat((dir / "gone").c_str(), &st), 0);
  EXPECT_TRUE(IsOverlayWhiteout(st));
  EXPECT_FALSE(fs::exists(dir / "etc/.wh.passwd"));
  Fd var(::open((dir / "var").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(var);
  EXPECT_TRUE(IsOverlayOpaqueDir(var.get()));
  EXPECT_FALSE(fs::exists(dir / "var/.wh..wh..opq"));
  EXPECT_EQ(ReadFile(dir / "var/new"), "n");
  if (::geteuid() == 0) {
    char value[2] = {};
    EXPECT_EQ(::getxattr((dir / "var").c_str(), kOverlayOpaqueXattr, value, sizeof value), 1);
  }
}

TEST_F(Store, S14_7_ALayersOwnOverlayXattrsAreDropped) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (trusted.* xattrs)";
  // MakeTar writes no xattrs: the applier's filter is checked directly.
  EXPECT_TRUE(IsOverlayXattr("trusted.overlay.opaque"));
  EXPECT_TRUE(IsOverlayXattr("trusted.overlay.redirect"));
  EXPECT_TRUE(IsOverlayXattr("user.overlay.metacopy"));
  EXPECT_FALSE(IsOverlayXattr("security.capability"));
  EXPECT_FALSE(IsOverlayXattr("user.mime_type"));
}

TEST_F(Store, S16_1_ACorruptBlobOrWrongDiffIdPublishesNothing) {
  LayerDescriptor layer = Layer({File("a", std::string(4096, 'a'))});
  fs::path blob = BlobPath(builder_->dir(), layer.blob.digest);
  std::string data = ReadFile(blob);
  data[data.size() / 2] = static_cast<char>(data[data.size() / 2] ^ 0x20);
  LayoutBuilder::Write(blob, data);
  Status corrupt = Ingest(layer);
  ASSERT_FALSE(corrupt);
  EXPECT_THAT(corrupt.error().message(),
              HasSubstr("blob " + layer.blob.digest.ToString() + " is corrupt"));
  EXPECT_FALSE(store_->HasLayer(*layer.diff_id));

  LayerDescriptor wrong = Layer({File("b", "b")});
  wrong.diff_id = *ParseDigest("sha256:" + std::string(64, 'e'));
  Status mismatch = Ingest(wrong);
  ASSERT_FALSE(mismatch);
  EXPECT_THAT(mismatch.error().message(),
              HasSubstr("the image config's rootfs.diff_ids says " + wrong.diff_id->ToString()));
  EXPECT_FALSE(store_->HasLayer(*wrong.diff_id));
  EXPECT_TRUE(LayerDirs().empty()) << "no layer, no scratch";
}

TEST_F(Store, S16_1_ACrashedScratchIsCleaned) {
  LayerDescriptor layer = Layer({File("a", "1")});
  const fs::path mine = Root() / "layers" / "sha256" / ("." + layer.diff_id->hex + ".partial");
  const fs::path other = Root() / "layers" / "sha256" / ("." + std::string(64, 'c') + ".partial");
  fs::create_directories(mine / "junk");
  fs::create_directories(other / "junk");
  ASSERT_TRUE(Ingest(layer));
  EXPECT_FALSE(fs::exists(mine));
  EXPECT_FALSE(fs::exists(store_->LayerDir(*layer.diff_id) / "junk"));
  // Another layer's scratch goes with the next prune.
  auto report = store_->Prune();
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_FALSE(fs::exists(other));
  EXPECT_EQ(report->scratch_removed, 1);
}

TEST_F(Store, S16_1_ConcurrentIngestsOfOneLayerSerialise) {
  LayerDescriptor layer = Layer({Dir("d"), File("d/f", std::string(256 << 10, 'x'))});
  const std::string blob = ReadFile(BlobPath(builder_->dir(), layer.blob.digest));
  // Pipes, as the registry puller hands them over, written by their own
  // threads while two ingests read.
  std::vector<std::thread> threads;
  Status results[2];
  for (int i = 0; i < 2; ++i) {
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    threads.emplace_back([w = p[1], &blob] {
      std::size_t done = 0;
      while (done < blob.size()) {
        ssize_t n = ::write(w, blob.data() + done, blob.size() - done);
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
      }
      ::close(w);
    });
    threads.emplace_back([r = p[0], &layer, &results, i, this] {
      LayerBudget budget;
      uint64_t seen = 0;
      results[i] = store_->IngestLayer(r, layer, budget, [&seen](uint64_t n) { seen = n; });
      ::close(r);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(results[0]) << results[0].error().message();
  EXPECT_TRUE(results[1]) << results[1].error().message();
  EXPECT_EQ(LayerDirs(), std::vector<std::string>{layer.diff_id->hex});
  EXPECT_EQ(ReadFile(store_->LayerDir(*layer.diff_id) / "d/f"), std::string(256 << 10, 'x'));
}

TEST_F(Store, NamesMoveAsTagsDoAndStayWithTheirImage) {
  LayerDescriptor layer = Layer({File("a", "1")});
  ASSERT_TRUE(Ingest(layer));
  ImageRecord a{"sha256:" + std::string(64, 'a'), "{}", {*layer.diff_id}, {"example/app:1"}, {}};
  ImageRecord b{"sha256:" + std::string(64, 'b'), "{}", {*layer.diff_id}, {"example/app:2"}, {}};
  ASSERT_TRUE(store_->PutImage(a));
  ASSERT_TRUE(store_->PutImage(b));
  a.names = {"example/app:2", "example/app:latest"};
  ASSERT_TRUE(store_->PutImage(a));
  auto found = store_->FindByName("example/app:2");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->manifest_digest, a.manifest_digest);
  EXPECT_THAT(found->names,
              ::testing::ElementsAre("example/app:1", "example/app:2", "example/app:latest"));
  EXPECT_TRUE(store_->FindByManifest(b.manifest_digest)->names.empty());
  ImageRecord missing{"sha256:" + std::string(64, 'c'),
                      "{}",
                      {*ParseDigest("sha256:" + std::string(64, 'd'))},
                      {},
                      {}};
  EXPECT_FALSE(store_->PutImage(missing)) << "its layer is not in the store";
}

TEST_F(Store, S16_2_PruneKeepsHeldImagesAndTheirLayers) {
  const std::vector<TarEntry> base = {File("base", std::string(64 << 10, 'b'))};
  auto held = LoadLayout("held", {base, {File("h", "h")}});
  ASSERT_TRUE(held) << held.error().message();
  auto unused = LoadLayout("unused", {base, {File("u", std::string(64 << 10, 'u'))}});
  ASSERT_TRUE(unused) << unused.error().message();
  auto lock = HoldEntry(Root(), held->manifest_digest);
  ASSERT_TRUE(lock && *lock);

  auto report = store_->Prune();
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_THAT(report->images_removed, ::testing::ElementsAre(unused->manifest_digest));
  ASSERT_EQ(report->layers_removed.size(), 1u);
  EXPECT_EQ(store_->LayerDir(*ParseDigest(report->layers_removed[0])), unused->layers.front());
  EXPECT_GE(report->bytes_freed, uint64_t{64} << 10);
  for (const auto& dir : held->layers) EXPECT_TRUE(fs::is_directory(dir)) << dir;
  EXPECT_FALSE(fs::exists(unused->layers.front()));
  EXPECT_TRUE(fs::exists(unused->layers.back())) << "the shared base stays";
  EXPECT_TRUE(store_->FindByManifest(held->manifest_digest));

  // Once nothing holds it, it goes, and every layer with it.
  lock->reset();
  report = store_->Prune();
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_THAT(report->images_removed, ::testing::ElementsAre(held->manifest_digest));
  EXPECT_EQ(report->layers_removed.size(), 2u);
  EXPECT_TRUE(LayerDirs().empty());
  EXPECT_TRUE(store_->List().empty());
  auto again = HoldEntry(Root(), held->manifest_digest);
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again) << "a pruned image is found gone: load it again";
}

TEST_F(Store, S16_3_MergedStackAppliesWhiteoutsAndOpaqueDirectories) {
  auto image = LoadLayout(
      "merge", {{Dir("etc"), File("etc/passwd", "root"), File("etc/keep", "k"), Dir("var"),
                 File("var/old", "o"), Symlink("link", "/etc")},
                {File("etc/.wh.passwd", ""), File("var/.wh..wh..opq", ""), File("var/new", "n")}});
  ASSERT_TRUE(image) << image.error().message();
  auto tree = EnsureMergedTree(image->layers, MergedTree::kWritableRoot);
  ASSERT_TRUE(tree) << tree.error().message();
  EXPECT_EQ(tree->parent_path().parent_path(), Root() / "trees");
  EXPECT_FALSE(fs::exists(fs::symlink_status(*tree / "etc/passwd")));
  EXPECT_EQ(ReadFile(*tree / "etc/keep"), "k");
  EXPECT_FALSE(fs::exists(*tree / "var/old"));
  EXPECT_EQ(ReadFile(*tree / "var/new"), "n");
  EXPECT_EQ(fs::read_symlink(*tree / "link"), "/etc");
  // A writable root shares no inode with the layers.
  struct stat a {
  }, b{};
  ASSERT_EQ(::lstat((*tree / "var/new").c_str(), &a), 0);
  ASSERT_EQ(::lstat((image->layers.front() / "var/new").c_str(), &b), 0);
  EXPECT_NE(a.st_ino, b.st_ino);
  // The view user resolution reads agrees.
  auto passwd = OpenInLayers(image->layers, "link/passwd", O_RDONLY);
  ASSERT_TRUE(passwd) << passwd.error().message();
  EXPECT_FALSE(*passwd) << "whited out, reached through the image's symlink";
  auto keep = OpenInLayers(image->layers, "../../link/./keep", O_RDONLY);
  ASSERT_TRUE(keep && *keep);
  // Kept while the image is, pruned with it.
  auto report = store_->Prune();
  ASSERT_TRUE(report);
  EXPECT_EQ(report->merged_removed.size(), 1u);
  EXPECT_FALSE(fs::exists(*tree));
}

}  // namespace
}  // namespace podvisor::image
