// PodNetworking in-process: which addresses a pod gets without CNI, the
// refusal of CNI without the pod's own namespace, and the /etc files and
// DNS warnings it writes and publishes. CNI itself (ADD, DEL, portmap) is
// tested with the real plugins by tests/e2e/runc_network_test.cc.
#include "supervisor/executor/pod_networking.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace podvisor::supervisor::executor {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

class PodNetworkingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/podvisor-net-XXXXXX";
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    root_ = templ;
    pod_.metadata.name = "web";
    pod_.metadata.namespace_name = "shop";
    options_.state_dir = root_ / "web";
    options_.sandbox = true;
    options_.node_hostname = "node";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  PodNetworking Make() {
    return PodNetworking(pod_, options_, layout_,
                         [this](const lifecycle::Publish& p) { published_.push_back(p); });
  }
  std::string Read(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::filesystem::path root_;
  pod::Pod pod_;
  ExecutorOptions options_;
  hostfs::PodLayout layout_{"/nonexistent", "web"};
  std::vector<lifecycle::Publish> published_;
};

TEST_F(PodNetworkingTest, HostNetworkPodHasTheHostsAddresses) {
  pod_.spec.host_network = true;
  options_.network.mode = network::NetworkMode::kCni;  // not asked of a hostNetwork pod
  PodNetworking net = Make();
  ASSERT_TRUE(net.Attach(std::nullopt, "uid"));
  EXPECT_EQ(net.pod_ips(), net.host_ips());
}

TEST_F(PodNetworkingTest, PodWithoutASandboxIsOnTheHostsNetwork) {
  options_.sandbox = false;
  PodNetworking net = Make();
  ASSERT_TRUE(net.Attach(std::nullopt, "uid"));
  EXPECT_EQ(net.pod_ips(), net.host_ips());
}

TEST_F(PodNetworkingTest, NetworkNoneGivesNoAddress) {
  options_.network.mode = network::NetworkMode::kNone;
  PodNetworking net = Make();
  ASSERT_TRUE(net.Attach(std::filesystem::path("/proc/self/ns/net"), "uid"));
  EXPECT_THAT(net.pod_ips(), IsEmpty());
  net.Detach();  // nothing attached: nothing to undo
}

TEST_F(PodNetworkingTest, CniWithoutThePodsNamespaceIsRefusedBeforeAnyPlugin) {
  options_.network.mode = network::NetworkMode::kCni;
  options_.network.conf_dir = root_ / "no-such-net.d";
  PodNetworking net = Make();
  auto attached = net.Attach(std::nullopt, "uid");
  ASSERT_FALSE(attached);
  EXPECT_THAT(attached.error().message(), HasSubstr("--network cni needs the pod's own network"));
  EXPECT_THAT(net.pod_ips(), IsEmpty());
}

TEST_F(PodNetworkingTest, EtcFilesNameThePodAndClusterFirstWarnsOfNoClusterDns) {
  layout_ = hostfs::PodLayout(root_, "web");
  pod_.spec.hostname = "shopfront";
  pod_.spec.host_aliases.push_back({"192.0.2.7", {"db.local"}});
  PodNetworking net = Make();
  ASSERT_TRUE(net.Attach(std::filesystem::path("/proc/self/ns/net"), "uid"));
  auto written = net.WriteEtcFiles();
  ASSERT_TRUE(written) << written.error().message();
  std::string hosts = Read(layout_.HostsFile());
  EXPECT_THAT(hosts, HasSubstr("localhost"));
  EXPECT_THAT(hosts, HasSubstr("192.0.2.7\tdb.local"));
  EXPECT_THAT(Read(layout_.HostnameFile()), HasSubstr("shopfront"));
  ASSERT_EQ(published_.size(), 1u);
  EXPECT_EQ(published_[0].reason, "MissingClusterDNS");
  EXPECT_EQ(published_[0].type, lifecycle::EventType::kWarning);
}

}  // namespace
}  // namespace podvisor::supervisor::executor
