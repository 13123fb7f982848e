// Test tier 3 (TESTING.md), real runc and CNI plugins: a pod on a host over
// time (docs/SEMANTICS.md S14.30-S14.32): `stop && run` and `stop && rm`
// with a real network every time, and two state directories whose pods of
// one name share no cgroup and no hostPort, nor take a host service's port.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "runc_network_fixture.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class RuncHostIdentity : public RuncNetwork {
 protected:
  // RunArgv with another state directory.
  std::vector<std::string> RunArgvIn(const fs::path& bundle, const fs::path& state_dir) {
    std::vector<std::string> argv = RunArgv(bundle);
    for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
      if (argv[i] == "--state-dir") argv[i + 1] = state_dir.string();
    }
    return argv;
  }

  // The line of `file` (a copy of /proc/self/cgroup) for the memory
  // controller: v1 "N:memory:/path", else v2's "0::/path".
  std::string MemoryCgroup(const std::string& file) {
    std::istringstream in(ReadScratch(file));
    std::string unified;
    for (std::string line; std::getline(in, line);) {
      if (line.find(":memory:") != std::string::npos) return line.substr(line.rfind(':') + 1);
      if (line.rfind("0::", 0) == 0) unified = line.substr(3);
    }
    return unified;
  }
};

TEST_F(RuncHostIdentity, StopAndRunWithANetworkWorkEveryTimeThenStopAndRm) {
  const int port = FreeHostPort();
  WritePod(PodYaml("id-again", "",
                   "  containers:\n" + Web(", ports: [{containerPort: 8080, hostPort: " +
                                           std::to_string(port) + "}]"),
                   "Always"));
  StartRun(NetArgs());
  RunningPodIp();
  for (int i = 0; i < 3; ++i) {
    auto stop = Client({"stop"});
    ASSERT_EQ(stop.exit_code, 0) << "round " << i << ": " << stop.err;
    EXPECT_FALSE(fs::exists(state_dir_ / "id-again" / "network.json")) << "round " << i;
    EXPECT_FALSE(fs::exists(state_dir_ / "id-again" / "ns" / "net")) << "round " << i;
    // `stop && run`: at once, not after reaping the one that stopped.
    const pid_t previous = run_pid();
    StartRun(NetArgs());
    RunningPodIp();
    int status = 0;
    ASSERT_EQ(::waitpid(previous, &status, 0), previous);
  }
  ASSERT_EQ(Client({"stop"}).exit_code, 0);
  auto rm = Client({"rm", "id-again"}, /*with_log_dir=*/true);
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_FALSE(fs::exists(state_dir_ / "id-again"));
  WaitRun();
}

TEST_F(RuncHostIdentity, TwoStateDirectoriesShareNoCgroupNorHostPort) {
  const std::string hp = std::to_string(FreeHostPort());
  const std::string app_a =
      "  - {name: app, image: img, command: " +
      ShCmd(
          "cat /proc/self/cgroup > /shared/cg-a && mkdir -p /tmp/www && "
          "exec httpd -f -p 8080 -h /tmp/www") +
      ", volumeMounts: [{name: shared, mountPath: /shared}], ports: [{containerPort: 8080, "
      "hostPort: " +
      hp + "}]}\n";
  WritePod(PodYaml("same", "", "  containers:\n" + app_a, "Always"));
  StartRun(NetArgs());
  RunningPodIp();
  const fs::path state2 = dir_ / "state2";

  // The same pod name under another state directory runs, in a cgroup of
  // its own.
  fs::path second =
      SecondBundle(PodYaml("same", "",
                           "  containers:\n  - {name: app, image: img, command: " +
                               ShCmd("cat /proc/self/cgroup > /shared/cg-b") +
                               ", volumeMounts: [{name: shared, mountPath: /shared}]}\n"));
  auto b = testing::RunCommand(RunArgvIn(second, state2));
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const std::string cg_a = MemoryCgroup("cg-a"), cg_b = MemoryCgroup("cg-b");
  EXPECT_THAT(cg_a, HasSubstr("/same/"));
  EXPECT_THAT(cg_b, ::testing::ContainsRegex("/same\\.[0-9a-f]{8}/"));
  EXPECT_NE(fs::path(cg_a).parent_path(), fs::path(cg_b).parent_path());

  // A hostPort the first state directory's pod holds.
  fs::path third = SecondBundle(PodYaml(
      "same", "",
      "  containers:\n  - {name: app, image: img, command: [/bin/true], ports: [{containerPort: "
      "80, hostPort: " +
          hp + "}]}\n"));
  auto read = [](const fs::path& f) {
    std::ifstream in(f);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string b_record = read(state2 / "same" / "status.json");
  auto clash = testing::RunCommand(RunArgvIn(third, state2));
  EXPECT_EQ(clash.exit_code, 3) << clash.err;
  EXPECT_THAT(clash.err,
              HasSubstr("hostPort " + hp + "/TCP is held by pod same of state directory " +
                        state_dir_.string() + " (running)"));
  // The refused run left the previous run's record as the pod's (S14.33).
  EXPECT_EQ(read(state2 / "same" / "status.json"), b_record);
  EXPECT_FALSE(fs::exists(state2 / "same" / ".runs"));

  // A port a host process listens on.
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  socklen_t len = sizeof addr;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const int busy = ntohs(addr.sin_port);
  fs::path fourth = SecondBundle(PodYaml(
      "other", "",
      "  containers:\n  - {name: app, image: img, command: [/bin/true], ports: [{containerPort: "
      "80, hostPort: " +
          std::to_string(busy) + "}]}\n"));
  auto taken = testing::RunCommand(RunArgvIn(fourth, state2));
  ::close(listener);
  EXPECT_EQ(taken.exit_code, 3) << taken.err;
  EXPECT_THAT(taken.err,
              HasSubstr("hostPort " + std::to_string(busy) + "/TCP: a host process listens on it"));
  EXPECT_FALSE(fs::exists(state2 / "other"));
  StopPod();
  // Nothing of either state directory is claimed any more.
  std::error_code ec;
  for (const char* kind : {"cgroups", "host-ports"}) {
    for (const auto& e : fs::directory_iterator(fs::path("/run/lock/podvisor") / kind, ec)) {
      std::ifstream in(e.path());
      std::string owner((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      EXPECT_THAT(owner, Not(HasSubstr(dir_.string()))) << e.path();
    }
  }
}

}  // namespace
}  // namespace podvisor::e2e
