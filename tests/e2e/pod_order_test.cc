// S19: podvisor.io/after with the real `podvisor run` and the fake runtime
// (tier 2). Pod b waits for pod a of the same state directory: it is
// Pending and says so while a does not exist and while a runs but is not
// Ready, creates its first container only after a became Ready, and a
// stop during the wait ends it at once with nothing created. The harness's
// own run is pod b; pod a is a second `podvisor run` of a second bundle,
// started and stopped here.

#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;

class PodOrder : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
  void TearDown() override {
    StopA();
    E2eTest::TearDown();
  }

  // Pod a: one container, Ready once {{DIR}}/a-ready exists.
  void StartA() {
    a_pid_ = StartOtherPod("a",
                           "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n"
                           "  terminationGracePeriodSeconds: 5\n  containers:\n"
                           "  - {name: app, image: img, command: " +
                               HelperCmd("a", "trap-sigterm 20 0") +
                               ", readinessProbe: {periodSeconds: 1, exec: {command: " +
                               ShCmd("test -f {{DIR}}/a-ready") + "}}}\n");
    ASSERT_GT(a_pid_, 0);
  }
  void StopA() { StopOtherPod("a", a_pid_); }

  std::optional<nlohmann::json> StatusOf(const std::string& pod) {
    auto r = Client({"status", pod, "-o", "json"});
    if (r.exit_code != 0) return std::nullopt;
    auto doc = nlohmann::json::parse(r.out, nullptr, false);
    if (doc.is_discarded()) return std::nullopt;
    return doc;
  }
  nlohmann::json WaitFor(const std::string& pod,
                         const std::function<bool(const nlohmann::json&)>& pred,
                         const std::string& what) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    nlohmann::json last;
    while (std::chrono::steady_clock::now() < end) {
      if (auto s = StatusOf(pod)) {
        last = *s;
        if (pred(last)) return last;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "timed out waiting for " << what << "; last status of " << pod << ": "
                  << last.dump(2);
    return last;
  }
  static const nlohmann::json* Condition(const nlohmann::json& pod, const std::string& type) {
    if (!pod.is_object() || !pod.contains("status")) return nullptr;
    const nlohmann::json& status = pod["status"];
    if (!status.is_object() || !status.contains("conditions")) return nullptr;
    for (const auto& c : status["conditions"]) {
      if (c.is_object() && c.value("type", "") == type) return &c;
    }
    return nullptr;
  }
  static bool WaitsForPods(const nlohmann::json& pod) {
    const nlohmann::json* initialized = Condition(pod, "Initialized");
    return Phase(pod) == "Pending" && initialized &&
           initialized->value("reason", "") == "WaitingForPods";
  }
  std::vector<std::string> BEventReasons() const {
    std::vector<std::string> out;
    for (const auto& e : PodEvents()) out.push_back(e.value("reason", ""));
    return out;
  }

  void WriteB() {
    WritePod(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: b\n"
        "  annotations: {podvisor.io/after: a}\nspec:\n"
        "  terminationGracePeriodSeconds: 5\n  containers:\n"
        "  - {name: app, image: img, command: " +
        HelperCmd("b", "trap-sigterm 20 0") + "}\n");
  }

  pid_t a_pid_ = -1;
};

