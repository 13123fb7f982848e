#include "common/host_claim.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace podvisor {
namespace {

namespace fs = std::filesystem;

class HostClaimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("host-claim-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "a" / "web");
    fs::create_directories(dir_ / "b" / "web");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path root() const { return dir_ / "claims"; }
  ClaimOwner a() const { return {dir_ / "a", "web"}; }
  ClaimOwner b() const { return {dir_ / "b", "web"}; }
  fs::path dir_;
};

TEST_F(HostClaimTest, ARunningHolderIsNamed) {
  auto held = HostClaim::Take(root(), "host-ports", "tcp-8080", a());
  ASSERT_TRUE(held) << held.error().message();
  auto other = HostClaim::Take(root(), "host-ports", "tcp-8080", b());
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code(), EBUSY);
  EXPECT_EQ(other.error().message(), "tcp-8080 is held by pod web of state directory " +
                                         (dir_ / "a").string() + " (running)");
  EXPECT_TRUE(HostClaim::Take(root(), "host-ports", "udp-8080", b()));
}

TEST_F(HostClaimTest, ACrashedHoldersClaimStaysUntilItsOwnerReturnsOrIsGone) {
  {
    auto crashed = HostClaim::Take(root(), "cgroups", "web", a());
    ASSERT_TRUE(crashed);
  }
  auto other = HostClaim::Take(root(), "cgroups", "web", b());
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message().find("supervisor is gone"), std::string::npos);
  // Its owner takes it back (its run recovers what is still there).
  {
    auto again = HostClaim::Take(root(), "cgroups", "web", a());
    ASSERT_TRUE(again);
  }
  // An owner whose pod directory is gone left nothing to recover.
  fs::remove_all(dir_ / "a" / "web");
  EXPECT_TRUE(HostClaim::Take(root(), "cgroups", "web", b()));
}

TEST_F(HostClaimTest, ReleaseFreesTheNameForAnyone) {
  auto held = HostClaim::Take(root(), "cgroups", "web", a());
  ASSERT_TRUE(held);
  held->Release();
  EXPECT_FALSE(fs::exists(root() / "cgroups" / "web"));
  EXPECT_TRUE(HostClaim::Take(root(), "cgroups", "web", b()));
}

TEST_F(HostClaimTest, ReleaseAllOfTakesOnlyTheOwnersUnheldClaims) {
  {
    auto left = HostClaim::Take(root(), "host-ports", "tcp-80", a());
    ASSERT_TRUE(left);
  }
  auto live = HostClaim::Take(root(), "host-ports", "tcp-81", b());
  ASSERT_TRUE(live);
  EXPECT_EQ(HostClaim::ReleaseAllOf(root(), "host-ports", a()), 1);
  EXPECT_FALSE(fs::exists(root() / "host-ports" / "tcp-80"));
  EXPECT_TRUE(fs::exists(root() / "host-ports" / "tcp-81"));
  EXPECT_EQ(HostClaim::ReleaseAllOf(root(), "host-ports", b()), 0);  // held: live
}

}  // namespace
}  // namespace podvisor
