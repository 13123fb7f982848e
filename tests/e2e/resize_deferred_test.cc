// S17.12: a resize the node cannot hold beside the other pods of the same
// state directory is Deferred, with the kubelet's condition, message and
// event, and is applied by itself, without a new request, once another
// pod's end leaves room. Tier 2: the real `podvisor run`, the fake runtime
// (allocations, not cgroups, are what this shows; tier 3's e2e-runc-resize
// reads cgroup files). The harness's run is pod b; pod a, the neighbour
// holding the node's memory, is a second `podvisor run` started here.

#include <chrono>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

constexpr int64_t kMi = 1024 * 1024;

class ResizeDeferred : public E2eTest {
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
  static std::string PodYaml(const std::string& name, const std::string& memory) {
    return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
           "}\nspec:\n  terminationGracePeriodSeconds: 5\n  containers:\n"
           "  - name: app\n    image: img\n    command: " +
           HelperCmd(name, "trap-sigterm 20 0") +
           "\n    resources:\n      requests: {memory: " + memory +
           "}\n      limits: {memory: " + memory + "}\n";
  }
  void StartA(const std::string& memory) {
    a_pid_ = StartOtherPod("a", PodYaml("a", memory));
    ASSERT_GT(a_pid_, 0);
  }
  void StopA() { StopOtherPod("a", a_pid_); }
  // With two pods in the state directory every client command names one.
  std::optional<nlohmann::json> StatusOf(const std::string& pod) {
    auto r = Client({"status", pod, "-o", "json"});
    auto doc = nlohmann::json::parse(r.out, nullptr, false);
    if (r.exit_code != 0 || doc.is_discarded()) return std::nullopt;
    return doc;
  }
  nlohmann::json WaitForB(const std::function<bool(const nlohmann::json&)>& pred,
                          const std::string& what) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    nlohmann::json last;
    while (std::chrono::steady_clock::now() < end) {
      if (auto s = StatusOf("b")) {
        last = *s;
        if (pred(last)) return last;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "timed out waiting for " << what << "; last status of b: " << last.dump(2);
    return last;
  }
  // a runs, then b runs beside it with a node of 1 GiB.
  void StartBothPods() {
    StartA("600Mi");
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    auto a_running = [&] {
      auto a = StatusOf("a");
      return a && Phase(*a) == "Running";
    };
    while (!a_running() && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_TRUE(a_running()) << "pod a did not start";
    WritePod(PodYaml("b", "100Mi"));
    StartRun({"--node-memory", "1Gi"});
    WaitForB([](const nlohmann::json& p) { return StateOf(p, "app") == "running"; },
             "pod b running");
  }
  testing::CommandResult PatchB(const std::string& memory) {
    return Client({"patch", "b", "--subresource", "resize", "-p",
                   R"({"spec":{"containers":[{"name":"app","resources":{"requests":{"memory":")" +
                       memory + R"("},"limits":{"memory":")" + memory + R"("}}}]}})"});
  }
  void StopB() {
    EXPECT_EQ(Client({"stop", "b"}).exit_code, 0);
    EXPECT_EQ(WaitRun(), 0);
  }
  static const nlohmann::json* Condition(const nlohmann::json& pod, const std::string& type) {
    if (!pod.contains("status") || !pod["status"].contains("conditions")) return nullptr;
    for (const auto& c : pod["status"]["conditions"]) {
      if (c.value("type", "") == type) return &c;
    }
    return nullptr;
  }
  static std::string AllocatedMemory(const nlohmann::json& pod) {
    const nlohmann::json* c = FindContainerStatus(pod, "app");
    if (!c || !c->contains("allocatedResources")) return "";
    return (*c)["allocatedResources"].value("memory", "");
  }
  std::vector<std::string> EventReasons() const {
    std::vector<std::string> out;
    for (const auto& e : PodEvents()) out.push_back(e.value("reason", ""));
    return out;
  }
  pid_t a_pid_ = -1;
};

TEST_F(ResizeDeferred, S17_12_DeferredBesideANeighbourThenAppliedWhenItEnds) {
  // The node: 1 GiB. a holds 600 MiB, b 100 MiB; b asks for 500 MiB.
  StartBothPods();
  auto r = PatchB("500Mi");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string message =
      "Node didn't have enough resource: memory, requested: " + std::to_string(500 * kMi) +
      ", used: " + std::to_string(600 * kMi) + ", capacity: " + std::to_string(1024 * kMi);
  EXPECT_THAT(r.err, HasSubstr("PodResizePending: Deferred: " + message));
  nlohmann::json pod = *StatusOf("b");
  const nlohmann::json* pending = Condition(pod, "PodResizePending");
  ASSERT_NE(pending, nullptr) << pod.dump(2);
  EXPECT_EQ(pending->value("reason", ""), "Deferred");
  EXPECT_EQ(pending->value("message", ""), message);
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["memory"], "500Mi");
  EXPECT_EQ(AllocatedMemory(pod), "100Mi");
  EXPECT_THAT(EventReasons(), Contains("ResizeDeferred"));

  // a's end frees the node: b's resize is applied without a new request.
  StopA();
  pod = WaitForB(
      [](const nlohmann::json& p) {
        return AllocatedMemory(p) == "500Mi" && !Condition(p, "PodResizePending");
      },
      "the deferred resize applied after pod a ended");
  EXPECT_THAT(EventReasons(), Contains("Resized"));
  StopB();
}

// A neighbour that does not end keeps the resize deferred; a smaller
// request that fits replaces the pending one and applies at once.
TEST_F(ResizeDeferred, S17_12_AFittingRequestReplacesTheDeferredOne) {
  StartBothPods();
  ASSERT_EQ(PatchB("500Mi").exit_code, 0);
  ASSERT_NE(Condition(*StatusOf("b"), "PodResizePending"), nullptr);
  auto r = PatchB("300Mi");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json pod = *StatusOf("b");
  EXPECT_EQ(Condition(pod, "PodResizePending"), nullptr) << pod.dump(2);
  EXPECT_EQ(AllocatedMemory(pod), "300Mi");
  StopB();
}

}  // namespace
}  // namespace podvisor::e2e
