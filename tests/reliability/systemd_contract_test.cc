// systemd's side of running a pod (packaging/systemd/podvisor@.service,
// README "systemd"), played by the test since systemd is not PID 1 here:
// `podvisor run` is started with the unit's own ExecStart flags and a
// NOTIFY_SOCKET the test reads, stopped as `systemctl stop` stops it under
// KillMode=process (SIGTERM to podvisor alone), and its exit status is judged
// by the unit's own SuccessExitStatus=, Restart= and
// RestartPreventExitStatus= lines (S14.40): an ordinary stop leaves the unit
// inactive and not restarted, whatever the app does with SIGTERM, while a
// pod that failed on its own leaves it failed and not restarted either.
// With runc (the unit's default sandbox, whose holder keeps a dead
// supervisor's pod, S15.4): Restart=on-failure after a SIGKILL under
// KillMode=process starts a `run` that adopts the pod (S15.7), and
// ExecReload= upgrades it in place, the main pid and its notifications
// kept (S15.2).
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../cli/run_command.h"
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

// systemd's side of the unit, over a tier: ExecStart's `run` with a
// NOTIFY_SOCKET of the test's own, whose datagrams are read with their
// sender's pid (SO_PASSCRED), as systemd reads them for NotifyAccess=main.
template <class Tier>
class UnitPlayer : public Tier {
 protected:
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
    Tier::TearDown();
  }

  // Whether a flag of ExecStart is passed on (a tier may need its own).
  virtual bool KeepsUnitFlag(const std::string&) const { return true; }

  // Starts `podvisor run` with the unit's flags (those of ExecStart between
  // `run` and the bundle) and the notify socket, bound on the first start.
  void StartAsTheUnit() {
    std::vector<std::string> exec = Words(unit_.at("ExecStart"));
    ASSERT_GE(exec.size(), 3u);
    ASSERT_EQ(exec[1], "run");
    std::vector<std::string> flags;
    for (auto it = exec.begin() + 2; it != exec.end() - 1; ++it) {
      if (KeepsUnitFlag(*it)) flags.push_back(*it);
    }
    std::string path = (this->dir_ / "notify.sock").string();
    if (fd_ < 0) {
      fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      ASSERT_GE(fd_, 0);
      sockaddr_un a{};
      a.sun_family = AF_UNIX;
      ASSERT_LT(path.size(), sizeof a.sun_path);
      std::memcpy(a.sun_path, path.data(), path.size());
      ASSERT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
      int on = 1;
      ASSERT_EQ(::setsockopt(fd_, SOL_SOCKET, SO_PASSCRED, &on, sizeof on), 0);
    }
    this->StartRun(flags, {"NOTIFY_SOCKET=" + path});
  }

  // Reads datagrams until one contains `what` (from `sender` when it is
  // not 0; others are passed over, as systemd drops what is not from the
  // main pid); false after 15 s.
  bool AwaitNotify(const std::string& what, pid_t sender = 0) {
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 15000) <= 0) return false;
      char buf[4096];
      iovec iov{buf, sizeof buf};
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      ssize_t n = ::recvmsg(fd_, &msg, 0);
      if (n <= 0) return false;
      pid_t from = 0;
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
          ucred cred{};
          std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
          from = cred.pid;
        }
      }
      std::string m(buf, static_cast<size_t>(n));
      received_ += "\n  [pid " + std::to_string(from) + ": " + m + "]";
      if (sender != 0 && from != sender) continue;
      if (m.find(what) != std::string::npos) return true;
    }
  }

  // `systemctl stop` under KillMode=process: SIGTERM to the main process;
  // a SIGKILL, to it alone, only after TimeoutStopSec, which a pod with a
  // grace of 1 s never reaches. Returns run's exit status.
  int SystemctlStop() {
    EXPECT_TRUE(AwaitNotify("READY=1")) << received_ << this->RunStderr();
    return StopMainPid();
  }
  int StopMainPid() {
    EXPECT_EQ(::kill(this->run_pid(), SIGTERM), 0);
    EXPECT_TRUE(AwaitNotify("STOPPING=1")) << received_;
    return this->WaitRun();
  }

  std::map<std::string, std::string> unit_ = ReadUnit();
  int fd_ = -1;
  std::string received_;
};

class SystemdContract : public UnitPlayer<FakeRuntimeTier> {
 protected:
  std::string RecordedPhase() {
    auto pod = Status();
    return pod ? (*pod)["status"].value("phase", "") : "";
  }
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

// The unit on runc, as root: its default sandbox (namespaces) has the
// holder that keeps a dead supervisor's pod (S15.4), which adoption needs.
// The tier's own --cgroup-parent stands in for the unit's
// --cgroup-parent=auto (this test's cgroups, checked for leftovers, rather
// than the host's shared /podvisor or the test process's own cgroup).
class SystemdRestart : public UnitPlayer<RuncTier> {
 protected:
  bool KeepsUnitFlag(const std::string& flag) const override {
    return flag.rfind("--cgroup-parent", 0) != 0;
  }

  // The unit's instance, %i: ExecStart's bundle is /etc/podvisor/pods/%i,
  // here the bundle directory.
  std::string Instance() const { return bundle_.filename().string(); }

  // `systemctl reload`: ExecReload= as systemd runs it for the instance,
  // with the test's state directory for the unit's /run/podvisor.
  testing::CommandResult Reload() {
    std::vector<std::string> argv = Words(unit_.at("ExecReload"));
    EXPECT_GE(argv.size(), 2u);
    argv[0] = RequiredEnv("PODVISOR");
    for (size_t i = 0; i + 1 < argv.size(); ++i) {
      if (argv[i] == "--state-dir") argv[i + 1] = state_dir_.string();
    }
    for (auto& w : argv) {
      // The unit's bundle directory is the test's bundle.
      if (w == "/etc/podvisor/pods/%i") w = bundle_.string();
      for (size_t at; (at = w.find("%i")) != std::string::npos;) w.replace(at, 2, Instance());
    }
    return testing::RunCommand(argv);
  }

