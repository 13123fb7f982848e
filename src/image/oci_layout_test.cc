// OCI image layouts (issue 7 point 1): picking the manifest (tag, platform,
// nested index), verifying every blob's digest, the image config, and the
// per-manifest-digest cache. Layouts are built locally by
// layout_builder_test_util.h.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "image/digest.h"
#include "image/image.h"
#include "image/image_cache.h"
#include "image/layer_unpack.h"
#include "image/layout_builder_test_util.h"
#include "image/oci_layout.h"
#include "pod/validate.h"

namespace podvisor::image {
namespace {

using namespace testing;  // NOLINT: the builder's vocabulary
using ::testing::HasSubstr;

const Platform kAmd64{"linux", "amd64", ""};
const Platform kArm64{"linux", "arm64", ""};

class OciLayout : public ::testing::Test {
 protected:
  fs::path Bundle() const { return tmp_.path() / "bundle"; }
  fs::path Cache() const { return tmp_.path() / "state" / ".images"; }
  LayoutBuilder& Image(const std::string& ref = "app") {
    if (!builder_) builder_.emplace(Bundle() / "images" / ref);
    return *builder_;
  }
  Result<image::Image> Load(const std::string& ref = "app") {
    return LoadImage(Bundle(), ref, {Cache()});
  }
  // The top layer's directory of an image of the store (a single-layer
  // image's whole tree).
  static fs::path Top(const image::Image& image) {
    return image.layers.empty() ? fs::path() : image.layers.front();
  }
  // Nothing under the cache but finished entries and lock files.
  std::vector<std::string> CacheLeftovers() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(Cache(), ec)) {
      std::string name = e.path().filename().string();
      if (name.find(".partial") != std::string::npos) out.push_back(e.path().string());
    }
    return out;
  }

  TempDir tmp_;
  std::optional<LayoutBuilder> builder_;
};

TEST(Digest, ParsesSha256AndRefusesWhatCouldEscapeAPath) {
  std::string hex(64, 'a');
  auto d = ParseDigest("sha256:" + hex);
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(d->algorithm, "sha256");
  EXPECT_EQ(d->hex, hex);
  EXPECT_FALSE(ParseDigest("sha256:../../../etc/passwd"));
  EXPECT_FALSE(ParseDigest("sha256:" + std::string(64, 'A')));  // uppercase
  EXPECT_FALSE(ParseDigest("sha256:" + hex.substr(1)));
  EXPECT_FALSE(ParseDigest("md5:d41d8cd98f00b204e9800998ecf8427e"));
  EXPECT_FALSE(ParseDigest(hex));
}

