// User-mode networks (S22): the tools' command lines, slirp4netns's API
// requests, the record, the pod's addresses read from procfs, the modes
// and the rootless default; and the start's failures against fake tools
// (shell scripts), which need no root. The real tools run in tier 3
// (tests/e2e/runc_user_network_test.cc).
#include "network/user_mode.h"

#include <signal.h>

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "network/fake_plugins_test_util.h"
#include "network/pod_network.h"

namespace podvisor::network {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

UserModeOptions Options(UserModeTool tool) {
  UserModeOptions o;
  o.tool = tool;
  o.netns = "/state/web/ns/net";
  o.pod_dir = "/state/web";
  return o;
}

TEST(UserModeNetwork, S22_1_ModesParseAndNeedTheSandboxByDefaultOnlyWhenRootless) {
  for (auto m : {NetworkMode::kSlirp4netns, NetworkMode::kPasta}) {
    EXPECT_EQ(ParseNetworkMode(NetworkModeName(m)), m);
    EXPECT_TRUE(IsUserModeNetwork(m));
  }
  EXPECT_EQ(NetworkModeName(NetworkMode::kSlirp4netns), std::string("slirp4netns"));
  EXPECT_FALSE(IsUserModeNetwork(NetworkMode::kCni));
  EXPECT_EQ(ParseNetworkMode("slirp"), std::nullopt);
}

TEST(UserModeNetwork, S22_3_RootlessDefaultPrefersPastaThenSlirp4netns) {
  testing::FakePluginDir cni;
  EXPECT_EQ(DefaultNetworkMode(false, true, {cni.dir()}, UserModeTools{true, true}),
            NetworkMode::kPasta);
  EXPECT_EQ(DefaultNetworkMode(false, true, {cni.dir()}, UserModeTools{false, true}),
            NetworkMode::kSlirp4netns);
  EXPECT_EQ(DefaultNetworkMode(false, true, {cni.dir()}, UserModeTools{false, false}),
            NetworkMode::kNone);
  // Without its own namespaces a pod has no network to serve.
  EXPECT_EQ(DefaultNetworkMode(false, false, {cni.dir()}, UserModeTools{true, true}),
            NetworkMode::kNone);
  // As root the default stays CNI's.
  EXPECT_EQ(DefaultNetworkMode(true, true, {cni.dir()}), NetworkMode::kCni);
}

TEST(UserModeNetwork, S22_2_Slirp4netnsCommandLineAsPodmanRunsIt) {
  UserModeOptions o = Options(UserModeTool::kSlirp4netns);
  EXPECT_THAT(Slirp4netnsArgv(o, 5, 6),
              ElementsAre("slirp4netns", "--configure", "--mtu=65520", "--ready-fd=5",
                          "--exit-fd=6", "--api-socket=slirp4netns.sock", "--disable-host-loopback",
                          "--netns-type=path", "/state/web/ns/net", "tap0"));
  o.allow_host_loopback = true;
  o.userns = "/state/web/ns/net-user";
  o.program = "/opt/bin/slirp4netns";
  auto argv = Slirp4netnsArgv(o, 5, 6);
  EXPECT_EQ(argv.front(), "/opt/bin/slirp4netns");
  EXPECT_THAT(argv, Not(Contains("--disable-host-loopback")));
  EXPECT_THAT(argv, Contains("--userns-path=/state/web/ns/net-user"));
}

TEST(UserModeNetwork, S22_2_PastaCommandLineForwardsOnlyTheHostPorts) {
  UserModeOptions o = Options(UserModeTool::kPasta);
  EXPECT_THAT(PastaArgv(o),
              ElementsAre("pasta", "--config-net", "--quiet", "--mtu", "65520", "--tcp-ports",
                          "none", "--udp-ports", "none", "--tcp-ns", "none", "--udp-ns", "none",
                          "--dns-forward", "169.254.1.1", "--pid", "pasta.pid", "--no-map-gw",
                          "--netns", "/state/web/ns/net"));
  o.port_mappings = {
      {8080, 80, "tcp", ""}, {5353, 53, "udp", "127.0.0.1"}, {8443, 443, "tcp", "::"}};
  o.as_root = true;
  o.allow_host_loopback = true;
  o.userns = "/state/web/ns/net-user";
  auto argv = PastaArgv(o);
  EXPECT_THAT(argv, Not(Contains("--no-map-gw")));
  auto after = [&argv](const std::string& flag) {
    auto it = std::find(argv.begin(), argv.end(), flag);
    return it == argv.end() || it + 1 == argv.end() ? std::string() : *(it + 1);
  };
  EXPECT_EQ(after("--tcp-ports"), "8080:80,8443:443");
  EXPECT_EQ(after("--udp-ports"), "127.0.0.1/5353:53");
  EXPECT_EQ(after("--runas"), "0:0");
  EXPECT_EQ(after("--userns"), "/state/web/ns/net-user");
  EXPECT_EQ(argv.back(), "/state/web/ns/net");
}

TEST(UserModeNetwork, S22_6_SlirpHostFwdRequestNamesAddressAndPorts) {
  EXPECT_EQ(SlirpHostFwdRequest({8080, 80, "tcp", ""}),
            nlohmann::json::parse(R"({"execute":"add_hostfwd","arguments":{"proto":"tcp",
              "host_addr":"0.0.0.0","host_port":8080,"guest_addr":"10.0.2.100",
              "guest_port":80}})"));
  EXPECT_EQ(SlirpHostFwdRequest({53, 5353, "udp", "127.0.0.1"})["arguments"]["host_addr"],
            "127.0.0.1");
}

