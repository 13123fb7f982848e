// `pack` and its way back: a bundle packs to the same digests every time,
// the layer unpacks (through layer_unpack) to the bundle's files with
// rootfs images turned into OCI layouts the loader takes, and an ordinary
// image is refused as a bundle.
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "image/bundle_image.h"
#include "image/image.h"
#include "image/image_cache.h"
#include "image/layout_builder_test_util.h"

namespace podvisor::image {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::LayoutBuilder;
using testing::ReadFile;
using testing::TempDir;
namespace fs = std::filesystem;

constexpr const char* kPod = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n";

class BundlePack : public ::testing::Test {
 protected:
  void SetUp() override {
    bundle_ = tmp_.path() / "bundle";
    fs::create_directories(bundle_ / "config");
    fs::create_directories(bundle_ / "images" / "app" / "rootfs" / "bin");
    LayoutBuilder::Write(bundle_ / "pod.yaml", kPod);
    LayoutBuilder::Write(bundle_ / "config" / "a.yaml", "kind: ConfigMap\n");
    LayoutBuilder::Write(bundle_ / "config" / "notes.txt", "not a config object\n");
    LayoutBuilder::Write(bundle_ / "images" / "app" / "image.json",
                         R"({"config": {"Cmd": ["/bin/app"]}})");
    fs::path bin = bundle_ / "images" / "app" / "rootfs" / "bin";
    LayoutBuilder::Write(bin / "app", "#!/bin/sh\necho hi\n");
    ::chmod((bin / "app").c_str(), 0755);
    fs::create_hard_link(bin / "app", bin / "app2");
    fs::create_symlink("app", bin / "app3");
    // A second image that is already an OCI layout travels as it is.
    LayoutBuilder lb(bundle_ / "images" / "registry.example" / "side:1.0");
    lb.Simple({{testing::File("side", "side")}});
  }
  PackInput Input() {
    PackInput in;
    in.bundle = bundle_;
    in.manifest_file = "pod.yaml";
    in.pod_name = "web";
    in.images = {"app", "registry.example/side:1.0", "app"};
    return in;
  }