TEST(Digest, Sha256OfKnownInput) {
  EXPECT_EQ(HashHex("sha256", "abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(OciLayoutTag, TagOfReference) {
  EXPECT_EQ(TagOf("busybox"), "");
  EXPECT_EQ(TagOf("busybox:1.36"), "1.36");
  EXPECT_EQ(TagOf("registry.example/app:1.2"), "1.2");
  EXPECT_EQ(TagOf("registry.example:5000/app"), "");
  EXPECT_EQ(TagOf("app@sha256:abc"), "sha256:abc");
}

TEST_F(OciLayout, UnpacksAndTakesTheImageConfig) {
  json config = {
      {"Entrypoint", {"/bin/app"}}, {"Cmd", {"--serve"}}, {"Env", {"PATH=/bin", "MODE=prod"}},
      {"WorkingDir", "/srv"},       {"User", "33:33"},    {"StopSignal", "SIGQUIT"}};
  json manifest = Image().Simple({{Dir("bin"), File("bin/app", "#!app", 0755)}}, config);
  auto image = Load();
  ASSERT_TRUE(image) << image.error().message();
  EXPECT_EQ(image->config.entrypoint, std::vector<std::string>{"/bin/app"});
  EXPECT_EQ(image->config.cmd, std::vector<std::string>{"--serve"});
  EXPECT_EQ(image->config.env, (std::vector<std::string>{"PATH=/bin", "MODE=prod"}));
  EXPECT_EQ(image->config.working_dir, "/srv");
  EXPECT_EQ(image->config.user, "33:33");
  EXPECT_EQ(image->config.stop_signal, "SIGQUIT");
  EXPECT_EQ(image->manifest_digest, manifest["digest"]);
  std::string hex = std::string(manifest["digest"]).substr(7);
  // S16.1: stored as layers, recorded by manifest digest.
  EXPECT_TRUE(image->rootfs.empty());
  ASSERT_EQ(image->layers.size(), 1u);
  EXPECT_EQ(Top(*image).parent_path(), Cache() / "layers" / "sha256");
  EXPECT_EQ(ReadFile(Top(*image) / "bin" / "app"), "#!app");
  EXPECT_TRUE(fs::exists(Cache() / "images" / "sha256" / (hex + ".json")));
}

TEST_F(OciLayout, WithoutACacheDirALayoutIsAClearError) {
  Image().Simple({{File("a", "1")}});
  auto image = LoadImage(Bundle(), "app");
  ASSERT_FALSE(image);
  EXPECT_THAT(image.error().message(), HasSubstr("is an OCI image layout"));
}

TEST_F(OciLayout, PicksThisPlatformFromANestedIndex) {
  LayoutBuilder& b = Image();
  json arm = b.ManifestWith({{"Cmd", {"arm"}}}, {b.Layer({File("arch", "arm64")})}, "arm64");
  json amd = b.ManifestWith({{"Cmd", {"amd"}}}, {b.Layer({File("arch", "amd64")})}, "amd64");
  json index = b.Index(
      {LayoutBuilder::WithPlatform(arm, "arm64"), LayoutBuilder::WithPlatform(amd, "amd64")});
  b.WriteIndex({LayoutBuilder::WithTag(index, "latest")});
  auto on_amd = ResolveLayout(b.dir(), "", kAmd64);
  ASSERT_TRUE(on_amd) << on_amd.error().message();
  EXPECT_EQ(on_amd->manifest.digest.ToString(), amd["digest"]);
  auto on_arm = ResolveLayout(b.dir(), "", kArm64);
  ASSERT_TRUE(on_arm) << on_arm.error().message();
  EXPECT_EQ(on_arm->manifest.digest.ToString(), arm["digest"]);
  auto on_s390 = ResolveLayout(b.dir(), "", {"linux", "s390x", ""});
  ASSERT_FALSE(on_s390);
  EXPECT_THAT(on_s390.error().message(), HasSubstr("none for linux/s390x"));
}

TEST_F(OciLayout, PicksTheManifestTaggedLikeTheReference) {
  LayoutBuilder& b = Image();
  json v1 = b.ManifestWith({{"Cmd", {"v1"}}}, {b.Layer({File("v", "1")})});
  json v2 = b.ManifestWith({{"Cmd", {"v2"}}}, {b.Layer({File("v", "2")})});
  b.WriteIndex(
      {LayoutBuilder::WithTag(v1, "1.0"), LayoutBuilder::WithTag(v2, "docker.io/x/app:2.0")});
  auto two = ResolveLayout(b.dir(), "2.0", kAmd64);
  ASSERT_TRUE(two) << two.error().message();
  EXPECT_EQ(two->manifest.digest.ToString(), v2["digest"]);
  auto missing = ResolveLayout(b.dir(), "", kAmd64);
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message(),
              HasSubstr("no manifest tagged \"latest\" (tags: 1.0, docker.io/x/app:2.0)"));
}

TEST_F(OciLayout, ConfigForAnotherArchitectureIsRefused) {
  LayoutBuilder& b = Image();
  json config = b.Config(json::object(), "arm64");
  b.WriteIndex({b.Manifest(config, {b.Layer({File("a", "1")})})});
  auto r = ResolveLayout(b.dir(), "", kAmd64);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr(std::string(config["digest"]) +
                                             " is for linux/arm64, this host runs linux/amd64"));
}

TEST_F(OciLayout, CorruptLayerNamesItsDigestAndLeavesNoCacheEntry) {
  LayoutBuilder& b = Image();
  json layer = b.Layer({File("a", std::string(4096, 'x'))});
  b.WriteIndex({b.ManifestWith(json::object(), {layer})});
  std::string blob = ReadFile(b.BlobFile(layer));
  blob[blob.size() / 2] ^= 0x55;
  LayoutBuilder::Write(b.BlobFile(layer), blob);
  auto image = Load();
  ASSERT_FALSE(image);
  EXPECT_THAT(image.error().message(),
              HasSubstr("blob " + std::string(layer["digest"]) + " is corrupt"));
  EXPECT_TRUE(CacheLeftovers().empty());
  // S16.1: no layer directory, no record; at most the layer's lock file.
  for (const auto& e : fs::recursive_directory_iterator(Cache())) {
    EXPECT_TRUE(e.is_directory()
                    ? e.path().filename() == "layers" || e.path().filename() == "images" ||
                          e.path().filename() == "sha256"
                    : e.path().extension() == ".lock")
        << e.path();
  }
}

