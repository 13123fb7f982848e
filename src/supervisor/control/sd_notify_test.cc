// docs/INTERFACE.md "systemd": the messages and their order (SystemdReporter),
// and the datagram transport to path and abstract addresses (SdNotifier).
#include "supervisor/control/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace podvisor::supervisor::control {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

pod::PodStatus StatusOf(pod::PodPhase phase, bool ready) {
  pod::PodStatus s;
  s.phase = phase;
  s.conditions.push_back({std::string(pod::kConditionReady),
                          ready ? pod::ConditionStatus::kTrue : pod::ConditionStatus::kFalse,
                          std::nullopt, "", ""});
  return s;
}

TEST(SystemdReporter, StatusOnEachPhaseChangeReadyOnceStoppingOnce) {
  SystemdReporter r("web");
  EXPECT_THAT(r.Update(StatusOf(pod::PodPhase::kPending, false), false),
              ElementsAre("STATUS=pod web: phase Pending"));
  EXPECT_THAT(r.Update(StatusOf(pod::PodPhase::kPending, false), false), IsEmpty());
  EXPECT_THAT(r.Update(StatusOf(pod::PodPhase::kRunning, false), false),
              ElementsAre("STATUS=pod web: phase Running"));
  EXPECT_THAT(r.Update(StatusOf(pod::PodPhase::kRunning, true), false), ElementsAre("READY=1"));
  // Ready going false and true again is not a second READY=1.
  EXPECT_THAT(r.Update(StatusOf(pod::PodPhase::kRunning, false), false), IsEmpty());
  EXPECT_THAT(r.Update(StatusOf(pod::PodPhase::kRunning, true), false), IsEmpty());
  pod::PodStatus stopping = StatusOf(pod::PodPhase::kRunning, true);
  stopping.stop_reason = "Decommissioned";
  EXPECT_THAT(r.Update(stopping, true),
              ElementsAre("STOPPING=1\nSTATUS=pod web: stopping (reason Decommissioned)"));
  EXPECT_THAT(r.Update(stopping, true), IsEmpty());
  EXPECT_THAT(r.Update(StatusOf(pod::PodPhase::kSucceeded, false), true),
              ElementsAre("STATUS=pod web: phase Succeeded"));
}

TEST(SystemdReporter, OneBatchGivesPhaseThenReadyThenStopping) {
  SystemdReporter r("job");
  EXPECT_THAT(r.Update(StatusOf(pod::PodPhase::kRunning, true), true),
              ElementsAre("STATUS=pod job: phase Running", "READY=1",
                          "STOPPING=1\nSTATUS=pod job: stopping"));
}

TEST(SystemdReporter, CompletionInOneBatchGivesStoppingBeforeTheFinalPhase) {
  SystemdReporter r("job");
  EXPECT_THAT(r.Update(StatusOf(pod::PodPhase::kRunning, true), false),
              ElementsAre("STATUS=pod job: phase Running", "READY=1"));
  EXPECT_THAT(
      r.Update(StatusOf(pod::PodPhase::kSucceeded, false), true),
      ElementsAre("STOPPING=1\nSTATUS=pod job: stopping", "STATUS=pod job: phase Succeeded"));
}

TEST(SystemdReporter, APodThatFailsBeforeItWasReadyNeverSaysReady) {
  SystemdReporter r("bad");
  EXPECT_THAT(r.Update(StatusOf(pod::PodPhase::kPending, false), false),
              ElementsAre("STATUS=pod bad: phase Pending"));
  EXPECT_THAT(r.Update(StatusOf(pod::PodPhase::kFailed, false), true),
              ElementsAre("STOPPING=1\nSTATUS=pod bad: stopping", "STATUS=pod bad: phase Failed"));
}

// A datagram socket of the test's own, bound to `address` (path or @name).
class Listener {
 public:
  explicit Listener(const std::string& address) {
    fd_.Reset(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, address.data(), address.size());
    if (address[0] == '@') a.sun_path[0] = '\0';
    bound_ = ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a),
                    static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size())) == 0;
  }
  bool bound() const { return bound_; }
  std::string Receive() {
    char buf[4096];
    ssize_t n = ::recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT);
    return n < 0 ? std::string("<nothing>") : std::string(buf, static_cast<size_t>(n));
  }

 private:
  Fd fd_;
  bool bound_ = false;
};

