// Tier 3 (runc, root), issue 16 point 4: `podvisor exec` in the
// container's namespaces, and `exec -t` with a terminal from runc's
// console socket whose window size is ours (the client runs under a
// pseudo-terminal of the test's, forkpty, as in a user's shell); and
// `podvisor port-forward` from the host to a port that listens only on the
// pod's own loopback.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pty.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;

class RuncExec : public RuncE2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t = RuncE2eTest::Tier();
    t.helper_log_in_shared_volume = false;  // its pods mount no shared volume
    return t;
  }
  void StartPod() {
    WritePod(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: ttyd}\nspec:\n  restartPolicy: Never\n"
        "  terminationGracePeriodSeconds: 2\n  containers:\n"
        "  - {name: app, image: img, command: [\"/bin/sleep\", \"100000\"]}\n");
    StartRun();
    WaitUntilRunning();
  }
  std::vector<std::string> ExecArgv(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {RequiredEnv("PODVISOR"), "exec", "--state-dir",
                                     state_dir_.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
};

TEST_F(RuncExec, RunsInTheContainersNamespaces) {
  StartPod();
  auto r = testing::RunCommand(ExecArgv({"app", "--", "/bin/sh", "-c", "hostname; ls /; exit 4"}));
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ttyd\n"));                // the pod's UTS namespace
  EXPECT_THAT(r.out, HasSubstr("podvisor-test-helper"));  // the image's root
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  WaitRun();
}

TEST_F(RuncExec, TtyGivesATerminalWithOurWindowSize) {
  StartPod();
  winsize ws{};
  ws.ws_row = 33;
  ws.ws_col = 101;
  int master = -1;
  auto argv = ExecArgv(
      {"-i", "-t", "app", "--", "/bin/sh", "-c", "stty size; tty; echo \"term=$TERM\"; exit 5"});
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = ::forkpty(&master, nullptr, nullptr, &ws);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  std::string out;
  char buf[4096];
  ssize_t n;
  // EIO once the client has exited and closed the pty.
  while ((n = ::read(master, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(master);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 5) << out;
  EXPECT_THAT(out, HasSubstr("33 101")) << out;
  EXPECT_THAT(out, HasSubstr("/dev/pts/")) << out;
  EXPECT_THAT(out, ::testing::Not(HasSubstr("not a tty"))) << out;
  EXPECT_THAT(out, HasSubstr("term=xterm")) << out;  // S14.25
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  WaitRun();
}

TEST_F(RuncExec, PortForwardReachesTheContainersLoopback) {
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  restartPolicy: Never\n"
      "  terminationGracePeriodSeconds: 2\n  containers:\n"
      "  - {name: app, image: img, command: [\"/podvisor-test-helper\", \"serve-http\", \"8080\", "
      "\"204\"],"
      " readinessProbe: {httpGet: {port: 8080}, periodSeconds: 1}}\n");
  StartRun();
  WaitForStatus([](const nlohmann::json& p) { return ConditionStatus(p, "Ready") == "True"; },
                "ready");
  // Port 8080 exists only in the pod's network namespace: the host has none.
  const fs::path out = dir_ / "forward.out";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    std::string exe = RequiredEnv("PODVISOR"), dir = state_dir_.string();
    ::execl(exe.c_str(), exe.c_str(), "port-forward", "--state-dir", dir.c_str(), ":8080", nullptr);
    ::_exit(127);
  }
  int local = 0;
  for (int i = 0; i < 250 && local == 0; ++i) {
    std::ifstream in(out);
    std::string line;
    if (std::getline(in, line) && line.starts_with("Forwarding from 127.0.0.1:")) {
      local = std::stoi(line.substr(26));
    } else {
      ::usleep(20'000);
    }
  }
  ASSERT_GT(local, 0) << "no Forwarding line";
  for (int round = 0; round < 2; ++round) {  // two connections, one after the other
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(local));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
    const char req[] = "GET / HTTP/1.0\r\nHost: x\r\n\r\n";
    ASSERT_EQ(::write(s, req, sizeof req - 1), static_cast<ssize_t>(sizeof req - 1));
    std::string reply;
    char buf[1024];
    ssize_t n;
    while ((n = ::read(s, buf, sizeof buf)) > 0) reply.append(buf, static_cast<std::size_t>(n));
    ::close(s);
    EXPECT_THAT(reply, HasSubstr("204")) << reply;
  }
  // It ends with the pod.
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  WaitRun();
  int status = 0;
  for (int i = 0; i < 250 && ::waitpid(pid, &status, WNOHANG) == 0; ++i) ::usleep(20'000);
  if (::waitpid(pid, &status, WNOHANG) == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    ADD_FAILURE() << "port-forward did not end with the pod";
  }
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("Handling connection for " + std::to_string(local)));
}

}  // namespace
}  // namespace podvisor::e2e
