// Test tier 3 (docs/TESTING.md), issue 17: podvisor as PID 1 of a runc
// container, running a pod of nested runc containers, stopped through the
// outer runtime's SIGTERM; and the same container without the privileges
// the recipe of README "Embedding podvisor" names, which must fail at once
// with the missing privileges named, not crash-loop. Issue 33 (S21.10):
// an unprivileged outer container with a user namespace and only the
// default capabilities runs the pod too, podvisor in a user namespace of
// its own.
//
// The outer container's root holds only podvisor, runc and the libraries
// `ldd` names for them, each bind-mounted read-only: a static podvisor
// (`-Dstatic=true`) is one file, a dynamic one brings its libraries, and
// Debian's runc always brings libseccomp and libc. Needs root and runc.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

// The capabilities of the recipe: what podvisor checks for
// (src/supervisor/executor/host_checks.cc) plus what its containers get by
// default (the kubelet's default set), nothing else.
const std::vector<std::string> kRecipeCapabilities = {"CAP_SYS_ADMIN",    "CAP_NET_ADMIN",
                                                      "CAP_SETPCAP",      "CAP_MKNOD",
                                                      "CAP_SYS_CHROOT",   "CAP_SETUID",
                                                      "CAP_SETGID",       "CAP_KILL",
                                                      "CAP_DAC_OVERRIDE", "CAP_CHOWN",
                                                      "CAP_FOWNER",       "CAP_FSETID",
                                                      "CAP_NET_RAW",      "CAP_NET_BIND_SERVICE",
                                                      "CAP_SETFCAP",      "CAP_AUDIT_WRITE"};

// containerd's and Docker's default set: what an unprivileged container
// gets (S21.10).
const std::vector<std::string> kDefaultCapabilities = {
    "CAP_CHOWN",   "CAP_DAC_OVERRIDE", "CAP_FSETID",           "CAP_FOWNER",
    "CAP_MKNOD",   "CAP_NET_RAW",      "CAP_SETGID",           "CAP_SETUID",
    "CAP_SETFCAP", "CAP_SETPCAP",      "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
    "CAP_KILL",    "CAP_AUDIT_WRITE"};

// The outer container's user namespace: container 0 is this host id.
constexpr int kOuterHostId = 300000;

enum class Outer { kPrivileged, kRuncDefaults, kUserNamespace };

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The files a binary needs at run time: itself and, when dynamic, every
// library ldd names (their real paths, the loader included).
std::vector<std::string> FilesWithLibraries(const std::string& binary) {
  std::vector<std::string> files = {binary};
  auto r = testing::RunCommand({"/usr/bin/ldd", binary});
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      if (w.front() == '/') files.push_back(w);
    }
  }
  return files;
}

