// Applying layers (issue 7 point 1, image-spec layer.md): order,
// whiteouts, opaque directories, type changes, and every way a layer could
// reach outside the root being built.
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "image/layer_unpack.h"
#include "image/layout_builder_test_util.h"

namespace podvisor::image {
namespace {

using namespace testing;  // NOLINT: the builder's vocabulary
using ::testing::HasSubstr;

class LayerUnpack : public ::testing::Test {
 protected:
  void SetUp() override {
    builder_.emplace(tmp_.path() / "layout");
    root_ = tmp_.path() / "root";
    fs::create_directories(root_);
  }
  // Applies each layer in turn; returns the first error.
  Status Apply(const std::vector<std::vector<TarEntry>>& layers, bool gzip = true) {
    for (const auto& entries : layers) {
      json d = builder_->Layer(entries, gzip);
      auto digest = ParseDigest(d["digest"].get<std::string>());
      LayerDescriptor layer{{d["mediaType"], *digest, d["size"], std::nullopt, ""},
                            gzip ? LayerCompression::kGzip : LayerCompression::kNone,
                            std::nullopt};
      last_digest_ = d["digest"];
      if (auto s = ApplyLayer(builder_->dir(), layer, root_, budget_); !s) return s;
    }
    return Ok();
  }
  bool Exists(const std::string& rel) const {
    std::error_code ec;
    return fs::exists(fs::symlink_status(root_ / rel, ec));
  }

