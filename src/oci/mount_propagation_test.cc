#include "oci/mount_propagation.h"

#include <gtest/gtest.h>

namespace podvisor::oci {
namespace {

// Lines as a systemd host has them: / shared, /mnt/data a slave of it,
// /srv private; and one mount point with a space in its name.
constexpr std::string_view kMountInfo =
    "27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
    "40 27 0:50 / /srv rw,relatime - tmpfs tmpfs rw\n"
    "41 27 0:51 / /mnt/data rw,relatime master:7 - tmpfs tmpfs rw\n"
    "42 27 0:52 / /mnt/my\\040disk rw,relatime shared:9 - tmpfs tmpfs rw\n"
    "43 40 0:53 / /srv/shared rw shared:12 - tmpfs tmpfs rw\n"
    "garbage line\n";

TEST(MountPropagation, OptionsAsContainerdGivesThem) {
  EXPECT_EQ(PropagationOption(""), "rprivate");
  EXPECT_EQ(PropagationOption("None"), "rprivate");
  EXPECT_EQ(PropagationOption("HostToContainer"), "rslave");
  EXPECT_EQ(PropagationOption("Bidirectional"), "rshared");
}

TEST(MountPropagation, ParsesOptionalFieldsAndEscapes) {
  auto mounts = ParseMountInfo(kMountInfo);
  ASSERT_EQ(mounts.size(), 5u);
  EXPECT_TRUE(mounts[0].shared);
  EXPECT_FALSE(mounts[1].shared);
  EXPECT_FALSE(mounts[1].slave);
  EXPECT_TRUE(mounts[2].slave);
  EXPECT_EQ(mounts[3].mount_point, "/mnt/my disk");
}

TEST(MountPropagation, FindsTheInnermostMount) {
  auto mounts = ParseMountInfo(kMountInfo);
  EXPECT_EQ(MountContaining(mounts, "/srv/www")->mount_point, "/srv");
  EXPECT_EQ(MountContaining(mounts, "/srv/shared/x")->mount_point, "/srv/shared");
  EXPECT_EQ(MountContaining(mounts, "/srvx")->mount_point, "/");
  EXPECT_EQ(MountContaining(mounts, "/mnt/data")->mount_point, "/mnt/data");
}

TEST(MountPropagation, SharedOrSlaveSourcesPassPrivateOnesAreRefused) {
  // Paths that do not exist here resolve lexically, which is all the
  // check needs.
  EXPECT_TRUE(CheckPropagationSource(kMountInfo, "/var/x", "HostToContainer", "f"));
  EXPECT_TRUE(CheckPropagationSource(kMountInfo, "/mnt/data/x", "HostToContainer", "f"));
  EXPECT_TRUE(CheckPropagationSource(kMountInfo, "/var/x", "Bidirectional", "f"));
  EXPECT_TRUE(CheckPropagationSource(kMountInfo, "/srv/x", "None", "f"));
  EXPECT_TRUE(CheckPropagationSource(kMountInfo, "/srv/x", "", "f"));

  Status slave = CheckPropagationSource(kMountInfo, "/mnt/data/x", "Bidirectional", "m");
  ASSERT_FALSE(slave);
  EXPECT_EQ(slave.error().message(),
            "m.mountPropagation: Bidirectional: /mnt/data/x is on the mount /mnt/data, which is "
            "not a shared mount, so nothing would propagate (make it one with `mount "
            "--make-rshared /mnt/data`, or drop mountPropagation)");
  Status private_mount = CheckPropagationSource(kMountInfo, "/srv/www", "HostToContainer", "m");
  ASSERT_FALSE(private_mount);
  EXPECT_NE(private_mount.error().message().find("not a shared or slave mount"), std::string::npos);
}

}  // namespace
}  // namespace podvisor::oci
