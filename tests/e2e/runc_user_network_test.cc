// Test tier 3 (TESTING.md): user-mode pod networks (S22), `run --network
// slirp4netns` and `--network pasta`, with the real tools and runc, as
// root. Traffic stays on this machine: the "host side" server is the
// test's own on 127.0.0.1, which a pod reaches only with
// --network-host-loopback, through the gateway address the tool maps to
// the host's loopback; hostPorts are fetched from 127.0.0.1. Every test
// checks that the tool is gone, its port free and its files removed at
// the end.
#include <sys/stat.h>

#include <atomic>
#include <thread>

#include "runc_network_fixture.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A tiny HTTP server on 127.0.0.1 answering every request with `body`.
class LoopbackServer {
 public:
  explicit LoopbackServer(std::string body) : body_(std::move(body)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        ::listen(fd_, 16) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
    thread_ = std::thread([this] { Serve(); });
  }
  ~LoopbackServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  int served() const { return served_; }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) != 1 || stop_) continue;
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      char buf[2048];
      pollfd r{c, POLLIN, 0};
      if (::poll(&r, 1, 2000) == 1) (void)::recv(c, buf, sizeof buf, 0);
      std::string reply =
          "HTTP/1.0 200 OK\r\nContent-Length: " + std::to_string(body_.size()) + "\r\n\r\n" + body_;
      (void)::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      ::close(c);
      ++served_;
    }
  }
  std::string body_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> served_{0};
  std::thread thread_;
};

// Whether a TCP socket can bind the port on the wildcard address now.
bool PortFree(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return free;
}

// Whether a UDP socket can bind the port on the wildcard address now.
bool UdpPortFree(int port) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return free;
}

// A UDP port nothing on the host holds now.
int FreeUdpPort() {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// Whether `pid` still names a live process (not a zombie).
bool Runs(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

class RuncUserNetwork : public RuncE2eTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    if (FindInPath("runc").empty()) GTEST_SKIP() << "runc not installed";
    if (FindInPath(Tool()).empty()) GTEST_SKIP() << Tool() << " not installed";
    RuncE2eTest::SetUp();
  }
  void TearDown() override {
    if (!dir_.empty()) CheckToolLeftovers();
    E2eTest::TearDown();
  }

  std::string Tool() const { return GetParam(); }
  std::vector<std::string> NetArgs(bool host_loopback = false) const {
    std::vector<std::string> args = {"--network", Tool()};
    if (host_loopback) args.emplace_back("--network-host-loopback");
    return args;
  }
  fs::path PodDir() const { return state_dir_ / pod_name_; }

  // The tool's pid from the pod's record, 0 without one.
  pid_t ToolPid() const {
    std::ifstream in(PodDir() / "usernet.json");
    auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    return j.is_object() ? j.value("pid", 0) : 0;
  }

  // The address slirp4netns gives, the host's for pasta.
  std::string ExpectedPodIp() const {
    return Tool() == "slirp4netns" ? std::string("10.0.2.100") : HostAddress();
  }

  // An init container that reaches the host's loopback server through
  // the gateway (slirp4netns: 10.0.2.2; pasta: the default route's
  // gateway, mapped to the host's loopback), then writes what the pod
  // sees of its network.
  std::string Probe(int server_port) const {
    std::string gateway = Tool() == "slirp4netns"
                              ? std::string("10.0.2.2")
                              : std::string("$(ip route | awk '/^default/ {print $3; exit}')");
    return "  - {name: probe, image: img, command: " +
           ShCmd("if timeout 5 wget -q -O /shared/egress http://" + gateway + ":" +
                 std::to_string(server_port) +
                 "/; then :; else echo unreachable > /shared/egress; fi; "
                 "ip -o addr show > /shared/addr; cat /etc/resolv.conf > /shared/resolv; "
                 "cat /etc/hosts > /shared/hosts; echo \"$POD_IP $POD_IPS\" > /shared/podip") +
           ", env: [{name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}},"
           " {name: POD_IPS, valueFrom: {fieldRef: {fieldPath: status.podIPs}}}]"
           ", volumeMounts: [{name: shared, mountPath: /shared}]}\n";
  }

  void StopPod() {
    auto stop = Client({"stop"});
    EXPECT_EQ(stop.exit_code, 0) << stop.err;
    EXPECT_THAT(WaitRun(), ::testing::AnyOf(0, 4)) << RunStderr();
  }

  void CheckToolLeftovers() {
    for (pid_t pid : tool_pids_) EXPECT_FALSE(Runs(pid)) << Tool() << " " << pid << " still runs";
    for (int port : host_ports_) EXPECT_TRUE(PortFree(port)) << "hostPort " << port << " taken";
    for (const char* f : {"usernet.json", "slirp4netns.sock", "pasta.pid", "usernet.log"}) {
      EXPECT_FALSE(fs::exists(PodDir() / f)) << f << " left";
    }
    EXPECT_FALSE(fs::exists(PodDir() / "ns" / "net")) << "netns pin left";
  }

  std::vector<pid_t> tool_pids_;
  std::vector<int> host_ports_;
};

