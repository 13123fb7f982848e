// The fixture of test tier 3's networking tests (runc_network_test.cc,
// runc_host_identity_test.cc): Debian's real CNI plugins with runc, as
// root, on a bridge, subnet and listener namespace of the test's own, all
// removed at the end; every test checks that its pod left no veth,
// iptables rule, IPAM reservation or portmap entry behind.
#pragma once

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
#include "tcp_probe.h"

namespace podvisor::e2e {
// Each test file is its own binary part: the helpers are per file.
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

inline testing::CommandResult Sh(const std::string& script) {
  return testing::RunCommand({"/bin/sh", "-c", script});
}

inline std::string HostAddress() {
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
  inline static pid_t listener_pid_ = -1;
};

inline std::string PodYaml(const std::string& name, const std::string& spec_extra,
                           const std::string& containers, const std::string& restart = "Never") {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         "}\nspec:\n  restartPolicy: " + restart + "\n  terminationGracePeriodSeconds: 2\n" +
         spec_extra +
         "  volumes: [{name: shared, hostPath: {path: \"{{HOSTDIR}}\", type: "
         "DirectoryOrCreate}}]\n" +
         containers;
}

inline std::string Web(const std::string& ports = "") {
  return "  - {name: web, image: img, command: " +
         ShCmd(
             "mkdir -p /tmp/www && echo hello-from-$(hostname) > /tmp/www/index.html && "
             "exec httpd -f -p 8080 -h /tmp/www") +
         ", volumeMounts: [{name: shared, mountPath: /shared}]" + ports + "}\n";
}

}  // namespace
}  // namespace podvisor::e2e
