// Image references as skopeo writes layouts (issue 16 point 7):
// `skopeo copy docker://debian:12 oci:images/debian:12` makes the layout
// images/debian/ with the tag in index.json's ref.name annotation, so
// `image: debian:12` names it; `image: debian@sha256:...` picks the
// manifest of that digest; a directory named like the full reference
// still wins.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "image/image.h"
#include "image/layout_builder_test_util.h"
#include "image/oci_layout.h"
#include "pod/bundle.h"

namespace podvisor::image {
namespace {

using namespace testing;  // NOLINT: the builder's vocabulary
using ::testing::HasSubstr;

class ImageRef : public ::testing::Test {
 protected:
  fs::path Bundle() const { return tmp_.path() / "bundle"; }
  fs::path Cache() const { return tmp_.path() / "state" / ".images"; }
  TempDir tmp_;
};

TEST_F(ImageRef, TaggedReferenceNamesTheLayoutSkopeoWrote) {
  LayoutBuilder b(Bundle() / "images" / "debian");
  json v11 = b.ManifestWith({{"Cmd", {"eleven"}}}, {b.Layer({File("v", "11")})});
  json v12 = b.ManifestWith({{"Cmd", {"twelve"}}}, {b.Layer({File("v", "12")})});
  b.WriteIndex({LayoutBuilder::WithTag(v11, "11"), LayoutBuilder::WithTag(v12, "12")});
  auto dir = pod::ResolveImageDir(Bundle(), "debian:12");
  ASSERT_TRUE(dir) << dir.error().message();
  EXPECT_EQ(*dir, Bundle() / "images" / "debian");
  auto twelve = LoadImage(Bundle(), "debian:12", {Cache()});
  ASSERT_TRUE(twelve) << twelve.error().message();
  EXPECT_EQ(twelve->config.cmd, std::vector<std::string>{"twelve"});
  EXPECT_EQ(twelve->manifest_digest, v12["digest"]);
  auto eleven = LoadImage(Bundle(), "debian:11", {Cache()});
  ASSERT_TRUE(eleven) << eleven.error().message();
  EXPECT_EQ(eleven->config.cmd, std::vector<std::string>{"eleven"});
  auto absent = LoadImage(Bundle(), "debian:13", {Cache()});
  ASSERT_FALSE(absent);
  EXPECT_THAT(absent.error().message(), HasSubstr("no manifest tagged \"13\" (tags: 11, 12)"));
}

TEST_F(ImageRef, DigestReferencePicksThatManifest) {
  LayoutBuilder b(Bundle() / "images" / "debian");
  json one = b.ManifestWith({{"Cmd", {"one"}}}, {b.Layer({File("v", "1")})});
  json two = b.ManifestWith({{"Cmd", {"two"}}}, {b.Layer({File("v", "2")})});
  b.WriteIndex({LayoutBuilder::WithTag(one, "latest"), LayoutBuilder::WithTag(two, "other")});
  const std::string digest = two["digest"];
  auto image = LoadImage(Bundle(), "debian@" + digest, {Cache()});
  ASSERT_TRUE(image) << image.error().message();
  EXPECT_EQ(image->config.cmd, std::vector<std::string>{"two"});
  EXPECT_EQ(image->manifest_digest, digest);
  auto wrong = LoadImage(Bundle(), "debian@sha256:" + std::string(64, 'e'), {Cache()});
  ASSERT_FALSE(wrong);
  EXPECT_THAT(wrong.error().message(), HasSubstr("has no manifest sha256:eeee"));
}

TEST_F(ImageRef, DirectoryOfTheFullNameStillWins) {
  fs::create_directories(Bundle() / "images" / "debian:12" / "rootfs");
  LayoutBuilder b(Bundle() / "images" / "debian");
  b.WriteIndex(
      {LayoutBuilder::WithTag(b.ManifestWith(json::object(), {b.Layer({File("v", "1")})}), "12")});
  auto dir = pod::ResolveImageDir(Bundle(), "debian:12");
  ASSERT_TRUE(dir);
  EXPECT_EQ(*dir, Bundle() / "images" / "debian:12");
  // A plain directory images/debian/ is no layout: no fallback to it.
  fs::create_directories(Bundle() / "images" / "plain" / "rootfs");
  auto plain = pod::ResolveImageDir(Bundle(), "plain:1");
  ASSERT_TRUE(plain);
  EXPECT_EQ(*plain, Bundle() / "images" / "plain:1");
}

}  // namespace
}  // namespace podvisor::image
