#include "supervisor/executor/host_checks.h"

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace podvisor::supervisor::executor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// /proc/self/status of a root process with every capability, and of
// a container with docker's default set (no CAP_SYS_ADMIN, CAP_NET_ADMIN).
constexpr const char* kAllCaps = "Name:\tpodvisor\nCapInh:\t0\nCapEff:\t000001ffffffffff\n";
constexpr const char* kRuncDefaultCaps = "Name:\tsh\nCapEff:\t00000000a80425fb\n";

TEST(HostChecks, AllCapabilitiesMissNothing) {
  EXPECT_THAT(MissingCapabilities(kAllCaps), IsEmpty());
}

TEST(HostChecks, ADefaultContainerMissesAdminCapabilities) {
  EXPECT_THAT(MissingCapabilities(kRuncDefaultCaps), ElementsAre("CAP_SYS_ADMIN", "CAP_NET_ADMIN"));
}

TEST(HostChecks, NoCapEffLineMissesEverything) {
  EXPECT_EQ(MissingCapabilities("Name:\tx\n").size(), RequiredCapabilities().size());
}

// A runc container's default mounts: the cgroup tree read-only.
constexpr const char* kContainerMountinfo =
    "600 500 0:80 / / rw,relatime - overlay overlay rw,lowerdir=/l\n"
    "601 600 0:81 / /sys ro,nosuid - sysfs sysfs ro\n"
    "602 601 0:82 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs rw,mode=755\n"
    "603 602 0:29 /user.slice /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n"
    "604 602 0:37 / /sys/fs/cgroup/unified ro,nosuid - cgroup2 cgroup2 rw\n"
    "605 602 0:30 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids\n";

TEST(HostChecks, ReadOnlyCgroupMountsAreNamed) {
  EXPECT_THAT(ReadOnlyCgroupMounts(kContainerMountinfo),
              ElementsAre("/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified"));
}

TEST(HostChecks, InitramfsRootIsRecognised) {
  EXPECT_FALSE(MountinfoRootIsInitramfs(kContainerMountinfo));
  EXPECT_TRUE(
      MountinfoRootIsInitramfs("1 1 0:2 / / rw - rootfs rootfs rw,size=1000k\n"
                               "2 1 0:5 / /proc rw - proc proc rw\n"));
  // A tmpfs mounted over / after switch_root is not the initial rootfs.
  EXPECT_FALSE(MountinfoRootIsInitramfs("20 1 0:21 / / rw - tmpfs tmpfs rw\n"));
}

TEST(HostChecks, FilesystemsList) {
  const char* text = "nodev\tsysfs\nnodev\ttmpfs\n\text4\nnodev\toverlay\n";
  EXPECT_TRUE(FilesystemListed(text, "overlay"));
  EXPECT_TRUE(FilesystemListed(text, "ext4"));
  EXPECT_FALSE(FilesystemListed(text, "xfs"));
  EXPECT_FALSE(FilesystemListed("nodev\toverlayx\n", "overlay"));
}

TEST(HostChecks, ANonRootProcessIsToldWhichCapabilitiesItLacks) {
  if (::geteuid() == 0) GTEST_SKIP() << "needs a process without capabilities (runs as root)";
  auto s = CheckHostForPod({.privileged = true, .overlay = false, .scratch_dir = "/tmp"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message(), HasSubstr("missing capabilities CAP_SYS_ADMIN, CAP_NET_ADMIN"));
  EXPECT_THAT(s.error().message(), HasSubstr("CAP_SYS_ADMIN: the pod's namespaces"));
}

}  // namespace
}  // namespace podvisor::supervisor::executor