TEST_F(PodOrder, S19_3_BStartsOnlyOnceAIsReadyAndWaitsWhileADoesNotExist) {
  WriteB();
  StartRun();
  // a does not exist: b is set up and waits, Pending, saying for what.
  nlohmann::json b = WaitFor("b", WaitsForPods, "b waiting for a");
  EXPECT_THAT(Condition(b, "Initialized")->value("message", ""), HasSubstr("[a]"));
  const nlohmann::json* app = FindContainerStatus(b, "app");
  ASSERT_NE(app, nullptr);
  EXPECT_EQ((*app)["state"]["waiting"].value("reason", ""), "WaitingForPods");
  auto list = Client({"list"});
  EXPECT_THAT(list.out, HasSubstr("WaitingForPods")) << list.out;

  // a starts, runs, and is not Ready: b still waits.
  StartA();
  ASSERT_TRUE(WaitForHelperEvent("a Started"));
  WaitFor(
      "a", [](const nlohmann::json& p) { return Phase(p) == "Running"; }, "a Running");
  std::this_thread::sleep_for(
      std::chrono::milliseconds(1500));  // a's readiness failed at least once
  EXPECT_EQ(IndexOf(HelperEvents(), "b Started"), -1) << Describe(HelperEvents());
  EXPECT_TRUE(WaitsForPods(*StatusOf("b")));

  // a becomes Ready: b's container starts after that, not before.
  const auto ready_at = Clock::now();
  std::ofstream(scratch_ / "a-ready") << "1";
  ASSERT_TRUE(WaitForHelperEvent("b Started"));
  const auto events = HelperEvents();
  const auto b_started = EventsNamed(events, "b", "Started");
  ASSERT_FALSE(b_started.empty());
  EXPECT_GT(MsBetween(ready_at, b_started.front().time), 0) << Describe(events);
  nlohmann::json a = *StatusOf("a");
  EXPECT_EQ(ConditionStatus(a, "Ready"), "True");
  b = WaitFor(
      "b", [](const nlohmann::json& p) { return Phase(p) == "Running"; }, "b Running");
  EXPECT_THAT(BEventReasons(), ::testing::IsSupersetOf({"WaitingForPods", "AwaitedPodsReady"}));

  EXPECT_EQ(Client({"stop", "b"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();  // its app exits 0 on SIGTERM: Succeeded
  StopA();
}

// S19.7: an upgrade in place during the wait keeps waiting, and the new
// binary's supervisor watches a again.
TEST_F(PodOrder, S19_7_AnUpgradeDuringTheWaitKeepsWaitingAndStartsOnceAIsReady) {
  WriteB();
  StartRun();
  WaitFor("b", WaitsForPods, "b waiting for a");
  auto upgrade = Client({"upgrade", "b"});
  ASSERT_EQ(upgrade.exit_code, 0) << upgrade.out << upgrade.err;
  EXPECT_TRUE(RunIsAlive()) << "the same process, re-executed";
  nlohmann::json b = WaitFor("b", WaitsForPods, "b still waiting after the upgrade");
  EXPECT_THAT(Condition(b, "Initialized")->value("message", ""), HasSubstr("[a]"));
  EXPECT_EQ(IndexOf(HelperEvents(), "b Started"), -1) << Describe(HelperEvents());

  std::ofstream(scratch_ / "a-ready") << "1";
  StartA();
  ASSERT_TRUE(WaitForHelperEvent("b Started"));
  EXPECT_EQ(ConditionStatus(*StatusOf("a"), "Ready"), "True");
  EXPECT_EQ(Client({"stop", "b"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  StopA();
}

TEST_F(PodOrder, S19_6_AStopDuringTheWaitEndsBAtOnceWithNothingCreated) {
  WriteB();
  StartRun();
  WaitFor("b", WaitsForPods, "b waiting for a");
  const auto stop_at = std::chrono::steady_clock::now();
  auto stop = Client({"stop", "b"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(WaitRun(), 4) << RunStderr();  // S14.40: stopped on request
  EXPECT_LT(std::chrono::steady_clock::now() - stop_at, std::chrono::seconds(3))
      << "no grace period to wait for: nothing ran";
  EXPECT_EQ(IndexOf(HelperEvents(), "b Started"), -1) << Describe(HelperEvents());
  // The kept record: Failed, and nothing was ever created.
  auto b = StatusOf("b");
  ASSERT_TRUE(b);
  EXPECT_EQ(Phase(*b), "Failed");
  const nlohmann::json* app = FindContainerStatus(*b, "app");
  ASSERT_NE(app, nullptr);
  EXPECT_EQ(app->value("containerID", ""), "");
  const std::vector<std::string> reasons = BEventReasons();
  EXPECT_THAT(reasons, ::testing::Contains("WaitingForPods"));
  EXPECT_THAT(reasons, ::testing::Not(::testing::Contains("Created")));
  EXPECT_THAT(reasons, ::testing::Not(::testing::Contains("Started")));
  // TearDown checks that nothing else is left (runtime state, processes).
}

}  // namespace
}  // namespace podvisor::e2e
