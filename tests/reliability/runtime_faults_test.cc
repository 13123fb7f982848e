// Reliability: runtime faults never take the supervisor down. Each fault
// ends in the documented outcome (SEMANTICS S2.3, S9.2; docs/INTERFACE.md exit
// statuses) and a failed create or start is retried with backoff (S4):
//   runtime binary missing at start     exit 3, nothing left behind
//   runtime binary gone mid-run         CreateContainerError, retried
//   `create` failing                    CreateContainerError, retried with growing delays
//   `start` failing                     RunContainerError, lastState StartError (128), restarts
//   counted image rootfs missing                exit 2 naming the rootfs, nothing started a runtime
//   that hangs                killed at --runtime-timeout, then as above
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tiers.h"

namespace podvisor::e2e {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

// The waiting reason and message of `container`, "" when not waiting.
std::pair<std::string, std::string> Waiting(const nlohmann::json& pod,
                                            const std::string& container) {
  const auto* c = FindContainerStatus(pod, container);
  if (!c || !c->contains("state") || !(*c)["state"].contains("waiting")) return {};
  return {(*c)["state"]["waiting"].value("reason", ""),
          (*c)["state"]["waiting"].value("message", "")};
}

class RuntimeFaults : public FakeRuntimeTier {
 protected:
  // The times of the container's "Failed" warnings (one per failed attempt).
  std::vector<Clock::time_point> FailureTimes(const std::string& container) {
    std::vector<Clock::time_point> out;
    for (const auto& e : PodEvents()) {
      if (e.value("object", "") == "container/" + container && e.value("reason", "") == "Failed") {
        std::tm t{};
        int ms = 0;
        std::string stamp = e.value("time", "");
        if (std::sscanf(stamp.c_str(), "%d-%d-%dT%d:%d:%d.%3d", &t.tm_year, &t.tm_mon, &t.tm_mday,
                        &t.tm_hour, &t.tm_min, &t.tm_sec, &ms) < 6) {
          continue;
        }
        t.tm_year -= 1900;
        t.tm_mon -= 1;
        out.push_back(Clock::from_time_t(timegm(&t)) + milliseconds(ms));
      }
    }
    return out;
  }

  // Waits until `container` failed `n` times; returns the failure times.
  std::vector<Clock::time_point> WaitForFailures(const std::string& container, std::size_t n) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    std::vector<Clock::time_point> times;
    while ((times = FailureTimes(container)).size() < n &&
           std::chrono::steady_clock::now() < deadline) {
      if (!RunIsAlive()) break;
      std::this_thread::sleep_for(milliseconds(50));
    }
    EXPECT_GE(times.size(), n) << "failures of " << container << "\n" << RunStderr();
    return times;
  }

  // S4.1: the first retry is immediate, then each waits at least the
  // doubling backoff (here from 200 ms) after the previous failure.
  void ExpectBackoff(const std::vector<Clock::time_point>& times) {
    ASSERT_GE(times.size(), 4u);
    EXPECT_GE(MsBetween(times[1], times[2]), 200 - 20);
    EXPECT_GE(MsBetween(times[2], times[3]), 400 - 20);
  }

  void StopAndExpectEnd() {
    auto stop = Client({"stop"});
    EXPECT_EQ(stop.exit_code, 0) << stop.err;
    EXPECT_THAT(WaitRun(), AnyOf(0, 4)) << RunStderr();
  }
};

TEST_F(RuntimeFaults, S2_3_RuntimeBinaryMissingAtStartExitsThreeAndLeavesNothing) {
  WritePod(PodHeader("no-runtime", "Always", 1) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "sleep 100000")));
  std::vector<std::string> argv = {RequiredEnv("PODVISOR"),
                                   "run",
                                   "--state-dir",
                                   state_dir_.string(),
                                   "--log-dir",
                                   log_dir_.string(),
                                   "--sandbox",
                                   "none",
                                   "--runtime",
                                   (dir_ / "no-such-runtime").string(),
                                   bundle_.string()};
  auto r = testing::RunCommand(argv);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("no-such-runtime"));
  EXPECT_FALSE(fs::exists(state_dir_ / "no-runtime")) << "a pod that cannot run leaves no state";
  EXPECT_TRUE(HelperEvents().empty());
}

