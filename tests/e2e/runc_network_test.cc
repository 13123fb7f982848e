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
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kPid = std::to_string(getpid());
const std::string kBridge = "pvt" + kPid;
const std::string kSmallBridge = "pvu" + kPid;  // the exhausted /30
const std::string kListenerNs = "pvs" + kPid;
const std::string kListenerHostIf = "pvh" + kPid;
const std::string kListenerNsIf = "pvn" + kPid;
constexpr const char* kListenerIp = "10.198.0.2";
constexpr const char* kNetworkName = "pvtest";

testing::CommandResult Sh(const std::string& script) {
  return testing::RunCommand({"/bin/sh", "-c", script});
}

// GET / over TCP; "" when nothing answered within the timeout.
std::string HttpGet(const std::string& ip, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  std::string out;
  ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  pollfd p{fd, POLLOUT, 0};
  if (::poll(&p, 1, 3000) == 1 && (p.revents & POLLOUT)) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    std::string req = "GET / HTTP/1.0\r\nHost: " + ip + "\r\n\r\n";
    if (err == 0 && ::send(fd, req.data(), req.size(), MSG_NOSIGNAL) > 0) {
      char buf[4096];
      for (;;) {
        pollfd r{fd, POLLIN, 0};
        if (::poll(&r, 1, 3000) != 1) break;
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, static_cast<size_t>(n));
      }
    }
  }
  ::close(fd);
  return out;
}