TEST(UserModeNetwork, S22_6_WhatTheToolsCannotForwardIsRefusedByName) {
  EXPECT_FALSE(CheckUserModePorts(UserModeTool::kPasta, {{8080, 80, "tcp", "::1"}}));
  EXPECT_THAT(CheckUserModePorts(UserModeTool::kPasta, {{9000, 90, "sctp", ""}}).value_or(""),
              HasSubstr("hostPort 9000/SCTP: --network pasta forwards only TCP and UDP"));
  EXPECT_THAT(
      CheckUserModePorts(UserModeTool::kSlirp4netns, {{8080, 80, "tcp", "::1"}}).value_or(""),
      HasSubstr("only to IPv4 host addresses"));
  EXPECT_FALSE(CheckUserModePorts(UserModeTool::kSlirp4netns, {{8080, 80, "udp", "::"}}));
}

// /proc/<pid>/net of a namespace that pasta configured on this host.
constexpr const char* kFibTrie = R"(Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
     +-- 192.0.2.0/24 2 0 2
        +-- 192.0.2.0/30 2 0 2
           |-- 192.0.2.0
              /24 link UNICAST
           |-- 192.0.2.2
              /32 host LOCAL
        |-- 192.0.2.255
           /32 link BROADCAST
)";
constexpr const char* kIfInet6 =
    "00000000000000000000000000000001 01 80 10 80       lo\n"
    "fe80000000000000585dcafffe119587 03 40 20 c0     eth0\n"
    "fd000000000000000000000000000002 03 40 00 82     eth0\n";

TEST(UserModeNetwork, S22_4_PodIpsAreTheNamespacesOwnAddresses) {
  EXPECT_THAT(PodIpsFromProcNet(kFibTrie, kIfInet6), ElementsAre("192.0.2.2", "fd00::2"));
  EXPECT_THAT(PodIpsFromProcNet(kFibTrie, ""), ElementsAre("192.0.2.2"));
  // Only a loopback: no address.
  EXPECT_THAT(PodIpsFromProcNet("Main:\n  |-- 127.0.0.1\n     /32 host LOCAL\n",
                                "00000000000000000000000000000001 01 80 10 80 lo\n"),
              ElementsAre());
}

