#include "cgroups/mode.h"

#include <linux/magic.h>
#include <unistd.h>

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

TEST(CgroupMode, CrunCannotRunOnHybridCgroupsOrNone) {
  EXPECT_EQ(CrunUnusableOn({CgroupMode::kUnified, "/sys/fs/cgroup", {}}), "");
  EXPECT_EQ(CrunUnusableOn({CgroupMode::kLegacy, "", {}}), "");
  EXPECT_EQ(CrunUnusableOn({CgroupMode::kHybrid, "/sys/fs/cgroup/unified", {}}),
            "this host's hybrid cgroups (cgroup v1/v2 hybrid)");
  EXPECT_EQ(CrunUnusableOn({CgroupMode::kNone, "", {}}), "a host without a cgroup filesystem");
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

#include "cgroups/cleanup.h"

namespace podvisor::cgroups {
namespace {

TEST(CgroupCleanup, FindsTheMountedHierarchies) {
  // Every Linux host podvisor runs on mounts at least one cgroup hierarchy.
  auto mounts = CgroupMounts();
  ASSERT_FALSE(mounts.empty());
  for (const auto& m : mounts) EXPECT_TRUE(std::filesystem::is_directory(m)) << m;
}

TEST(CgroupCleanup, RemovesOnlyEmptyDirectoriesItWasAskedFor) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create cgroups";
  auto mounts = CgroupMounts();
  std::string top = "podvisor-test-" + std::to_string(getpid());
  std::vector<std::filesystem::path> made;
  for (const auto& m : mounts) {
    std::error_code ec;
    if (std::filesystem::create_directories(m / top / "pod", ec)) made.push_back(m);
  }
  if (made.empty()) GTEST_SKIP() << "no writable cgroup hierarchy";
  EXPECT_EQ(RemoveEmptyCgroupDirs("/" + top + "/pod"), static_cast<int>(made.size() * 2));
  for (const auto& m : made) EXPECT_FALSE(std::filesystem::exists(m / top)) << m;
  EXPECT_EQ(RemoveEmptyCgroupDirs("/../etc"), 0);
}

}  // namespace
}  // namespace podvisor::cgroups