class RuncEmbedded : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    runc_ = FindInPath("runc");
    if (runc_.empty()) GTEST_SKIP() << "runc not installed";
    dir_ = fs::path(::testing::TempDir()) / ("podvisor-embedded-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    for (const char* sub : {"outer/rootfs", "shared", "pod/images", "runc"}) {
      fs::create_directories(dir_ / sub);
    }
    fs::permissions(dir_ / "shared", fs::perms::all);
    id_ = "podvisor-embedded-" + std::to_string(getpid());
    auto r = testing::RunCommand({"/bin/bash",
                                  RequiredEnv("PODVISOR_SOURCE_ROOT") + "/scripts/make-rootfs.sh",
                                  (dir_ / "pod/images/bb").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    fs::copy_file(RequiredEnv("PODVISOR_TEST_HELPER"),
                  dir_ / "pod/images/bb/rootfs/podvisor-test-helper");
    std::ofstream(dir_ / "pod/pod.yaml") << R"(apiVersion: v1
kind: Pod
metadata: {name: nested}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 10
  volumes: [{name: shared, hostPath: {path: /shared, type: Directory}}]
  initContainers:
  - {name: init, image: bb, volumeMounts: [{name: shared, mountPath: /shared}],
     command: [/podvisor-test-helper, --log, init, --log-file, /shared/events.log, exit, "0"]}
  - {name: side, image: bb, restartPolicy: Always, volumeMounts: [{name: shared, mountPath: /shared}],
     command: [/podvisor-test-helper, --log, side, --log-file, /shared/events.log, trap-sigterm, "0", "0"]}
  containers:
  - {name: app, image: bb, volumeMounts: [{name: shared, mountPath: /shared}],
     command: [/bin/sh, -c, 'cat /proc/self/cgroup > /shared/app.cgroup; readlink /proc/self/ns/net > /shared/app.net; exec /podvisor-test-helper --log app --log-file /shared/events.log trap-sigterm 0 0']}
)";
  }

  void TearDown() override {
    if (dir_.empty()) return;
    if (outer_pid_ > 0) {
      ::kill(outer_pid_, SIGKILL);
      ::waitpid(outer_pid_, nullptr, 0);
    }
    testing::RunCommand({runc_, "--root", (dir_ / "runc").string(), "delete", "--force", id_});
    // runc removes the outer cgroup on delete; podvisor removed its own
    // below it. Whatever is left means a leak, and fails the test.
    for (const auto& entry : fs::directory_iterator("/sys/fs/cgroup")) {
      fs::path left = entry.path() / id_;
      if (fs::exists(left)) {
        ADD_FAILURE() << "cgroup left behind: " << left;
        ::rmdir(left.c_str());
      }
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // The outer container's config: `runc spec` with podvisor as its
  // process and, when `privileged`, the recipe of README "Embedding
  // podvisor"; otherwise runc's defaults (three capabilities, the cgroup
  // filesystem read-only, /proc partly masked).
  void WriteOuterBundle(Outer mode, const std::vector<std::string>& run_args = {}) {
    const bool privileged = mode == Outer::kPrivileged;
    auto r = testing::RunCommand({runc_, "spec", "--bundle", (dir_ / "outer").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json c = json::parse(ReadFile(dir_ / "outer/config.json"));
    fs::path root = dir_ / "outer/rootfs";
    for (const char* d : {"proc", "sys", "dev", "run", "tmp", "pod", "shared"}) {
      fs::create_directories(root / d);
    }
    c["root"] = {{"path", "rootfs"}, {"readonly", true}};
    c["process"]["terminal"] = false;
    c["process"]["args"] = {"/podvisor",   "run",           "--runtime", runc_,
                            "--state-dir", "/run/podvisor", "--log-dir", "/run/podvisor-logs"};
    for (const auto& a : run_args) c["process"]["args"].push_back(a);
    if (run_args.empty()) c["process"]["args"].push_back("--network=none");
    c["process"]["args"].push_back("/pod");
    json& mounts = c["mounts"];
    auto bind = [&](const std::string& source, const std::string& dest, bool ro) {
      mounts.push_back({{"destination", dest},
                        {"type", "bind"},
                        {"source", source},
                        {"options", ro ? json{"bind", "ro"} : json{"rbind", "rw"}}});
    };
    // The binaries, each file where the host has it; /podvisor is the
    // build's podvisor.
    std::set<std::string> files;
    for (const auto& f : FilesWithLibraries(RequiredEnv("PODVISOR"))) files.insert(f);
    for (const auto& f : FilesWithLibraries(runc_)) files.insert(f);
    files.erase(RequiredEnv("PODVISOR"));
    std::ofstream(root / "podvisor").close();
    bind(RequiredEnv("PODVISOR"), "/podvisor", true);
    for (const auto& f : files) {
      // Mount points inside a read-only root must exist beforehand.
      fs::create_directories(root / fs::path(f).relative_path().parent_path());
      std::ofstream(root / fs::path(f).relative_path()).close();
      bind(f, f, true);
    }
    bind((dir_ / "pod").string(), "/pod", false);
    bind((dir_ / "shared").string(), "/shared", false);
    mounts.push_back({{"destination", "/run"},
                      {"type", "tmpfs"},
                      {"source", "tmpfs"},
                      {"options", {"nosuid", "nodev", "mode=755"}}});
    c["linux"]["cgroupsPath"] = "/" + id_;
    if (privileged) {
      for (auto& [set, caps] : c["process"]["capabilities"].items()) caps = kRecipeCapabilities;
      c["process"]["noNewPrivileges"] = false;
      for (auto& m : mounts) {
        // The nested runtime makes the containers' cgroups.
        if (m["destination"] == "/sys/fs/cgroup")
          m["options"] = {"nosuid", "noexec", "nodev", "rw"};
      }
      // The nested runtime mounts a fresh /proc and /sys for each
      // container, which the kernel refuses where paths of them are
      // masked or read-only in this one.
      c["linux"]["maskedPaths"] = json::array();
      c["linux"]["readonlyPaths"] = json::array();
    }
    if (mode == Outer::kUserNamespace) {
      // S21.10: Kubernetes' hostUsers: false with procMount: Unmasked. The
      // default capabilities, the cgroup filesystem read-only as runc
      // mounts it; /proc and /sys unmasked, which the kernel requires of a
      // mount namespace before it lets a fresh proc or sysfs be mounted.
      c["linux"]["namespaces"].push_back({{"type", "user"}});
      c["linux"]["uidMappings"] = {{{"containerID", 0}, {"hostID", kOuterHostId}, {"size", 65536}}};
      c["linux"]["gidMappings"] = c["linux"]["uidMappings"];
      for (auto& [set, caps] : c["process"]["capabilities"].items()) caps = kDefaultCapabilities;
      c["linux"]["maskedPaths"] = json::array();
      c["linux"]["readonlyPaths"] = json::array();
      // The pod's files belong to the outer container's root, as an
      // image's files would.
      auto r = testing::RunCommand(
          {"/bin/chown", "-R", std::to_string(kOuterHostId) + ":" + std::to_string(kOuterHostId),
           (dir_ / "pod").string()});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    std::ofstream(dir_ / "outer/config.json") << c.dump(2);
  }

  // `runc run` in the foreground, as an orchestrator would; its output
  // (podvisor's) goes to dir_/outer.log.
  void StartOuter() {
    outer_pid_ = ::fork();
    ASSERT_GE(outer_pid_, 0);
    if (outer_pid_ == 0) {
      int out = ::open((dir_ / "outer.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int in = ::open("/dev/null", O_RDONLY);
      ::dup2(in, 0);
      ::dup2(out, 1);
      ::dup2(out, 2);
      std::string root = (dir_ / "runc").string(), bundle = (dir_ / "outer").string();
      ::execl(runc_.c_str(), runc_.c_str(), "--root", root.c_str(), "run", "--bundle",
              bundle.c_str(), id_.c_str(), nullptr);
      ::_exit(127);
    }
  }

  // The outer runc's exit status, or nullopt if it is still running after
  // `timeout`.
  std::optional<int> WaitOuter(std::chrono::seconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(outer_pid_, &status, WNOHANG) == outer_pid_) {
        outer_pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::nullopt;
  }

  bool WaitForLine(const std::string& text, std::chrono::seconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (ReadFile(dir_ / "shared/events.log").find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  std::string runc_, id_;
  fs::path dir_;
  pid_t outer_pid_ = -1;
};

TEST_F(RuncEmbedded, PodOfNestedContainersStopsThroughTheOuterRuntimesSigterm) {
  WriteOuterBundle(Outer::kPrivileged);
  StartOuter();
  ASSERT_TRUE(WaitForLine("app Started", std::chrono::seconds(60)))
      << "events: " << ReadFile(dir_ / "shared/events.log")
      << "\noutput: " << ReadFile(dir_ / "outer.log");
  // A nested container: its cgroup is below the outer container's.
  EXPECT_THAT(ReadFile(dir_ / "shared/app.cgroup"), HasSubstr("/" + id_ + "/"));

  auto r = testing::RunCommand({runc_, "--root", (dir_ / "runc").string(), "kill", id_, "TERM"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto code = WaitOuter(std::chrono::seconds(30));
  ASSERT_TRUE(code.has_value()) << "podvisor did not end after SIGTERM: "
                                << ReadFile(dir_ / "outer.log");
  // Both containers exit 0 on SIGTERM: the pod Succeeded.
  EXPECT_EQ(*code, 0) << ReadFile(dir_ / "outer.log");
  std::string events = ReadFile(dir_ / "shared/events.log");
  auto app_exit = events.find("app Exiting"), side_exit = events.find("side Exiting");
  ASSERT_NE(app_exit, std::string::npos) << events;
  ASSERT_NE(side_exit, std::string::npos) << events;
  EXPECT_LT(app_exit, side_exit) << "the sidecar stops after the app (S5.4): " << events;
  EXPECT_THAT(ReadFile(dir_ / "outer.log"), HasSubstr("pod nested ended: phase=Succeeded"));
}

TEST_F(RuncEmbedded, WithoutPrivilegesItFailsAtOnceNamingWhatIsMissing) {
  WriteOuterBundle(Outer::kRuncDefaults);
  auto start = std::chrono::steady_clock::now();
  StartOuter();
  auto code = WaitOuter(std::chrono::seconds(20));
  ASSERT_TRUE(code.has_value()) << "still running (a crash loop?): "
                                << ReadFile(dir_ / "outer.log");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  std::string out = ReadFile(dir_ / "outer.log");
  EXPECT_EQ(*code, 3) << out;
  EXPECT_THAT(out, HasSubstr("missing capabilities CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SETPCAP"));
  EXPECT_THAT(out, HasSubstr("the cgroup filesystem is mounted read-only at /sys/fs/cgroup"));
  EXPECT_THAT(out, Not(HasSubstr("pre_exec hook")));
  EXPECT_FALSE(fs::exists(dir_ / "shared/events.log")) << "a container ran";
}

// S21.10: PID 1 of an unprivileged container (a user namespace, the default
// capabilities, no host cgroup write access) runs the pod in a user
// namespace of its own, mapping the ids it has; the outer container's
// network namespace is the pod's (--network host: the outer container is
// the pod sandbox); the outer SIGTERM stops it.
TEST_F(RuncEmbedded, S21_10_UnprivilegedContainerWithAUserNamespaceRunsThePod) {
  WriteOuterBundle(Outer::kUserNamespace, {"--network", "host"});
  StartOuter();
  ASSERT_TRUE(WaitForLine("app Started", std::chrono::seconds(60)))
      << "events: " << ReadFile(dir_ / "shared/events.log")
      << "\noutput: " << ReadFile(dir_ / "outer.log");
  auto state = testing::RunCommand({runc_, "--root", (dir_ / "runc").string(), "state", id_});
  ASSERT_EQ(state.exit_code, 0) << state.err;
  const int outer_pid = json::parse(state.out).value("pid", 0);
  ASSERT_GT(outer_pid, 0);
  std::error_code ec;
  const std::string outer_net =
      fs::read_symlink("/proc/" + std::to_string(outer_pid) + "/ns/net", ec).string();
  std::string app_net = ReadFile(dir_ / "shared/app.net");
  while (!app_net.empty() && app_net.back() == '\n') app_net.pop_back();
  EXPECT_EQ(app_net, outer_net)
      << "the nested container is in the outer container's network namespace";
  // Container root of the nested pod is the outer container's root: on the
  // host, an id of the outer range, never 0.
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "shared/app.net").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, static_cast<uid_t>(kOuterHostId));
  const std::string out = ReadFile(dir_ / "outer.log");
  EXPECT_THAT(out, HasSubstr("podvisor runs in a user namespace of its own (own-ids"));
  EXPECT_THAT(out, HasSubstr("no pod cgroup and no cgroup limits"));

  auto r = testing::RunCommand({runc_, "--root", (dir_ / "runc").string(), "kill", id_, "TERM"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto code = WaitOuter(std::chrono::seconds(30));
  ASSERT_TRUE(code.has_value()) << "podvisor did not end after SIGTERM: "
                                << ReadFile(dir_ / "outer.log");
  EXPECT_EQ(*code, 0) << ReadFile(dir_ / "outer.log");
  EXPECT_THAT(ReadFile(dir_ / "outer.log"), HasSubstr("pod nested ended: phase=Succeeded"));
}

}  // namespace
}  // namespace podvisor::e2e
