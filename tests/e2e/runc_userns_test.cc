// Test tier 3 (TESTING.md) with runc: pods in their own user namespace
// (hostUsers: false, docs/SEMANTICS.md S20): the container's uid_map, the
// host uid of its processes, disjoint blocks for two pods of two state
// directories running at once, files container root writes to a hostPath
// owned by host root on disk, a 0400 secret its user reads, the refusal
// of hostNetwork with it, and what is left after each pod, also after a
// SIGKILLed supervisor (the harness checks mounts, processes, runtime
// state and the host-wide id claims). Needs root; skipped otherwise.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr const char* kClaims = "/run/lock/podvisor/userns";

std::string ReadAll(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The block a uid_map text maps container id 0 to: {start, size}.
std::pair<long long, long long> RootMapping(const std::string& uid_map) {
  std::istringstream in(uid_map);
  long long inside = -1, host = -1, size = -1;
  in >> inside >> host >> size;
  EXPECT_EQ(inside, 0) << uid_map;
  return {host, size};
}

// The claims of the id blocks that name `dir` (a test's directory).
std::vector<fs::path> ClaimsNaming(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& claim : fs::directory_iterator(kClaims, ec)) {
    if (ReadAll(claim.path()).find(dir.string() + "/") != std::string::npos) {
      out.push_back(claim.path());
    }
  }
  return out;
}

// The host pid of a pod's container init, from runc's state.
pid_t InitPid(const fs::path& state_dir, const std::string& pod) {
  auto r = testing::RunCommand(
      {FindInPath("runc"), "--root", (state_dir / pod / "runtime").string(), "list", "-f", "json"});
  auto list = nlohmann::json::parse(r.out, nullptr, false);
  if (!list.is_array() || list.empty()) return -1;
  for (const auto& c : list) {
    if (c.value("status", "") == "running") return c.value("pid", -1);
  }
  return -1;
}

// The first field of /proc/<pid>/status's Uid line (the real uid).
long long HostUidOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Uid:", 0) == 0) return std::stoll(line.substr(4));
  }
  return -1;
}

bool WaitForFile(const fs::path& path, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(path) && fs::file_size(path) > 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

class RuncUserns : public RuncE2eTest {
 protected:
  // A pod whose container writes its maps and its ids to /shared, then
  // waits for /shared/<name>.stop (or 30 s).
  static std::string MapsPod(const std::string& name, const std::string& shared) {
    return R"(apiVersion: v1
kind: Pod
metadata: {name: )" +
           name + R"(}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  hostUsers: false
  volumes:
    - {name: shared, hostPath: {path: ")" +
           shared + R"(", type: Directory}}
  containers:
    - name: app
      image: img
      command: [/bin/sh, -c, "ls /sys/class/net > /shared/)" +
           name + R"(.net; cat /proc/self/uid_map > /shared/)" + name +
           R"(.uid_map; cat /proc/self/gid_map > /shared/)" + name +
           R"(.gid_map; id -u > /shared/)" + name +
           R"(.id; i=0; while [ $i -lt 300 ] && [ ! -e /shared/)" + name +
           R"(.stop ]; do sleep 0.1; i=$((i+1)); done"]
      volumeMounts: [{name: shared, mountPath: /shared}]
)";
  }
};

// S20.3, S20.5, S20.7, S20.8: container root is uid 0 inside, the block's
// first id on the host; the status, describe and the events say the block.
TEST_F(RuncUserns, S20_5_ContainerRootIsTheBlocksFirstHostId) {
  WritePod(MapsPod("maps", scratch_.string()));
  StartRun();
  ASSERT_TRUE(WaitForFile(scratch_ / "maps.id", std::chrono::seconds(20))) << RunStderr();
  const auto [start, size] = RootMapping(ReadAll(scratch_ / "maps.uid_map"));
  EXPECT_GE(start, 65536);
  EXPECT_EQ(start % 65536, 0);
  EXPECT_EQ(size, 65536);
  EXPECT_EQ(RootMapping(ReadAll(scratch_ / "maps.gid_map")), std::make_pair(start, size));
  EXPECT_EQ(ReadScratch("maps.id"), "0");
  // /sys is the pod's own sysfs, of the network namespace its user
  // namespace owns: only the pod's loopback, none of the host's links.
  EXPECT_EQ(ReadScratch("maps.net"), "lo");
  // From the host, the container's process is not root.
  const pid_t init = InitPid(state_dir_, "maps");
  ASSERT_GT(init, 0);
  EXPECT_EQ(HostUidOf(init), start);
  // The claim of the block names this pod, and is held.
  auto claims = ClaimsNaming(dir_);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].filename().string(), std::to_string(start));
  const std::string ids = std::to_string(start) + "-" + std::to_string(start + size - 1);
  auto status = Status();
  ASSERT_TRUE(status);
  EXPECT_EQ((*status)["metadata"]["annotations"]["podvisor.io/user-namespace"], ids);
  auto describe = Client({"describe", "maps"});
  EXPECT_THAT(describe.out, HasSubstr("User Namespace:"));
  EXPECT_THAT(describe.out, HasSubstr("host ids " + ids + " (uids and gids)"));
  bool announced = false;
  for (const auto& e : PodEvents()) {
    if (e.value("reason", "") == "UserNamespace") {
      announced = true;
      EXPECT_THAT(e.value("message", ""), HasSubstr(ids));
    }
  }
  EXPECT_TRUE(announced) << "no UserNamespace event";
  std::ofstream(scratch_ / "maps.stop") << "";
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  EXPECT_THAT(ClaimsNaming(dir_), IsEmpty()) << "the block is released at the end";
}