TEST_F(OciLayout, TruncatedLayerNamesItsDigest) {
  LayoutBuilder& b = Image();
  json layer = b.Layer({File("a", std::string(100000, 'y'))}, /*gzip=*/false);
  b.WriteIndex({b.ManifestWith(json::object(), {layer})});
  std::string blob = ReadFile(b.BlobFile(layer));
  LayoutBuilder::Write(b.BlobFile(layer), blob.substr(0, blob.size() / 2));
  auto image = Load();
  ASSERT_FALSE(image);
  EXPECT_THAT(image.error().message(), HasSubstr(std::string(layer["digest"])));
}

TEST_F(OciLayout, MissingBlobsNameTheirDigest) {
  LayoutBuilder& b = Image();
  json layer = b.Layer({File("a", "1")});
  json config = b.Config(json::object(), "amd64", {layer});
  json manifest = b.Manifest(config, {layer});
  b.WriteIndex({manifest});
  fs::remove(b.BlobFile(layer));
  auto no_layer = Load();
  ASSERT_FALSE(no_layer);
  EXPECT_THAT(no_layer.error().message(),
              HasSubstr("blob " + std::string(layer["digest"]) + " is missing"));
  fs::remove(b.BlobFile(config));
  auto no_config = ResolveLayout(b.dir(), "", kAmd64);
  ASSERT_FALSE(no_config);
  EXPECT_THAT(no_config.error().message(),
              HasSubstr("blob " + std::string(config["digest"]) + " is missing"));
  fs::remove(b.BlobFile(manifest));
  auto no_manifest = ResolveLayout(b.dir(), "", kAmd64);
  ASSERT_FALSE(no_manifest);
  EXPECT_THAT(no_manifest.error().message(),
              HasSubstr("blob " + std::string(manifest["digest"]) + " is missing"));
}

TEST_F(OciLayout, ManifestWithWrongSizeIsRefused) {
  LayoutBuilder& b = Image();
  json manifest = b.ManifestWith(json::object(), {b.Layer({File("a", "1")})});
  manifest["size"] = manifest["size"].get<int64_t>() + 1;
  b.WriteIndex({manifest});
  auto r = ResolveLayout(b.dir(), "", kAmd64);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("blob " + std::string(manifest["digest"])));
}

TEST_F(OciLayout, UnsupportedLayerMediaTypeIsNamed) {
  LayoutBuilder& b = Image();
  json layer = b.Blob("x", "application/vnd.example.weird");
  b.WriteIndex({b.Manifest(b.Config(json::object()), {layer})});
  auto r = ResolveLayout(b.dir(), "", kAmd64);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(),
              HasSubstr("unsupported media type \"application/vnd.example.weird\""));
}

TEST_F(OciLayout, StoredLayerIsReusedAndAStalePartialUnpackIsReplaced) {
  LayoutBuilder& b = Image();
  json layer = b.Layer({File("a", "1")});
  json manifest = b.ManifestWith(json::object(), {layer});
  b.WriteIndex({manifest});
  std::string diff_hex = HashHex("sha256", MakeTar({File("a", "1")}, false));
  // A crashed unpack left a scratch dir behind.
  fs::create_directories(Cache() / "layers" / "sha256" / ("." + diff_hex + ".partial") / "junk");
  auto first = Load();
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(Top(*first), Cache() / "layers" / "sha256" / diff_hex);
  EXPECT_FALSE(fs::exists(Top(*first) / "junk"));
  EXPECT_TRUE(CacheLeftovers().empty());
  // A second load finds the layer and does not unpack again: the layer
  // blob may even be gone by then.
  LayoutBuilder::Write(Top(*first) / "marker", "kept");
  fs::remove(b.BlobFile(layer));
  auto second = Load();
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(second->layers, first->layers);
  EXPECT_EQ(ReadFile(Top(*second) / "marker"), "kept");
}

// No finished entry under the cache: a failed unpack leaves nothing a
// later run would take as good.
// S16.1: no record, no scratch, and no layer but the `good` ones before
// the failing one.
void ExpectNoEntry(const fs::path& cache, const json& manifest, std::size_t good = 0) {
  std::string hex = std::string(manifest["digest"]).substr(7);
  EXPECT_FALSE(fs::exists(cache / "images" / "sha256" / (hex + ".json")));
  std::error_code ec;
  std::size_t layers = 0;
  for (const auto& e : fs::directory_iterator(cache / "layers" / "sha256", ec)) {
    if (!e.is_directory()) continue;
    EXPECT_FALSE(e.path().filename().string().starts_with(".")) << e.path();
    ++layers;
  }
  EXPECT_EQ(layers, good);
}