TEST(UserModeNetwork, S22_9_RecordRoundTripsAndRefusesNonsense) {
  UserModeRecord r;
  r.tool = UserModeTool::kPasta;
  r.pid = 1234;
  r.start_time = 987654;
  r.netns = "/state/web/ns/net";
  r.port_mappings = {{8080, 80, "tcp", "127.0.0.1"}};
  r.pod_ips = {"192.0.2.2"};
  r.dns = kPastaDns;
  auto back = UserModeRecord::FromJson(r.ToJson());
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->tool, UserModeTool::kPasta);
  EXPECT_EQ(back->pid, 1234);
  EXPECT_EQ(back->start_time, 987654u);
  EXPECT_EQ(back->port_mappings, r.port_mappings);
  EXPECT_THAT(back->pod_ips, ElementsAre("192.0.2.2"));
  EXPECT_EQ(back->dns, "169.254.1.1");

  nlohmann::json bad = r.ToJson();
  bad["tool"] = "vde";
  EXPECT_THAT(UserModeRecord::FromJson(bad).error().message(), HasSubstr("tool"));
  bad = r.ToJson();
  bad["pid"] = 0;
  EXPECT_THAT(UserModeRecord::FromJson(bad).error().message(), HasSubstr("pid"));
  EXPECT_FALSE(UserModeRecord::FromJson(nlohmann::json::parse(R"({"tool":"pasta"})")));
}

// A fake tool: a shell script standing in for the real program.
class FakeTool : public ::testing::Test {
 protected:
  std::filesystem::path Write(const std::string& name, const std::string& body) {
    auto file = dir_.dir() / name;
    std::ofstream(file) << "#!/bin/sh\n" << body << "\n";
    std::filesystem::permissions(file, std::filesystem::perms::owner_all);
    return file;
  }
  UserModeOptions For(UserModeTool tool, const std::filesystem::path& program) {
    UserModeOptions o = Options(tool);
    o.program = program.string();
    o.pod_dir = dir_.dir();
    o.netns = dir_.dir() / "netns";
    o.timeout = std::chrono::milliseconds(500);
    return o;
  }
  testing::FakePluginDir dir_;
};

TEST_F(FakeTool, S22_8_PastaFailingIsAnErrorWithItsMessageAndLeavesNothing) {
  auto o = For(UserModeTool::kPasta,
               Write("pasta",
                     "echo 'Failed to send 47 bytes to syslog' >&2\n"
                     "echo \"Couldn't open network namespace $(pwd)\" >&2\nexit 1"));
  auto started = UserModeNetwork::Start(o, dir_.dir());
  ASSERT_FALSE(started);
  EXPECT_THAT(started.error().message(),
              HasSubstr("pasta failed: Couldn't open network namespace " + dir_.dir().string()));
  EXPECT_FALSE(std::filesystem::exists(dir_.dir() / kUserNetworkFile));
}

TEST_F(FakeTool, S22_8_Slirp4netnsExitingBeforeReadyIsAnError) {
  auto o = For(UserModeTool::kSlirp4netns, Write("slirp4netns", "echo 'tap0: no such netns' >&2"));
  auto started = UserModeNetwork::Start(o, dir_.dir());
  ASSERT_FALSE(started);
  EXPECT_THAT(started.error().message(), HasSubstr("slirp4netns exited: tap0: no such netns"));
}

TEST_F(FakeTool, S22_8_Slirp4netnsNeverReadyIsKilledAtTheTimeout) {
  // It records its pid, then never writes to its ready descriptor.
  auto o = For(
      UserModeTool::kSlirp4netns,
      Write("slirp4netns", "echo $$ > " + (dir_.dir() / "fake.pid").string() + "\nexec sleep 30"));
  auto t0 = std::chrono::steady_clock::now();
  auto started = UserModeNetwork::Start(o, dir_.dir());
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().code(), ETIMEDOUT);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  std::ifstream in(dir_.dir() / "fake.pid");
  pid_t pid = 0;
  in >> pid;
  ASSERT_GT(pid, 0);
  EXPECT_NE(::kill(pid, 0), 0) << "the fake tool still runs";
}

TEST_F(FakeTool, S22_9_ARecordOfAGoneToolIsNotFound) {
  UserModeRecord r;
  r.tool = UserModeTool::kSlirp4netns;
  r.pid = ::getpid();  // alive, but not slirp4netns and not started then
  r.start_time = 1;
  std::ofstream(dir_.dir() / kUserNetworkFile) << r.ToJson().dump();
  auto found = UserModeNetwork::Find(dir_.dir());
  ASSERT_FALSE(found);
  EXPECT_EQ(found.error().code(), ESRCH);
  EXPECT_FALSE(UserModeNetwork::EndLeftOver(dir_.dir()));
  EXPECT_FALSE(std::filesystem::exists(dir_.dir() / kUserNetworkFile));
}

}  // namespace
}  // namespace podvisor::network