// S20.4: two pods of two state directories, running at once, get
// disjoint blocks.
TEST_F(RuncUserns, S20_4_TwoPodsRunningAtOnceGetDisjointBlocks) {
  WritePod(MapsPod("first", scratch_.string()));
  StartRun();
  ASSERT_TRUE(WaitForFile(scratch_ / "first.id", std::chrono::seconds(20))) << RunStderr();
  // The second pod: its own bundle and state directory, the same image.
  const fs::path bundle2 = dir_ / "bundle2";
  fs::create_directories(bundle2 / "images");
  fs::copy(bundle_ / "images" / "img", bundle2 / "images" / "img",
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  std::ofstream(bundle2 / "pod.yaml") << MapsPod("second", scratch_.string());
  const fs::path state2 = dir_ / "state2";
  std::vector<std::string> argv = {RequiredEnv("PODVISOR"),
                                   "run",
                                   "--state-dir",
                                   state2.string(),
                                   "--log-dir",
                                   (dir_ / "logs2").string(),
                                   "--runtime",
                                   FindInPath("runc"),
                                   "--cgroup-parent",
                                   "/podvisor-e2e-" + std::to_string(::getpid()),
                                   "--network",
                                   "none",
                                   bundle2.string()};
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string err_file = (dir_ / "run2.stderr").string();
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, err_file.c_str(), O_WRONLY | O_CREAT, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t second = -1;
  ASSERT_EQ(posix_spawn(&second, cargv[0], &actions, nullptr, cargv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  const bool second_started = WaitForFile(scratch_ / "second.id", std::chrono::seconds(20));
  EXPECT_TRUE(second_started) << ReadAll(err_file);
  if (second_started) {
    const auto first_block = RootMapping(ReadAll(scratch_ / "first.uid_map"));
    const auto second_block = RootMapping(ReadAll(scratch_ / "second.uid_map"));
    EXPECT_EQ(first_block.second, 65536);
    EXPECT_EQ(second_block.second, 65536);
    // Disjoint: one ends before the other starts.
    EXPECT_TRUE(first_block.first + first_block.second <= second_block.first ||
                second_block.first + second_block.second <= first_block.first)
        << first_block.first << " and " << second_block.first;
    EXPECT_EQ(ClaimsNaming(dir_).size(), 2u);
  }
  std::ofstream(scratch_ / "first.stop") << "";
  std::ofstream(scratch_ / "second.stop") << "";
  int status = 0;
  ASSERT_EQ(::waitpid(second, &status, 0), second);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadAll(err_file);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  EXPECT_THAT(ClaimsNaming(dir_), IsEmpty());
  auto left = testing::RunCommand(
      {FindInPath("runc"), "--root", (state2 / "second" / "runtime").string(), "list", "-q"});
  EXPECT_EQ(left.out, "");
}

// S20.20 (the idmapped volumes) as this side sees it: a file container
// root writes to a hostPath is host root's on disk, and a 0400 secret is
// read by its user, container root; S20.10: container root reopens its
// stdout.
TEST_F(RuncUserns, S20_5_FilesOfContainerRootAreHostRootsAndA0400SecretIsRead) {
  WritePod(R"(apiVersion: v1
kind: Secret
metadata: {name: token}
stringData: {value: s3cr3t}
---
apiVersion: v1
kind: Pod
metadata: {name: files}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  hostUsers: false
  volumes:
    - {name: shared, hostPath: {path: "{{HOSTDIR}}", type: Directory}}
    - {name: token, secret: {secretName: token, defaultMode: 0400}}
  containers:
    - name: app
      image: img
      command: [/bin/sh, -c, "echo reopened > /dev/stdout; echo written > /shared/by-root; cat /token/value > /shared/secret 2>&1; stat -c '%u %a' /token/..data/value > /shared/secret-stat 2>&1"]
      volumeMounts:
        - {name: shared, mountPath: /shared}
        - {name: token, mountPath: /token}
)");
  EXPECT_EQ(Run(), 0) << RunStderr();
  struct stat st {};
  ASSERT_EQ(::stat((scratch_ / "by-root").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u) << "container root's file is host root's on disk";
  EXPECT_EQ(st.st_gid, 0u);
  EXPECT_EQ(ReadScratch("secret"), "s3cr3t");
  EXPECT_EQ(ReadScratch("secret-stat"), "0 400");
  // S20.10: the log pipe is the mapped root's: reopening it works.
  EXPECT_THAT(Client({"logs", "files"}, /*with_log_dir=*/true).out, HasSubstr("reopened"));
}

// S20.10: an exec probe's output pipe is the mapped root's too: a probe
// that reopens its stdout succeeds, so the container becomes ready.
TEST_F(RuncUserns, S20_10_AnExecProbeMayReopenItsStdout) {
  WritePod(R"(apiVersion: v1
kind: Pod
metadata: {name: probed}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  hostUsers: false
  volumes:
    - {name: shared, hostPath: {path: "{{HOSTDIR}}", type: Directory}}
  containers:
    - name: app
      image: img
      command: [/bin/sh, -c, "i=0; while [ $i -lt 300 ] && [ ! -e /shared/stop ]; do sleep 0.1; i=$((i+1)); done"]
      volumeMounts: [{name: shared, mountPath: /shared}]
      readinessProbe:
        exec: {command: [/bin/sh, -c, "echo probed > /dev/stdout"]}
        periodSeconds: 1
)");
  StartRun();
  WaitUntilRunning();
  std::ofstream(scratch_ / "stop") << "";
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
}

// S20.1: hostNetwork with hostUsers: false is refused by validate and by
// run (exit 2), before anything is made.
TEST_F(RuncUserns, S20_1_HostNetworkWithHostUsersFalseIsRefusedBeforeAnythingStarts) {
  WritePod(R"(apiVersion: v1
kind: Pod
metadata: {name: refused}
spec:
  hostUsers: false
  hostNetwork: true
  containers:
    - {name: app, image: img, command: [/bin/true]}
)");
  auto validate = testing::RunCommand({RequiredEnv("PODVISOR"), "validate", bundle_.string()});
  EXPECT_EQ(validate.exit_code, 2) << validate.out << validate.err;
  EXPECT_THAT(validate.out + validate.err,
              HasSubstr("spec.hostNetwork: Forbidden: when `hostUsers` is false"));
  EXPECT_EQ(Run(), 2) << RunStderr();
  EXPECT_THAT(RunStderr(), HasSubstr("spec.hostNetwork: Forbidden: when `hostUsers` is false"));
  EXPECT_FALSE(fs::exists(state_dir_ / "refused")) << "nothing made";
  EXPECT_THAT(ClaimsNaming(dir_), IsEmpty());
}

// S20.4, S20.6: a SIGKILLed supervisor's pod is adopted with its block
// (read back from the holder); once the holder is gone too, the next run
// recovers the pod and its block's claim, and nothing is left at the end.
TEST_F(RuncUserns, S20_6_AfterASigkilledSupervisorTheBlockIsAdoptedOrReleased) {
  WritePod(MapsPod("crash", scratch_.string()));
  StartRun();
  ASSERT_TRUE(WaitForFile(scratch_ / "crash.id", std::chrono::seconds(20))) << RunStderr();
  const auto block = RootMapping(ReadAll(scratch_ / "crash.uid_map"));
  WaitForStatus([](const nlohmann::json& p) { return Phase(p) == "Running"; }, "Running");
  ::kill(run_pid(), SIGKILL);
  WaitRun();
  // The holder keeps the claim held: adopted with the same block.
  auto claims = ClaimsNaming(dir_);
  ASSERT_EQ(claims.size(), 1u);
  StartRun();
  auto adopted = WaitForStatus([](const nlohmann::json& p) { return Phase(p) == "Running"; },
                               "adopted and Running");
  const std::string ids =
      std::to_string(block.first) + "-" + std::to_string(block.first + block.second - 1);
  EXPECT_EQ(adopted["metadata"]["annotations"]["podvisor.io/user-namespace"], ids);
  // SIGKILL again, and the holder with it: the next run recovers.
  ::kill(run_pid(), SIGKILL);
  WaitRun();
  EXPECT_GT(EndKeptHolder(state_dir_ / "crash"), 0);
  fs::remove(scratch_ / "crash.id");
  StartRun();
  ASSERT_TRUE(WaitForFile(scratch_ / "crash.id", std::chrono::seconds(20))) << RunStderr();
  EXPECT_EQ(ClaimsNaming(dir_).size(), 1u) << "the left claim was released, one taken anew";
  std::ofstream(scratch_ / "crash.stop") << "";
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  EXPECT_THAT(ClaimsNaming(dir_), IsEmpty());
}

}  // namespace
}  // namespace podvisor::e2e
