#include "shim/rootfs.h"

#include <sys/mount.h>

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

}  // namespace
}  // namespace podvisor::shim