  TempDir tmp_;
  std::optional<LayoutBuilder> builder_;
  fs::path root_;
  std::string last_digest_;
  LayerBudget budget_;
};

TEST_F(LayerUnpack, LaterLayersOverwriteEarlierOnes) {
  ASSERT_TRUE(Apply(
      {{Dir("etc"), File("etc/motd", "one"), File("etc/keep", "k")}, {File("etc/motd", "two")}}));
  EXPECT_EQ(ReadFile(root_ / "etc/motd"), "two");
  EXPECT_EQ(ReadFile(root_ / "etc/keep"), "k");
}

TEST_F(LayerUnpack, WhiteoutRemovesALowerFileOrDirectory) {
  ASSERT_TRUE(
      Apply({{Dir("etc"), File("etc/a", "1"), File("etc/b", "2"), Dir("var"), Dir("var/cache"),
              File("var/cache/x", "x")},
             {File("etc/.wh.a", ""), File("var/.wh.cache", ""), File("var/.wh.absent", "")}}));
  EXPECT_FALSE(Exists("etc/a"));
  EXPECT_TRUE(Exists("etc/b"));
  EXPECT_FALSE(Exists("var/cache"));
  EXPECT_TRUE(Exists("var"));
  EXPECT_FALSE(Exists("etc/.wh.a"));  // markers are never extracted
}

TEST_F(LayerUnpack, OpaqueDirectoryHidesLowerContentButKeepsItsOwn) {
  ASSERT_TRUE(Apply({{Dir("data"), File("data/old", "o"), Dir("data/sub"),
                      File("data/sub/old", "o"), File("outside", "stays")},
                     // The marker after and before this layer's own entries.
                     {Dir("data"), File("data/new", "n"), File("data/.wh..wh..opq", ""),
                      File("data/sub/new", "n")}}));
  EXPECT_FALSE(Exists("data/old"));
  EXPECT_FALSE(Exists("data/sub/old"));
  EXPECT_EQ(ReadFile(root_ / "data/new"), "n");
  EXPECT_EQ(ReadFile(root_ / "data/sub/new"), "n");
  EXPECT_TRUE(Exists("outside"));
}

TEST_F(LayerUnpack, WhiteoutNeverRemovesTheSameLayersEntry) {
  ASSERT_TRUE(Apply({{File("f", "lower")}, {File("f", "upper"), File(".wh.f", "")}}));
  EXPECT_EQ(ReadFile(root_ / "f"), "upper");
}

TEST_F(LayerUnpack, EntriesOfAnotherTypeReplaceLowerOnes) {
  ASSERT_TRUE(Apply({{Dir("d"), File("d/inner", "x"), File("f", "file")},
                     {File("d", "now a file"), Dir("f"), File("f/inner", "now a dir")}}));
  EXPECT_EQ(ReadFile(root_ / "d"), "now a file");
  EXPECT_EQ(ReadFile(root_ / "f/inner"), "now a dir");
}

TEST_F(LayerUnpack, SymlinksAndHardlinksInsideTheRoot) {
  ASSERT_TRUE(Apply({{Dir("bin"), File("bin/busybox", "bb", 0755), Symlink("bin/sh", "busybox"),
                      Symlink("abs", "/etc/passwd"), Hardlink("bin/ls", "bin/busybox")}}));
  EXPECT_EQ(fs::read_symlink(root_ / "bin/sh"), "busybox");
  // An absolute target means something only inside the container.
  EXPECT_EQ(fs::read_symlink(root_ / "abs"), "/etc/passwd");
  struct stat a {
  }, b{};
  ASSERT_EQ(::stat((root_ / "bin/busybox").c_str(), &a), 0);
  ASSERT_EQ(::stat((root_ / "bin/ls").c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
}

TEST_F(LayerUnpack, ModesAndOwnershipArePreserved) {
  TarEntry owned = File("owned", "x", 04750);
  owned.uid = 1234;
  owned.gid = 5678;
  ASSERT_TRUE(Apply({{Dir("ro", 0555), File("ro/f", "r", 0444), owned, File("exec", "e", 0711)}}));
  struct stat st {};
  ASSERT_EQ(::stat((root_ / "exec").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u);
  ASSERT_EQ(::stat((root_ / "ro").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0555u);  // applied after its content
  if (::geteuid() != 0) GTEST_SKIP() << "ownership and setuid bits need root";
  ASSERT_EQ(::stat((root_ / "owned").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_gid, 5678u);
  EXPECT_EQ(st.st_mode & 07777, 04750u);
}

TEST_F(LayerUnpack, DotDotEntryIsRefusedAndWritesNothingOutside) {
  auto s = Apply({{File("../escaped", "x")}});
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), HasSubstr("layer " + last_digest_));
  EXPECT_THAT(s.error().message(), HasSubstr("escapes the image root"));
  EXPECT_FALSE(fs::exists(tmp_.path() / "escaped"));
}

TEST_F(LayerUnpack, AbsoluteEntryNamesStayInsideTheRoot) {
  ASSERT_TRUE(Apply({{File("/etc-absolute", "inside")}}));
  EXPECT_EQ(ReadFile(root_ / "etc-absolute"), "inside");
}

TEST_F(LayerUnpack, NothingIsWrittenThroughASymlinkToOutside) {
  fs::path outside = tmp_.path() / "outside";
  fs::create_directories(outside);
  auto s = Apply({{Symlink("link", outside.string())}, {File("link/pwned", "x")}});
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), HasSubstr("through a symlink"));
  EXPECT_FALSE(fs::exists(outside / "pwned"));
}

TEST_F(LayerUnpack, NothingIsRemovedThroughASymlinkToOutside) {
  fs::path outside = tmp_.path() / "outside";
  fs::create_directories(outside);
  LayoutBuilder::Write(outside / "victim", "v");
  ASSERT_TRUE(Apply({{Symlink("link", outside.string())},
                     {File("link/.wh.victim", ""), File("link/.wh..wh..opq", "")}}));
  EXPECT_TRUE(fs::exists(outside / "victim"));
}

TEST_F(LayerUnpack, HardlinkTargetOutsideTheRootIsRefused) {
  LayoutBuilder::Write(tmp_.path() / "secret", "s");
  auto s = Apply({{Hardlink("stolen", "../secret")}});
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), HasSubstr("escapes the image root"));
  EXPECT_FALSE(Exists("stolen"));
}

TEST_F(LayerUnpack, HardlinkThroughASymlinkIsRefused) {
  fs::path outside = tmp_.path() / "outside";
  fs::create_directories(outside);
  LayoutBuilder::Write(outside / "secret", "s");
  auto s = Apply({{Symlink("link", outside.string())}, {Hardlink("stolen", "link/secret")}});
  ASSERT_FALSE(s);
  EXPECT_FALSE(Exists("stolen"));
}

TEST_F(LayerUnpack, GzipBlobLabelledPlainTarIsAnError) {
  json d = builder_->Layer({File("a", "1")}, /*gzip=*/true);
  auto digest = ParseDigest(d["digest"].get<std::string>());
  LayerDescriptor layer{
      {"application/vnd.oci.image.layer.v1.tar", *digest, d["size"], std::nullopt, ""},
      LayerCompression::kNone,
      std::nullopt};
  auto s = ApplyLayer(builder_->dir(), layer, root_, budget_);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), HasSubstr("layer " + d["digest"].get<std::string>()));
}

// ".wh..." whited out "..": the directory above the one it stands in, and
// at the top of a layer the directory holding the root.
TEST_F(LayerUnpack, S14_7_WhiteoutOfDotDotIsRefused) {
  LayoutBuilder::Write(tmp_.path() / "sentinel", "outside the root");
  for (const char* name : {".wh...", "a/.wh..."}) {
    auto s = Apply({{Dir("a"), File("a/x", "x")}, {File(name, "")}});
    ASSERT_FALSE(s) << name;
    EXPECT_THAT(s.error().message(),
                HasSubstr("whiteout \"" + std::string(name) + "\" names no file of its directory"));
    EXPECT_EQ(ReadFile(tmp_.path() / "sentinel"), "outside the root") << name;
    EXPECT_TRUE(fs::is_directory(builder_->dir())) << name;
    EXPECT_EQ(ReadFile(root_ / "a" / "x"), "x") << name;
  }
}