  TempDir tmp_;
  fs::path bundle_;
};

TEST_F(BundlePack, SameBundleSameDigests) {
  auto a = PackBundle(Input(), tmp_.path() / "a");
  ASSERT_TRUE(a) << a.error().message();
  // Different mtimes and another pack later must not change a byte.
  fs::last_write_time(bundle_ / "pod.yaml",
                      fs::file_time_type::clock::now() - std::chrono::hours(5));
  auto b = PackBundle(Input(), tmp_.path() / "b");
  ASSERT_TRUE(b) << b.error().message();
  EXPECT_EQ(a->manifest.digest, b->manifest.digest);
  EXPECT_EQ(a->layer.digest, b->layer.digest);
  EXPECT_THAT(a->converted_images, ::testing::ElementsAre("app"));
  EXPECT_EQ(ReadFile(tmp_.path() / "a" / "index.json"), ReadFile(tmp_.path() / "b" / "index.json"));
  // Nothing of the scratch work is left beside the output.
  for (const auto& e : fs::directory_iterator(tmp_.path())) {
    EXPECT_THAT(e.path().filename().string(), ::testing::Not(HasSubstr("partial")));
  }
}

TEST_F(BundlePack, ChangedContentChangesTheDigest) {
  auto a = PackBundle(Input(), tmp_.path() / "a");
  ASSERT_TRUE(a);
  LayoutBuilder::Write(bundle_ / "config" / "a.yaml", "kind: Secret\n");
  auto b = PackBundle(Input(), tmp_.path() / "b");
  ASSERT_TRUE(b);
  EXPECT_NE(a->layer.digest, b->layer.digest);
}

TEST_F(BundlePack, ASymlinkedLayoutTravelsAsItsContent) {
  fs::path elsewhere = tmp_.path() / "elsewhere";
  fs::rename(bundle_ / "images" / "registry.example" / "side:1.0", elsewhere);
  fs::create_directory_symlink(elsewhere, bundle_ / "images" / "registry.example" / "side:1.0");
  fs::path out = tmp_.path() / "out";
  ASSERT_TRUE(PackBundle(Input(), out));
  auto unpacked = UnpackBundleImage(out, tmp_.path() / "bundles");
  ASSERT_TRUE(unpacked) << unpacked.error().message();
  fs::path side = unpacked->dir() / "images" / "registry.example" / "side:1.0";
  EXPECT_FALSE(fs::is_symlink(side));
  EXPECT_TRUE(fs::exists(side / "index.json"));
}

// The operator's bundle may use symlinks (it is trusted); the image it packs
// to holds their content, since an unpacked bundle image may hold none.
TEST_F(BundlePack, S14_5_SymlinkedFilesTravelAsTheirContent) {
  fs::path shared = tmp_.path() / "shared";
  fs::create_directories(shared);
  LayoutBuilder::Write(shared / "b.yaml", "kind: Secret\n");
  LayoutBuilder::Write(shared / "pod.yaml", kPod);
  fs::create_symlink(shared / "b.yaml", bundle_ / "config" / "b.yaml");
  fs::remove(bundle_ / "pod.yaml");
  fs::create_symlink(shared / "pod.yaml", bundle_ / "pod.yaml");
  fs::path out = tmp_.path() / "out";
  auto packed = PackBundle(Input(), out);
  ASSERT_TRUE(packed) << packed.error().message();
  auto unpacked = UnpackBundleImage(out, tmp_.path() / "bundles");
  ASSERT_TRUE(unpacked) << unpacked.error().message();
  for (const char* file : {"config/b.yaml", "pod.yaml"}) {
    EXPECT_FALSE(fs::is_symlink(unpacked->dir() / file)) << file;
  }
  EXPECT_EQ(ReadFile(unpacked->dir() / "config" / "b.yaml"), "kind: Secret\n");
  EXPECT_EQ(ReadFile(unpacked->dir() / "pod.yaml"), kPod);
}

TEST_F(BundlePack, RefusesAnExistingOut) {
  fs::create_directories(tmp_.path() / "out");
  auto r = PackBundle(Input(), tmp_.path() / "out");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), EEXIST);
}

TEST_F(BundlePack, UnpacksToTheBundle) {
  fs::path out = tmp_.path() / "out";
  ASSERT_TRUE(PackBundle(Input(), out));
  EXPECT_TRUE(LooksLikeBundleImage(out));
  EXPECT_FALSE(LooksLikeBundleImage(bundle_));
  auto resolved = ResolveBundleImage(out);
  ASSERT_TRUE(resolved) << resolved.error().message();
  EXPECT_THAT(resolved->config_json, HasSubstr(R"("io.podvisor.bundle":"1")"));
  EXPECT_EQ(resolved->layers.size(), 1u);

  fs::path parent = tmp_.path() / "state" / ".bundles";
  fs::path dir;
  {
    auto unpacked = UnpackBundleImage(out, parent);
    ASSERT_TRUE(unpacked) << unpacked.error().message();
    dir = unpacked->dir();
    EXPECT_EQ(ReadFile(dir / "pod.yaml"), kPod);
    EXPECT_EQ(ReadFile(dir / "config" / "a.yaml"), "kind: ConfigMap\n");
    EXPECT_FALSE(fs::exists(dir / "config" / "notes.txt"));  // not a config object
    // Both images are OCI layouts now, and the image loader reads them.
    for (const char* ref : {"app", "registry.example/side:1.0"}) {
      auto image = LoadOciLayoutImage(dir / "images" / ref, ref, tmp_.path() / "cache");
      ASSERT_TRUE(image) << ref << ": " << image.error().message();
    }
    auto app = LoadOciLayoutImage(dir / "images" / "app", "app", tmp_.path() / "cache");
    ASSERT_TRUE(app);
    EXPECT_THAT(app->config.cmd, ::testing::ElementsAre("/bin/app"));
    EXPECT_EQ(ReadFile(app->layers.front() / "bin" / "app2"), "#!/bin/sh\necho hi\n");
    struct stat a {
    }, b{};
    ASSERT_EQ(::stat((app->layers.front() / "bin" / "app").c_str(), &a), 0);
    ASSERT_EQ(::stat((app->layers.front() / "bin" / "app2").c_str(), &b), 0);
    EXPECT_EQ(a.st_ino, b.st_ino);  // the hard link stayed one
    EXPECT_EQ(a.st_mode & 0777, 0755u);
    EXPECT_EQ(fs::read_symlink(app->layers.front() / "bin" / "app3"), "app");
  }
  // Gone with the object, and the emptied parent with it.
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_FALSE(fs::exists(parent));
}

