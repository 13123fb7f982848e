// Image references to bundle directories (docs/INTERFACE.md "Bundle layout"),
// and ValidateImages against a real temporary bundle.
#include "pod/bundle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pod/validate.h"

namespace podvisor::pod {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string Resolve(const fs::path& bundle, std::string_view image) {
  auto r = ResolveImageDir(bundle, image);
  return r ? r->string() : "error: " + r.error().message();
}

TEST(ResolveImageDir, PlainName) {
  EXPECT_EQ(Resolve("/b", "busybox"), "/b/images/busybox");
  EXPECT_EQ(Resolve("/b/", "busybox/"), "/b/images/busybox");
  EXPECT_EQ(Resolve("/b", "./busybox"), "/b/images/busybox");
}

TEST(ResolveImageDir, RegistryPathAndTag) {
  EXPECT_EQ(Resolve("/b", "registry.example/app:1.2"), "/b/images/registry.example/app:1.2");
  EXPECT_EQ(Resolve("/b", "registry.example:5000/team/app@sha256:abc"),
            "/b/images/registry.example:5000/team/app@sha256:abc");
  EXPECT_EQ(Resolve("bundle", "a//b/./c"), "bundle/images/a/b/c");
}

// A bundle image naming a host directory as its image made it the
// container's root filesystem.
TEST(ResolveImageDir, S14_6_AbsolutePathIsRefused) {
  const std::string refused =
      "error: must name a directory under BUNDLE/images, not an absolute path";
  EXPECT_EQ(Resolve("/b", "/opt/images/app"), refused);
  EXPECT_EQ(Resolve("/b", "/"), refused);
  EXPECT_EQ(Resolve("/b", "//etc"), refused);
}

TEST(ResolveImageDir, RejectsDotDotAnywhere) {
  EXPECT_EQ(Resolve("/b", ".."), "error: must not contain '..'");
  EXPECT_EQ(Resolve("/b", "../x"), "error: must not contain '..'");
  EXPECT_EQ(Resolve("/b", "a/../../x"), "error: must not contain '..'");
  // Stays inside, but a ".." component is refused all the same.
  EXPECT_EQ(Resolve("/b", "a/../b"), "error: must not contain '..'");
  EXPECT_EQ(Resolve("/b", "/opt/../etc"), "error: must not contain '..'");
  // Not a ".." component: a name that merely contains dots.
  EXPECT_EQ(Resolve("/b", "app..v2"), "/b/images/app..v2");
}

TEST(ResolveImageDir, RejectsEmptyAndTheImagesDirectoryItself) {
  EXPECT_EQ(Resolve("/b", ""), "error: must not be empty");
  EXPECT_EQ(Resolve("/b", "."), "error: must name a directory under /b/images");
  EXPECT_EQ(Resolve("/b", "./"), "error: must name a directory under /b/images");
}

class ValidateImagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "podvisor-bundle-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    bundle_ = tmpl;
    fs::create_directories(bundle_ / "images/busybox/rootfs/bin");
    fs::create_directories(bundle_ / "images/registry.example/app:1.2/rootfs");
    fs::create_directories(bundle_ / "images/no-rootfs");
    fs::create_directories(bundle_ / "images/file-rootfs");
    std::ofstream(bundle_ / "images/file-rootfs/rootfs") << "not a directory";
    std::ofstream(bundle_ / "images/plain-file") << "not a directory";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(bundle_, ec);
  }

  Pod PodWithImages(std::vector<std::string> init_images, std::vector<std::string> images) {
    Pod pod;
    pod.metadata.name = "web";
    for (std::size_t i = 0; i < init_images.size(); ++i) {
      Container c;
      c.name = "init-" + std::to_string(i);
      c.image = init_images[i];
      pod.spec.init_containers.push_back(c);
    }
    for (std::size_t i = 0; i < images.size(); ++i) {
      Container c;
      c.name = "app-" + std::to_string(i);
      c.image = images[i];
      pod.spec.containers.push_back(c);
    }
    return pod;
  }

  std::vector<std::string> Check(const Pod& pod) {
    std::vector<std::string> out;
    for (const auto& e : ValidateImages(pod, bundle_)) out.push_back(e.ToString());
    return out;
  }

  fs::path bundle_;
};

TEST_F(ValidateImagesTest, PresentImagesPass) {
  EXPECT_THAT(Check(PodWithImages({"busybox"}, {"registry.example/app:1.2", "busybox"})),
              IsEmpty());
}

TEST_F(ValidateImagesTest, S14_6_AbsoluteImageIsInvalid) {
  fs::create_directories(bundle_ / "abs-image/rootfs");
  std::string absolute = (bundle_ / "abs-image").string();
  EXPECT_THAT(Check(PodWithImages({}, {absolute})),
              ElementsAre("spec.containers[0].image: Invalid value: \"" + absolute +
                          "\": must name a directory under BUNDLE/images, not an absolute path"));
}

// "alpine", absent from the bundle, is a registry image (S16.4): loading/
// checks it as a reference.
TEST_F(ValidateImagesTest, MissingDirectoryOrRootfs) {
  const std::string images = (bundle_ / "images").string();
  EXPECT_THAT(
      Check(PodWithImages({"no-rootfs"}, {"alpine", "file-rootfs", "plain-file", "busybox"})),
      ElementsAre(
          "spec.initContainers[0].image: Not found: \"no-rootfs\": image directory " + images +
              "/no-rootfs has no rootfs/ directory and is not an OCI image layout (no oci-layout "
              "file)",
          "spec.containers[1].image: Not found: \"file-rootfs\": image directory " + images +
              "/file-rootfs has no rootfs/ directory and is not an OCI image layout (no oci-layout "
              "file)",
          "spec.containers[2].image: Not found: \"plain-file\": image directory " + images +
              "/plain-file is not a directory"));
}

TEST_F(ValidateImagesTest, ReferencesLeavingTheBundleAreInvalid) {
  EXPECT_THAT(
      Check(PodWithImages({}, {"../x", "a/../../x", "busybox", "."})),
      ElementsAre("spec.containers[0].image: Invalid value: \"../x\": must not contain '..'",
                  "spec.containers[1].image: Invalid value: \"a/../../x\": must not "
                  "contain '..'",
                  "spec.containers[3].image: Invalid value: \".\": must name a directory "
                  "under " +
                      (bundle_ / "images").string()));
}

// An empty image is ValidatePod's "Required value"; ValidateImages does not
// report it a second time.
TEST_F(ValidateImagesTest, EmptyImageLeftToValidatePod) {
  EXPECT_THAT(Check(PodWithImages({""}, {"busybox"})), IsEmpty());
}

}  // namespace
}  // namespace podvisor::pod
