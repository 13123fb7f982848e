// The pod sandbox (issue "Supervisor core" item 3): own network namespace
// with loopback up, own UTS with the pod's hostname, own IPC, and with
// shareProcessNamespace a pid namespace whose PID 1 reaps orphans.
#include "supervisor/sandbox/sandbox.h"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "common/fd.h"

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

// The inode of a namespace file, or 0.
ino_t InodeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

// S20.5: the user namespace first, with the block's mappings; the pod's
// network, IPC, UTS and pid namespaces owned by it (NS_GET_USERNS), the
// hostname and loopback set inside it; the holder holds the inherited
// lock; the keeper socket is host root's; ReadHolderIds reads the block
// back (S20.6).
TEST_F(SandboxTest, S20_5_TheUserNamespaceComesFirstAndOwnsTheOthers) {
  SandboxOptions o = Options();
  o.new_pid = true;
  o.user_namespace = UserNamespaceIds{196608, 262144, 65536};
  const std::string dir = "/tmp/sandbox-userns-test-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  o.keeper_socket = dir + "/keeper.sock";
  Fd lock(::open((dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  ASSERT_TRUE(lock);
  ASSERT_EQ(::flock(lock.get(), LOCK_EX | LOCK_NB), 0);
  o.inherited_lock_fd = lock.get();
  auto sb = Sandbox::Create(o);
  ASSERT_TRUE(sb.ok()) << sb.error().message();
  ASSERT_TRUE(sb->user_ns());
  const std::string proc = "/proc/" + std::to_string(sb->holder_pid());
  auto read = [](const std::string& file) {
    std::ifstream in(file);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  EXPECT_EQ(read(proc + "/uid_map"), "         0     196608      65536\n");
  EXPECT_EQ(read(proc + "/gid_map"), "         0     262144      65536\n");
  EXPECT_NE(InodeOf(*sb->user_ns()), InodeOf("/proc/self/ns/user"));
  for (const auto& ns : {*sb->network_ns(), *sb->ipc_ns(), *sb->uts_ns(), *sb->pid_ns()}) {
    Fd fd(::open(ns.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(fd) << ns;
    Fd owner(::ioctl(fd.get(), NS_GET_USERNS));
    ASSERT_TRUE(owner) << ns << ": " << std::strerror(errno);
    struct stat st {};
    ASSERT_EQ(::fstat(owner.get(), &st), 0);
    EXPECT_EQ(st.st_ino, InodeOf(*sb->user_ns())) << ns << " is not owned by the pod's userns";
  }
  EXPECT_EQ(InNamespace(*sb->uts_ns(), CLONE_NEWUTS,
                        [] {
                          char name[64] = {};
                          gethostname(name, sizeof name);
                          return std::strcmp(name, "web-0") == 0 ? 0 : 1;
                        }),
            0);
  // The keeper socket was bound as host root, 0600.
  struct stat sock {};
  ASSERT_EQ(::stat(o.keeper_socket.c_str(), &sock), 0);
  EXPECT_EQ(sock.st_uid, 0u);
  EXPECT_EQ(sock.st_mode & 0777, 0600u);
  // The holder holds the lock: our own descriptor gone, it stays taken.
  lock.Reset();
  Fd other(::open((dir + "/lock").c_str(), O_RDWR | O_CLOEXEC));
  EXPECT_NE(::flock(other.get(), LOCK_EX | LOCK_NB), 0) << "the holder did not keep the lock";
  auto ids = ReadHolderIds(sb->holder_pid());
  ASSERT_TRUE(ids) << ids.error().message();
  ASSERT_TRUE(*ids);
  EXPECT_EQ(**ids, (UserNamespaceIds{196608, 262144, 65536}));
  sb->Destroy();
  EXPECT_EQ(::flock(other.get(), LOCK_EX | LOCK_NB), 0) << "the lock goes with the holder";
  std::filesystem::remove_all(dir);
}

TEST_F(SandboxTest, S20_6_AHolderWithoutAUserNamespaceHasNoBlock) {
  auto sb = Sandbox::Create(Options());
  ASSERT_TRUE(sb.ok()) << sb.error().message();
  EXPECT_FALSE(sb->user_ns());
  auto ids = ReadHolderIds(sb->holder_pid());
  ASSERT_TRUE(ids) << ids.error().message();
  EXPECT_FALSE(*ids);
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
