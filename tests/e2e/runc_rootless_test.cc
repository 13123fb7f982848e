// Test tier 3 (docs/TESTING.md), issue 33: podvisor without root (S21).
// `podvisor run` runs as an unprivileged uid (4321, a user this test
// creates only inside a private mount namespace, where its own files are
// bound over /etc/passwd, /etc/subuid and /etc/subgid: the host's files
// are never edited), with runc. Each run is
//   unshare -m --propagation private sh -c 'mount --bind ...; exec setpriv
//   --reuid 4321 ... env -i XDG_RUNTIME_DIR=... podvisor run ...'
// whose every step exec's the next, so the run's pid is podvisor's.
// Client commands run as the same uid (the control socket answers its
// user). Needs root (to become the user and bind the files) and runc.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"
#include "tcp_probe.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr uid_t kUser = 4321;
constexpr const char* kUserName = "podvisor-rl";
constexpr const char* kSubordinateStart = "400000";

std::string ReadWhole(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The processes of the test user still alive (pids).
std::vector<std::string> ProcessesOfUser() {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::istringstream status(ReadWhole(entry.path() / "status"));
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Uid:", 0) != 0) continue;
      std::istringstream words(line.substr(4));
      uid_t real = 0;
      words >> real;
      if (real == kUser) found.push_back(pid);
    }
  }
  return found;
}

// The run: a private mount namespace with the test's account files, then
// the user, with only the environment a login would give.
const char* kRunScript =
    "mount --bind \"$PODVISOR_RL/subuid\" /etc/subuid && "
    "mount --bind \"$PODVISOR_RL/subgid\" /etc/subgid && "
    "mount --bind \"$PODVISOR_RL/passwd\" /etc/passwd || exit 125\n"
    // A host without udev may leave /dev/net/tun root's alone (0600); the
    // user-mode networks need it 0666, as udev makes it.
    "mount --bind \"$PODVISOR_RL/tun\" /dev/net/tun || exit 125\n"
    "exec /usr/bin/setpriv --reuid 4321 --regid 4321 --clear-groups /usr/bin/env -i "
    "PATH=/usr/sbin:/usr/bin:/sbin:/bin XDG_RUNTIME_DIR=\"$PODVISOR_RL/xdg\" "
    "XDG_DATA_HOME=\"$PODVISOR_RL/data\" HOME=\"$PODVISOR_RL/home\" \"$@\"";
const char* kClientScript =
    "exec /usr/bin/setpriv --reuid 4321 --regid 4321 --clear-groups /usr/bin/env -i "
    "PATH=/usr/sbin:/usr/bin:/sbin:/bin XDG_RUNTIME_DIR=\"$PODVISOR_RL/xdg\" "
    "XDG_DATA_HOME=\"$PODVISOR_RL/data\" HOME=\"$PODVISOR_RL/home\" \"$@\"";

