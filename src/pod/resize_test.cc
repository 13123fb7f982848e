// S17.1–S17.5: the merge of a resize request, the API server's checks, the
// kubelet's admission and which containers restart.
#include "pod/resize.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pod/defaults.h"
#include "pod/pod_test_util.h"

namespace podvisor::pod {
namespace {

using test_util::Lines;
using test_util::ParseClean;
using test_util::Q;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

Pod Burstable() {
  Pod pod = ParseClean(R"(  containers:
  - name: app
    image: busybox
    resources:
      requests: {cpu: 100m, memory: 64Mi}
      limits: {cpu: 200m, memory: 128Mi}
  - name: side
    image: busybox
    resources:
      requests: {cpu: 50m}
    resizePolicy:
    - {resourceName: cpu, restartPolicy: RestartContainer}
  initContainers:
  - name: setup
    image: busybox
  - name: proxy
    image: busybox
    restartPolicy: Always
    resources:
      limits: {memory: 32Mi}
)");
  ApplyDefaults(pod);
  return pod;
}

std::vector<ContainerResizePatch> Patch(const char* json_text) {
  auto parsed = ParseResizeContainers(nlohmann::json::parse(json_text));
  EXPECT_TRUE(parsed) << parsed.error().message();
  return parsed ? *parsed : std::vector<ContainerResizePatch>{};
}

TEST(ResizeParse, S17_1_ParsesAMergeByName) {
  auto p = Patch(R"([{"name":"app","resources":{"requests":{"cpu":"150m"},
                     "limits":{"memory":"256Mi","cpu":null}}}])");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].name, "app");
  EXPECT_EQ(p[0].requests.at("cpu"), Q("150m"));
  EXPECT_EQ(p[0].limits.at("memory"), Q("256Mi"));
  EXPECT_FALSE(p[0].limits.at("cpu").has_value());
}

TEST(ResizeParse, S17_1_BadRequestsNameTheField) {
  auto bad = [](const char* text) {
    auto r = ParseResizeContainers(nlohmann::json::parse(text));
    return r ? std::string("accepted") : r.error().message();
  };
  EXPECT_THAT(bad("[]"), HasSubstr("containers: must be a non-empty list"));
  EXPECT_THAT(bad(R"([{"resources":{}}])"), HasSubstr("containers[0].name: Required value"));
  EXPECT_THAT(bad(R"([{"name":"a","image":"x"}])"), HasSubstr("containers[0].image: Forbidden"));
  EXPECT_THAT(bad(R"([{"name":"a","resources":{"limits":{"cpu":"lots"}}}])"),
              HasSubstr("containers[0].resources.limits.cpu: \"lots\""));
  EXPECT_THAT(bad(R"([{"name":"a","resources":{"claims":[]}}])"),
              HasSubstr("containers[0].resources.claims: Forbidden"));
}

TEST(ResizeMerge, S17_1_MergesIntoTheNamedContainersOnly) {
  Pod pod = Burstable();
  ResizeMerge m = MergeResize(
      pod,
      Patch(R"([{"name":"app","resources":{"requests":{"cpu":"150m"},"limits":{"memory":"256Mi"}}},
                {"name":"proxy","resources":{"limits":{"memory":"64Mi"}}}])"),
      {});
  EXPECT_THAT(Lines(m.errors), IsEmpty());
  const Container& app = m.pod.spec.containers[0];
  EXPECT_EQ(app.resources.requests.cpu, Q("150m"));
  EXPECT_EQ(app.resources.requests.memory, Q("64Mi"));  // untouched
  EXPECT_EQ(app.resources.limits.cpu, Q("200m"));       // untouched
  EXPECT_EQ(app.resources.limits.memory, Q("256Mi"));
  // The sidecar's request was defaulted from its limit on create; the
  // patch changes only the limit, as the API server would keep it.
  EXPECT_EQ(m.pod.spec.init_containers[1].resources.limits.memory, Q("64Mi"));
  EXPECT_EQ(m.pod.spec.init_containers[1].resources.requests.memory, Q("32Mi"));
  EXPECT_EQ(m.pod.spec.containers[1], pod.spec.containers[1]);
}

