// Test tier 3 (TESTING.md): pod networking through Debian's real CNI
// plugins (containernetworking-plugins) with runc. Needs root.
//
// The tests never touch the host's own network configuration: they use a
// configuration directory of their own naming a bridge of their own
// (pvt<pid>) on a private subnet (10.199.0.0/24), a host-local state
// directory under the test's temp dir, and a "host side" listener in a
// network namespace they make (pvs<pid>, 10.198.0.0/30); all of it is
// removed at the end, and the shared iptables chains that portmap and
// firewall create go too when no other pod uses them. Every test checks
// that its pod left no veth, iptables rule, IPAM reservation or portmap
// entry behind.
#include "runc_network_fixture.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(RuncNetwork, HostReachesThePodByItsIpAndThePodReachesTheHostSide) {
  WritePod(
      PodYaml("net-web", "",
              "  initContainers:\n  - {name: egress, image: img, command: " +
                  ShCmd(std::string("timeout 5 wget -q -O /shared/egress http://") + kListenerIp +
                        ":8000/; cat /etc/hosts > /shared/hosts; "
                        "echo \"$POD_IP $POD_IPS\" > /shared/podip") +
                  ", env: [{name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}},"
                  " {name: POD_IPS, valueFrom: {fieldRef: {fieldPath: status.podIPs}}}]"
                  ", volumeMounts: [{name: shared, mountPath: /shared}]}\n"
                  "  containers:\n" +
                  Web()));
  StartRun(NetArgs());
  std::string ip = RunningPodIp();
  ASSERT_THAT(ip, ::testing::StartsWith("10.199.0.")) << RunStderr();
  auto pod = Status();
  ASSERT_TRUE(pod);
  EXPECT_EQ((*pod)["status"]["podIPs"], nlohmann::json::parse(R"([{"ip":")" + ip + R"("}])"));
  EXPECT_EQ((*pod)["status"].value("hostIP", ""), HostAddress());
  EXPECT_THAT(HttpGetEventually(ip, 8080, "hello"), HasSubstr("hello-from-net-web"));
  EXPECT_EQ(ReadScratch("egress"), "hello-from-the-host-side");
  EXPECT_THAT(ReadScratch("hosts"), HasSubstr(ip + "\tnet-web"));
  // The downward API's status.podIP(s) is the CNI address, known before
  // the first container starts (the kubelet sets up the sandbox first).
  EXPECT_EQ(ReadScratch("podip"), ip + " " + ip);
  auto wide = Client({"status", "-o", "wide"});
  EXPECT_THAT(wide.out, HasSubstr(ip)) << wide.err;
  StopPod();
}

TEST_F(RuncNetwork, PodReachesAnotherPodByIp) {
  WritePod(PodYaml("net-b", "", "  containers:\n" + Web()));
  StartRun(NetArgs());
  std::string b_ip = RunningPodIp();
  ASSERT_THAT(HttpGetEventually(b_ip, 8080, "hello"), HasSubstr("hello-from-net-b"));
  fs::path a = SecondBundle(
      PodYaml("net-a", "",
              "  containers:\n  - {name: client, image: img, command: " +
                  ShCmd("timeout 5 wget -q -O /shared/from-b http://" + b_ip + ":8080/") +
                  ", volumeMounts: [{name: shared, mountPath: /shared}]}\n"));
  auto r = testing::RunCommand(RunArgv(a));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadScratch("from-b"), "hello-from-net-b");
  EXPECT_FALSE(fs::exists(state_dir_ / "net-a" / "network.json"));
  StopPod();
}

TEST_F(RuncNetwork, HostPortFromLoopbackAndTheHostAddressAndASecondClaimFails) {
  const int port = FreeHostPort();
  const std::string hp = std::to_string(port);
  WritePod(
      PodYaml("net-hp", "",
              "  containers:\n" + Web(", ports: [{containerPort: 8080, hostPort: " + hp + "}]")));
  StartRun(NetArgs());
  RunningPodIp();
  EXPECT_THAT(HttpGetEventually("127.0.0.1", port, "hello"), HasSubstr("hello-from-net-hp"));
  std::string host = HostAddress();
  if (!host.empty()) {
    EXPECT_THAT(HttpGetEventually(host, port, "hello"), HasSubstr("hello-from-net-hp"));
  }

  fs::path second = SecondBundle(
      PodYaml("net-hp2", "",
              "  containers:\n" + Web(", ports: [{containerPort: 80, hostPort: " + hp + "}]")));
  auto r = testing::RunCommand(RunArgv(second));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("hostPort " + hp + "/TCP is held by pod net-hp"));
  EXPECT_FALSE(fs::exists(state_dir_ / "net-hp2")) << "a pod that cannot run leaves no state";
  StopPod();
  EXPECT_EQ(HttpGet("127.0.0.1", port), "");  // the mapping went with the pod
}

