// Test tier 2: `podvisor run` under a Type=notify unit, as docs/INTERFACE.md
// "systemd" promises it: the test binds its own AF_UNIX datagram socket,
// passes it as NOTIFY_SOCKET and reads what systemd would read — STATUS= on
// each phase change, READY=1 once the pod's Ready condition is true (and
// not before), STOPPING=1 when termination begins — in that order.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

class SystemdNotify : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }

  // Binds `address` (a path, or '@name' for the abstract namespace).
  void Bind(const std::string& address) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd_, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    ASSERT_LT(address.size(), sizeof a.sun_path);
    std::memcpy(a.sun_path, address.data(), address.size());
    if (address[0] == '@') a.sun_path[0] = '\0';
    ASSERT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a),
                     static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size())),
              0)
        << address << ": " << std::strerror(errno);
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
    E2eTest::TearDown();
  }

  // The next datagram, or "" after the timeout.
  std::string Next(int timeout_ms = 15000) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return "";
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    std::string m = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    received_.push_back(m);
    return m;
  }
  std::string All() const {
    std::string s;
    for (const auto& m : received_) s += "\n  [" + m + "]";
    return s;
  }

  // An init container (the pod is Pending while it runs), then an app that
  // becomes ready when {{DIR}}/ready exists and exits 0 on SIGTERM, so the
  // pod ends Succeeded.
  void WriteReadinessGatedPod() {
    WritePod(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: notified}\nspec:\n"
        "  restartPolicy: Never\n  terminationGracePeriodSeconds: 5\n  initContainers:\n"
        "  - name: setup\n    image: img\n    command: " +
        HelperCmd("setup", "sleep 300") +
        "\n  containers:\n"
        "  - name: app\n    image: img\n    command: " +
        HelperCmd("app", "trap-sigterm 20 0") +
        "\n    readinessProbe:\n      exec: {command: [/bin/sh, -c, 'test -f {{DIR}}/ready']}\n"
        "      periodSeconds: 1\n");
  }

  int fd_ = -1;
  std::vector<std::string> received_;
};

TEST_F(SystemdNotify, StatusReadyStoppingInOrderOnAnAbstractSocket) {
  std::string address = "@podvisor-e2e-notify-" + std::to_string(::getpid());
  Bind(address);
  WriteReadinessGatedPod();
  StartRun({}, {"NOTIFY_SOCKET=" + address});

  EXPECT_EQ(Next(), "STATUS=pod notified: phase Pending") << All();
  EXPECT_EQ(Next(), "STATUS=pod notified: phase Running") << All();
  // Running but not Ready: readiness gates READY=1.
  EXPECT_EQ(Next(1500), "") << "READY=1 before the readiness probe passed" << All();
  std::ofstream(scratch_ / "ready") << "";
  EXPECT_EQ(Next(), "READY=1") << All();

  auto stop = Client({"stop", "--reason", "Decommissioned", "--no-wait"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(Next(), "STOPPING=1\nSTATUS=pod notified: stopping (reason Decommissioned)") << All();
  EXPECT_EQ(Next(), "STATUS=pod notified: phase Succeeded") << All();
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  EXPECT_EQ(Next(200), "") << "nothing after the final phase" << All();
}

TEST_F(SystemdNotify, PathSocketAndSigtermStopWithoutReason) {
  std::string path = (dir_ / "notify.sock").string();
  Bind(path);
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: notified}\nspec:\n"
      "  restartPolicy: Never\n  terminationGracePeriodSeconds: 5\n  containers:\n"
      "  - name: app\n    image: img\n    command: " +
      HelperCmd("app", "trap-sigterm 20 0") + "\n");
  StartRun({}, {"NOTIFY_SOCKET=" + path});
  // Without init containers the pod is initialized at once (S1.6): its
  // first phase is Running.
  EXPECT_EQ(Next(), "STATUS=pod notified: phase Running") << All();
  // No readiness probe: Ready as soon as the app runs.
  EXPECT_EQ(Next(), "READY=1") << All();
  // A SIGTERM before the app installed its handler would kill it (exit
  // 143) and fail the pod: wait for the line it prints once trapping.
  for (int i = 0;
       i < 500 && Client({"logs", "app"}, true).out.find("trapping SIGTERM") == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(::kill(run_pid(), SIGTERM), 0);
  EXPECT_EQ(Next(), "STOPPING=1\nSTATUS=pod notified: stopping") << All();
  EXPECT_EQ(Next(), "STATUS=pod notified: phase Succeeded") << All();
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
}

}  // namespace
}  // namespace podvisor::e2e
