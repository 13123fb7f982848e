// The holder as the pod's keeper of descriptors (issue 30): what a
// supervisor keeps there survives it, and a later one fetches it back.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "process/proc_stat.h"
#include "supervisor/sandbox/keeper_wire.h"
#include "supervisor/sandbox/sandbox.h"

namespace podvisor::supervisor::sandbox {
namespace {

std::string PodvisorExe() {
  const char* exe = std::getenv("PODVISOR");
  return exe ? exe : "";
}

// Whether `pid` has exited (reaped or a zombie) within `ms`.
bool ExitsWithin(pid_t pid, int ms) {
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return errno == ESRCH;
  pollfd p{pidfd, POLLIN, 0};
  int r = ::poll(&p, 1, ms);
  ::close(pidfd);
  return r > 0;
}

// The pid a pidfd of ours refers to, from its fdinfo.
pid_t PidOfPidfd(int fd) {
  std::ifstream in("/proc/self/fdinfo/" + std::to_string(fd));
  std::string key;
  while (in >> key) {
    if (key == "Pid:") {
      pid_t pid = 0;
      in >> pid;
      return pid;
    }
  }
  return -1;
}

std::string ReadSome(int fd) {
  char buf[256];
  ssize_t n = ::read(fd, buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// The descriptors a process holds, by number.
std::vector<int> OpenFds(pid_t pid) {
  std::vector<int> fds;
  for (const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    fds.push_back(std::stoi(e.path().filename().string()));
  }
  std::sort(fds.begin(), fds.end());
  return fds;
}

class KeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_SYS_ADMIN) to create namespaces";
    if (PodvisorExe().empty()) GTEST_SKIP() << "PODVISOR (the binary's path) is not set";
    ::signal(SIGPIPE, SIG_IGN);  // the EPIPE checks write into pipes nobody reads
    char dir[] = "/tmp/podvisor-keeper.XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  SandboxOptions Options() {
    SandboxOptions o;
    o.hostname = "web-0";
    o.podvisor_exe = PodvisorExe();
    o.keeper_socket = dir_ / "sandbox.sock";
    return o;
  }
  // A raw connection to the keeper, for what the API would not send.
  Fd Connect() {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, Options().keeper_socket.c_str(), sizeof addr.sun_path - 1);
    Fd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    timeval tv{2, 0};
    ::setsockopt(sock.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return Fd();
    return sock;
  }
  std::filesystem::path dir_;
};

TEST_F(KeeperTest, KeptPipeAndPidfdComeBackToANewConnection) {
  auto sb = Sandbox::Create(Options());
  ASSERT_TRUE(sb.ok()) << sb.error().message();
  EXPECT_TRUE(sb->holder_is_child());
  struct stat st {};
  ASSERT_EQ(::stat(Options().keeper_socket.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
  // A pod of many containers hands over three descriptors each.
  std::ifstream limits("/proc/" + std::to_string(sb->holder_pid()) + "/limits");
  std::string line;
  while (std::getline(limits, line) && line.rfind("Max open files", 0) != 0) {
  }
  std::istringstream words(line.substr(std::strlen("Max open files")));
  std::string soft, hard;
  words >> soft >> hard;
  EXPECT_EQ(soft, hard) << line;

  pid_t child = ::fork();  // before the pipe, which it must not hold
  if (child == 0) {
    ::pause();
    _exit(0);
  }
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  Fd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, child, 0)));
  ASSERT_TRUE(pidfd.valid());
  int to_keep[] = {read_end.get(), pidfd.get()};
  auto kept = sb->Keep("app", to_keep);
  ASSERT_TRUE(kept.ok()) << kept.error().message();
  read_end.Reset();
  pidfd.Reset();
  ASSERT_EQ(::write(write_end.get(), "hello\n", 6), 6);

  // A supervisor that did not start it (this one re-attaching is still
  // its parent, and knows it).
  auto again =
      Sandbox::Reattach(Options(), sb->holder_pid(), sb->holder_start_time(), sb->pid_ns_init());
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_TRUE(again->holder_is_child());
  EXPECT_EQ(again->network_ns(), sb->network_ns());
  auto fetched = again->FetchKept();
  ASSERT_TRUE(fetched.ok()) << fetched.error().message();
  ASSERT_EQ(fetched->size(), 1U);
  ASSERT_EQ(fetched->at("app").size(), 2U);
  EXPECT_EQ(ReadSome(fetched->at("app")[0].get()), "hello\n");
  EXPECT_EQ(PidOfPidfd(fetched->at("app")[1].get()), child);