// HttpGet until the answer holds `want` (a server the pod just started
// may not listen yet), at most 5 s; the last answer.
std::string HttpGetEventually(const std::string& ip, int port, const std::string& want) {
  std::string got;
  for (int i = 0; i < 50; ++i) {
    got = HttpGet(ip, port);
    if (got.find(want) != std::string::npos) break;
    ::usleep(100'000);
  }
  return got;
}

std::string HostAddress() {
  // The address of the interface holding the default route, as
  // status.hostIP reports it.
  auto r = Sh("ip -4 -o route get 1.0.0.0 2>/dev/null | sed -n 's/.* src \\([0-9.]*\\).*/\\1/p'");
  std::string ip = r.out;
  while (!ip.empty() && (ip.back() == '\n' || ip.back() == ' ')) ip.pop_back();
  return ip;
}

class RuncNetwork : public RuncE2eTest {
 protected:
  static void SetUpTestSuite() {
    if (::geteuid() != 0 || FindInPath("runc").empty() || !fs::exists("/usr/lib/cni/bridge") ||
        FindInPath("iptables").empty()) {
      return;
    }
    // The host side listener: a namespace with a veth to the host.
    Sh("ip netns add " + kListenerNs + " && ip link add " + kListenerHostIf +
       " type veth peer name " + kListenerNsIf + " && ip link set " + kListenerNsIf + " netns " +
       kListenerNs + " && ip addr add 10.198.0.1/30 dev " + kListenerHostIf + " && ip link set " +
       kListenerHostIf + " up && ip -n " + kListenerNs + " addr add " + kListenerIp + "/30 dev " +
       kListenerNsIf + " && ip -n " + kListenerNs + " link set " + kListenerNsIf + " up && ip -n " +
       kListenerNs + " link set lo up");
    std::string www = "/tmp/pvs-www-" + kPid;
    fs::create_directories(www);
    std::ofstream(www + "/index.html") << "hello-from-the-host-side\n";
    listener_pid_ = ::fork();
    if (listener_pid_ == 0) {
      ::execlp("ip", "ip", "netns", "exec", kListenerNs.c_str(), "busybox", "httpd", "-f", "-p",
               (std::string(kListenerIp) + ":8000").c_str(), "-h", www.c_str(), nullptr);
      ::_exit(127);
    }
  }

  static void TearDownTestSuite() {
    if (listener_pid_ > 0) {
      ::kill(listener_pid_, SIGKILL);
      ::waitpid(listener_pid_, nullptr, 0);
      listener_pid_ = -1;
    }
    fs::remove_all("/tmp/pvs-www-" + kPid);
    Sh("ip link del " + kListenerHostIf + " 2>/dev/null; ip netns del " + kListenerNs +
       " 2>/dev/null; ip link del " + kBridge + " 2>/dev/null; ip link del " + kSmallBridge +
       " 2>/dev/null; true");
    // portmap's and firewall's shared chains, once no pod uses them: no
    // per-pod jump (CNI-DN-*) in CNI-HOSTPORT-DNAT, no address in
    // CNI-FORWARD beyond the jump to CNI-ADMIN.
    Sh(R"SH(
      if ! iptables -t nat -S CNI-HOSTPORT-DNAT 2>/dev/null | grep -q -- '-j CNI-DN-'; then
        iptables -t nat -D PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT 2>/dev/null
        iptables -t nat -D OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT 2>/dev/null
        iptables -t nat -D POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ 2>/dev/null
        for c in CNI-HOSTPORT-DNAT CNI-HOSTPORT-SETMARK CNI-HOSTPORT-MASQ; do
          iptables -t nat -F $c 2>/dev/null; iptables -t nat -X $c 2>/dev/null
        done
      fi
      if [ "$(iptables -S CNI-FORWARD 2>/dev/null | grep -vc -e '^-N' -e 'CNI-ADMIN')" = 0 ]; then
        iptables -D FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD 2>/dev/null
        iptables -F CNI-FORWARD 2>/dev/null; iptables -X CNI-FORWARD 2>/dev/null
        iptables -F CNI-ADMIN 2>/dev/null; iptables -X CNI-ADMIN 2>/dev/null
      fi
      true)SH");
  }

  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    if (FindInPath("runc").empty()) GTEST_SKIP() << "runc not installed";
    if (!fs::exists("/usr/lib/cni/bridge")) {
      GTEST_SKIP() << "CNI plugins not installed (containernetworking-plugins)";
    }
    if (FindInPath("iptables").empty()) GTEST_SKIP() << "iptables not installed";
    RuncE2eTest::SetUp();
    conf_dir_ = dir_ / "net.d";
    ipam_dir_ = dir_ / "ipam";
    WriteConf("10.199.0.0/24");
  }

  void TearDown() override {
    if (!dir_.empty()) CheckNetworkLeftovers();
    E2eTest::TearDown();
  }

  void WriteConf(const std::string& subnet, const std::string& bridge = kBridge) {
    fs::create_directories(conf_dir_);
    std::ofstream(conf_dir_ / "10-pvtest.conflist") << R"({
  "cniVersion": "1.0.0", "name": ")" << kNetworkName << R"(",
  "plugins": [
    {"type": "bridge", "bridge": ")" << bridge << R"(", "isGateway": true, "ipMasq": true,
     "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": ")"
                                                    << subnet << R"("}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": ")"
                                                    << ipam_dir_.string() << R"("}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "firewall"}
  ]})";
  }

  std::vector<std::string> NetArgs() {
    return {"--network",        "cni",           "--cni-conf-dir",
            conf_dir_.string(), "--cni-bin-dir", "/usr/lib/cni"};
  }

  // Waits until running and returns the pod's IP (recording its id for
  // the leftovers check).
  std::string RunningPodIp() {
    auto pod = WaitUntilRunning();
    attached_ids_.push_back(pod["metadata"].value("uid", ""));
    std::string ip = pod["status"].value("podIP", "");
    pod_ips_.push_back(ip);
    return ip;
  }

  // IPAM reservations: host-local keeps one file per address.
  std::vector<std::string> Reservations() {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(ipam_dir_ / kNetworkName, ec)) {
      std::string name = e.path().filename().string();
      if (name != "lock" && name.rfind("last_reserved_ip", 0) != 0) out.push_back(name);
    }
    return out;
  }

  void CheckNetworkLeftovers() {
    for (const auto& bridge : {kBridge, kSmallBridge}) {
      auto veths = Sh("ip -o link show master " + bridge + " 2>/dev/null");
      EXPECT_EQ(veths.out, "") << "veth left on " << bridge;
    }
    EXPECT_FALSE(fs::exists(state_dir_ / pod_name_ / "ns" / "net")) << "netns pin left";
    EXPECT_THAT(Reservations(), ::testing::IsEmpty()) << "IPAM reservation left";
    auto rules = Sh("iptables-save; ip6tables-save 2>/dev/null");
    for (const auto& id : attached_ids_) {
      if (!id.empty()) {
        EXPECT_THAT(rules.out, Not(HasSubstr(id))) << "iptables rule of pod " << id;
      }
    }
    for (const auto& ip : pod_ips_) {
      if (!ip.empty()) {
        EXPECT_THAT(rules.out, Not(HasSubstr(ip + "/"))) << "iptables rule for " << ip;
      }
    }
    EXPECT_FALSE(fs::exists(state_dir_ / pod_name_ / "network.json"));
  }

  // A second bundle sharing this test's image, state and log dirs.
  fs::path SecondBundle(const std::string& yaml) {
    fs::path b = dir_ / "bundle2";
    fs::create_directories(b);
    if (!fs::exists(b / "images")) fs::create_directory_symlink(bundle_ / "images", b / "images");
    std::ofstream(b / "pod.yaml") << Expand(yaml);
    return b;
  }
  std::vector<std::string> RunArgv(const fs::path& bundle) {
    std::vector<std::string> argv = {RequiredEnv("PODVISOR"),
                                     "run",
                                     "--state-dir",
                                     state_dir_.string(),
                                     "--log-dir",
                                     log_dir_.string(),
                                     "--runtime",
                                     FindInPath("runc"),
                                     "--cgroup-parent",
                                     Tier().cgroup_parent};
    for (const auto& a : NetArgs()) argv.push_back(a);
    argv.push_back(bundle.string());
    return argv;
  }

  // httpd dies of its SIGTERM, which makes a Never pod Failed: both ends
  // are a pod that stopped.
  void StopPod() {
    auto stop = Client({"stop"});
    EXPECT_EQ(stop.exit_code, 0) << stop.err;
    EXPECT_THAT(WaitRun(), ::testing::AnyOf(0, 4)) << RunStderr();
  }

  fs::path conf_dir_, ipam_dir_;
  std::vector<std::string> attached_ids_, pod_ips_;
  static pid_t listener_pid_;
};