TEST_P(RuncUserNetwork, S22_PodAddressEgressToTheHostHostPortAndNothingLeft) {
  LoopbackServer server("hello-from-the-host");
  ASSERT_GT(server.port(), 0);
  const int port = FreeHostPort();
  host_ports_.push_back(port);
  // A UDP hostPort too: the busybox image has no UDP server, so its
  // forward is checked on the host side (the tool holds the port).
  const int udp_port = FreeUdpPort();
  WritePod(PodYaml("un-web", "",
                   "  initContainers:\n" + Probe(server.port()) + "  containers:\n" +
                       Web(", ports: [{containerPort: 8080, hostPort: " + std::to_string(port) +
                           "}, {containerPort: 5353, protocol: UDP, hostPort: " +
                           std::to_string(udp_port) + "}]")));
  StartRun(NetArgs(/*host_loopback=*/true));
  auto pod = WaitUntilRunning();
  const std::string ip = ExpectedPodIp();
  ASSERT_FALSE(ip.empty());
  EXPECT_EQ(pod["status"].value("podIP", ""), ip) << RunStderr();
  const pid_t tool = ToolPid();
  ASSERT_GT(tool, 0);
  tool_pids_.push_back(tool);
  EXPECT_TRUE(Runs(tool));

  EXPECT_EQ(ReadScratch("egress"), "hello-from-the-host");
  // pasta names the pod's interface as the host's default-route one.
  std::string ifname = "tap0";
  if (Tool() == "pasta") {
    ifname = Sh("ip -o route get 1.0.0.0 | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p'").out;
    while (!ifname.empty() && ifname.back() == '\n') ifname.pop_back();
  }
  {
    // `ip -o addr`: one line per address, "2: tap0    inet 10.0.2.100/24 ...".
    std::istringstream lines(ReadScratch("addr"));
    std::string line;
    bool found = false;
    while (std::getline(lines, line)) {
      found = found || (line.find(" " + ifname + " ") != std::string::npos &&
                        line.find("inet " + ip + "/") != std::string::npos);
    }
    EXPECT_TRUE(found) << ReadScratch("addr");
  }
  EXPECT_THAT(ReadScratch("resolv"), HasSubstr(Tool() == "slirp4netns" ? "nameserver 10.0.2.3"
                                                                       : "nameserver 169.254.1.1"));
  EXPECT_THAT(ReadScratch("hosts"), HasSubstr(ip + "\tun-web"));
  EXPECT_THAT(ReadScratch("podip"), ::testing::StartsWith(ip + " " + ip));
  EXPECT_THAT(HttpGetEventually("127.0.0.1", port, "hello"), HasSubstr("hello-from-un-web"));
  EXPECT_FALSE(UdpPortFree(udp_port)) << "UDP hostPort " << udp_port << " is not forwarded";
  StopPod();
  EXPECT_FALSE(Runs(tool));
  EXPECT_TRUE(PortFree(port));
  EXPECT_TRUE(UdpPortFree(udp_port));
}