TEST_F(RuncNetwork, DnsFilesFollowDnsPolicyAndHostNames) {
  std::string copy = "  containers:\n  - {name: c, image: img, command: " +
                     ShCmd(
                         "cat /etc/resolv.conf > /shared/resolv; cat /etc/hosts > /shared/hosts; "
                         "hostname > /shared/hostname") +
                     ", volumeMounts: [{name: shared, mountPath: /shared}]}\n";
  WritePod(PodYaml("net-dns",
                   "  dnsPolicy: None\n"
                   "  dnsConfig: {nameservers: [192.0.2.53], searches: [corp.example], "
                   "options: [{name: ndots, value: \"2\"}]}\n"
                   "  hostname: front\n  subdomain: shop\n  setHostnameAsFQDN: true\n"
                   "  hostAliases: [{ip: 192.0.2.9, hostnames: [db]}]\n",
                   copy));
  EXPECT_EQ(Run(NetArgs()), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("resolv"), "nameserver 192.0.2.53\nsearch corp.example\noptions ndots:2");
  std::string hosts = ReadScratch("hosts");
  EXPECT_THAT(hosts, HasSubstr("\tfront.shop.default.svc.cluster.local\tfront\n"));
  EXPECT_THAT(hosts, HasSubstr("# Entries added by HostAliases.\n192.0.2.9\tdb"));
  EXPECT_EQ(ReadScratch("hostname"), "front.shop.default.svc.cluster.local");

  // Default: the host's resolver configuration (resolved's upstream file
  // in place of its stub); ClusterFirst: the same, with one warning.
  for (const char* policy : {"Default", "ClusterFirst"}) {
    WritePod(PodYaml("net-dns", std::string("  dnsPolicy: ") + policy + "\n", copy));
    EXPECT_EQ(Run(NetArgs()), 0) << RunStderr();
    std::string resolv = ReadScratch("resolv");
    EXPECT_THAT(resolv, Not(HasSubstr("127.0.0.53"))) << policy;
  }
  int warnings = 0;
  for (const auto& e : PodEvents()) warnings += e.value("reason", "") == "MissingClusterDNS";
  EXPECT_EQ(warnings, 1);
}

TEST_F(RuncNetwork, SigkilledSupervisorsNetworkIsReleasedByTheNextRun) {
  const int port = FreeHostPort();
  WritePod(PodYaml("net-kill", "",
                   "  containers:\n" + Web(", ports: [{containerPort: 8080, hostPort: " +
                                           std::to_string(port) + "}]"),
                   "Always"));
  StartRun(NetArgs());
  std::string ip = RunningPodIp();
  ASSERT_FALSE(ip.empty());
  ::kill(run_pid(), SIGKILL);
  WaitRun();
  EXPECT_EQ(Reservations().size(), 1u) << "the killed supervisor's address is still reserved";
  EXPECT_TRUE(fs::exists(state_dir_ / "net-kill" / "network.json"));
  // Its holder killed too, the pod cannot be adopted (S15.6): recovery.
  ASSERT_NE(EndKeptHolder(state_dir_ / "net-kill"), 0) << "no sandbox holder was kept";
  StartRun(NetArgs());
  std::string again = RunningPodIp();
  EXPECT_THAT(RunStderr(), HasSubstr("network detached"));
  EXPECT_EQ(Reservations().size(), 1u) << "the old reservation was released";
  EXPECT_THAT(HttpGetEventually("127.0.0.1", port, "hello"), HasSubstr("hello-from-net-kill"));
  StopPod();
}

TEST_F(RuncNetwork, FailingNetworksExitThreeBeforeAnyContainerAndLeaveNothing) {
  std::string app = "  containers:\n" + Web();
  struct Case {
    std::string conf;
    std::string message;
  } cases[] = {
      {R"({"cniVersion":"1.0.0","name":"broken","plugins":[{"type":"no-such-plugin"}]})",
       "plugin no-such-plugin ADD: plugin binary no-such-plugin not found in /usr/lib/cni"},
      {R"({"cniVersion":"1.0.0","name":"broken","plugins":[{"type":"bridge"},)",
       "10-pvtest.conflist: not valid JSON"},
      {R"({"cniVersion":"1.0.0","name":"broken","plugins":[{"type":"bridge","bridge":")" + kBridge +
           R"(","ipam":{"type":"host-local"}}]})",
       "plugin bridge ADD:"},
  };
  for (const auto& c : cases) {
    std::ofstream(conf_dir_ / "10-pvtest.conflist") << c.conf;
    WritePod(PodYaml("net-fail", "", app));
    EXPECT_EQ(Run(NetArgs()), 3) << c.conf;
    EXPECT_THAT(RunStderr(), HasSubstr(c.message));
    EXPECT_FALSE(fs::exists(state_dir_ / "net-fail")) << c.conf;
    EXPECT_TRUE(HelperEvents().empty());
  }
  // IPAM exhausted: a /30 holds the gateway and one pod.
  WriteConf("10.199.1.0/30", kSmallBridge);
  WritePod(PodYaml("net-full", "", app));
  StartRun(NetArgs());
  RunningPodIp();
  fs::path second = SecondBundle(PodYaml("net-full2", "", app));
  auto r = testing::RunCommand(RunArgv(second));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("no IP addresses available"));
  EXPECT_FALSE(fs::exists(state_dir_ / "net-full2"));
  StopPod();
}

TEST_F(RuncNetwork, FiftyPodsInARowLeaveTheAddressRangeAsItWas) {
  WritePod(
      PodYaml("net-many", "", "  containers:\n  - {name: c, image: img, command: [/bin/true]}\n"));
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(Run(NetArgs()), 0) << "run " << i << ": " << RunStderr();
    ASSERT_THAT(Reservations(), ::testing::IsEmpty()) << "after run " << i;
  }
  auto took =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start);
  EXPECT_LT(took.count(), 150) << "50 pods took " << took.count() << "s";
}

}  // namespace
}  // namespace podvisor::e2e
