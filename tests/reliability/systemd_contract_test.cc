// systemd's side of running a pod (packaging/systemd/podvisor@.service,
// README "systemd"), played by the test since systemd is not PID 1 here:
// `podvisor run` is started with the unit's own ExecStart flags and a
// NOTIFY_SOCKET the test reads, stopped as `systemctl stop` stops it under
// KillMode=process (SIGTERM to podvisor alone), and its exit status is judged
// by the unit's own SuccessExitStatus=, Restart= and
// RestartPreventExitStatus= lines (S14.40): an ordinary stop leaves the unit
// inactive and not restarted, whatever the app does with SIGTERM, while a
// pod that failed on its own leaves it failed and not restarted either.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tiers.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;

// The unit's [Service] settings, the last assignment of each key winning,
// as systemd reads them.
std::map<std::string, std::string> ReadUnit() {
  std::ifstream in(fs::path(RequiredEnv("PODVISOR_SOURCE_ROOT")) / "packaging" / "systemd" /
                   "podvisor@.service");
  std::map<std::string, std::string> keys;
  std::string line;
  bool service = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      service = line == "[Service]";
      continue;
    }
    auto eq = line.find('=');
    if (service && eq != std::string::npos) keys[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return keys;
}

std::vector<std::string> Words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// systemd's verdict on an exit status under this unit: whether the unit
// ends failed, and whether Restart= starts it again.
struct Verdict {
  bool failed;
  bool restarted;
};
Verdict Judge(const std::map<std::string, std::string>& unit, int status) {
  std::set<std::string> clean{"0"};
  for (const auto& w : Words(unit.count("SuccessExitStatus") ? unit.at("SuccessExitStatus") : ""))
    clean.insert(w);
  std::set<std::string> prevent;
  for (const auto& w :
       Words(unit.count("RestartPreventExitStatus") ? unit.at("RestartPreventExitStatus") : ""))
    prevent.insert(w);
  const std::string code = std::to_string(status);
  const bool failed = clean.count(code) == 0;
  const std::string restart = unit.count("Restart") ? unit.at("Restart") : "no";
  // systemd.service(5)'s table: on-failure restarts an unclean exit code.
  bool restarted = restart == "always" || ((restart == "on-failure") && failed);
  if (prevent.count(code)) restarted = false;
  return {failed, restarted};
}

class SystemdContract : public FakeRuntimeTier {
 protected:
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
    FakeRuntimeTier::TearDown();
  }

  // Starts `podvisor run` with the unit's flags (those of ExecStart between
  // `run` and the bundle) and a notify socket of the test's own.
  void StartAsTheUnit() {
    std::vector<std::string> exec = Words(unit_.at("ExecStart"));
    ASSERT_GE(exec.size(), 3u);
    ASSERT_EQ(exec[1], "run");
    std::vector<std::string> flags(exec.begin() + 2, exec.end() - 1);
    std::string path = (dir_ / "notify.sock").string();
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd_, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    ASSERT_LT(path.size(), sizeof a.sun_path);
    std::memcpy(a.sun_path, path.data(), path.size());
    ASSERT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
    StartRun(flags, {"NOTIFY_SOCKET=" + path});
  }

  // Reads datagrams until one contains `what`; false after 15 s.
  bool AwaitNotify(const std::string& what) {
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 15000) <= 0) return false;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return false;
      std::string m(buf, static_cast<size_t>(n));
      received_ += "\n  [" + m + "]";
      if (m.find(what) != std::string::npos) return true;
    }
  }

  // `systemctl stop` under KillMode=process: SIGTERM to the main process;
  // a SIGKILL, to it alone, only after TimeoutStopSec, which a pod with a
  // grace of 1 s never reaches. Returns run's exit status.
  int SystemctlStop() {
    EXPECT_TRUE(AwaitNotify("READY=1")) << received_ << RunStderr();
    EXPECT_EQ(::kill(run_pid(), SIGTERM), 0);
    EXPECT_TRUE(AwaitNotify("STOPPING=1")) << received_;
    return WaitRun();
  }

  std::string RecordedPhase() {
    auto pod = Status();
    return pod ? (*pod)["status"].value("phase", "") : "";
  }

  std::map<std::string, std::string> unit_ = ReadUnit();
  int fd_ = -1;
  std::string received_;
};