// A private copy of the fake runtime, to be taken away while the pod runs.
class RuntimeGone : public RuntimeFaults {
 protected:
  void SetUp() override {
    copy_dir_ = fs::path(::testing::TempDir()) / ("podvisor-rt-" + std::to_string(getpid()));
    fs::create_directories(copy_dir_);
    fs::copy_file(RequiredEnv("PODVISOR_FAKE_RUNTIME"), copy_dir_ / "fake-runtime",
                  fs::copy_options::overwrite_existing);
    RuntimeFaults::SetUp();
  }
  void TearDown() override {
    RuntimeFaults::TearDown();
    fs::remove_all(copy_dir_);
  }
  TierConfig Tier() const override {
    TierConfig t = RuntimeFaults::Tier();
    t.runtime = (copy_dir_ / "fake-runtime").string();
    return t;
  }
  fs::path copy_dir_;
};

TEST_F(RuntimeGone, S2_3_RuntimeBinaryGoneMidRunIsCreateContainerErrorAndRetried) {
  fs::path runtime = copy_dir_ / "fake-runtime";
  WritePod(PodHeader("runtime-gone", "Always", 1) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "sleep 300")));
  StartRun({"--backoff-initial", "200ms"});
  ASSERT_TRUE(WaitForHelperEvent("app Started"));
  fs::rename(runtime, copy_dir_ / "hidden");
  WaitForStatus(
      [](const nlohmann::json& p) { return Waiting(p, "app").first == "CreateContainerError"; },
      "app waiting with CreateContainerError");
  auto times = WaitForFailures("app", 4);
  EXPECT_TRUE(RunIsAlive());
  ExpectBackoff(times);
  auto pod = Status();
  ASSERT_TRUE(pod);
  EXPECT_THAT(Waiting(*pod, "app").second, HasSubstr("fake-runtime"));
  // The runtime is back: the next attempt starts the container again.
  fs::rename(copy_dir_ / "hidden", runtime);
  ASSERT_TRUE(WaitForHelperEvent("app Started", 2, std::chrono::seconds(20)));
  StopAndExpectEnd();
}

TEST_F(RuntimeFaults, S2_3_CreateFailingIsCreateContainerErrorWithBackoff) {
  WritePod(PodHeader("create-fails", "Always", 1) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "sleep 100000")));
  StartRun({"--backoff-initial", "200ms"}, {"FAKE_RUNTIME_FAIL=create"});
  auto pod = WaitForStatus(
      [](const nlohmann::json& p) { return Waiting(p, "app").first == "CreateContainerError"; },
      "app waiting with CreateContainerError");
  EXPECT_THAT(Waiting(pod, "app").second, HasSubstr("injected failure"));
  ExpectBackoff(WaitForFailures("app", 4));
  EXPECT_EQ(CountOf(HelperEvents(), "app Started"), 0);
  EXPECT_TRUE(RunIsAlive());
  StopAndExpectEnd();
}

TEST_F(RuntimeFaults, S2_3_StartFailingIsRunContainerErrorWithStartErrorAndBackoff) {
  WritePod(PodHeader("start-fails", "Always", 1) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "sleep 100000")));
  StartRun({"--backoff-initial", "200ms"}, {"FAKE_RUNTIME_FAIL=start"});
  auto pod = WaitForStatus(
      [](const nlohmann::json& p) {
        const auto* c = FindContainerStatus(p, "app");
        return Waiting(p, "app").first == "RunContainerError" && c->value("restartCount", 0) >= 2;
      },
      "app waiting with RunContainerError after two restarts");
  const auto* app = FindContainerStatus(pod, "app");
  ASSERT_TRUE(app);
  EXPECT_THAT(Waiting(pod, "app").second, HasSubstr("injected failure"));
  // S9.2: the failed instance is terminated StartError, exit code 128.
  EXPECT_EQ((*app)["lastState"]["terminated"].value("reason", ""), "StartError") << app->dump(2);
  EXPECT_EQ((*app)["lastState"]["terminated"].value("exitCode", -1), 128);
  ExpectBackoff(WaitForFailures("app", 4));
  // The container process was created, never started: it never ran.
  EXPECT_EQ(CountOf(HelperEvents(), "app Started"), 0);
  StopAndExpectEnd();
}

TEST_F(RuntimeFaults, ImageRootfsMissingExitsTwoNamingItAndStartsNothing) {
  fs::remove_all(bundle_ / "images" / "img" / "rootfs");
  WritePod(PodHeader("no-rootfs", "Never", 1) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "exit 0")));
  EXPECT_EQ(Run(), 2) << RunStderr();
  EXPECT_THAT(RunStderr(), HasSubstr("image directory " + (bundle_ / "images" / "img").string() +
                                     " has no rootfs/ directory"));
  EXPECT_TRUE(HelperEvents().empty());
  EXPECT_FALSE(fs::exists(state_dir_ / "no-rootfs" / "control.sock"));
}

