// Reliability: a supervisor SIGKILLed mid-run leaves nothing that a later
// `podvisor run` of the same pod cannot clean up (supervisor/executor/recovery.h):
// the second run deletes the containers still running through the runtime,
// removes mounts, runtime state and cgroups, and then runs the pod
// normally; and a second run while the first is alive touches nothing.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tiers.h"

namespace podvisor::e2e {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;

bool Alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

// The container init pids the fake runtime recorded under the pod's --root.
std::vector<pid_t> FakeRuntimePids(const fs::path& root) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    std::ifstream in(entry.path() / "state.json");
    auto state = nlohmann::json::parse(in, nullptr, false);
    if (!state.is_discarded()) pids.push_back(state.value("pid", 0));
  }
  return pids;
}

std::string FourContainers(const std::string& name, bool shared_volume) {
  std::string mount = shared_volume ? ", volumeMounts: [{name: shared, mountPath: /shared}]" : "";
  return PodHeader(name, "Always", 2, shared_volume) + "  initContainers:\n" +
         PodSidecar("side", HelperCmd("side", "ignore-sigterm"), mount) +
         PodEntry("init", HelperCmd("init", "exit 0"), mount) + "  containers:\n" +
         PodEntry("a", HelperCmd("a", "trap-sigterm 0 0"), mount) +
         PodEntry("b", HelperCmd("b", "ignore-sigterm"), mount);
}

class Recovery : public FakeRuntimeTier {};