TEST(ResizeMerge, S17_2_RefusesWhatTheApiServerRefuses) {
  Pod pod = Burstable();
  auto errors = [&](const char* patch, ResizeFacts facts = {}) {
    return Lines(MergeResize(pod, Patch(patch), facts).errors);
  };
  EXPECT_THAT(errors(R"([{"name":"app","resources":{"limits":{"ephemeral-storage":"1Gi"}}}])"),
              ElementsAre("spec: Forbidden: only cpu and memory resources are mutable"));
  EXPECT_THAT(errors(R"([{"name":"app","resources":{"requests":{"memory":null}}}])"),
              ElementsAre("spec.containers[0].resources.requests: Forbidden: resource requests "
                          "cannot be removed"));
  EXPECT_THAT(errors(R"([{"name":"app","resources":{"limits":{"cpu":null}}}])"),
              ElementsAre("spec.containers[0].resources.limits: Forbidden: resource limits "
                          "cannot be removed"));
  EXPECT_THAT(errors(R"([{"name":"setup","resources":{"limits":{"cpu":"1"}}}])"),
              ElementsAre("spec.initContainers[0].resources: Forbidden: resources for "
                          "non-sidecar init containers are immutable"));
  EXPECT_THAT(errors(R"([{"name":"nope","resources":{"limits":{"cpu":"1"}}}])"),
              ElementsAre("spec.containers: Not found: \"nope\""));
  // The same rules as pod validation: requests <= limits.
  EXPECT_THAT(errors(R"([{"name":"app","resources":{"requests":{"cpu":"300m"}}}])"),
              ElementsAre("spec.containers[0].resources.requests: Invalid value: \"300m\": must "
                          "be less than or equal to cpu limit of 200m"));
}

TEST(ResizeMerge, S17_2_QosClassMayNotChange) {
  Pod pod = ParseClean(R"(  containers:
  - name: app
    image: busybox
    resources:
      requests: {cpu: 100m, memory: 64Mi}
      limits: {cpu: 200m, memory: 64Mi}
)");
  ApplyDefaults(pod);
  ResizeMerge m =
      MergeResize(pod, Patch(R"([{"name":"app","resources":{"requests":{"cpu":"200m"}}}])"), {});
  EXPECT_THAT(Lines(m.errors), ElementsAre("spec: Invalid value: \"Guaranteed\": Pod QOS Class "
                                           "may not change as a result of resizing"));
  // A Guaranteed pod stays Guaranteed when requests move with limits.
  Pod g = ParseClean(R"(  containers:
  - name: app
    image: busybox
    resources:
      limits: {cpu: 200m, memory: 64Mi}
)");
  ApplyDefaults(g);
  ResizeMerge ok = MergeResize(
      g,
      Patch(R"([{"name":"app","resources":{"limits":{"cpu":"300m"},"requests":{"cpu":"300m"}}}])"),
      {});
  EXPECT_THAT(Lines(ok.errors), IsEmpty());
}

TEST(ResizeMerge, S17_4_MemoryDecreaseBelowUsageRefusedUnlessRestart) {
  Pod pod = Burstable();
  const char* lower = R"([{"name":"app","resources":{"limits":{"memory":"96Mi"}}}])";
  ResizeFacts busy;
  busy.memory_usage_bytes["app"] = 100 * 1024 * 1024;
  EXPECT_THAT(Lines(MergeResize(pod, Patch(lower), busy).errors),
              ElementsAre(HasSubstr("spec.containers[0].resources.limits.memory: Forbidden: "
                                    "memory limit 96Mi is below the container's current usage")));
  ResizeFacts idle;
  idle.memory_usage_bytes["app"] = 10 * 1024 * 1024;
  EXPECT_THAT(Lines(MergeResize(pod, Patch(lower), idle).errors), IsEmpty());
  // With RestartContainer the decrease is applied to a new instance.
  pod.spec.containers[0].resize_policy = {{"memory", "RestartContainer"}};
  EXPECT_THAT(Lines(MergeResize(pod, Patch(lower), busy).errors), IsEmpty());
}

TEST(ResizeAdmit, S17_5_LargerThanTheNodeIsInfeasible) {
  Pod pod = Burstable();
  pod.spec.containers[0].resources.requests.cpu = Q("64");
  pod.spec.containers[0].resources.limits.cpu = Q("64");
  ResizeAdmission a = AdmitResize(pod.spec, {.cpu_milli = 2000, .memory_bytes = 1LL << 32});
  EXPECT_EQ(a.verdict, ResizeVerdict::kInfeasible);
  // 64 + 50m (side) ; the init list's peak is smaller.
  EXPECT_EQ(a.message, "Node didn't have enough capacity: cpu, requested: 64050, capacity: 2000");
  pod.spec.containers[0].resources.requests.memory = Q("8Gi");
  pod.spec.containers[0].resources.limits.memory = Q("8Gi");
  a = AdmitResize(pod.spec, {.cpu_milli = 2000, .memory_bytes = 1LL << 32});
  EXPECT_THAT(a.message, HasSubstr("Node didn't have enough capacity: memory, requested: "));
  EXPECT_EQ(AdmitResize(Burstable().spec, {.cpu_milli = 2000, .memory_bytes = 1LL << 32}).verdict,
            ResizeVerdict::kAccepted);
}