TEST_F(RuntimeFaults, HangingCreateIsKilledAtTheRuntimeTimeoutAndRetried) {
  WritePod(PodHeader("create-hangs", "Always", 1) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "sleep 100000")));
  StartRun({"--backoff-initial", "200ms", "--runtime-timeout", "1s"}, {"FAKE_RUNTIME_HANG=create"});
  auto pod = WaitForStatus(
      [](const nlohmann::json& p) { return Waiting(p, "app").first == "CreateContainerError"; },
      "app waiting with CreateContainerError", std::chrono::seconds(20));
  EXPECT_THAT(Waiting(pod, "app").second, HasSubstr("runtime create did not finish within 1s"));
  WaitForFailures("app", 2);
  EXPECT_TRUE(RunIsAlive());
  // A stop while a create hangs still ends: the hung call is killed at its
  // deadline at the latest.
  auto t0 = std::chrono::steady_clock::now();
  StopAndExpectEnd();
  EXPECT_LE(std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0).count(),
            6000);
}

TEST_F(RuntimeFaults, HangingStartIsKilledAtTheRuntimeTimeoutAsRunContainerError) {
  WritePod(PodHeader("start-hangs", "Always", 1) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "sleep 100000")));
  StartRun({"--backoff-initial", "200ms", "--runtime-timeout", "1s"}, {"FAKE_RUNTIME_HANG=start"});
  auto pod = WaitForStatus(
      [](const nlohmann::json& p) { return Waiting(p, "app").first == "RunContainerError"; },
      "app waiting with RunContainerError", std::chrono::seconds(20));
  EXPECT_THAT(Waiting(pod, "app").second, HasSubstr("runtime start did not finish within 1s"));
  EXPECT_EQ(CountOf(HelperEvents(), "app Started"), 0);
  EXPECT_TRUE(RunIsAlive());
  StopAndExpectEnd();
}

// S14.41: a stop with a runtime that hangs ends in about the grace, not
// after --runtime-timeout for each call (4 minutes by default before).
TEST_F(RuntimeFaults, S14_41_AStopCutsAHungCreateAtTheGrace) {
  constexpr int kGrace = 3;
  WritePod(PodHeader("create-hangs-stop", "Always", kGrace) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "sleep 100000")));
  const fs::path calls = scratch_ / "calls";
  StartRun({"--runtime-timeout", "120s"},
           {"FAKE_RUNTIME_HANG=create", "FAKE_RUNTIME_CALLS=" + calls.string()});
  // The create is in flight (and hangs).
  for (int i = 0; i < 500 && ReadScratch("calls").find("create") == std::string::npos; ++i) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_NE(ReadScratch("calls").find("create"), std::string::npos) << RunStderr();
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(run_pid(), SIGTERM), 0);
  int status = WaitRun(std::chrono::seconds(kGrace + 15));
  auto took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0);
  EXPECT_NE(status, -1) << "still running after " << kGrace + 15 << " s\n" << RunStderr();
  // The create is cut at the grace (3 s), then the teardown's calls get the
  // 2 s floor each at most.
  EXPECT_GE(took.count(), kGrace * 1000 - 100);
  EXPECT_LE(took.count(), (kGrace + 2 + 2 + 3) * 1000) << RunStderr();
  EXPECT_THAT(RunStderr(), HasSubstr("runtime create did not finish within"));
}

TEST_F(RuntimeFaults, S14_41_TheTeardownsDeletesEndWithTheGrace) {
  constexpr int kGrace = 3;
  WritePod(PodHeader("delete-hangs-stop", "Always", kGrace) + "  containers:\n" +
           PodEntry("app", HelperCmd("app", "sleep 100000")));
  StartRun({"--runtime-timeout", "120s"}, {"FAKE_RUNTIME_HANG=delete"});
  ASSERT_TRUE(WaitForHelperEvent("app Started")) << RunStderr();
  WaitUntilRunning();
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(Client({"stop", "--no-wait"}).exit_code, 0);
  int status = WaitRun(std::chrono::seconds(kGrace + 20));
  auto took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0);
  EXPECT_EQ(status, 4) << RunStderr();
  // The app dies of SIGTERM at once; its delete, started after the
  // termination began, ends with the grace (3 s); the end's delete --force
  // of what the runtime still knows gets the 2 s floor (S14.11).
  EXPECT_GE(took.count(), kGrace * 1000 - 100);
  EXPECT_LE(took.count(), (kGrace + 2 + 3) * 1000) << RunStderr();
  EXPECT_THAT(RunStderr(), HasSubstr("runtime delete did not finish within"));
}

}  // namespace
}  // namespace podvisor::e2e