  // The older connection was dropped for the newer; it connects again.
  auto from_first = sb->FetchKept();
  ASSERT_TRUE(from_first.ok()) << from_first.error().message();
  EXPECT_EQ(from_first->size(), 1U);
  from_first->clear();

  // Drop closes the holder's copies: with ours closed, the writer has no
  // reader left.
  ASSERT_TRUE(again->Drop("app").ok());
  fetched->clear();
  EXPECT_EQ(::write(write_end.get(), "x", 1), -1);
  EXPECT_EQ(errno, EPIPE);
  auto empty = again->FetchKept();
  ASSERT_TRUE(empty.ok()) << empty.error().message();
  EXPECT_TRUE(empty->empty());
  EXPECT_TRUE(again->Drop("never-kept").ok());

  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  pid_t holder = sb->holder_pid();
  again->Destroy();
  EXPECT_TRUE(ExitsWithin(holder, 0));
  EXPECT_FALSE(std::filesystem::exists(Options().keeper_socket));
}

TEST_F(KeeperTest, KeepReplacesAKeysDescriptorsAndChecksItsArguments) {
  auto sb = Sandbox::Create(Options());
  ASSERT_TRUE(sb.ok()) << sb.error().message();
  int first[2], second[2];
  ASSERT_EQ(::pipe2(first, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(second, O_CLOEXEC), 0);
  Fd first_write(first[1]), second_write(second[1]);
  ASSERT_TRUE(sb->Keep("app", std::span<const int>(&first[0], 1)).ok());
  ASSERT_TRUE(sb->Keep("app", std::span<const int>(&second[0], 1)).ok());
  ::close(first[0]);
  ::close(second[0]);
  EXPECT_EQ(::write(first_write.get(), "x", 1), -1);  // replaced: closed in the holder
  EXPECT_EQ(::write(second_write.get(), "x", 1), 1);

  int nine[9];
  for (int& fd : nine) fd = second_write.get();
  EXPECT_EQ(sb->Keep("a b", std::span<const int>(nine, 1)).error().code(), EINVAL);
  EXPECT_EQ(sb->Keep("", std::span<const int>(nine, 1)).error().code(), EINVAL);
  EXPECT_EQ(sb->Keep("app", std::span<const int>(nine, 9)).error().code(), EINVAL);
  EXPECT_EQ(sb->Keep("app", {}).error().code(), EINVAL);
}

// The holder started by a process that then dies: SIGKILLed (a crash) or
// gone by _exit (no destructor ran, like a crash).
void OutlivesItsStarter(const SandboxOptions& options, bool sigkill) {
  int log_pipe[2], info_pipe[2];
  ASSERT_EQ(::pipe2(log_pipe, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(info_pipe, O_CLOEXEC), 0);
  pid_t starter = ::fork();
  if (starter == 0) {
    auto sb = Sandbox::Create(options);
    if (!sb.ok()) _exit(10);
    if (!sb->Keep("app-log", std::span<const int>(&log_pipe[0], 1)).ok()) _exit(11);
    unsigned long long info[3] = {static_cast<unsigned long long>(sb->holder_pid()),
                                  sb->holder_start_time(),
                                  static_cast<unsigned long long>(sb->pid_ns_init())};
    if (::write(info_pipe[1], info, sizeof info) != sizeof info) _exit(12);
    if (sigkill) ::raise(SIGKILL);
    _exit(0);
  }
  ::close(log_pipe[0]);
  ::close(info_pipe[1]);
  Fd log_write(log_pipe[1]), info_read(info_pipe[0]);
  unsigned long long info[3] = {};
  ASSERT_EQ(::read(info_read.get(), info, sizeof info), static_cast<ssize_t>(sizeof info));
  int status = 0;
  ASSERT_EQ(::waitpid(starter, &status, 0), starter);
  auto holder = static_cast<pid_t>(info[0]);
  auto reaper = static_cast<pid_t>(info[2]);

  EXPECT_FALSE(ExitsWithin(holder, 200)) << "the holder died with its starter";
  // A line written while no supervisor reads is not lost, and no EPIPE.
  ASSERT_EQ(::write(log_write.get(), "unwatched\n", 10), 10);
  // The holder holds no terminal or pipe of its starter's, and the reaper
  // nothing of the holder's.
  EXPECT_EQ(std::filesystem::read_symlink("/proc/" + std::to_string(holder) + "/fd/2"),
            "/dev/null");
  if (reaper > 0) {
    EXPECT_EQ(OpenFds(reaper), (std::vector<int>{0, 1, 2}));
  }

  auto sb = Sandbox::Reattach(options, holder, info[1], reaper);
  ASSERT_TRUE(sb.ok()) << sb.error().message();
  if (::getpid() != 1) {
    EXPECT_FALSE(sb->holder_is_child());
  }
  if (options.new_pid) {
    EXPECT_TRUE(sb->pid_ns());
  }
  auto fetched = sb->FetchKept();
  ASSERT_TRUE(fetched.ok()) << fetched.error().message();
  ASSERT_EQ(fetched->count("app-log"), 1U);
  EXPECT_EQ(ReadSome(fetched->at("app-log")[0].get()), "unwatched\n");
  fetched->clear();

  sb->Destroy();
  EXPECT_TRUE(ExitsWithin(holder, 0));
  if (reaper > 0) {
    EXPECT_TRUE(ExitsWithin(reaper, 2000));
  }
  EXPECT_FALSE(std::filesystem::exists(options.keeper_socket));
  EXPECT_EQ(::write(log_write.get(), "x", 1), -1);  // the kept read end closed with it
}

TEST_F(KeeperTest, HolderOutlivesAStarterThatWasSigkilled) {
  SandboxOptions o = Options();
  o.new_pid = true;
  OutlivesItsStarter(o, /*sigkill=*/true);
}

TEST_F(KeeperTest, HolderOutlivesAStarterThatExited) {
  OutlivesItsStarter(Options(), /*sigkill=*/false);
}

TEST_F(KeeperTest, HolderEntrustedWithNothingDiesWithItsStarter) {
  int info_pipe[2];
  ASSERT_EQ(::pipe2(info_pipe, O_CLOEXEC), 0);
  SandboxOptions options = Options();
  pid_t starter = ::fork();
  if (starter == 0) {
    auto sb = Sandbox::Create(options);
    if (!sb.ok()) _exit(10);
    pid_t holder = sb->holder_pid();
    (void)::write(info_pipe[1], &holder, sizeof holder);
    ::raise(SIGKILL);
  }
  ::close(info_pipe[1]);
  pid_t holder = 0;
  ASSERT_EQ(::read(info_pipe[0], &holder, sizeof holder), static_cast<ssize_t>(sizeof holder));
  ::close(info_pipe[0]);
  ::waitpid(starter, nullptr, 0);
  EXPECT_TRUE(ExitsWithin(holder, 2000));
}

TEST_F(KeeperTest, MalformedMessagesAreAnsweredAndTheHolderGoesOn) {
  auto sb = Sandbox::Create(Options());
  ASSERT_TRUE(sb.ok()) << sb.error().message();
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  Fd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  {
    Fd raw = Connect();
    ASSERT_TRUE(raw.valid());
    auto expect_error = [&](std::string_view text, std::span<const int> fds) {
      // Raw sendmsg: SendMessage itself refuses more than 8.
      iovec iov{const_cast<char*>(text.data()), text.size()};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 16)] = {};
      if (!fds.empty()) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
        cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
      }
      ASSERT_GE(::sendmsg(raw.get(), &msg, MSG_NOSIGNAL), 0) << text;
      auto reply = keeper::ReceiveMessage(raw.get());
      ASSERT_TRUE(reply.ok()) << text << ": " << reply.error().message();
      EXPECT_EQ(reply->text.rfind("error", 0), 0U) << text << " -> " << reply->text;
    };
    int one[] = {read_end.get()};
    int many[16];
    for (int& fd : many) fd = read_end.get();
    expect_error("keep", one);
    expect_error("keep ", one);
    expect_error("keep x", {});
    expect_error("keep a b", one);
    expect_error("keep \x01\xff", one);
    expect_error("keep k", many);
    expect_error("drop", {});
    expect_error("drop x", one);
    expect_error("fetch now", {});
    expect_error("fetch", one);
    expect_error("hello", {});
    expect_error(std::string(2000, 'k'), {});
    expect_error("keep " + std::string(300, 'k'), one);
    // A zero-length message ends this connection (SEQPACKET reads it as
    // the end); the holder goes on.
    ASSERT_EQ(::send(raw.get(), "", 0, MSG_NOSIGNAL), 0);
  }
  {
    Fd asks_and_leaves = Connect();
    ASSERT_TRUE(asks_and_leaves.valid());
    ASSERT_EQ(::send(asks_and_leaves.get(), "fetch", 5, MSG_NOSIGNAL), 5);
  }
  // Nothing was kept from all that: the only reader left is ours.
  read_end.Reset();
  EXPECT_EQ(::write(write_end.get(), "x", 1), -1);

  EXPECT_FALSE(ExitsWithin(sb->holder_pid(), 0));
  int pipe2_fds[2];
  ASSERT_EQ(::pipe2(pipe2_fds, O_CLOEXEC), 0);
  Fd r2(pipe2_fds[0]), w2(pipe2_fds[1]);
  int keep[] = {r2.get()};
  auto kept = sb->Keep("app", keep);
  ASSERT_TRUE(kept.ok()) << kept.error().message();
  auto fetched = sb->FetchKept();
  ASSERT_TRUE(fetched.ok()) << fetched.error().message();
  EXPECT_EQ(fetched->size(), 1U);
}

