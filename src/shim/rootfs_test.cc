#include "shim/rootfs.h"

#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace podvisor::shim {
namespace {

TEST(Rootfs, OverlayOptionsAreData) {
  MountCall call = ParseMountOptions({"index=off", "workdir=/w", "upperdir=/u", "lowerdir=/l"});
  EXPECT_EQ(call.flags, 0u);
  EXPECT_EQ(call.data, "index=off,workdir=/w,upperdir=/u,lowerdir=/l");
  EXPECT_FALSE(call.bind);
}

TEST(Rootfs, FlagWordsAreFlags) {
  MountCall call = ParseMountOptions({"rbind", "ro", "nosuid"});
  EXPECT_EQ(call.flags, static_cast<unsigned long>(MS_BIND | MS_REC | MS_RDONLY | MS_NOSUID));
  EXPECT_TRUE(call.bind);
  EXPECT_TRUE(call.read_only);
  EXPECT_EQ(call.data, "");
}

TEST(Rootfs, LaterWordWins) {
  MountCall call = ParseMountOptions({"ro", "rw"});
  EXPECT_FALSE(call.read_only);
}

TEST(Rootfs, UnmountingWhatIsNotMountedIsFine) {
  EXPECT_TRUE(UnmountRootfs("/nonexistent/podvisor-shim-test"));
}

// containerd unpacks a bundle image's layer itself; `run` then reads the
// mounted snapshot as a plain bundle directory, so the shim refuses one
// holding a symlink before it starts the supervisor.
TEST(Rootfs, S14_5_ABundleWithASymlinkIsRefusedAndUnmounted) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a bind mount)";
  namespace fs = std::filesystem;
  fs::path dir =
      fs::path(::testing::TempDir()) / ("podvisor-shim-rootfs-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "snapshot" / "images" / "img");
  std::ofstream(dir / "snapshot" / "pod.yaml") << "kind: Pod\n";
  fs::create_directory_symlink("/", dir / "snapshot" / "images" / "img" / "rootfs");
  fs::path target = dir / "rootfs";
  Status s = MountRootfs({{"bind", (dir / "snapshot").string(), {"rbind", "ro"}}}, target);
  EXPECT_FALSE(s);
  if (!s) {
    EXPECT_THAT(s.error().message(),
                ::testing::HasSubstr("images/img/rootfs: a symlink leaving the bundle"));
  }
  // target is an empty directory unless the snapshot is still mounted on it.
  EXPECT_FALSE(fs::exists(target / "pod.yaml")) << "the snapshot is still mounted";
  (void)UnmountRootfs(target);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace podvisor::shim
