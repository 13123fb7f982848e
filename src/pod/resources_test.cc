// SEMANTICS S10.1-S10.3, with the worked examples of docs/SEMANTICS.md.
#include "pod/resources.h"

#include <gtest/gtest.h>

namespace podvisor::pod {
namespace {

Quantity Q(std::string_view text) {
  return *Quantity::Parse(text);
}
constexpr int64_t kGi = 1024LL * 1024 * 1024;

// Requests only: requests equal limits would make pods Guaranteed.
Container Make(std::string name, std::string_view cpu, std::string_view memory,
               bool sidecar = false) {
  Container c;
  c.name = std::move(name);
  c.image = "busybox";
  if (!cpu.empty()) c.resources.requests.cpu = Q(cpu);
  if (!memory.empty()) c.resources.requests.memory = Q(memory);
  if (sidecar) c.restart_policy = RestartPolicy::kAlways;
  return c;
}

PodSpec WorkedExampleS10_1() {
  PodSpec spec;
  spec.init_containers = {Make("init-1", "500m", "1Gi"), Make("sc-a", "100m", "128Mi", true),
                          Make("init-2", "1000m", "256Mi"), Make("sc-b", "200m", "64Mi", true)};
  spec.containers = {Make("app-1", "300m", "512Mi"), Make("app-2", "200m", "256Mi")};
  return spec;
}

TEST(Resources, S10_1_WorkedExampleFromSemantics) {
  auto r = ComputeEffectiveResources(WorkedExampleS10_1());
  ASSERT_TRUE(r.cpu_request && r.memory_request);
  EXPECT_EQ(r.cpu_request->ToString(), "1100m");
  EXPECT_EQ(r.memory_request->value(), 1024LL * 1024 * 1024);
  EXPECT_FALSE(r.cpu_limit.has_value());
  EXPECT_FALSE(r.every_container_has_cpu_limit);
}

TEST(Resources, S10_1_RegularPlusSidecarsWinsOverInitPeak) {
  PodSpec spec;
  spec.init_containers = {Make("init", "100m", "64Mi"), Make("sc", "300m", "256Mi", true)};
  spec.containers = {Make("app", "500m", "512Mi")};
  auto r = ComputeEffectiveResources(spec);
  EXPECT_EQ(r.cpu_request->ToString(), "800m");
  EXPECT_EQ(r.memory_request->ToString(), "768Mi");
}

TEST(Resources, S10_1_InitAddsOnlySidecarsStartedBeforeIt) {
  PodSpec spec;
  // init-2 runs after sc-1 but before sc-2: 2000m + 100m, not + 300m.
  spec.init_containers = {Make("sc-1", "100m", "", true), Make("init-2", "2", ""),
                          Make("sc-2", "200m", "", true)};
  spec.containers = {Make("app", "100m", "")};
  EXPECT_EQ(ComputeEffectiveResources(spec).cpu_request->ToString(), "2100m");
}

TEST(Resources, S10_1_OverheadIsAdded) {
  PodSpec spec = WorkedExampleS10_1();
  spec.overhead.cpu = Q("250m");
  spec.overhead.memory = Q("64Mi");
  auto r = ComputeEffectiveResources(spec);
  EXPECT_EQ(r.cpu_request->ToString(), "1350m");
  EXPECT_EQ(r.memory_request->ToString(), "1088Mi");
}

TEST(Resources, S10_1_LimitsUseTheSameArithmeticAndTrackCompleteness) {
  PodSpec spec;
  Container init = Make("init", "", "");
  init.resources.limits.memory = Q("1Gi");
  Container sc = Make("sc", "", "", true);
  sc.resources.limits.memory = Q("128Mi");
  Container app = Make("app", "", "");
  app.resources.limits.memory = Q("512Mi");
  spec.init_containers = {init, sc};
  spec.containers = {app};
  auto r = ComputeEffectiveResources(spec);
  EXPECT_EQ(r.memory_limit->ToString(), "1Gi");
  EXPECT_TRUE(r.every_container_has_memory_limit);
  EXPECT_FALSE(r.every_container_has_cpu_limit);

  spec.containers[0].resources.limits.memory.reset();
  EXPECT_FALSE(ComputeEffectiveResources(spec).every_container_has_memory_limit);
}

TEST(Resources, S10_1_NoValuesMeansAbsent) {
  PodSpec spec;
  spec.containers = {Make("app", "", "")};
  auto r = ComputeEffectiveResources(spec);
  EXPECT_FALSE(r.cpu_request || r.memory_request || r.cpu_limit || r.memory_limit);
}

Container Guaranteed(std::string name, bool sidecar = false) {
  Container c = Make(std::move(name), "", "", sidecar);
  c.resources.limits.cpu = Q("1");
  c.resources.limits.memory = Q("1Gi");
  c.resources.requests = c.resources.limits;  // what defaulting does
  return c;
}

TEST(Resources, S10_2_QosClasses) {
  PodSpec best_effort;
  best_effort.containers = {Make("app", "", "")};
  EXPECT_EQ(ComputeQosClass(best_effort), QosClass::kBestEffort);

  PodSpec guaranteed;
  guaranteed.init_containers = {Guaranteed("init"), Guaranteed("sc", true)};
  guaranteed.containers = {Guaranteed("app")};
  EXPECT_EQ(ComputeQosClass(guaranteed), QosClass::kGuaranteed);
  EXPECT_EQ(QosClassName(ComputeQosClass(guaranteed)), "Guaranteed");

  // One init container without limits makes the whole pod Burstable.
  PodSpec burstable = guaranteed;
  burstable.init_containers[0] = Make("init", "100m", "");
  EXPECT_EQ(ComputeQosClass(burstable), QosClass::kBurstable);

  // Requests below limits: Burstable.
  PodSpec lower = guaranteed;
  lower.containers[0].resources.requests.cpu = Q("500m");
  EXPECT_EQ(ComputeQosClass(lower), QosClass::kBurstable);

  // Only extended resources set: still BestEffort (cpu/memory decide).
  PodSpec extended;
  extended.containers = {Make("app", "", "")};
  extended.containers[0].resources.limits.other["example.com/gpu"] = Q("1");
  EXPECT_EQ(ComputeQosClass(extended), QosClass::kBestEffort);
}

TEST(Resources, S10_3_GuaranteedAndBestEffortScores) {
  PodSpec guaranteed;
  guaranteed.containers = {Guaranteed("app")};
  EXPECT_EQ(ComputeOomScoreAdj(guaranteed, guaranteed.containers[0], 8 * kGi), -997);

  PodSpec best_effort;
  best_effort.containers = {Make("app", "", "")};
  EXPECT_EQ(ComputeOomScoreAdj(best_effort, best_effort.containers[0], 8 * kGi), 1000);
}

TEST(Resources, S10_3_WorkedExamplesFromSemantics) {
  // 8 GiB node: sidecar 256Mi with regular 512Mi and 1Gi -> 970.
  PodSpec spec;
  spec.init_containers = {Make("proxy", "", "256Mi", true)};
  spec.containers = {Make("app-1", "", "512Mi"), Make("app-2", "", "1Gi")};
  EXPECT_EQ(ComputeOomScoreAdj(spec, spec.init_containers[0], 8 * kGi), 970);

  // Sidecar 2Gi with smallest regular 512Mi -> 939; the regular: 938.
  PodSpec big;
  big.init_containers = {Make("proxy", "", "2Gi", true)};
  big.containers = {Make("app", "", "512Mi")};
  EXPECT_EQ(ComputeOomScoreAdj(big, big.init_containers[0], 8 * kGi), 939);
  EXPECT_EQ(ComputeOomScoreAdj(big, big.containers[0], 8 * kGi), 938);
}

TEST(Resources, S10_3_BurstableRegularScore) {
  PodSpec spec;
  spec.containers = {Make("app", "100m", "")};
  // No memory request: 1000 - 0, clamped from 1000 to 999.
  EXPECT_EQ(ComputeOomScoreAdj(spec, spec.containers[0], 8 * kGi), 999);
  spec.containers[0].resources.requests.memory = Q("4Gi");
  EXPECT_EQ(ComputeOomScoreAdj(spec, spec.containers[0], 8 * kGi), 500);
}

TEST(Resources, S10_3_SidecarWithoutRequestCountsAs200Mi) {
  PodSpec spec;
  spec.init_containers = {Make("log", "100m", "", true)};
  spec.containers = {Make("app", "", "1Gi")};
  // m = min(200Mi, 1Gi) = 200Mi: 1000 - 1000*200Mi/8Gi = 1000 - 24 = 976;
  // no declared request, so no +1.
  EXPECT_EQ(ComputeOomScoreAdj(spec, spec.init_containers[0], 8 * kGi), 976);
}

TEST(Resources, S10_3_ClampsToThreeAtTheLowEnd) {
  PodSpec spec;
  spec.containers = {Make("app", "100m", "8Gi")};
  // 1000 - 1000 = 0, below the floor of 3.
  EXPECT_EQ(ComputeOomScoreAdj(spec, spec.containers[0], 8 * kGi), 3);
}

}  // namespace
}  // namespace podvisor::pod
