// User resolution from the image's own /etc/passwd and /etc/group (user.h).
#include "oci/user.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace podvisor::oci {
namespace {

constexpr const char* kPasswd =
    "root:x:0:0:root:/root:/bin/sh\n"
    "# a comment\n"
    "app:x:1000:1001:App:/home/app:/bin/sh\n"
    "broken line\n"
    "svc:x:200:200::/:/bin/false\n";
constexpr const char* kGroup =
    "root:x:0:\n"
    "appgrp:x:1001:\n"
    "audio:x:29:app,svc\n"
    "video:x:44:svc\n"
    "staff:x:50:app\n"
    "bad:x:notanumber:app\n";

// UserRequest with chainable setters (designated initializers would need
// every field under -Wmissing-field-initializers).
struct Req : UserRequest {
  Req& Uid(int64_t v) {
    run_as_user = v;
    return *this;
  }
  Req& Gid(int64_t v) {
    run_as_group = v;
    return *this;
  }
  Req& NonRoot(bool v) {
    run_as_non_root = v;
    return *this;
  }
  Req& Supplemental(std::vector<int64_t> v) {
    supplemental_groups = std::move(v);
    return *this;
  }
  Req& Image(std::string v) {
    image_user = std::move(v);
    return *this;
  }
  Req& Strict() {
    strict_supplemental_groups = true;
    return *this;
  }
};

Result<ProcessUser> Resolve(const UserRequest& r) {
  return ResolveUser(r, kPasswd, kGroup);
}

TEST(User, ParsesPasswdAndGroupSkippingMalformedLines) {
  auto users = ParsePasswd(kPasswd);
  ASSERT_EQ(users.size(), 3u);
  EXPECT_EQ(users[1].name, "app");
  EXPECT_EQ(users[1].uid, 1000u);
  EXPECT_EQ(users[1].gid, 1001u);
  auto groups = ParseGroup(kGroup);
  ASSERT_EQ(groups.size(), 5u);
  EXPECT_EQ(groups[2].members, (std::vector<std::string>{"app", "svc"}));
}

TEST(User, NoUserAnywhereIsRoot) {
  auto u = Resolve(Req());
  ASSERT_TRUE(u);
  EXPECT_EQ(u->uid, 0u);
  EXPECT_EQ(u->gid, 0u);
  EXPECT_EQ(u->additional_gids, std::vector<uint32_t>{0});
}

TEST(User, ImageUserNameTakesUidGidAndMemberGroups) {
  auto u = Resolve(Req().Image("app"));
  ASSERT_TRUE(u) << u.error().message();
  EXPECT_EQ(u->uid, 1000u);
  EXPECT_EQ(u->gid, 1001u);
  EXPECT_EQ(u->additional_gids, (std::vector<uint32_t>{1001, 29, 50}));
}

TEST(User, ImageUserWithGroupNameOrNumber) {
  auto named = Resolve(Req().Image("app:staff"));
  ASSERT_TRUE(named);
  EXPECT_EQ(named->gid, 50u);
  EXPECT_EQ(named->additional_gids, (std::vector<uint32_t>{50, 29}));
  auto numeric = Resolve(Req().Image("svc:7"));
  ASSERT_TRUE(numeric);
  EXPECT_EQ(numeric->uid, 200u);
  EXPECT_EQ(numeric->gid, 7u);
}

TEST(User, NumericImageUserNeedNotExist) {
  auto u = Resolve(Req().Image("4321"));
  ASSERT_TRUE(u);
  EXPECT_EQ(u->uid, 4321u);
  EXPECT_EQ(u->gid, 0u);
  auto both = Resolve(Req().Image("4321:99"));
  ASSERT_TRUE(both);
  EXPECT_EQ(both->gid, 99u);
}

TEST(User, UnknownImageUserOrGroupNameIsAnError) {
  auto u = Resolve(Req().Image("ghost"));
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().message(),
            "image User \"ghost\": no user \"ghost\" in the image's /etc/passwd");
  auto g = Resolve(Req().Image("app:ghosts"));
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message().find("no group \"ghosts\""), std::string::npos);
}

TEST(User, RunAsUserWinsOverImageUserAndTakesPasswdGid) {
  auto u = Resolve(Req().Uid(200).Image("app"));
  ASSERT_TRUE(u);
  EXPECT_EQ(u->uid, 200u);
  EXPECT_EQ(u->gid, 200u);
  EXPECT_EQ(u->additional_gids, (std::vector<uint32_t>{200, 29, 44}));
  auto unknown = Resolve(Req().Uid(5555));
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->gid, 0u);
}