TEST_F(Recovery, SigkillMidRunThenRunAgainDeletesLeftoverContainersAndRunsThePod) {
  WritePod(FourContainers("recover", false));
  StartRun();
  WaitUntilRunning();
  fs::path root = state_dir_ / "recover" / "runtime";
  std::vector<pid_t> old = FakeRuntimePids(root);
  ASSERT_EQ(old.size(), 3u) << "side, a and b";  // the init has been deleted
  ASSERT_EQ(::kill(run_pid(), SIGKILL), 0);
  EXPECT_EQ(WaitRun(), -1);
  for (pid_t pid : old)
    ASSERT_TRUE(Alive(pid)) << "the killed supervisor's containers keep running";
  EXPECT_TRUE(fs::exists(state_dir_ / "recover" / "control.sock")) << "a stale socket is left";
  // Its kept record says what is known: nothing any more (phase Unknown,
  // as for a lost node), and it cannot be removed before recovery.
  auto lost = Client({"status", "-o", "jsonpath={.status.phase} {.status.reason}"});
  EXPECT_EQ(lost.out, "Unknown SupervisorLost") << lost.err;
  EXPECT_THAT(Client({"list"}).out, ::testing::ContainsRegex("recover +[0-9]/[0-9] +Unknown"));
  auto rm = Client({"rm", "recover"}, true);
  EXPECT_EQ(rm.exit_code, 1);
  EXPECT_THAT(rm.err, HasSubstr("did not end cleanly (phase Unknown)"));

  StartRun();
  WaitUntilRunning();
  for (pid_t pid : old) EXPECT_FALSE(Alive(pid)) << "leftover container " << pid << " still runs";
  EXPECT_THAT(
      RunStderr(),
      HasSubstr("recovered from a previous supervisor of this pod: 3 container(s) deleted"));
  EXPECT_EQ(FakeRuntimePids(root).size(), 3u);
  auto stop = Client({"stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_THAT(WaitRun(), AnyOf(0, 4)) << RunStderr();
  // TearDown checks that neither run left processes or runtime state.
}

TEST_F(Recovery, ASecondRunWhileTheFirstLivesChangesNothing) {
  WritePod(FourContainers("twice", false));
  StartRun();
  WaitUntilRunning();
  std::vector<std::string> argv = {RequiredEnv("PODVISOR"),
                                   "run",
                                   "--state-dir",
                                   state_dir_.string(),
                                   "--log-dir",
                                   log_dir_.string(),
                                   "--sandbox",
                                   "none",
                                   "--runtime",
                                   RequiredEnv("PODVISOR_FAKE_RUNTIME"),
                                   bundle_.string()};
  auto second = testing::RunCommand(argv);
  EXPECT_EQ(second.exit_code, 3) << second.err;
  EXPECT_THAT(second.err, HasSubstr("another supervisor is serving"));
  auto pod = Status();
  ASSERT_TRUE(pod) << "the first supervisor no longer answers";
  EXPECT_EQ(Phase(*pod), "Running");
  for (const char* c : {"side", "a", "b"}) {
    EXPECT_EQ(StateOf(*pod, c), "running") << c;
    EXPECT_EQ(FindContainerStatus(*pod, c)->value("restartCount", -1), 0) << c;
  }
  EXPECT_EQ(FakeRuntimePids(state_dir_ / "twice" / "runtime").size(), 3u);
  auto stop = Client({"stop", "--grace", "1"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_THAT(WaitRun(), AnyOf(0, 4)) << RunStderr();
}

// The pids of processes whose command line has every one of `words`.
std::vector<pid_t> ProcessesWith(const std::vector<std::string>& words) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    pid_t pid = std::atoi(entry.path().filename().c_str());
    if (pid <= 0) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (std::all_of(words.begin(), words.end(),
                    [&](const std::string& w) { return cmdline.find(w) != std::string::npos; })) {
      pids.push_back(pid);
    }
  }
  return pids;
}

TEST_F(Recovery, ACreateInFlightDiesWithItsSigkilledSupervisor) {
  // A create left running would go on making its container after the
  // recovery (the next run's, or a shim's delete) has looked.
  WritePod(PodHeader("inflight", "Always", 1) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "sleep 100000")));
  StartRun({}, {"FAKE_RUNTIME_HANG=create"});
  std::vector<std::string> words = {(state_dir_ / "inflight" / "runtime").string(), "create"};
  std::vector<pid_t> creates;
  for (int i = 0; i < 500 && creates.empty(); ++i) {
    creates = ProcessesWith(words);
    if (creates.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(creates.size(), 1u) << "the hung create";
  ASSERT_EQ(::kill(run_pid(), SIGKILL), 0);
  EXPECT_EQ(WaitRun(), -1);
  for (int i = 0; i < 500 && Alive(creates[0]); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(Alive(creates[0])) << "the create outlived its supervisor";
  StartRun();  // recovers, then runs the pod
  WaitUntilRunning();
  EXPECT_EQ(Client({"stop", "--grace", "1"}).exit_code, 0);
  EXPECT_THAT(WaitRun(), AnyOf(0, 4)) << RunStderr();
}

class RecoveryRunc : public RuncTier {};

// S15.5: the pod of a SIGKILLed supervisor is adopted by the next run:
// the same container processes go on, none is signalled.
TEST_F(RecoveryRunc, SigkillMidRunThenRunAgainAdoptsTheContainers) {
  WritePod(FourContainers("adopt-runc", true));
  StartRun();
  WaitUntilRunning();
  fs::path root = state_dir_ / "adopt-runc" / "runtime";
  auto list =
      testing::RunCommand({FindInPath("runc"), "--root", root.string(), "list", "-f", "json"});
  auto containers = nlohmann::json::parse(list.out, nullptr, false);
  ASSERT_TRUE(containers.is_array()) << list.out << list.err;
  // The running ones: the init container's instance may still be listed
  // (stopped) while its delete runs.
  std::vector<pid_t> old;
  for (const auto& c : containers) {
    if (c.value("status", "") == "running") old.push_back(c.value("pid", 0));
  }
  ASSERT_EQ(old.size(), 3u) << list.out;
  for (pid_t pid : old) ASSERT_TRUE(Alive(pid)) << "container " << pid << " before the SIGKILL";
  ASSERT_EQ(::kill(run_pid(), SIGKILL), 0);
  EXPECT_EQ(WaitRun(), -1);
  StartRun();
  WaitUntilRunning();
  for (pid_t pid : old) EXPECT_TRUE(Alive(pid)) << "adopted container " << pid << " was ended";
  EXPECT_THAT(RunStderr(), HasSubstr("Adopted: the supervisor before died; 3 running"));
  EXPECT_THAT(RunStderr(), Not(HasSubstr("recovered from a previous supervisor")));
  auto stop = Client({"stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_THAT(WaitRun(), AnyOf(0, 4)) << RunStderr();
  for (pid_t pid : old) EXPECT_FALSE(Alive(pid)) << "container " << pid << " outlived the stop";
  // TearDown: no runc containers, mounts, cgroups or processes left.
}

// Without the holder (killed too) there is nothing to adopt from: the
// next run recovers (S15.6).
TEST_F(RecoveryRunc, SigkillMidRunThenRunAgainCleansContainersMountsAndCgroups) {
  WritePod(FourContainers("recover-runc", true));
  StartRun();
  WaitUntilRunning();
  fs::path root = state_dir_ / "recover-runc" / "runtime";
  auto list =
      testing::RunCommand({FindInPath("runc"), "--root", root.string(), "list", "-f", "json"});
  auto containers = nlohmann::json::parse(list.out, nullptr, false);
  ASSERT_TRUE(containers.is_array()) << list.out << list.err;
  ASSERT_EQ(containers.size(), 3u) << list.out;
  std::vector<pid_t> old;
  for (const auto& c : containers) old.push_back(c.value("pid", 0));
  ASSERT_EQ(::kill(run_pid(), SIGKILL), 0);
  EXPECT_EQ(WaitRun(), -1);
  for (pid_t pid : old)
    ASSERT_TRUE(Alive(pid)) << "the killed supervisor's containers keep running";
  ASSERT_NE(EndKeptHolder(state_dir_ / "recover-runc"), 0) << "no sandbox holder was kept";
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::stringstream mounts;
  mounts << mountinfo.rdbuf();
  ASSERT_THAT(mounts.str(), HasSubstr((state_dir_ / "recover-runc").string()))
      << "overlays are left";

  StartRun();
  WaitUntilRunning();
  for (pid_t pid : old) EXPECT_FALSE(Alive(pid)) << "leftover container " << pid << " still runs";
  EXPECT_THAT(
      RunStderr(),
      HasSubstr("recovered from a previous supervisor of this pod: 3 container(s) deleted"));
  auto stop = Client({"stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_THAT(WaitRun(), AnyOf(0, 4)) << RunStderr();
  // TearDown: no runc containers, mounts, cgroups or processes left.
}

}  // namespace
}  // namespace podvisor::e2e
