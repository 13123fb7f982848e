// Reliability: every pod stop ends within grace + 2 s (S5.5) plus a margin
// for a loaded machine, however the pod misbehaves, and no container is
// SIGKILLed before its budget ran out (S5.3): a container that exits on
// its stop signal must be seen exiting by itself, and a pod holding a
// container that ignores SIGTERM cannot end before the grace period.
//
// Each case is one adversarial pod run with the fake runtime (tier 2).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tiers.h"

namespace podvisor::e2e {
namespace {

constexpr int kGrace = 2;              // seconds, every case
constexpr long long kMarginMs = 3000;  // scheduling, runtime deletes
constexpr long long kUpperMs = (kGrace + 2) * 1000 + kMarginMs;

struct AdversarialPod {
  std::string name;
  std::string body;  // initContainers/containers lists
  // Containers that exit on SIGTERM by themselves: each must log Exiting,
  // which a SIGKILL would prevent.
  std::vector<std::string> cooperative;
  // A container ignores SIGTERM: the stop cannot end before the grace.
  bool holds_until_grace = false;
  std::string wait_for;  // the helper event that says the pod is up
};

std::string Cmd(const std::string& name, const std::string& args) {
  return HelperCmd(name, args);
}

// A hook or probe that never finishes by itself.
std::string HungExec() {
  return "{exec: {command: [\"{{H}}\", \"sleep\", \"100000\"]}}";
}
std::string HungPreStop() {
  return ", lifecycle: {preStop: " + HungExec() + "}";
}
std::string TimingOutProbes() {
  std::string probe =
      "{exec: {command: [\"{{H}}\", \"sleep\", \"5000\"]}, periodSeconds: 1, "
      "timeoutSeconds: 1, failureThreshold: 1000}";
  return ", readinessProbe: " + probe + ", livenessProbe: " + probe;
}

std::vector<AdversarialPod> Pods() {
  std::vector<AdversarialPod> pods;
  pods.push_back({"ignore-term",
                  "  initContainers:\n" + PodSidecar("s1", Cmd("s1", "trap-sigterm 0 0")) +
                      "  containers:\n" + PodEntry("a", Cmd("a", "ignore-sigterm")) +
                      PodEntry("b", Cmd("b", "trap-sigterm 0 0")),
                  {"b", "s1"},
                  true,
                  "b Started"});
  pods.push_back(
      {"hung-prestop",
       "  initContainers:\n" + PodSidecar("s1", Cmd("s1", "trap-sigterm 0 0"), HungPreStop()) +
           "  containers:\n" + PodEntry("a", Cmd("a", "trap-sigterm 0 0"), HungPreStop()),
       {"a", "s1"},
       true,
       "a Started"});
  pods.push_back({"sidecar-crashloop",
                  "  initContainers:\n" + PodSidecar("s1", Cmd("s1", "sleep 300")) +
                      PodSidecar("s2", Cmd("s2", "trap-sigterm 0 0")) + "  containers:\n" +
                      PodEntry("a", Cmd("a", "ignore-sigterm")),
                  {"s2"},
                  true,
                  "a Started"});
  pods.push_back(
      {"probe-timeouts",
       "  initContainers:\n" + PodSidecar("s1", Cmd("s1", "trap-sigterm 0 0"), TimingOutProbes()) +
           "  containers:\n" + PodEntry("a", Cmd("a", "trap-sigterm 0 0"), TimingOutProbes()) +
           PodEntry("b", Cmd("b", "ignore-sigterm"), TimingOutProbes()),
       {"a", "s1"},
       true,
       "b Started"});
  pods.push_back({"everything",
                  "  initContainers:\n" +
                      PodSidecar("s1", Cmd("s1", "ignore-sigterm"), HungPreStop()) +
                      PodSidecar("s2", Cmd("s2", "ignore-sigterm"), HungPreStop()) +
                      PodSidecar("s3", Cmd("s3", "sleep 200")) + "  containers:\n" +
                      PodEntry("a", Cmd("a", "ignore-sigterm"), TimingOutProbes()) +
                      PodEntry("b", Cmd("b", "trap-sigterm 1500 0")) +
                      PodEntry("c", Cmd("c", "trap-sigterm 0 0"), HungPreStop()),
                  {"b", "c"},
                  true,
                  "c Started"});
  pods.push_back({"slow-but-cooperative",
                  "  initContainers:\n" + PodSidecar("s1", Cmd("s1", "trap-sigterm 300 0")) +
                      PodSidecar("s2", Cmd("s2", "trap-sigterm 300 0")) + "  containers:\n" +
                      PodEntry("a", Cmd("a", "trap-sigterm 1000 0")) +
                      PodEntry("b", Cmd("b", "trap-sigterm 800 0")),
                  {"a", "b", "s1", "s2"},
                  false,
                  "b Started"});
  pods.push_back({"hung-poststart",
                  "  containers:\n" + PodEntry("a", Cmd("a", "trap-sigterm 0 0"),
                                               ", lifecycle: {postStart: " + HungExec() + "}"),
                  {"a"},
                  false,
                  "a Started"});
  std::string many = "  containers:\n";
  for (int i = 0; i < 10; ++i)
    many += PodEntry("c" + std::to_string(i), Cmd("c" + std::to_string(i), "ignore-sigterm"));
  pods.push_back({"many-ignorers", many, {}, true, "c9 Started"});
  return pods;
}

class GraceBound : public FakeRuntimeTier, public ::testing::WithParamInterface<AdversarialPod> {};

TEST_P(GraceBound, S5_5_StopEndsWithinGracePlusTwoSecondsAndNothingIsKilledEarly) {
  const AdversarialPod& p = GetParam();
  WritePod(PodHeader(p.name, "Always", kGrace) + p.body);
  StartRun({"--backoff-initial", "100ms"});
  ASSERT_TRUE(WaitForHelperEvent(p.wait_for)) << RunStderr();
  // Let hooks and probes get going: the stop lands in the middle of them.
  std::this_thread::sleep_for(milliseconds(1200));
  ASSERT_TRUE(RunIsAlive()) << RunStderr();

  auto t0 = std::chrono::steady_clock::now();
  auto stop = Client({"stop"});
  int code = WaitRun(std::chrono::seconds(30));
  auto took =
      std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_GE(code, 0) << "podvisor run died of a signal\n" << RunStderr();
  RecordProperty("stop_ms", std::to_string(took));
  EXPECT_LE(took, kUpperMs) << "pod " << p.name << ": stop took " << took << " ms, more than grace "
                            << kGrace << " s + 2 s + " << kMarginMs << " ms";
  if (p.holds_until_grace) {
    // Its SIGTERM-ignoring container can only have been SIGKILLed at the
    // end of the budget, never earlier.
    EXPECT_GE(took, kGrace * 1000 - 100) << "pod " << p.name << " ended before its grace period";
  }
  auto events = HelperEvents();
  for (const auto& name : p.cooperative) {
    EXPECT_GE(CountOf(events, name + " Exiting"), 1)
        << name << " exits on SIGTERM but never logged Exiting: it was SIGKILLed"
        << Describe(events);
  }
}

INSTANTIATE_TEST_SUITE_P(AdversarialPods, GraceBound, ::testing::ValuesIn(Pods()),
                         [](const ::testing::TestParamInfo<AdversarialPod>& info) {
                           std::string n = info.param.name;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace podvisor::e2e