TEST(User, RunAsGroupAndSupplementalGroups) {
  auto u = Resolve(Req().Uid(1000).Gid(3000).Supplemental({4000, 29}));
  ASSERT_TRUE(u);
  EXPECT_EQ(u->gid, 3000u);
  EXPECT_EQ(u->additional_gids, (std::vector<uint32_t>{3000, 29, 50, 4000}));
  auto image_user = Resolve(Req().Gid(3000).Image("app"));
  ASSERT_TRUE(image_user);
  EXPECT_EQ(image_user->uid, 1000u);
  EXPECT_EQ(image_user->gid, 3000u);
}

// supplementalGroupsPolicy: Strict (KEP-3619): the image's /etc/group
// memberships are left out; the primary gid and the pod's groups stay.
TEST(User, StrictSupplementalGroupsLeaveOutTheImagesMemberships) {
  auto merged = Resolve(Req().Uid(1000).Supplemental({4000}));
  ASSERT_TRUE(merged);
  EXPECT_EQ(merged->additional_gids, (std::vector<uint32_t>{1001, 29, 50, 4000}));
  auto strict = Resolve(Req().Uid(1000).Supplemental({4000}).Strict());
  ASSERT_TRUE(strict);
  EXPECT_EQ(strict->gid, 1001u);
  EXPECT_EQ(strict->additional_gids, (std::vector<uint32_t>{1001, 4000}));
  auto named = Resolve(Req().Image("app").Strict());
  ASSERT_TRUE(named);
  EXPECT_EQ(named->additional_gids, std::vector<uint32_t>{1001});
}

TEST(User, RunAsNonRootRefusesUidZeroHoweverItIsReached) {
  EXPECT_FALSE(Resolve(Req().NonRoot(true)));
  EXPECT_FALSE(Resolve(Req().Uid(0).NonRoot(true)));
  auto named_root = Resolve(Req().NonRoot(true).Image("root"));
  ASSERT_FALSE(named_root);
  EXPECT_NE(named_root.error().message().find("runAsNonRoot"), std::string::npos);
  EXPECT_TRUE(Resolve(Req().NonRoot(true).Image("app")));
  EXPECT_TRUE(Resolve(Req().Uid(1).NonRoot(true)));
}

TEST(User, InvalidIdsAreErrors) {
  EXPECT_FALSE(Resolve(Req().Uid(-1)));
  EXPECT_FALSE(Resolve(Req().Uid(1).Gid(-5)));
  EXPECT_FALSE(Resolve(Req().Supplemental({-1})));
}

class RootfsFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/podvisor-user-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::filesystem::create_directories(dir_ / "rootfs/etc");
    std::filesystem::create_directories(dir_ / "outside");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(RootfsFiles, ReadsTheImageFilesAndNotTheHosts) {
  std::ofstream(dir_ / "rootfs/etc/passwd") << "img:x:77:78::/:/bin/sh\n";
  std::ofstream(dir_ / "rootfs/etc/group") << "g:x:90:img\n";
  auto u = ResolveUserInRootfs(Req().Image("img"), dir_ / "rootfs");
  ASSERT_TRUE(u) << u.error().message();
  EXPECT_EQ(u->uid, 77u);
  EXPECT_EQ(u->additional_gids, (std::vector<uint32_t>{78, 90}));
  // The host has a root user; the image without passwd knows no names.
  std::filesystem::remove(dir_ / "rootfs/etc/passwd");
  EXPECT_FALSE(ResolveUserInRootfs(Req().Image("root"), dir_ / "rootfs"));
}

TEST_F(RootfsFiles, SymlinksCannotEscapeTheImageRoot) {
  // An absolute symlink resolves inside the rootfs (RESOLVE_IN_ROOT), so
  // it names rootfs/<outside>/passwd, which does not exist.
  std::ofstream(dir_ / "outside/passwd") << "evil:x:0:0::/:/bin/sh\n";
  std::filesystem::create_symlink(dir_ / "outside/passwd", dir_ / "rootfs/etc/passwd");
  auto text = ReadFileInRoot(dir_ / "rootfs", "etc/passwd");
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, "");
  std::filesystem::remove(dir_ / "rootfs/etc/passwd");
  std::filesystem::create_symlink("../../outside/passwd", dir_ / "rootfs/etc/passwd");
  text = ReadFileInRoot(dir_ / "rootfs", "etc/passwd");
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "") << "'..' stops at the image root";
}