pid_t RuncNetwork::listener_pid_ = -1;

std::string PodYaml(const std::string& name, const std::string& spec_extra,
                    const std::string& containers, const std::string& restart = "Never") {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         "}\nspec:\n  restartPolicy: " + restart + "\n  terminationGracePeriodSeconds: 2\n" +
         spec_extra +
         "  volumes: [{name: shared, hostPath: {path: \"{{HOSTDIR}}\", type: "
         "DirectoryOrCreate}}]\n" +
         containers;
}

std::string Web(const std::string& ports = "") {
  return "  - {name: web, image: img, command: " +
         ShCmd(
             "mkdir -p /tmp/www && echo hello-from-$(hostname) > /tmp/www/index.html && "
             "exec httpd -f -p 8080 -h /tmp/www") +
         ", volumeMounts: [{name: shared, mountPath: /shared}]" + ports + "}\n";
}

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
  WritePod(PodYaml("net-hp", "",
                   "  containers:\n" + Web(", ports: [{containerPort: 8080, hostPort: 18080}]")));
  StartRun(NetArgs());
  RunningPodIp();
  EXPECT_THAT(HttpGetEventually("127.0.0.1", 18080, "hello"), HasSubstr("hello-from-net-hp"));
  std::string host = HostAddress();
  if (!host.empty()) {
    EXPECT_THAT(HttpGetEventually(host, 18080, "hello"), HasSubstr("hello-from-net-hp"));
  }

  fs::path second = SecondBundle(PodYaml(
      "net-hp2", "", "  containers:\n" + Web(", ports: [{containerPort: 80, hostPort: 18080}]")));
  auto r = testing::RunCommand(RunArgv(second));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("hostPort 18080/TCP is held by pod net-hp"));
  EXPECT_FALSE(fs::exists(state_dir_ / "net-hp2")) << "a pod that cannot run leaves no state";
  StopPod();
  EXPECT_EQ(HttpGet("127.0.0.1", 18080), "");  // the mapping went with the pod
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
  WritePod(PodYaml("net-kill", "",
                   "  containers:\n" + Web(", ports: [{containerPort: 8080, hostPort: 18081}]"),
                   "Always"));
  StartRun(NetArgs());
  std::string ip = RunningPodIp();
  ASSERT_FALSE(ip.empty());
  ::kill(run_pid(), SIGKILL);
  WaitRun();
  EXPECT_EQ(Reservations().size(), 1u) << "the killed supervisor's address is still reserved";
  EXPECT_TRUE(fs::exists(state_dir_ / "net-kill" / "network.json"));
  StartRun(NetArgs());
  std::string again = RunningPodIp();
  EXPECT_THAT(RunStderr(), HasSubstr("network detached"));
  EXPECT_EQ(Reservations().size(), 1u) << "the old reservation was released";
  EXPECT_THAT(HttpGetEventually("127.0.0.1", 18081, "hello"), HasSubstr("hello-from-net-kill"));
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