TEST(SdNotifier, SendsToAPathSocket) {
  std::string path = "/tmp/podvisor-sdnotify-" + std::to_string(::getpid()) + ".sock";
  Listener l(path);
  ASSERT_TRUE(l.bound()) << path;
  auto n = SdNotifier::ForAddress(path);
  ASSERT_TRUE(n.ok()) << n.error().message();
  ASSERT_TRUE(n->Send("READY=1").ok());
  EXPECT_EQ(l.Receive(), "READY=1");
  std::filesystem::remove(path);
}

TEST(SdNotifier, SendsToAnAbstractSocketWithoutTrailingNul) {
  std::string address = "@podvisor-sdnotify-" + std::to_string(::getpid());
  Listener l(address);
  ASSERT_TRUE(l.bound()) << address;
  auto n = SdNotifier::ForAddress(address);
  ASSERT_TRUE(n.ok()) << n.error().message();
  ASSERT_TRUE(n->Send("STOPPING=1").ok());
  EXPECT_EQ(l.Receive(), "STOPPING=1");
}

TEST(SdNotifier, FromEnvironmentUnsetsTheVariable) {
  ::setenv("NOTIFY_SOCKET", "@podvisor-unused", 1);
  auto n = SdNotifier::FromEnvironment();
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_TRUE(n->enabled());
  EXPECT_EQ(std::getenv("NOTIFY_SOCKET"), nullptr);
}

TEST(SdNotifier, WithoutTheVariableItIsDisabledAndSendIsANoOp) {
  ::unsetenv("NOTIFY_SOCKET");
  auto n = SdNotifier::FromEnvironment();
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE(n->enabled());
  EXPECT_TRUE(n->Send("READY=1").ok());
}

TEST(SdNotifier, RejectsRelativeAndVsockAddresses) {
  for (const char* bad : {"relative.sock", "vsock:2:1234", "@"}) {
    auto n = SdNotifier::ForAddress(bad);
    ASSERT_FALSE(n.ok()) << bad;
    EXPECT_THAT(n.error().message(), ::testing::HasSubstr("NOTIFY_SOCKET"));
  }
}

TEST(SystemdLink, SendsEachDueMessageOnceInTheReportersOrder) {
  std::string address = "@podvisor-sdlink-" + std::to_string(::getpid());
  Listener l(address);
  ASSERT_TRUE(l.bound()) << address;
  auto n = SdNotifier::ForAddress(address);
  ASSERT_TRUE(n.ok()) << n.error().message();
  SystemdLink link = SystemdLink::To(std::move(*n), "web");
  ASSERT_TRUE(link.enabled());
  link.Update(StatusOf(pod::PodPhase::kRunning, true), false);
  EXPECT_EQ(l.Receive(), "STATUS=pod web: phase Running");
  EXPECT_EQ(l.Receive(), "READY=1");
  link.Update(StatusOf(pod::PodPhase::kRunning, true), false);  // nothing new
  EXPECT_EQ(l.Receive(), "<nothing>");
}

TEST(SystemdLink, OutsideAUnitItIsDisabledAndSendsNothing) {
  ::unsetenv("NOTIFY_SOCKET");
  SystemdLink link = SystemdLink::FromEnvironment("web");
  EXPECT_FALSE(link.enabled());
  link.Update(StatusOf(pod::PodPhase::kRunning, true), false);
}

TEST(SystemdLink, AnUnusableSocketDisablesItInsteadOfFailingThePod) {
  ::setenv("NOTIFY_SOCKET", "relative.sock", 1);
  SystemdLink link = SystemdLink::FromEnvironment("web");
  EXPECT_FALSE(link.enabled());
  EXPECT_EQ(std::getenv("NOTIFY_SOCKET"), nullptr);
}

}  // namespace
}  // namespace podvisor::supervisor::control