// skopeo's form (README "Bundle layout"): `skopeo copy ... oci:images/tools:1.0`
// writes the layout images/tools/ with the tag in index.json, and `run`
// resolves `image: tools:1.0` there (pod::ResolveImageDir). pack takes
// every image the way run finds it: the layout travels once, under its
// own name, and the packed bundle resolves each tag to its manifest.
TEST_F(BundlePack, ATaggedLayoutAsSkopeoWritesItPacksOnce) {
  LayoutBuilder lb(bundle_ / "images" / "tools");
  json one = lb.ManifestWith(json::object(), {lb.Layer({testing::File("v", "1")})});
  json two = lb.ManifestWith(json::object(), {lb.Layer({testing::File("v", "2")})});
  lb.WriteIndex({LayoutBuilder::WithTag(one, "1.0"), LayoutBuilder::WithTag(two, "2.0")});
  std::string digest = one["digest"];
  PackInput in = Input();
  in.images = {"app", "tools:1.0", "tools:2.0", "tools@" + digest};
  fs::path out = tmp_.path() / "out";
  auto packed = PackBundle(in, out);
  ASSERT_TRUE(packed) << packed.error().message();
  EXPECT_THAT(packed->converted_images, ::testing::ElementsAre("app"));

  auto unpacked = UnpackBundleImage(out, tmp_.path() / "state" / ".bundles");
  ASSERT_TRUE(unpacked) << unpacked.error().message();
  fs::path dir = unpacked->dir();
  EXPECT_TRUE(fs::is_regular_file(dir / "images" / "tools" / "oci-layout"));
  EXPECT_FALSE(fs::exists(dir / "images" / "tools:1.0"));
  ImageLoadOptions options{tmp_.path() / "cache"};
  for (auto [ref, content] :
       {std::pair{std::string("tools:1.0"), "1"}, {"tools:2.0", "2"}, {"tools@" + digest, "1"}}) {
    auto image = LoadImage(dir, ref, options);
    ASSERT_TRUE(image) << ref << ": " << image.error().message();
    EXPECT_EQ(ReadFile(image->layers.front() / "v"), content) << ref;
  }
}

TEST_F(BundlePack, AnOrdinaryImageIsNoBundle) {
  fs::path layout = bundle_ / "images" / "registry.example" / "side:1.0";
  EXPECT_TRUE(LooksLikeBundleImage(layout));  // it looks like one ...
  auto r = ResolveBundleImage(layout);        // ... but has no label
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), EINVAL);
  EXPECT_THAT(r.error().message(), HasSubstr("no label io.podvisor.bundle=1"));
}

TEST_F(BundlePack, SweepRemovesOnlyUnlockedLeftovers) {
  fs::path out = tmp_.path() / "out";
  ASSERT_TRUE(PackBundle(Input(), out));
  fs::path parent = tmp_.path() / "bundles";
  auto live = UnpackBundleImage(out, parent);
  ASSERT_TRUE(live);
  // A SIGKILLed supervisor's (pid_max is at most 2^22, so this pid is
  // nobody's), and one whose supervisor lives but has not locked it yet.
  fs::create_directories(parent / "0123456789ab-99999999");
  fs::create_directories(parent / ("0123456789ab-" + std::to_string(::getppid())));
  EXPECT_EQ(SweepUnpackedBundles(parent), 1);
  EXPECT_TRUE(fs::exists(live->dir() / "pod.yaml"));
  EXPECT_FALSE(fs::exists(parent / "0123456789ab-99999999"));
  EXPECT_TRUE(fs::exists(parent / ("0123456789ab-" + std::to_string(::getppid()))));
}

}  // namespace
}  // namespace podvisor::image