  // The pid of the init of `container`'s current instance (its bundle's
  // init.pid), 0 when there is none.
  pid_t InitPid(const std::string& container) {
    auto pod = Status();
    if (!pod) return 0;
    const nlohmann::json* st = FindContainerStatus(*pod, container);
    if (!st) return 0;
    std::string id = st->value("containerID", "");
    id = id.substr(id.find("://") == std::string::npos ? 0 : id.find("://") + 3);
    std::ifstream in(state_dir_ / pod_name_ / "containers" / container / id / "init.pid");
    pid_t pid = 0;
    in >> pid;
    return pid;
  }

  // What systemd (PID 1) does for the unit's orphans: a dead supervisor's
  // sandbox holder and container inits are reparented to it and reaped
  // when they end. The test stands in for it (PR_SET_CHILD_SUBREAPER) so
  // that they are neither left to this host's init nor zombies at the end.
  void BecomeReaper() { ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0); }
  void ReapOrphans() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      pid_t r = ::waitpid(-1, &status, WNOHANG);
      if (r < 0) break;  // ECHILD: none left
      if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  }

  int CountEvents(const std::string& reason) {
    auto events = PodEvents();
    return static_cast<int>(std::count_if(events.begin(), events.end(), [&](const auto& e) {
      return e.value("reason", "") == reason;
    }));
  }
};

TEST_F(SystemdRestart, S15_7_ARestartedSupervisorAdoptsThePodAndReloadUpgradesIt) {
  // Restart=on-failure starts the unit again after a death by a signal
  // other than the clean ones (systemd.service(5)), and KillMode=process
  // leaves the containers alone.
  EXPECT_EQ(unit_["Restart"], "on-failure");
  EXPECT_EQ(unit_["KillMode"], "process");
  // The pod is named as its directory, the unit's instance: ExecReload
  // names the pod by %i.
  const std::string mount = ", volumeMounts: [{name: shared, mountPath: /shared}]";
  WritePod(PodHeader(Instance(), "Always", 2, true) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "trap-sigterm 0 0"), mount));
  BecomeReaper();
  StartAsTheUnit();
  const pid_t first = run_pid();
  ASSERT_TRUE(AwaitNotify("READY=1", first)) << received_ << RunStderr();
  const pid_t app = InitPid("app");
  ASSERT_GT(app, 0) << RunStderr();

  // A crash: SIGKILL, to podvisor alone.
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  EXPECT_EQ(WaitRun(), -1) << "killed by a signal";
  EXPECT_EQ(::kill(app, 0), 0) << "the app died with its supervisor";

  // Restart=: ExecStart again, the same way.
  StartAsTheUnit();
  const pid_t second = run_pid();
  ASSERT_NE(second, first);
  EXPECT_TRUE(AwaitNotify("READY=1", second)) << received_ << RunStderr();
  EXPECT_EQ(CountEvents("Adopted"), 1) << RunStderr();
  EXPECT_EQ(InitPid("app"), app) << "not adopted: a new instance";
  EXPECT_EQ(::kill(app, 0), 0);
  auto pod = Status();
  ASSERT_TRUE(pod.has_value());
  EXPECT_EQ((*FindContainerStatus(*pod, "app")).value("restartCount", -1), 0) << pod->dump(2);

  // `systemctl reload`: ExecReload= succeeds, the main pid stays, and the
  // new binary's notifications come from it (NotifyAccess=main drops
  // others): READY=1 and a STATUS=.
  const size_t before_reload = received_.size();
  auto reload = Reload();
  EXPECT_EQ(reload.exit_code, 0) << reload.out << reload.err << RunStderr();
  EXPECT_THAT(reload.out, HasSubstr("(pid " + std::to_string(second) + ", "));
  EXPECT_TRUE(RunIsAlive());
  EXPECT_TRUE(AwaitNotify("READY=1", second)) << received_ << RunStderr();
  EXPECT_THAT(received_.substr(before_reload),
              HasSubstr("[pid " + std::to_string(second) + ": STATUS="))
      << received_;
  EXPECT_EQ(CountEvents("Upgraded"), 1) << RunStderr();
  EXPECT_EQ(InitPid("app"), app);
  EXPECT_EQ(::kill(app, 0), 0);

  // `systemctl stop` still stops the pod: not a failure.
  int status = StopMainPid();
  EXPECT_FALSE(Judge(unit_, status).failed) << status << RunStderr();
  EXPECT_EQ(CountOf(HelperEvents(), "app Started"), 1) << "the app was started once";
  ReapOrphans();
}

// ExecReload= names the pod by its bundle (-f), as ExecStart does: the
// instance is the bundle's directory and the pod is named by its manifest
// (README's own example: `cp -r examples/web-behind-proxy
// /etc/podvisor/pods/web`, pod web-behind-proxy).
TEST_F(SystemdRestart, S15_2_ReloadFindsThePodWhoseNameIsNotTheInstance) {
  WritePod(PodHeader("unit-named-otherwise", "Always", 2) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "trap-sigterm 0 0")));
  StartAsTheUnit();
  ASSERT_TRUE(AwaitNotify("READY=1", run_pid())) << received_ << RunStderr();
  auto reload = Reload();
  EXPECT_EQ(reload.exit_code, 0) << "ExecReload for instance " << Instance() << ": " << reload.out
                                 << reload.err;
  int status = StopMainPid();
  EXPECT_FALSE(Judge(unit_, status).failed) << status << RunStderr();
}

}  // namespace
}  // namespace podvisor::e2e
