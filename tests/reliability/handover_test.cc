// Reliability (docs/SEMANTICS.md S15): a pod that outlives its supervisor,
// over and over.
//   - 100 upgrades in a row of a pod with a chatty container and a
//     readiness probe: restarts 0, readiness flips 0, lost or doubled log
//     lines 0, the same pids throughout;
//   - 10 times: the supervisor SIGKILLed and `run` again: adopted each time
//     (the Adopted event, the same pids, restart counts 0), every log line
//     once, nothing left at the end.
#include <signal.h>

#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../e2e/handover_support.h"
#include "tiers.h"

namespace podvisor::e2e {
namespace {

using namespace handover;  // NOLINT(google-build-using-namespace)
using ::testing::AnyOf;
using ::testing::HasSubstr;

std::string ChattyPod(const std::string& name) {
  return PodHeader(name, "Always", 5) + "  containers:\n" +
         PodEntry("chat", ChattyCmd(),
                  ", readinessProbe: {exec: {command: " + HelperCmd("probe", "exit 0") +
                      "}, periodSeconds: 1}") +
         PodEntry("quiet", HelperCmd("quiet", "trap-sigterm 0 0"));
}

template <class Tier>
class HandoverRows : public Tier {
 protected:
  std::map<std::string, pid_t> Pids() const {
    return FakeRuntimePids(this->state_dir_ / this->pod_name_ / "runtime");
  }
  void ExpectEveryLineOnce() {
    NumberedLines lines = ReadNumberedLines(this->log_dir_, this->pod_name_, "chat");
    EXPECT_GT(lines.count, 0);
    EXPECT_TRUE(lines.problems.empty()) << lines.count << " lines, n " << lines.first << " to n "
                                        << lines.last << ":" << lines.Problems();
  }
};

class UpgradeRows : public HandoverRows<FakeRuntimeTier> {};

TEST_F(UpgradeRows, S15_2_AHundredUpgradesInARowLoseNothing) {
  WritePod(ChattyPod("hundred"));
  StartRun();
  auto first = WaitUntilRunning();
  const auto pids = Pids();
  ASSERT_EQ(pids.size(), 2u) << PidsText(pids);
  std::set<std::string> ready_seen = {ReadyAndSince(first)};
  int failed = 0;
  for (int i = 1; i <= 100 && failed < 3; ++i) {
    auto up = Client({"upgrade", pod_name_});
    if (up.exit_code != 0) {
      ++failed;
      ADD_FAILURE() << "upgrade " << i << ": " << up.err;
      continue;
    }
    auto pod = Status();
    ASSERT_TRUE(pod) << "upgrade " << i;
    ready_seen.insert(ReadyAndSince(*pod));
    EXPECT_EQ(RestartCount(*pod, "chat"), 0) << "upgrade " << i;
    EXPECT_EQ(RestartCount(*pod, "quiet"), 0) << "upgrade " << i;
    if (i % 10 == 0) {
      EXPECT_EQ(Pids(), pids) << "upgrade " << i;
    }
  }
  EXPECT_TRUE(RunIsAlive());
  auto summary = nlohmann::json::parse(RawControlRequest("{\"op\":\"summary\"}\n"), nullptr, false);
  EXPECT_EQ(summary["supervisor"].value("upgrades", -1), 100) << summary.dump();
  EXPECT_EQ(summary["supervisor"].value("pid", 0), run_pid());
  EXPECT_EQ(ready_seen.size(), 1u) << "the Ready condition flipped";
  EXPECT_THAT(*ready_seen.begin(), ::testing::StartsWith("True "));
  EXPECT_EQ(Pids(), pids);
  EXPECT_EQ(WithReason(PodEvents(), "Upgraded").size(), 100u);
  for (const char* reason :
       {"Killing", "BackOff", "Unhealthy", "UpgradeRefused", "UpgradeFailed"}) {
    EXPECT_THAT(WithReason(PodEvents(), reason), ::testing::IsEmpty()) << reason;
  }
  EXPECT_EQ(CountOf(HelperEvents(), "quiet Started"), 1);
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_THAT(WaitRun(std::chrono::seconds(60)), AnyOf(0, 4)) << RunStderr();
  ExpectEveryLineOnce();
}

// Adoption needs the namespaces sandbox's holder (S15.4).
class AdoptionTier : public FakeRuntimeTier {
 protected:
  TierConfig Tier() const override {
    TierConfig t = FakeRuntimeTier::Tier();
    t.extra_run_args = {"--sandbox", "namespaces"};
    return t;
  }
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root: adoption needs the sandbox holder (--sandbox namespaces)";
    }
    FakeRuntimeTier::SetUp();
  }
};
class AdoptRows : public HandoverRows<AdoptionTier> {};

TEST_F(AdoptRows, S15_5_TenSigkillsTenAdoptions) {
  WritePod(ChattyPod("tenkills"));
  StartRun();
  auto first = WaitUntilRunning();
  const auto pids = Pids();
  ASSERT_EQ(pids.size(), 2u) << PidsText(pids);
  for (int i = 1; i <= 10; ++i) {
    std::this_thread::sleep_for(milliseconds(300));  // the state file is written (100 ms)
    ASSERT_EQ(::kill(run_pid(), SIGKILL), 0);
    ASSERT_EQ(WaitRun(), -1);
    for (const auto& [id, pid] : pids) ASSERT_TRUE(Alive(pid)) << "round " << i << ": " << id;
    StartRun();
    auto pod = WaitUntilRunning();
    auto adopted = WithReason(PodEvents(), "Adopted");
    ASSERT_EQ(adopted.size(), static_cast<std::size_t>(i))
        << "round " << i << EventsText(PodEvents()) << RunStderr();
    EXPECT_THAT(adopted.back().value("message", ""), HasSubstr("2 running container(s) adopted"));
    EXPECT_EQ(Pids(), pids) << "round " << i;
    EXPECT_EQ(RestartCount(pod, "chat"), 0) << "round " << i;
    EXPECT_EQ(RestartCount(pod, "quiet"), 0) << "round " << i;
    EXPECT_EQ(ReadyAndSince(pod), ReadyAndSince(first)) << "round " << i;
  }
  EXPECT_EQ(CountOf(HelperEvents(), "quiet Started"), 1);
  EXPECT_EQ(CountOf(HelperEvents(), "quiet Exiting"), 0);
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_THAT(WaitRun(std::chrono::seconds(60)), AnyOf(0, 4)) << RunStderr();
  ExpectEveryLineOnce();
  EXPECT_THAT(ProcessesWith({"sandbox-init", dir_.string()}), ::testing::IsEmpty());
}

}  // namespace
}  // namespace podvisor::e2e