class RuncRootless : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = FindInPath("runc");
    t.helper_in_container = "/podvisor-test-helper";
    t.helper_log_in_shared_volume = true;
    t.busybox_rootfs = true;
    t.check_runc_state = true;
    // Asked for, and not given: this hybrid host has no delegated cgroup
    // v2 (S21.5), so the run warns once and makes none.
    t.cgroup_parent = "/podvisor-e2e-" + std::to_string(::getpid());
    t.run_prefix = {"/usr/bin/unshare", "-m", "--propagation", "private",
                    "/bin/sh",          "-c", kRunScript,      "sh"};
    t.client_prefix = {"/bin/sh", "-c", kClientScript, "sh"};
    return t;
  }

  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (to become the test user)";
    if (FindInPath("runc").empty()) GTEST_SKIP() << "runc not installed";
    if (FindInPath("newuidmap").empty()) GTEST_SKIP() << "newuidmap not installed (uidmap)";
    E2eTest::SetUp();
    rl_ = dir_ / "rl";
    for (const char* sub : {"xdg", "data", "home"}) fs::create_directories(rl_ / sub);
    WriteAccounts(/*subordinate_ids=*/true);
    // The tun device as udev leaves it (0666), bound over the host's in the
    // run's mount namespace only.
    const fs::path tun = rl_ / "tun";
    ASSERT_EQ(::mknod(tun.c_str(), S_IFCHR | 0666, makedev(10, 200)), 0) << std::strerror(errno);
    ASSERT_EQ(::chmod(tun.c_str(), 0666), 0);
    ::setenv("PODVISOR_RL", rl_.c_str(), 1);
    // The user's default directories (S21.4): the run is given them
    // explicitly by the harness, the clients below find them by default.
    state_dir_ = rl_ / "xdg/podvisor";
    log_dir_ = rl_ / "data/podvisor/logs";
  }

  void WriteAccounts(bool subordinate_ids) {
    std::ofstream(rl_ / "passwd") << ReadWhole("/etc/passwd") << kUserName << ":x:" << kUser << ":"
                                  << kUser << "::/nonexistent:/usr/sbin/nologin\n";
    const std::string range =
        subordinate_ids ? std::string(kUserName) + ":" + kSubordinateStart + ":65536\n" : "";
    std::ofstream(rl_ / "subuid") << range;
    std::ofstream(rl_ / "subgid") << range;
  }

  // Everything the test made belongs to the user, as a user's bundle does.
  void GiveToUser() {
    auto r = testing::RunCommand({"/bin/chown", "-R", "4321:4321", dir_.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // The account files stay root's, as the host's are.
    for (const char* f : {"passwd", "subuid", "subgid"}) {
      ASSERT_EQ(::chown((rl_ / f).c_str(), 0, 0), 0) << f;
    }
  }

  void TearDown() override {
    if (!dir_.empty()) {
      for (int i = 0; i < 100 && !ProcessesOfUser().empty(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      for (const auto& pid : ProcessesOfUser()) {
        ADD_FAILURE() << "process of the test user left behind: " << pid << " "
                      << ReadWhole("/proc/" + pid + "/cmdline");
        ::kill(std::stoi(pid), SIGKILL);
      }
    }
    ::unsetenv("PODVISOR_RL");
    E2eTest::TearDown();
  }

  // A client command as the user with no --state-dir or --log-dir: the
  // defaults of S21.4 must find the pod.
  // With `own_stdio`, the command's output goes to a file of the user's
  // (stdin /dev/null), which becomes the result's `out`.
  testing::CommandResult DefaultClient(const std::vector<std::string>& args,
                                       bool own_stdio = false) {
    std::vector<std::string> argv = {"/bin/sh", "-c", kClientScript, "sh"};
    if (own_stdio) {
      // env -i has cleared PODVISOR_RL by then: the path is given.
      argv.insert(argv.end(),
                  {"/bin/sh", "-c",
                   "exec \"$@\" </dev/null >" + (rl_ / "home/out").string() + " 2>&1", "sh"});
    }
    argv.push_back(RequiredEnv("PODVISOR"));
    argv.insert(argv.end(), args.begin(), args.end());
    testing::CommandResult r = testing::RunCommand(argv);
    if (own_stdio) r.out = ReadWhole(rl_ / "home/out");
    return r;
  }

  fs::path rl_;
};

std::string Pod(const std::string& name, const std::string& restart_policy,
                const std::string& command, const std::string& extra = "") {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         "}\nspec:\n  restartPolicy: " + restart_policy +
         "\n  terminationGracePeriodSeconds: 5\n"
         "  volumes: [{name: shared, hostPath: {path: \"{{HOSTDIR}}\", type: Directory}}]\n" +
         extra + "  containers:\n  - {name: app, image: img, command: " + command +
         ", volumeMounts: [{name: shared, mountPath: /shared}], resources: {limits: {memory: "
         "64Mi, cpu: 500m}}}\n";
}

TEST_F(RuncRootless, S21_PodRunsAsTheUserAndStatusLogsStopWorkAsThatUser) {
  WritePod(Pod("rootless", "Always",
               ShCmd("id -u > /shared/uid; cat /proc/self/uid_map > /shared/uid_map; "
                     "echo hello-rootless; exec {{H}} --log app --log-file /shared/events.log "
                     "trap-sigterm 0 0")));
  GiveToUser();
  StartRun();
  WaitUntilRunning();
  ASSERT_TRUE(WaitForHelperEvent("app Started"));
  // Container root is the user's subordinate ids' root: the user on the host.
  EXPECT_EQ(ReadScratch("uid"), "0");
  std::istringstream map(ReadScratch("uid_map"));
  std::vector<std::string> words;
  for (std::string w; map >> w;) words.push_back(w);
  EXPECT_THAT(words, ::testing::ElementsAre("0", "4321", "1", "1", kSubordinateStart, "65536"));
  struct stat st {};
  ASSERT_EQ(::stat((scratch_ / "uid").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kUser) << "a file container root wrote belongs to the user on the host";

  // The user's clients find the pod in the default directories.
  auto status = DefaultClient({"status"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("rootless"));
  EXPECT_THAT(status.out, HasSubstr("Running"));
  auto logs = DefaultClient({"logs", "rootless", "app"});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_THAT(logs.out, HasSubstr("hello-rootless"));
  // exec's stdio is the user's own file: runc 1.1.5 chowns an exec's
  // stdio to the container user and fails on a descriptor whose owner its
  // user namespace does not map (the test's pipes are root's).
  auto exec = DefaultClient({"exec", "rootless", "app", "--", "/bin/cat", "/shared/uid"},
                            /*own_stdio=*/true);
  EXPECT_EQ(exec.exit_code, 0) << exec.out;
  EXPECT_EQ(exec.out, "0\n");

  auto stop = DefaultClient({"stop", "rootless"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  // The container ends 0 on SIGTERM: the pod Succeeded.
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  const std::string err = RunStderr();
  EXPECT_THAT(err, HasSubstr("podvisor runs in a user namespace of its own (subordinate-ids"));
  // S21.5: one warning, no crash loop, the limits skipped.
  EXPECT_EQ(Count(err, "no pod cgroup and no cgroup limits"), 1) << err;
  EXPECT_THAT(err, Not(HasSubstr("CrashLoopBackOff")));
}

TEST_F(RuncRootless, S21_ExitCodesAreThePods) {
  WritePod(Pod("rootless-ok", "Never", ShCmd("exit 0")));
  GiveToUser();
  EXPECT_EQ(Run(), 0) << RunStderr();
  WritePod(Pod("rootless-fail", "Never", ShCmd("exit 3")));
  EXPECT_EQ(Run(), 1) << RunStderr();
  EXPECT_THAT(RunStderr(), HasSubstr("exit code 3"));
}

// S21.9: the sandbox holder of a SIGKILLed supervisor keeps the pod's user
// and mount namespaces; the next run joins them and adopts the pod, whose
// container was not restarted; its stop leaves nothing.
TEST_F(RuncRootless, S21_9_NextRunAfterASigkilledSupervisorJoinsItsNamespaces) {
  WritePod(Pod("rootless-kill", "Always", HelperCmd("app", "trap-sigterm 0 0")));
  GiveToUser();
  StartRun();
  WaitUntilRunning();
  ASSERT_TRUE(WaitForHelperEvent("app Started"));
  ::kill(run_pid(), SIGKILL);
  EXPECT_EQ(WaitRun(), -1);
  const std::string first = RunStderr();

  StartRun();
  auto pod = WaitUntilRunning();
  const std::string second = RunStderr().substr(first.size());
  EXPECT_THAT(second, HasSubstr("joined the user and mount namespaces of the sandbox holder"));
  EXPECT_EQ(CountOf(HelperEvents(), "app Started"), 1) << Describe(HelperEvents());
  auto stop = Client({"stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
}

TEST_F(RuncRootless, S21_2_WithoutSubordinateIdsOneIdAndOneWarning) {
  WriteAccounts(/*subordinate_ids=*/false);
  WritePod(Pod("rootless-one", "Never", ShCmd("test \"$(id -u)\" = 0")));
  GiveToUser();
  EXPECT_EQ(Run(), 0) << RunStderr();
  EXPECT_EQ(Count(RunStderr(), "(S21.2)"), 1) << RunStderr();
  EXPECT_THAT(RunStderr(), HasSubstr("no /etc/subuid entry for podvisor-rl (uid 4321)"));
}

TEST_F(RuncRootless, S21_6_PrivilegedContainerIsRefusedNamingTheField) {
  WritePod(Pod("rootless-priv", "Never", ShCmd("exit 0")));
  std::string yaml = ReadWhole(bundle_ / "pod.yaml");
  yaml.replace(yaml.find("resources:"), 0, "securityContext: {privileged: true}, ");
  std::ofstream(bundle_ / "pod.yaml") << yaml;
  GiveToUser();
  EXPECT_EQ(Run(), 3) << RunStderr();
  EXPECT_THAT(RunStderr(), HasSubstr("container app: securityContext.privileged"));
}

// S21.12: hostUsers: false without root runs in podvisor's own user
// namespace, with one warning and no id block claimed.
TEST_F(RuncRootless, S21_12_HostUsersFalseRunsInPodvisorsUserNamespace) {
  WritePod(Pod("rootless-userns", "Never",
               ShCmd("test \"$(id -u)\" = 0 && cat /proc/self/uid_map > /shared/uid_map"),
               "  hostUsers: false\n"));
  GiveToUser();
  EXPECT_EQ(Run(), 0) << RunStderr();
  EXPECT_EQ(Count(RunStderr(), "(rootless, S21.12)"), 1) << RunStderr();
  std::istringstream map(ReadScratch("uid_map"));
  std::vector<std::string> words;
  for (std::string w; map >> w;) words.push_back(w);
  EXPECT_THAT(words, ::testing::ElementsAre("0", "4321", "1", "1", kSubordinateStart, "65536"));
}

// S21.11: the user's port-forward reaches a port that listens only on the
// rootless pod's own loopback (its network namespace belongs to podvisor's
// user namespace, which each connection's relay joins); it ends with the
// user's SIGTERM.
TEST_F(RuncRootless, S21_11_PortForwardReachesTheRootlessPodsLoopback) {
  WritePod(Pod("rootless-pf", "Always",
               ShCmd("mkdir -p /tmp/www && echo hello-forwarded > /tmp/www/index.html && "
                     "exec httpd -f -p 127.0.0.1:8080 -h /tmp/www")));
  GiveToUser();
  StartRun();
  WaitUntilRunning();
  const fs::path out = rl_ / "home/pf.out";
  pid_t forward = ::fork();
  if (forward == 0) {
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0) ::_exit(126);
    const std::string podvisor = RequiredEnv("PODVISOR");
    ::execl("/bin/sh", "/bin/sh", "-c", kClientScript, "sh", podvisor.c_str(), "port-forward",
            "rootless-pf", ":8080", nullptr);
    ::_exit(127);
  }
  ASSERT_GT(forward, 0);
  int local = 0;
  for (int i = 0; i < 250 && local == 0; ++i) {
    std::string text = ReadWhole(out);
    if (auto at = text.find("Forwarding from 127.0.0.1:"); at != std::string::npos) {
      local = std::atoi(text.c_str() + at + 26);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  EXPECT_GT(local, 0) << ReadWhole(out);
  if (local > 0) {
    // Two connections, each relayed by a child of its own.
    EXPECT_THAT(HttpGetEventually("127.0.0.1", local, "hello"), HasSubstr("hello-forwarded"))
        << ReadWhole(out);
    EXPECT_THAT(HttpGet("127.0.0.1", local), HasSubstr("hello-forwarded")) << ReadWhole(out);
  }
  ::kill(forward, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(forward, &status, 0), forward);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << " " << ReadWhole(out);
  EXPECT_THAT(ReadWhole(out), Not(HasSubstr("network namespace")));
  auto stop = DefaultClient({"stop", "rootless-pf"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(WaitRun(), 4) << RunStderr();
}

// S21.8, S22.3: without --network a rootless pod gets a user-mode network
// (pasta, else slirp4netns): its own address, and a hostPort served on the
// user's side of the host's loopback; all of it gone after the stop.
TEST_F(RuncRootless, S21_8_TheDefaultNetworkIsUserModeWithHostPorts) {
  const bool pasta = !FindInPath("pasta").empty();
  if (!pasta && FindInPath("slirp4netns").empty()) {
    GTEST_SKIP() << "neither pasta (passt) nor slirp4netns is installed (scripts/install-deps.sh)";
  }
  const int port = FreeHostPort();
  ASSERT_GT(port, 1024);
  WritePod(Pod("rootless-net", "Always",
               ShCmd("mkdir -p /tmp/www && echo hello-rootless-net > /tmp/www/index.html && "
                     "exec httpd -f -p 8080 -h /tmp/www") +
                   ", ports: [{containerPort: 8080, hostPort: " + std::to_string(port) + "}]"));
  GiveToUser();
  // The harness adds --network none unless an option names --network: this
  // one keeps the default and only lets the pod reach the host's loopback.
  StartRun({"--network-host-loopback"});
  const nlohmann::json pod = WaitUntilRunning();
  EXPECT_FALSE(pod["status"].value("podIP", "").empty()) << pod["status"].dump();
  EXPECT_THAT(HttpGetEventually("127.0.0.1", port, "hello"), HasSubstr("hello-rootless-net"));
  const std::string mode = pasta ? "network pasta" : "network slirp4netns";
  EXPECT_THAT(RunStderr(), HasSubstr(mode));
  auto stop = DefaultClient({"stop", "rootless-net"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  // httpd ends on SIGTERM with 143: a pod stopped on request (exit 4).
  EXPECT_EQ(WaitRun(), 4) << RunStderr();
  EXPECT_EQ(HttpGet("127.0.0.1", port), "") << "the hostPort is still served after the stop";
}

}  // namespace
}  // namespace podvisor::e2e
