#include "cgroups/mode.h"

#include <linux/magic.h>

#include <gtest/gtest.h>

namespace podvisor::cgroups {
namespace {

TEST(CgroupMode, DecidedByFilesystemMagic) {
  EXPECT_EQ(ModeFromFilesystemMagic(CGROUP2_SUPER_MAGIC, 0), CgroupMode::kUnified);
  EXPECT_EQ(ModeFromFilesystemMagic(TMPFS_MAGIC, CGROUP2_SUPER_MAGIC), CgroupMode::kHybrid);
  EXPECT_EQ(ModeFromFilesystemMagic(TMPFS_MAGIC, 0), CgroupMode::kLegacy);
  EXPECT_EQ(ModeFromFilesystemMagic(0, 0), CgroupMode::kNone);
  EXPECT_EQ(ModeFromFilesystemMagic(EXT4_SUPER_MAGIC, 0), CgroupMode::kNone);
}

TEST(CgroupMode, NamesAreWords) {
  EXPECT_EQ(CgroupModeName(CgroupMode::kUnified), "unified");
  EXPECT_EQ(CgroupModeName(CgroupMode::kHybrid), "hybrid");
}

TEST(CgroupMode, NonCgroupDirectoryIsNone) {
  auto info = DetectCgroups(::testing::TempDir());
  EXPECT_EQ(info.mode, CgroupMode::kNone);
  EXPECT_TRUE(info.v2_mount.empty());
  EXPECT_EQ(DescribeCgroups(info), "none");
}

TEST(CgroupMode, DescribesTheV2Mount) {
  CgroupInfo info{CgroupMode::kUnified, "/sys/fs/cgroup", {"cpu", "memory"}};
  EXPECT_EQ(DescribeCgroups(info), "unified (cgroup2 at /sys/fs/cgroup, controllers: cpu memory)");
  info.controllers.clear();
  EXPECT_EQ(DescribeCgroups(info), "unified (cgroup2 at /sys/fs/cgroup, controllers: none)");
}

}  // namespace
}  // namespace podvisor::cgroups