TEST_F(RootfsFiles, S14_7_AFifoOrDeviceIsNeverOpenedForReading) {
  // A FIFO would block open(2) for ever, a device node would read the
  // host's device: an account database is a regular file or nothing.
  ASSERT_EQ(::mkfifo((dir_ / "rootfs/etc/passwd").c_str(), 0644), 0);
  auto text = ReadFileInRoot(dir_ / "rootfs", "etc/passwd");
  ASSERT_FALSE(text);
  EXPECT_THAT(text.error().message(), ::testing::HasSubstr("not a regular file"));
  std::filesystem::remove(dir_ / "rootfs/etc/passwd");
  std::filesystem::create_symlink("/dev/null", dir_ / "rootfs/etc/group");
  std::filesystem::create_directories(dir_ / "rootfs/dev");
  ASSERT_EQ(::mkfifo((dir_ / "rootfs/dev/null").c_str(), 0644), 0);
  EXPECT_FALSE(ReadFileInRoot(dir_ / "rootfs", "etc/group"));
}

// S16.1: an image of the layer store is read through its layers, top
// down, as overlayfs shows them: a whiteout (0/0 character device) hides
// the lower /etc/passwd, an opaque /etc hides every lower file in it, and
// a symlink of the image stays inside the image.
TEST_F(RootfsFiles, S16_1_UsersResolveThroughTheLayers) {
  namespace fs = std::filesystem;
  const fs::path base = dir_ / "layers/base", mid = dir_ / "layers/mid", top = dir_ / "layers/top";
  for (const auto& d : {base / "etc", mid / "etc", top / "etc"}) fs::create_directories(d);
  std::ofstream(base / "etc/passwd") << "old:x:10:10::/:/bin/sh\n";
  std::ofstream(base / "etc/group") << "oldgroup:x:10:old\n";
  std::ofstream(mid / "etc/group") << "g:x:90:img\n";
  std::ofstream(dir_ / "outside/passwd") << "host:x:5:5::/:/bin/sh\n";
  image::Image image;
  image.reference = "layered";
  image.layers = {top, mid, base};
  // The base layer's passwd is whited out by the middle one.
  ASSERT_EQ(::mknod((mid / "etc/passwd").c_str(), S_IFCHR | 0, makedev(0, 0)), 0)
      << "mknod of a whiteout needs Linux 5.8 or CAP_MKNOD";
  auto text = ReadFileInImage(image, "etc/passwd");
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, "");
  auto u = ResolveUserInImage(Req().Image("old"), image);
  ASSERT_FALSE(u) << "the whited-out user is gone";
  // The top layer adds a passwd; the group file comes from the middle.
  std::ofstream(top / "etc/passwd") << "img:x:77:78::/:/bin/sh\n";
  u = ResolveUserInImage(Req().Image("img"), image);
  ASSERT_TRUE(u) << u.error().message();
  EXPECT_EQ(u->uid, 77u);
  EXPECT_EQ(u->additional_gids, (std::vector<uint32_t>{78, 90}));
  // A symlink of the image resolves inside it, never to the host.
  fs::remove(top / "etc/passwd");
  fs::create_symlink("../../../outside/passwd", top / "etc/passwd");
  text = ReadFileInImage(image, "etc/passwd");
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, "") << "'..' stops at the image root";
  // An opaque /etc in the top layer hides the middle one's group.
  fs::remove(top / "etc/passwd");
  if (::setxattr((top / "etc").c_str(), "trusted.overlay.opaque", "y", 1, 0) != 0) {
    ASSERT_EQ(::setxattr((top / "etc").c_str(), "user.overlay.opaque", "y", 1, 0), 0);
  }
  text = ReadFileInImage(image, "etc/group");
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, "");
  // A plain rootfs image still reads its rootfs.
  std::ofstream(dir_ / "rootfs/etc/passwd") << "plain:x:3:3::/:/bin/sh\n";
  image::Image plain;
  plain.rootfs = dir_ / "rootfs";
  EXPECT_EQ(ResolveUserInImage(Req().Image("plain"), plain)->uid, 3u);
}

}  // namespace
}  // namespace podvisor::oci