TEST_F(KeeperTest, TheNewestConnectionIsServedAndTheOlderDropped) {
  auto sb = Sandbox::Create(Options());
  ASSERT_TRUE(sb.ok()) << sb.error().message();
  Fd older = Connect();
  Fd newer = Connect();
  ASSERT_TRUE(older.valid() && newer.valid());
  ASSERT_EQ(::send(newer.get(), "fetch", 5, MSG_NOSIGNAL), 5);
  auto reply = keeper::ReceiveMessage(newer.get());
  ASSERT_TRUE(reply.ok()) << reply.error().message();
  EXPECT_EQ(reply->text, "end");
  // Served after the accept of `newer`, so `older` is closed by now.
  auto ended = keeper::ReceiveMessage(older.get());
  ASSERT_FALSE(ended.ok());
  EXPECT_TRUE(keeper::IsEndOfConnection(ended.error())) << ended.error().message();
}

TEST_F(KeeperTest, ReattachRefusesWhatIsNotTheHolder) {
  SandboxOptions o = Options();
  o.new_pid = true;
  auto sb = Sandbox::Create(o);
  ASSERT_TRUE(sb.ok()) << sb.error().message();

  auto wrong_time =
      Sandbox::Reattach(o, sb->holder_pid(), sb->holder_start_time() + 1, sb->pid_ns_init());
  ASSERT_FALSE(wrong_time.ok());
  EXPECT_NE(wrong_time.error().message().find("not at the recorded"), std::string::npos)
      << wrong_time.error().message();

  auto self_start = process::ProcessStartTime(::getpid());
  ASSERT_TRUE(self_start.ok());
  auto not_holder = Sandbox::Reattach(o, ::getpid(), *self_start, sb->pid_ns_init());
  ASSERT_FALSE(not_holder.ok());
  EXPECT_NE(not_holder.error().message().find("sandbox-init"), std::string::npos)
      << not_holder.error().message();

  auto wrong_init = Sandbox::Reattach(o, sb->holder_pid(), sb->holder_start_time(), ::getpid());
  ASSERT_FALSE(wrong_init.ok());
  EXPECT_NE(wrong_init.error().message().find("reaper"), std::string::npos)
      << wrong_init.error().message();

  SandboxOptions elsewhere = o;
  elsewhere.keeper_socket = dir_ / "nobody.sock";
  auto no_socket =
      Sandbox::Reattach(elsewhere, sb->holder_pid(), sb->holder_start_time(), sb->pid_ns_init());
  ASSERT_FALSE(no_socket.ok());

  // None of the refusals touched the holder.
  EXPECT_FALSE(ExitsWithin(sb->holder_pid(), 0));
  auto fetched = sb->FetchKept();
  EXPECT_TRUE(fetched.ok()) << fetched.error().message();
}

}  // namespace
}  // namespace podvisor::supervisor::sandbox