// S17.12: beside the other pods' allocations, as the kubelet's resource
// fit does it: cpu first, then memory, with requested, used and capacity.
TEST(ResizeAdmit, S17_12_ShortBesideTheOtherPodsIsDeferred) {
  const Pod running = Burstable();  // requests: 150m cpu, 64Mi memory
  Pod pod = running;
  pod.spec.containers[0].resources.requests.cpu = Q("1");
  pod.spec.containers[0].resources.limits.cpu = Q("1");
  const NodeAllocatable node{.cpu_milli = 2000, .memory_bytes = 1LL << 30};
  ResizeAdmission a = AdmitResize(pod.spec, node, &running.spec, {.cpu_milli = 1500});
  EXPECT_EQ(a.verdict, ResizeVerdict::kDeferred);
  EXPECT_EQ(a.message,
            "Node didn't have enough resource: cpu, requested: 1050, used: 1500, "
            "capacity: 2000");
  // Room enough now: accepted.
  EXPECT_EQ(AdmitResize(pod.spec, node, &running.spec, {.cpu_milli = 900}).verdict,
            ResizeVerdict::kAccepted);
  // Memory, when cpu fits.
  pod = running;
  pod.spec.containers[0].resources.requests.memory = Q("512Mi");
  pod.spec.containers[0].resources.limits.memory = Q("512Mi");
  a = AdmitResize(pod.spec, node, &running.spec, {.memory_bytes = 768LL << 20});
  EXPECT_EQ(a.verdict, ResizeVerdict::kDeferred);
  // 512Mi + the proxy sidecar's 32Mi (its request defaults to its limit).
  EXPECT_EQ(a.message, "Node didn't have enough resource: memory, requested: " +
                           std::to_string(544LL << 20) + ", used: " + std::to_string(768LL << 20) +
                           ", capacity: " + std::to_string(1LL << 30));
  // More than the node has stays Infeasible, whatever the others hold.
  pod.spec.containers[0].resources.requests.memory = Q("2Gi");
  pod.spec.containers[0].resources.limits.memory = Q("2Gi");
  EXPECT_EQ(AdmitResize(pod.spec, node, &running.spec, {.memory_bytes = 768LL << 20}).verdict,
            ResizeVerdict::kInfeasible);
}

// S17.12: `run` admits no pod against the node, so the node may already be
// over-committed; a resize that raises no request is never deferred.
TEST(ResizeAdmit, S17_12_ARaiseOfNoRequestIsNeverDeferred) {
  const Pod running = Burstable();
  Pod pod = running;
  pod.spec.containers[0].resources.requests.cpu = Q("50m");
  pod.spec.containers[0].resources.limits.memory = Q("256Mi");  // a limit, not a request
  const NodeAllocatable node{.cpu_milli = 2000, .memory_bytes = 1LL << 30};
  const NodeRequests crowded{.cpu_milli = 5000, .memory_bytes = 4LL << 30};
  EXPECT_EQ(AdmitResize(pod.spec, node, &running.spec, crowded).verdict, ResizeVerdict::kAccepted);
  // Without the running pod to compare with, the others count.
  EXPECT_EQ(AdmitResize(pod.spec, node, nullptr, crowded).verdict, ResizeVerdict::kDeferred);
}

TEST(ResizeRestart, S17_3_RestartContainerPolicyPicksTheContainers) {
  Pod before = Burstable();
  Pod after = before;
  after.spec.containers[0].resources.limits.cpu = Q("300m");   // app: NotRequired
  after.spec.containers[1].resources.requests.cpu = Q("60m");  // side: RestartContainer
  EXPECT_THAT(ContainersToRestart(before.spec, after.spec), ElementsAre("side"));
  after = before;
  after.spec.containers[1].resources.requests.memory = Q("10Mi");  // side's memory: NotRequired
  EXPECT_THAT(ContainersToRestart(before.spec, after.spec), IsEmpty());
}

TEST(ResizePolicyValidation, S17_3_TheApiServersRules) {
  Pod pod = Burstable();
  pod.spec.containers[0].resize_policy = {
      {"cpu", "NotRequired"}, {"cpu", "RestartContainer"}, {"gpu", "Sometimes"}};
  pod.spec.init_containers[0].resize_policy = {{"cpu", "NotRequired"}};
  EXPECT_THAT(
      Lines(ValidatePod(pod)),
      ElementsAre("spec.initContainers[0].resizePolicy: Forbidden: may not be set for init "
                  "containers without restartPolicy=Always",
                  "spec.containers[0].resizePolicy[1]: Duplicate value: \"cpu\"",
                  "spec.containers[0].resizePolicy[2].resourceName: Unsupported value: \"gpu\": "
                  "supported values: \"cpu\", \"memory\"",
                  "spec.containers[0].resizePolicy[2].restartPolicy: Unsupported value: "
                  "\"Sometimes\": supported values: \"NotRequired\", \"RestartContainer\""));
  Pod never = Burstable();
  never.spec.restart_policy = RestartPolicy::kNever;
  EXPECT_THAT(Lines(ValidatePod(never)),
              ElementsAre("spec.containers[1].resizePolicy[0].restartPolicy: Invalid value: "
                          "\"RestartContainer\": must be 'NotRequired' when `restartPolicy` is "
                          "'Never'"));
}

}  // namespace
}  // namespace podvisor::pod
