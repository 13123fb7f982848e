// A bundle image is registry content (S14.5): its unpacked tree may hold
// nothing that a plain open of pod.yaml, config/ or images/ would follow
// out of it. Each test crafts the layer an attacker would push and checks
// that the unpack refuses it by name and leaves nothing behind.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/beneath.h"
#include "image/bundle_fs.h"
#include "image/bundle_image.h"
#include "image/layout_builder_test_util.h"

namespace podvisor::image {
namespace {

using namespace testing;  // NOLINT: the builder's vocabulary
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kPod =
    "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
    "spec:\n  containers:\n  - {name: app, image: img}\n";

class BundleImageContainment : public ::testing::Test {
 protected:
  // A bundle image whose one layer holds pod.yaml and then `entries`.
  fs::path Image(std::vector<TarEntry> entries) {
    LayoutBuilder b(tmp_.path() / "layout");
    entries.insert(entries.begin(), File("pod.yaml", kPod));
    json labels = {{"Labels", {{"io.podvisor.bundle", "1"}}}};
    b.WriteIndex({b.ManifestWith(labels, {b.Layer(entries)})});
    return b.dir();
  }
  // The unpack fails naming `message`, and the private directory (and its
  // parent, which it created) is gone.
  void ExpectRefused(const fs::path& layout, const std::string& message) {
    auto r = UnpackBundleImage(layout, parent_);
    ASSERT_FALSE(r) << "unpacked to " << r->dir();
    EXPECT_THAT(r.error().message(), HasSubstr(message));
    EXPECT_EQ(r.error().code(), EINVAL) << "exit 2, the image's fault";
    EXPECT_FALSE(fs::exists(parent_));
  }

  TempDir tmp_;
  fs::path parent_ = tmp_.path() / "bundles";
};

TEST_F(BundleImageContainment, S14_5_RootfsSymlinkToTheHostRootIsRefused) {
  ExpectRefused(Image({Dir("images"), Dir("images/img"), File("images/img/image.json", "{}"),
                       Symlink("images/img/rootfs", "/")}),
                "bundle image " + (tmp_.path() / "layout").string() +
                    ": images/img/rootfs: a symlink leaving the bundle");
}

TEST_F(BundleImageContainment, S14_5_ImageSymlinkToAHostDirectoryIsRefused) {
  fs::path host_image = tmp_.path() / "host-image";
  fs::create_directories(host_image / "rootfs");
  ExpectRefused(Image({Dir("images"), Symlink("images/img", host_image.string())}),
                "images/img: a symlink leaving the bundle");
  EXPECT_TRUE(fs::is_directory(host_image / "rootfs"));
}

TEST_F(BundleImageContainment, S14_5_ConfigSymlinkToAHostFileIsRefused) {
  fs::path host_file = tmp_.path() / "host-secret.yaml";
  LayoutBuilder::Write(host_file, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n");
  ExpectRefused(Image({Dir("config"), Symlink("config/x.yaml", host_file.string())}),
                "config/x.yaml: a symlink leaving the bundle");
}

TEST_F(BundleImageContainment, S14_5_RelativeSymlinkClimbingOutIsRefused) {
  ExpectRefused(Image({Dir("config"), Symlink("config/x.yaml", "../../../../../../etc/passwd")}),
                "config/x.yaml: a symlink leaving the bundle");
}

TEST_F(BundleImageContainment, S14_5_SymlinkStayingInsideIsRefusedToo) {
  fs::path layout = Image({Dir("config"), Symlink("config/x.yaml", "../pod.yaml")});
  auto r = UnpackBundleImage(layout, parent_);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message(), HasSubstr("config/x.yaml: a symlink"));
  EXPECT_THAT(r.error().message(), Not(HasSubstr("leaving")));
}

TEST_F(BundleImageContainment, S14_5_FifoIsRefused) {
  // A fifo as a config file would block the reader for ever; a device
  // node (made when we are root) would read the host's device.
  ExpectRefused(Image({Dir("config"), Fifo("config/x.yaml")}), "config/x.yaml: a fifo");
}

TEST_F(BundleImageContainment, S14_5_DirectoriesAndFilesUnpack) {
  auto r = UnpackBundleImage(
      Image({Dir("config"), File("config/x.yaml", "kind: ConfigMap\n"), Dir("images")}), parent_);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(ReadFile(r->dir() / "config" / "x.yaml"), "kind: ConfigMap\n");
}

TEST(BundleFs, OpenBeneathStaysUnderTheRoot) {
  TempDir tmp;
  fs::create_directories(tmp.path() / "root" / "a");
  LayoutBuilder::Write(tmp.path() / "root" / "a" / "f", "inside");
  LayoutBuilder::Write(tmp.path() / "outside", "outside");
  fs::create_symlink("f", tmp.path() / "root" / "a" / "in");
  fs::create_symlink("../../outside", tmp.path() / "root" / "a" / "out");
  fs::create_symlink(tmp.path() / "outside", tmp.path() / "root" / "a" / "abs");
  Fd root(::open((tmp.path() / "root").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(root);
  EXPECT_TRUE(OpenBeneath(root.get(), "a/in", O_RDONLY));
  for (const char* escape : {"a/out", "a/abs", "../outside", "a/../../outside"}) {
    auto r = OpenBeneath(root.get(), escape, O_RDONLY);
    ASSERT_FALSE(r) << escape;
    EXPECT_EQ(r.error().code(), EXDEV) << escape;
  }
  auto no_links = OpenBeneath(root.get(), "a/in", O_RDONLY | O_NOFOLLOW);
  ASSERT_FALSE(no_links);
  EXPECT_EQ(no_links.error().code(), ELOOP);
  EXPECT_FALSE(OpenBeneath(root.get(), "/etc/passwd", O_RDONLY));
}

}  // namespace
}  // namespace podvisor::image