TEST_F(SystemdContract, S14_40_TheUnitsExitStatusesAgreeWithRun) {
  EXPECT_EQ(unit_["Type"], "notify");
  EXPECT_EQ(unit_["KillMode"], "process");
  EXPECT_EQ(unit_["Restart"], "on-failure");
  // Succeeded and stopped: clean, not restarted.
  for (int status : {0, 4}) {
    EXPECT_FALSE(Judge(unit_, status).failed) << status;
    EXPECT_FALSE(Judge(unit_, status).restarted) << status;
  }
  // Failed on its own, invalid bundle: failed, and not run again against
  // the pod's restartPolicy or for a bundle that cannot run.
  for (int status : {1, 2}) {
    EXPECT_TRUE(Judge(unit_, status).failed) << status;
    EXPECT_FALSE(Judge(unit_, status).restarted) << status;
  }
  // The host failed it: restarted.
  EXPECT_TRUE(Judge(unit_, 3).restarted);
}

TEST_F(SystemdContract, S14_40_StopOfAnAppExiting143IsNotAFailure) {
  WritePod(PodHeader("unit-jvm", "Always", 5) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "trap-sigterm 0 143")));
  StartAsTheUnit();
  ASSERT_TRUE(WaitForHelperEvent("app Started")) << RunStderr();
  int status = SystemctlStop();
  EXPECT_EQ(status, 4) << RunStderr();
  EXPECT_FALSE(Judge(unit_, status).failed) << status;
  EXPECT_FALSE(Judge(unit_, status).restarted) << status;
  // The record stays honest: the app exited 143, the pod Failed.
  EXPECT_EQ(RecordedPhase(), "Failed");
  // This host is hybrid or not v2: auto falls back and says so.
  if (!fs::exists("/sys/fs/cgroup/cgroup.controllers") || ::geteuid() != 0) {
    EXPECT_THAT(RunStderr(), HasSubstr("--cgroup-parent=auto: "));
  }
}

TEST_F(SystemdContract, S14_40_StopOfAnAppIgnoringSigtermIsNotAFailure) {
  // A shell or python as PID 1 ignores SIGTERM: SIGKILLed after the grace.
  WritePod(PodHeader("unit-stubborn", "Always", 1) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "ignore-sigterm")));
  StartAsTheUnit();
  ASSERT_TRUE(WaitForHelperEvent("app Started")) << RunStderr();
  int status = SystemctlStop();
  EXPECT_EQ(status, 4) << RunStderr();
  EXPECT_FALSE(Judge(unit_, status).failed) << status;
  EXPECT_FALSE(Judge(unit_, status).restarted) << status;
  EXPECT_EQ(CountOf(HelperEvents(), "app Exiting"), 0) << "app ignores SIGTERM";
  EXPECT_EQ(RecordedPhase(), "Failed");
}

TEST_F(SystemdContract, S14_40_APodThatFailedOnItsOwnFailsTheUnit) {
  WritePod(PodHeader("unit-fails", "Never", 1) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "exit 3")));
  StartAsTheUnit();
  int status = WaitRun();
  EXPECT_EQ(status, 1) << RunStderr();
  EXPECT_TRUE(Judge(unit_, status).failed);
  EXPECT_FALSE(Judge(unit_, status).restarted) << "a Failed pod is not run again";
  EXPECT_EQ(RecordedPhase(), "Failed");
}

TEST_F(SystemdContract, S14_40_AStopDuringATerminationThePodBeganItselfStillFails) {
  // The pod failed first (its container exits 3 under Never) and its
  // sidecar takes a while to stop: the user's SIGTERM meanwhile does not
  // turn the pod's own failure into a requested stop.
  WritePod(PodHeader("unit-fails-first", "Never", 5) + "  initContainers:\n" +
           PodSidecar("proxy", HelperCmd("proxy", "trap-sigterm 1500 0")) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "exit 3")));
  StartAsTheUnit();
  ASSERT_TRUE(AwaitNotify("STOPPING=1")) << received_ << RunStderr();
  ::kill(run_pid(), SIGTERM);
  int status = WaitRun();
  EXPECT_EQ(status, 1) << RunStderr();
  EXPECT_TRUE(Judge(unit_, status).failed);
  EXPECT_EQ(RecordedPhase(), "Failed");
}

}  // namespace
}  // namespace podvisor::e2e
