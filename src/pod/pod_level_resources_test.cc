// Pod-level resources (spec.resources, KEP-2837), SEMANTICS S10.5-S10.10:
// decoding, the API server's defaults and validation (its exact lines),
// the effective values, the QoS class, oom_score_adj and the downward API.
// Manifests go through the parser, ApplyDefaults and ValidatePod, as
// `validate` and `run` take them.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pod/defaults.h"
#include "pod/env_resolution.h"
#include "pod/pod_test_util.h"
#include "pod/resources.h"
#include "pod/serialize.h"
#include "pod/validate.h"

namespace podvisor::pod {
namespace {

using namespace test_util;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

constexpr int64_t kMi = 1024LL * 1024;
constexpr int64_t kGi = 1024 * kMi;

struct Checked {
  Pod pod;
  std::vector<std::string> errors;  // decoding and validation, kubectl's lines
  std::vector<std::string> warnings;
};

// SPEC under "spec:", decoded, defaulted and validated as `validate` does.
Checked Load(std::string_view spec) {
  ParseOutput out = Parse(PodYaml(spec));
  Checked c;
  c.errors = ErrorLines(out);
  c.warnings = WarningLines(out);
  c.pod = out.pod;
  ApplyDefaults(c.pod);
  for (auto& line : Check(c.pod)) c.errors.push_back(line);
  return c;
}

// --- S10.5: decoding, defaults, validation -----------------------------------

TEST(PodLevelResources, S10_5_DecodedWithoutWarningAndSerialized) {
  Checked c = Load(R"(  resources:
    requests: {cpu: 500m, memory: 256Mi}
    limits: {cpu: "1", memory: 512Mi}
  containers:
    - {name: app, image: busybox}
)");
  EXPECT_THAT(c.errors, IsEmpty());
  EXPECT_THAT(c.warnings, IsEmpty());
  ASSERT_TRUE(c.pod.spec.resources.limits.memory);
  EXPECT_EQ(c.pod.spec.resources.limits.memory->value(), 512 * kMi);
  nlohmann::json spec = ToJson(c.pod)["spec"];
  EXPECT_EQ(spec["resources"]["requests"]["cpu"], "500m");
  EXPECT_EQ(spec["resources"]["limits"]["memory"], "512Mi");
}

TEST(PodLevelResources, S10_5_NoResourcesNoField) {
  Checked c = Load("  containers:\n    - {name: app, image: busybox}\n");
  EXPECT_FALSE(ToJson(c.pod)["spec"].contains("resources"));
  EXPECT_FALSE(HasPodLevelResources(c.pod.spec));
}

// defaultPodRequests: with pod-level limits, a missing pod-level request is
// the containers' aggregate request, else the pod-level limit.
TEST(PodLevelResources, S10_5_RequestsDefaultToAggregateThenToLimits) {
  Checked c = Load(R"(  resources:
    limits: {cpu: "2", memory: 1Gi}
  containers:
    - name: app
      image: busybox
      resources: {requests: {cpu: 300m}}
    - name: side
      image: busybox
      resources: {requests: {cpu: 200m}}
)");
  EXPECT_THAT(c.errors, IsEmpty());
  EXPECT_EQ(c.pod.spec.resources.requests.cpu->ToString(), "500m");
  EXPECT_EQ(c.pod.spec.resources.requests.memory->ToString(), "1Gi");
}

// defaultPodLimits: with pod-level requests only, the limit is the
// containers' aggregate where every container has one.
// Pod-level requests matching the containers' limits settle Guaranteed:
// the limits default first, then the requests (the settled stored pod).
TEST(PodLevelResources, S10_5_DefaultsSettleAndApplyTwiceChangesNothing) {
  Checked c = Load(R"(  resources:
    requests: {memory: 512Mi}
  containers:
    - name: app
      image: busybox
      resources: {limits: {cpu: 500m, memory: 512Mi}}
)");
  ASSERT_THAT(c.errors, IsEmpty());
  EXPECT_EQ(c.pod.spec.resources.requests.cpu->ToString(), "500m");
  EXPECT_EQ(c.pod.spec.resources.limits.cpu->ToString(), "500m");
  EXPECT_EQ(ComputeQosClass(c.pod.spec), QosClass::kGuaranteed);
  Pod again = c.pod;
  ApplyDefaults(again);
  EXPECT_EQ(again, c.pod);
}

TEST(PodLevelResources, S10_5_LimitsDefaultToAggregateWhenEveryContainerHasOne) {
  Checked c = Load(R"(  resources:
    requests: {cpu: "1", memory: 256Mi}
  containers:
    - name: app
      image: busybox
      resources: {limits: {cpu: 500m, memory: 128Mi}}
    - name: side
      image: busybox
      resources: {limits: {cpu: 500m}}
)");
  EXPECT_THAT(c.errors, IsEmpty());
  ASSERT_TRUE(c.pod.spec.resources.limits.cpu);
  EXPECT_EQ(c.pod.spec.resources.limits.cpu->ToString(), "1");
  EXPECT_FALSE(c.pod.spec.resources.limits.memory.has_value());
}

TEST(PodLevelResources, S10_5_OnlyCpuAndMemory) {
  Checked c = Load(R"(  resources:
    requests: {ephemeral-storage: 1Gi, cpu: 100m}
    limits: {example.com/gpu: "1", hugepages-2Mi: 4Mi, cpus: "1", cpu: 100m}
  containers:
    - {name: app, image: busybox}
)");
  EXPECT_THAT(c.errors,
              ElementsAre("spec.resources.limits[cpus]: Invalid value: \"cpus\": must be a "
                          "standard resource type or fully qualified",
                          "spec.resources.limits[example.com/gpu]: Unsupported value: "
                          "\"example.com/gpu\": supported values: \"cpu\", \"memory\"",
                          "spec.resources.limits[hugepages-2Mi]: Forbidden: podvisor does not "
                          "enforce huge pages at pod level (no hugetlb pod cgroup); set them per "
                          "container",
                          "spec.resources.requests[ephemeral-storage]: Unsupported value: "
                          "\"ephemeral-storage\": supported values: \"cpu\", \"memory\""));
}

TEST(PodLevelResources, S10_5_RequestAboveLimitAndNegative) {
  Checked c = Load(R"(  resources:
    requests: {cpu: "2"}
    limits: {cpu: "1", memory: "-1"}
  containers:
    - {name: app, image: busybox}
)");
  EXPECT_THAT(c.errors,
              ElementsAre("spec.resources.limits[memory]: Invalid value: \"-1\": must be greater "
                          "than or equal to 0",
                          "spec.resources.requests: Invalid value: \"2\": must be less than or "
                          "equal to cpu limit of 1",
                          "spec.resources.requests[memory]: Invalid value: \"-1\": must be "
                          "greater than or equal to 0"));
}

// The aggregate counts sidecars and the init phase (S10.1): init 300Mi
// after a 100Mi sidecar is 400Mi, above the regular 100Mi + 100Mi.
TEST(PodLevelResources, S10_5_PodRequestBelowAggregateRefused) {
  Checked c = Load(R"(  resources:
    requests: {cpu: 100m, memory: 256Mi}
  initContainers:
    - name: side
      image: busybox
      restartPolicy: Always
      resources: {requests: {memory: 100Mi}}
    - name: init
      image: busybox
      resources: {requests: {memory: 300Mi, cpu: 50m}}
  containers:
    - name: app
      image: busybox
      resources: {requests: {memory: 100Mi, cpu: 100m}}
)");
  EXPECT_THAT(c.errors, ElementsAre("spec.resources.requests[memory]: Invalid value: \"256Mi\": "
                                    "must be greater than or equal to aggregate container "
                                    "requests of 400Mi"));
}

// Only what spec.resources sets is compared (kubernetes#132449's fix).
TEST(PodLevelResources, S10_5_ResourceUnsetAtPodLevelIsNotCompared) {
  Checked c = Load(R"(  resources:
    requests: {cpu: 300m}
  containers:
    - name: app
      image: busybox
      resources: {requests: {memory: 1Gi, ephemeral-storage: 10Mi, cpu: 300m}}
)");
  EXPECT_THAT(c.errors, IsEmpty());
}

// Each regular container's limit is at most the pod's; their sum may be
// more (the pod cgroup caps them together).
TEST(PodLevelResources, S10_5_ContainerLimitAbovePodLimitRefusedSumAllowed) {
  Checked over = Load(R"(  resources:
    limits: {memory: 512Mi}
  containers:
    - name: app
      image: busybox
      resources: {limits: {memory: 256Mi}}
    - name: hog
      image: busybox
      resources: {limits: {memory: 1Gi}}
)");
  // The pod-level request defaults to the containers' 1280Mi, above the limit.
  EXPECT_THAT(over.errors,
              ElementsAre("spec.resources.requests: Invalid value: \"1280Mi\": must be less "
                          "than or equal to memory limit of 512Mi",
                          "spec.resources.containers[1][memory].limits: Invalid value: \"1Gi\": "
                          "must be less than or equal to pod limits of 512Mi"));
  Checked sum = Load(R"(  resources:
    requests: {memory: 128Mi}
    limits: {memory: 512Mi}
  containers:
    - name: a
      image: busybox
      resources: {requests: {memory: 64Mi}, limits: {memory: 400Mi}}
    - name: b
      image: busybox
      resources: {requests: {memory: 64Mi}, limits: {memory: 400Mi}}
)");
  EXPECT_THAT(sum.errors, IsEmpty());
}

// --- S10.6: effective values ----------------------------------------------------

TEST(PodLevelResources, S10_6_PodLevelValuesReplaceAggregatePlusOverhead) {
  Checked c = Load(R"(  overhead: {cpu: 100m, memory: 64Mi}
  resources:
    requests: {cpu: "1", memory: 512Mi}
    limits: {memory: 1Gi}
  containers:
    - name: app
      image: busybox
      resources: {requests: {cpu: 200m, memory: 128Mi}, limits: {cpu: 500m}}
)");
  ASSERT_THAT(c.errors, IsEmpty());
  EffectiveResources r = ComputeEffectiveResources(c.pod.spec);
  EXPECT_EQ(r.cpu_request->ToString(), "1100m");
  EXPECT_EQ(r.memory_request->value(), 576 * kMi);
  EXPECT_EQ(r.memory_limit->value(), 1024 * kMi + 64 * kMi);
  EXPECT_TRUE(r.memory_limit_declared);  // no container limit, the pod's counts
  EXPECT_FALSE(r.every_container_has_memory_limit);
  EXPECT_EQ(r.cpu_limit->ToString(), "600m");  // the containers' own, with overhead
  EXPECT_TRUE(r.cpu_limit_declared);
}

// --- S10.7: QoS --------------------------------------------------------------------

TEST(PodLevelResources, S10_7_GuaranteedFromPodLevelAlone) {
  Checked c = Load(R"(  resources:
    limits: {cpu: "1", memory: 1Gi}
  containers:
    - {name: app, image: busybox}
    - name: side
      image: busybox
      resources: {requests: {cpu: 100m}}
)");
  ASSERT_THAT(c.errors, IsEmpty());
  // Requests defaulted: cpu from the aggregate (100m), memory from the limit.
  EXPECT_EQ(ComputeQosClass(c.pod.spec), QosClass::kBurstable);
  c.pod.spec.resources.requests.cpu = Q("1");
  EXPECT_EQ(ComputeQosClass(c.pod.spec), QosClass::kGuaranteed);
}

TEST(PodLevelResources, S10_7_ContainersDoNotDecideOncePodLevelIsSet) {
  Checked c = Load(R"(  resources:
    requests: {cpu: 500m, memory: 512Mi}
    limits: {memory: 1Gi}
  containers:
    - name: app
      image: busybox
      resources: {limits: {cpu: 500m, memory: 512Mi}}
)");
  ASSERT_THAT(c.errors, IsEmpty());
  // The container alone would be Guaranteed; the pod has no cpu limit.
  EXPECT_EQ(ComputeQosClass(c.pod.spec), QosClass::kBurstable);
  PodSpec alone = c.pod.spec;
  alone.resources = {};
  EXPECT_EQ(ComputeQosClass(alone), QosClass::kGuaranteed);
  PodSpec zero = c.pod.spec;
  zero.resources = {};
  zero.resources.requests.cpu = Q("0");
  EXPECT_EQ(ComputeQosClass(zero), QosClass::kBestEffort);
}

// --- S10.9: oom_score_adj ---------------------------------------------------------

// Worked example of S10.9 on an 8 GiB node: a 2Gi pod request, app asks
// 512Mi, side asks nothing: each gets (2Gi - 512Mi) / 2 = 768Mi more.
TEST(PodLevelResources, S10_9_UnrequestedPodMemorySharedAmongContainers) {
  Checked c = Load(R"(  resources:
    requests: {memory: 2Gi}
  containers:
    - name: app
      image: busybox
      resources: {requests: {memory: 512Mi}}
    - {name: side, image: busybox}
)");
  ASSERT_THAT(c.errors, IsEmpty());
  ASSERT_EQ(ComputeQosClass(c.pod.spec), QosClass::kBurstable);
  EXPECT_EQ(ComputeOomScoreAdj(c.pod.spec, c.pod.spec.containers[0], 8 * kGi), 844);
  EXPECT_EQ(ComputeOomScoreAdj(c.pod.spec, c.pod.spec.containers[1], 8 * kGi), 907);
  PodSpec without = c.pod.spec;
  without.resources = {};
  EXPECT_EQ(ComputeOomScoreAdj(without, without.containers[0], 8 * kGi), 938);
  EXPECT_EQ(ComputeOomScoreAdj(without, without.containers[1], 8 * kGi), 999);
}

TEST(PodLevelResources, S10_9_GuaranteedPodIsMinus997) {
  Checked c = Load(R"(  resources:
    limits: {cpu: "1", memory: 1Gi}
  containers:
    - {name: app, image: busybox}
)");
  ASSERT_THAT(c.errors, IsEmpty());
  EXPECT_EQ(ComputeOomScoreAdj(c.pod.spec, c.pod.spec.containers[0], 8 * kGi),
            kGuaranteedOomScoreAdj);
}

// --- S10.10: the downward API -----------------------------------------------------

TEST(PodLevelResources, S10_10_UnsetContainerLimitIsThePodLimit) {
  Checked c = Load(R"(  resources:
    limits: {cpu: 1500m, memory: 1Gi}
  containers:
    - name: app
      image: busybox
      resources: {limits: {memory: 256Mi}}
      env:
        - {name: CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
        - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
        - {name: REQ, valueFrom: {resourceFieldRef: {resource: requests.cpu, divisor: 1m}}}
        - {name: DISK, valueFrom: {resourceFieldRef: {resource: limits.ephemeral-storage, divisor: 1Gi}}}
)");
  ASSERT_THAT(c.errors, IsEmpty());
  DownwardApiNode node;
  node.cpu_milli = 4000;
  node.memory_bytes = 8 * kGi;
  node.ephemeral_storage_bytes = 100 * kGi;
  auto env = ResolveContainerEnv(c.pod, c.pod.spec.containers[0], node);
  ASSERT_TRUE(env) << env.error().message();
  // cpu: the pod's 1500m rounded up; memory: the container's own; the
  // request is the container's (none: 0); storage: the node's.
  EXPECT_THAT(*env, ElementsAre(Pair("CPU", "2"), Pair("MEM", "256"), Pair("REQ", "0"),
                                Pair("DISK", "100")));
  ResourceFieldSelector memory;
  memory.resource = "limits.memory";
  memory.divisor = Q("1Mi");
  c.pod.spec.containers[0].resources.limits.memory.reset();
  auto value = ResolveResourceFieldRef(c.pod, &c.pod.spec.containers[0], memory, node);
  ASSERT_TRUE(value);
  EXPECT_EQ(*value, "1024");  // the downwardAPI volume goes through the same
}

}  // namespace
}  // namespace podvisor::pod
