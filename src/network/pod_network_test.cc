#include "network/pod_network.h"

#include <fcntl.h>
#include <sys/file.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "network/fake_plugins_test_util.h"

namespace podvisor::network {
namespace {

using ::testing::ElementsAre;

TEST(PodNetwork, ModeWords) {
  for (auto m : {NetworkMode::kNone, NetworkMode::kHost, NetworkMode::kCni}) {
    EXPECT_EQ(ParseNetworkMode(NetworkModeName(m)), m);
  }
  EXPECT_EQ(ParseNetworkMode("bridge"), std::nullopt);
}

TEST(PodNetwork, DefaultModeNeedsRootSandboxAndPlugins) {
  testing::FakePluginDir dir;
  EXPECT_EQ(DefaultNetworkMode(true, true, {dir.dir()}), NetworkMode::kCni);
  EXPECT_EQ(DefaultNetworkMode(false, true, {dir.dir()}), NetworkMode::kNone);
  EXPECT_EQ(DefaultNetworkMode(true, false, {dir.dir()}), NetworkMode::kNone);
  EXPECT_EQ(DefaultNetworkMode(true, true, {dir.dir() / "nope"}), NetworkMode::kNone);
}

TEST(PodNetwork, SplitPathList) {
  EXPECT_THAT(SplitPathList("/usr/lib/cni:/opt/cni/bin"),
              ElementsAre("/usr/lib/cni", "/opt/cni/bin"));
  EXPECT_THAT(SplitPathList(":/a::/b:"), ElementsAre("/a", "/b"));
}

TEST(PodNetwork, HostPortConflictNamesThePortAndThePod) {
  testing::FakePluginDir root;
  std::filesystem::create_directories(root.dir() / "web-a");
  Attachment held;
  held.network.name = "n";
  held.network.cni_version = "1.0.0";
  held.network.plugins = {{{"type", "bridge"}}};
  held.params.container_id = "id-a";
  held.params.port_mappings = {{8080, 80, "tcp", ""}, {5353, 53, "udp", "127.0.0.1"}};
  ASSERT_TRUE(SaveAttachment(held, root.dir() / "web-a" / "network.json"));

  EXPECT_EQ(FindHostPortConflict(root.dir(), "web-b", {{8080, 8080, "tcp", "127.0.0.1"}}),
            "hostPort 8080/TCP on 127.0.0.1 is held by pod web-a");
  EXPECT_EQ(FindHostPortConflict(root.dir(), "web-b", {{5353, 53, "udp", ""}}),
            "hostPort 5353/UDP is held by pod web-a");
  EXPECT_EQ(FindHostPortConflict(root.dir(), "web-b", {{8080, 80, "udp", ""}}), std::nullopt);
  EXPECT_EQ(FindHostPortConflict(root.dir(), "web-b", {{5353, 53, "udp", "127.0.0.2"}}),
            std::nullopt);
  EXPECT_EQ(FindHostPortConflict(root.dir(), "web-b", {{8081, 80, "tcp", ""}}), std::nullopt);
  // A pod's own record (its earlier run) is not a conflict.
  EXPECT_EQ(FindHostPortConflict(root.dir(), "web-a", {{8080, 80, "tcp", ""}}), std::nullopt);
}

TEST(PodNetwork, LockIsExclusive) {
  testing::FakePluginDir root;
  auto lock = LockNetworkState(root.dir());
  ASSERT_TRUE(lock) << lock.error().message();
  Fd other(::open((root.dir() / "network.lock").c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(other);
  EXPECT_NE(::flock(other.get(), LOCK_EX | LOCK_NB), 0);
  lock->Reset();
  EXPECT_EQ(::flock(other.get(), LOCK_EX | LOCK_NB), 0);
}

}  // namespace
}  // namespace podvisor::network