TEST_F(LayerUnpack, S14_7_WhiteoutOfTheDirectoryItselfIsRefused) {
  for (const char* name : {"a/.wh.", "a/.wh..", ".wh.", ".wh.."}) {
    auto s = Apply({{Dir("a"), File("a/x", "x")}, {File(name, "")}});
    ASSERT_FALSE(s) << name;
    EXPECT_THAT(s.error().message(), HasSubstr("names no file of its directory"));
    EXPECT_EQ(ReadFile(root_ / "a" / "x"), "x") << name;
  }
}

TEST_F(LayerUnpack, S14_7_OpaqueAndOrdinaryWhiteoutsStillWork) {
  ASSERT_TRUE(Apply({{Dir("a"), File("a/x", "x"), File("a/y", "y"), File("b", "b")},
                     {File("a/.wh..wh..opq", ""), File("a/z", "z"), File(".wh.b", "")}}));
  EXPECT_FALSE(Exists("a/x"));
  EXPECT_FALSE(Exists("b"));
  EXPECT_EQ(ReadFile(root_ / "a" / "z"), "z");
}

LayerDescriptor DescriptorOf(const json& d, std::optional<Digest> diff_id) {
  auto digest = ParseDigest(d["digest"].get<std::string>());
  return {{d["mediaType"], *digest, d["size"], std::nullopt, ""},
          LayerCompression::kGzip,
          std::move(diff_id)};
}

TEST_F(LayerUnpack, S14_8_DiffIdMismatchNamesTheLayerAndBothDigests) {
  std::vector<TarEntry> entries = {File("a", "1")};
  json d = builder_->Layer(entries);
  std::string actual = "sha256:" + HashHex("sha256", MakeTar(entries, false));
  Digest claimed{"sha256", std::string(64, '0')};
  auto s = ApplyLayer(builder_->dir(), DescriptorOf(d, claimed), root_, budget_);
  ASSERT_FALSE(s);
  EXPECT_THAT(
      s.error().message(),
      HasSubstr("layer " + d["digest"].get<std::string>() + ": its uncompressed content is " +
                actual + ", the image config's rootfs.diff_ids says " + claimed.ToString()));
  auto right = ParseDigest(actual);
  ASSERT_TRUE(right);
  fs::remove_all(root_);
  fs::create_directories(root_);
  EXPECT_TRUE(ApplyLayer(builder_->dir(), DescriptorOf(d, *right), root_, budget_));
}

TEST_F(LayerUnpack, S14_9_FileOverTheBoundIsRefusedBeforeItIsWritten) {
  budget_.max_bytes = 1 << 20;
  auto s = Apply({{File("small", "s"), File("big", std::string(2 << 20, 'z'))}});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code(), EFBIG);
  EXPECT_THAT(s.error().message(),
              HasSubstr("\"big\": the image unpacks to more than 1048576 bytes (S14.9: the bound "
                        "is PODVISOR_IMAGE_MAX_BYTES)"));
  EXPECT_FALSE(Exists("big"));
}

TEST_F(LayerUnpack, S14_9_TheBoundCoversAllLayersOfTheImage) {
  budget_.max_bytes = 1 << 20;
  ASSERT_TRUE(Apply({{File("a", std::string(600 << 10, 'a'))}}));
  auto s = Apply({{File("b", std::string(600 << 10, 'b'))}});
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), HasSubstr("more than 1048576 bytes"));
}

TEST_F(LayerUnpack, S14_9_EntriesOverTheBoundAreRefused) {
  budget_.max_entries = 3;
  auto s = Apply({{File("a", ""), File("b", ""), File("c", ""), File("d", "")}});
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), HasSubstr("the image has more than 3 entries (S14.9: the bound "
                                             "is PODVISOR_IMAGE_MAX_ENTRIES)"));
  EXPECT_FALSE(Exists("d"));
}

TEST(LayerBudgetTest, S14_9_ReadFromTheEnvironment) {
  ::setenv(LayerBudget::kMaxBytesVariable, "3Gi", 1);
  ::setenv(LayerBudget::kMaxEntriesVariable, "42", 1);
  auto b = LayerBudget::FromEnvironment();
  ASSERT_TRUE(b) << b.error().message();
  EXPECT_EQ(b->max_bytes, uint64_t{3} << 30);
  EXPECT_EQ(b->max_entries, 42u);
  ::setenv(LayerBudget::kMaxEntriesVariable, "42Gi", 1);
  auto bad = LayerBudget::FromEnvironment();
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message(), HasSubstr("PODVISOR_IMAGE_MAX_ENTRIES=\"42Gi\""));
  ::unsetenv(LayerBudget::kMaxBytesVariable);
  ::unsetenv(LayerBudget::kMaxEntriesVariable);
  auto defaults = LayerBudget::FromEnvironment();
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->max_bytes, LayerBudget::kDefaultMaxBytes);
}

}  // namespace
}  // namespace podvisor::image
