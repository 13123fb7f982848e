// The pod sandbox (issue "Supervisor core" item 3): own network namespace
// with loopback up, own UTS with the pod's hostname, own IPC, and with
// shareProcessNamespace a pid namespace whose PID 1 reaps orphans.
#include "supervisor/sandbox/sandbox.h"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

namespace podvisor::supervisor::sandbox {
namespace {

std::string PodvisorExe() {
  const char* exe = std::getenv("PODVISOR");
  return exe ? exe : "";
}

// Runs `check` in a forked child that first joins `ns`; returns its status.
template <typename F>
int InNamespace(const std::filesystem::path& ns, int nstype, F check) {
  pid_t child = fork();
  if (child == 0) {
    int fd = open(ns.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, nstype) != 0) _exit(100);
    _exit(check());
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_SYS_ADMIN) to create namespaces";
    if (PodvisorExe().empty()) GTEST_SKIP() << "PODVISOR (the binary's path) is not set";
  }
  SandboxOptions Options() {
    SandboxOptions o;
    o.hostname = "web-0";
    o.podvisor_exe = PodvisorExe();
    return o;
  }
};

TEST_F(SandboxTest, OwnNetworkWithLoopbackUpAndHostname) {
  auto sb = Sandbox::Create(Options());
  ASSERT_TRUE(sb.ok()) << sb.error().message();
  ASSERT_TRUE(sb->network_ns() && sb->uts_ns() && sb->ipc_ns());
  EXPECT_FALSE(sb->pid_ns());
  char self_net[64] = {}, pod_net[64] = {};
  ASSERT_GT(readlink("/proc/self/ns/net", self_net, sizeof self_net - 1), 0);
  ASSERT_GT(readlink(sb->network_ns()->c_str(), pod_net, sizeof pod_net - 1), 0);
  EXPECT_STRNE(self_net, pod_net);

  EXPECT_EQ(InNamespace(*sb->uts_ns(), CLONE_NEWUTS,
                        [] {
                          char name[64] = {};
                          gethostname(name, sizeof name);
                          return std::strcmp(name, "web-0") == 0 ? 0 : 1;
                        }),
            0);
  EXPECT_EQ(InNamespace(*sb->network_ns(), CLONE_NEWNET,
                        [] {
                          int s = socket(AF_INET, SOCK_DGRAM, 0);
                          ifreq ifr{};
                          std::strcpy(ifr.ifr_name, "lo");
                          if (ioctl(s, SIOCGIFFLAGS, &ifr) != 0) return 2;
                          return (ifr.ifr_flags & IFF_UP) ? 0 : 1;
                        }),
            0);
}

TEST_F(SandboxTest, HostNetworkAndIpcAreNotReplaced) {
  SandboxOptions o = Options();
  o.new_network = false;
  o.new_ipc = false;
  auto sb = Sandbox::Create(o);
  ASSERT_TRUE(sb.ok()) << sb.error().message();
  EXPECT_FALSE(sb->network_ns());
  EXPECT_FALSE(sb->ipc_ns());
  EXPECT_TRUE(sb->uts_ns());
}

TEST_F(SandboxTest, SharedPidNamespaceHasAReaperAsPid1) {
  SandboxOptions o = Options();
  o.new_pid = true;
  auto sb = Sandbox::Create(o);
  ASSERT_TRUE(sb.ok()) << sb.error().message();
  ASSERT_TRUE(sb->pid_ns());
  // A process entering the namespace is not PID 1 there: the reaper is.
  int status = InNamespace(*sb->pid_ns(), CLONE_NEWPID, [] {
    pid_t grandchild = fork();  // setns(pid) applies to children
    if (grandchild == 0) _exit(getpid() > 1 ? 0 : 1);
    int st = 0;
    waitpid(grandchild, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 3;
  });
  EXPECT_EQ(status, 0);
}

TEST_F(SandboxTest, DestroyEndsTheHolder) {
  auto sb = Sandbox::Create(Options());
  ASSERT_TRUE(sb.ok()) << sb.error().message();
  pid_t holder = sb->holder_pid();
  EXPECT_EQ(kill(holder, 0), 0);
  sb->Destroy();
  EXPECT_NE(kill(holder, 0), 0);
  EXPECT_FALSE(sb->network_ns());
}

TEST(Sandbox, MissingBinaryIsAClearError) {
  SandboxOptions o;
  o.hostname = "x";
  o.new_network = o.new_ipc = o.new_uts = false;  // so it fails for the binary, not privileges
  o.podvisor_exe = "/nonexistent/podvisor";
  auto sb = Sandbox::Create(o);
  ASSERT_FALSE(sb.ok());
  EXPECT_NE(sb.error().message().find("/nonexistent/podvisor"), std::string::npos)
      << sb.error().message();
}

}  // namespace
}  // namespace podvisor::supervisor::sandbox