TEST_F(OciLayout, S14_8_WrongDiffIdIsRefusedAndLeavesNoEntry) {
  LayoutBuilder& b = Image();
  json layer = b.Layer({File("a", "1")});
  std::string wrong = "sha256:" + std::string(64, 'e');
  json config = b.Blob(json{{"architecture", "amd64"},
                            {"os", "linux"},
                            {"rootfs", {{"type", "layers"}, {"diff_ids", {wrong}}}}}
                           .dump(),
                       "application/vnd.oci.image.config.v1+json");
  json manifest = b.Manifest(config, {layer});
  b.WriteIndex({manifest});
  auto r = Load();
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("layer " + std::string(layer["digest"]) +
                                             ": its uncompressed content is sha256:"));
  EXPECT_THAT(r.error().message(), HasSubstr("the image config's rootfs.diff_ids says " + wrong));
  ExpectNoEntry(Cache(), manifest);
}

TEST_F(OciLayout, S14_8_DiffIdsMustListEveryLayer) {
  LayoutBuilder& b = Image();
  json one = b.Layer({File("a", "1")});
  json two = b.Layer({File("b", "2")});
  b.WriteIndex({b.Manifest(b.Config(json::object(), "amd64", {one}), {one, two})});
  auto r = ResolveLayout(b.dir(), "", kAmd64);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(),
              HasSubstr("rootfs.diff_ids lists 1 digests for the manifest's 2 layers"));
}

TEST_F(OciLayout, S14_9_ImageOverTheBoundIsRefusedAndLeavesNoEntry) {
  LayoutBuilder& b = Image();
  json manifest = b.Simple({{File("big", std::string(3 << 20, 'z'))}});
  ::setenv(LayerBudget::kMaxBytesVariable, "1Mi", 1);
  auto r = Load();
  ::unsetenv(LayerBudget::kMaxBytesVariable);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("the image unpacks to more than 1048576 bytes"));
  ExpectNoEntry(Cache(), manifest);
  EXPECT_TRUE(Load()) << "under the default bound it fits";
}

TEST_F(OciLayout, S14_7_WhiteoutOfTheParentLeavesNothingOutsideAndNoEntry) {
  LayoutBuilder& b = Image();
  fs::create_directories(Cache() / "layers" / "sha256");
  LayoutBuilder::Write(Cache() / "layers" / "sha256" / "sentinel", "beside the scratch directory");
  json manifest = b.Simple({{Dir("a"), File("a/x", "x")}, {File("a/.wh...", "")}});
  auto r = Load();
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("whiteout \"a/.wh...\" names no file"));
  ExpectNoEntry(Cache(), manifest, /*good=*/1);
  EXPECT_EQ(ReadFile(Cache() / "layers" / "sha256" / "sentinel"), "beside the scratch directory");
}

TEST_F(OciLayout, S14_7_ALayerThatWentIsUnpackedAgain) {
  Image().Simple({{File("a", "1")}});
  auto first = Load();
  ASSERT_TRUE(first) << first.error().message();
  fs::remove_all(Top(*first));
  auto second = Load();
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(ReadFile(Top(*second) / "a"), "1");
}

TEST_F(OciLayout, UncompressedLayersWork) {
  LayoutBuilder& b = Image();
  b.WriteIndex({b.ManifestWith(json::object(), {b.Layer({File("plain", "tar")}, false)})});
  auto image = Load();
  ASSERT_TRUE(image) << image.error().message();
  EXPECT_EQ(ReadFile(Top(*image) / "plain"), "tar");
}

TEST_F(OciLayout, ValidateAcceptsALayoutWithoutRootfs) {
  Image().Simple({{File("a", "1")}});
  fs::create_directories(Bundle() / "images" / "empty");
  pod::Pod pod;
  pod.metadata.name = "p";
  pod::Container layout, empty;
  layout.name = "layout";
  layout.image = "app";
  empty.name = "empty";
  empty.image = "empty";
  pod.spec.containers = {layout, empty};
  auto errors = pod::ValidateImages(pod, Bundle());
  std::string all;
  for (const auto& e : errors) all += e.ToString() + "\n";
  ASSERT_EQ(errors.size(), 1u) << all;
  EXPECT_EQ(errors[0].field, "spec.containers[1].image");
  EXPECT_THAT(errors[0].detail, HasSubstr("no rootfs/ directory and is not an OCI image layout"));
}

}  // namespace
}  // namespace podvisor::image