TEST_P(RuncUserNetwork, S22_5_TheHostsLoopbackIsOutOfReachByDefault) {
  if (Tool() == "pasta") {
    // With --no-map-gw the gateway address is the real gateway's, so a
    // probe's connection would leave this machine: the running tool's
    // command line is checked instead.
    WritePod(PodYaml("un-lo", "", "  containers:\n" + Web()));
    StartRun(NetArgs());
    WaitUntilRunning();
    const pid_t tool = ToolPid();
    ASSERT_GT(tool, 0);
    tool_pids_.push_back(tool);
    std::ifstream in("/proc/" + std::to_string(tool) + "/cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_THAT(cmdline, HasSubstr(std::string("--no-map-gw\0", 12)));
    StopPod();
    return;
  }
  LoopbackServer server("hello-from-the-host");
  WritePod(PodYaml("un-lo", "", "  containers:\n" + Probe(server.port())));
  EXPECT_EQ(Run(NetArgs()), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("egress"), "unreachable");
  EXPECT_EQ(server.served(), 0);
}

TEST_P(RuncUserNetwork, S22_6_AHostPortAHostProcessHoldsIsRefused) {
  LoopbackServer server("a host service");
  WritePod(PodYaml("un-taken", "",
                   "  containers:\n" + Web(", ports: [{containerPort: 8080, hostPort: " +
                                           std::to_string(server.port()) + "}]")));
  EXPECT_EQ(Run(NetArgs()), 3);
  EXPECT_THAT(RunStderr(), HasSubstr("hostPort " + std::to_string(server.port()) +
                                     "/TCP: a host process listens on it"));
  EXPECT_FALSE(fs::exists(PodDir() / "usernet.json"));
}

TEST_P(RuncUserNetwork, S22_9_ASigkilledSupervisorsPodIsAdoptedWithItsNetwork) {
  const int port = FreeHostPort();
  host_ports_.push_back(port);
  WritePod(PodYaml("un-adopt", "",
                   "  containers:\n" + Web(", ports: [{containerPort: 8080, hostPort: " +
                                           std::to_string(port) + "}]"),
                   "Always"));
  StartRun(NetArgs());
  auto pod = WaitUntilRunning();
  const std::string ip = pod["status"].value("podIP", "");
  EXPECT_EQ(ip, ExpectedPodIp());
  const pid_t tool = ToolPid();
  ASSERT_GT(tool, 0);
  tool_pids_.push_back(tool);
  ASSERT_THAT(HttpGetEventually("127.0.0.1", port, "hello"), HasSubstr("hello-from-un-adopt"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the state file is written
  ASSERT_EQ(::kill(run_pid(), SIGKILL), 0);
  EXPECT_EQ(WaitRun(), -1);
  // The tool outlives its supervisor while the pod lives.
  EXPECT_TRUE(Runs(tool));
  EXPECT_THAT(HttpGet("127.0.0.1", port), HasSubstr("hello-from-un-adopt"));

  StartRun(NetArgs());
  pod = WaitUntilRunning();
  int adopted = 0;
  for (const auto& e : PodEvents()) adopted += e.value("reason", "") == "Adopted";
  EXPECT_EQ(adopted, 1) << RunStderr();
  EXPECT_EQ(pod["status"].value("podIP", ""), ip);
  EXPECT_EQ(ToolPid(), tool) << "the tool was started again";
  EXPECT_THAT(HttpGet("127.0.0.1", port), HasSubstr("hello-from-un-adopt"));
  StopPod();
}

TEST_P(RuncUserNetwork, S22_10_AToolLeftWithoutItsPodIsEndedByRecovery) {
  const int port = FreeHostPort();
  host_ports_.push_back(port);
  WritePod(PodYaml("un-recover", "",
                   "  containers:\n" + Web(", ports: [{containerPort: 8080, hostPort: " +
                                           std::to_string(port) + "}]"),
                   "Always"));
  StartRun(NetArgs());
  WaitUntilRunning();
  const pid_t tool = ToolPid();
  ASSERT_GT(tool, 0);
  tool_pids_.push_back(tool);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(::kill(run_pid(), SIGKILL), 0);
  EXPECT_EQ(WaitRun(), -1);
  // Its holder killed too, the pod cannot be adopted (S15.6): recovery.
  ASSERT_NE(EndKeptHolder(PodDir()), 0) << "no sandbox holder was kept";
  StartRun(NetArgs());
  WaitUntilRunning();
  EXPECT_FALSE(Runs(tool)) << "the old tool still runs";
  const pid_t again = ToolPid();
  ASSERT_GT(again, 0);
  EXPECT_NE(again, tool);
  tool_pids_.push_back(again);
  EXPECT_THAT(HttpGetEventually("127.0.0.1", port, "hello"), HasSubstr("hello-from-un-recover"));
  StopPod();
}

INSTANTIATE_TEST_SUITE_P(Tools, RuncUserNetwork, ::testing::Values("slirp4netns", "pasta"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace podvisor::e2e
