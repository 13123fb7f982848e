// The kubelet's environment rules (env_resolution.h): envFrom before env,
// later sources override earlier ones, $(VAR) expands against what was
// defined before, valueFrom never expands, optional references.
#include "pod/env_resolution.h"
#include "pod/pod_test_util.h"

namespace podvisor::pod {
namespace {

using test_util::ErrorLines;
using test_util::Parse;
using testing::ElementsAre;
using testing::HasSubstr;
using testing::IsEmpty;
using testing::Pair;

Pod ParseWithConfig(std::string_view containers) {
  std::string text = std::string(R"(apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {A: from-cm, B: cm-b, "bad-key.x": v, "1st": v}
---
apiVersion: v1
kind: Secret
metadata: {name: sec}
stringData: {A: from-secret, TOKEN: s3cret}
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
  uid: 1234-abcd
  labels: {app: web, tier: front}
  annotations: {"example.com/owner": "team \"a\""}
spec:
  serviceAccountName: builder
)") + std::string(containers);
  ParseOutput out = Parse(text);
  EXPECT_THAT(ErrorLines(out), IsEmpty());
  return out.pod;
}

DownwardApiNode Node() {
  DownwardApiNode node;
  node.node_name = "host-1";
  node.host_ips = {"192.0.2.10", "2001:db8::10"};
  node.pod_ips = {"10.0.0.5"};
  node.cpu_milli = 4000;
  node.memory_bytes = int64_t{8} << 30;
  node.ephemeral_storage_bytes = int64_t{100} << 30;
  return node;
}

EnvPairs Resolve(const Pod& pod, std::size_t container = 0) {
  auto env = ResolveContainerEnv(pod, pod.spec.containers[container], Node());
  EXPECT_TRUE(env) << env.error().message();
  return env ? *env : EnvPairs{};
}

TEST(EnvResolution, EnvFromFirstLaterSourcesWinThenEnvOverrides) {
  Pod pod = ParseWithConfig(R"(  containers:
    - name: app
      envFrom:
        - configMapRef: {name: cfg}
        - secretRef: {name: sec}
        - prefix: CM_
          configMapRef: {name: cfg}
      env:
        - {name: B, value: 'env-b+$(A)'}
        - {name: C, value: '$(B)|$(TOKEN)|$(CM_A)|$(D)|$$(A)'}
        - {name: D, value: later}
)");
  // Same name: replaced in place, so the order is that of first definition.
  EXPECT_THAT(
      Resolve(pod),
      ElementsAre(Pair("A", "from-secret"), Pair("B", "env-b+from-secret"), Pair("bad-key.x", "v"),
                  Pair("TOKEN", "s3cret"), Pair("CM_1st", "v"), Pair("CM_A", "from-cm"),
                  Pair("CM_B", "cm-b"), Pair("CM_bad-key.x", "v"),
                  Pair("C", "env-b+from-secret|s3cret|from-cm|$(D)|$(A)"), Pair("D", "later")));
}

TEST(EnvResolution, InvalidEnvFromKeysAreSkippedAndWarned) {
  Pod pod = ParseWithConfig(R"(  containers:
    - name: app
      envFrom: [{configMapRef: {name: cfg}}]
)");
  EnvPairs env = Resolve(pod);
  for (const auto& [name, value] : env) EXPECT_NE(name, "1st");
  FieldWarnings warnings = EnvFromWarnings(pod);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].ToString(),
            "spec.containers[0].envFrom[0]: keys [1st] from configmap/cfg are skipped: they are "
            "not valid environment variable names");
}

TEST(EnvResolution, ValueFromIsNeverExpandedAndOptionalMissingLeavesItUnset) {
  Pod pod = ParseWithConfig(R"(  containers:
    - name: app
      env:
        - {name: A, value: x}
        - name: LITERAL
          valueFrom: {configMapKeyRef: {name: cfg, key: B}}
        - name: MISSING
          valueFrom: {configMapKeyRef: {name: nope, key: k, optional: true}}
        - name: MISSING_KEY
          valueFrom: {secretKeyRef: {name: sec, key: nope, optional: true}}
        - name: TOKEN
          valueFrom: {secretKeyRef: {name: sec, key: TOKEN}}
        - {name: EMPTY}
)");
  EXPECT_THAT(Resolve(pod), ElementsAre(Pair("A", "x"), Pair("LITERAL", "cm-b"),
                                        Pair("TOKEN", "s3cret"), Pair("EMPTY", "")));
}

TEST(EnvResolution, FieldRefsResolveLocally) {
  Pod pod = ParseWithConfig(R"(  containers:
    - name: app
      env:
        - {name: NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}
        - {name: TIER, valueFrom: {fieldRef: {fieldPath: "metadata.labels['tier']"}}}
        - {name: OWNER, valueFrom: {fieldRef: {fieldPath: "metadata.annotations['example.com/owner']"}}}
        - {name: NONE, valueFrom: {fieldRef: {fieldPath: "metadata.labels['none']"}}}
        - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
        - {name: SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}
        - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
        - {name: HOST_IPS, valueFrom: {fieldRef: {fieldPath: status.hostIPs}}}
        - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
        - {name: POD_IPS, valueFrom: {fieldRef: {fieldPath: status.podIPs}}}
)");
  EXPECT_THAT(
      Resolve(pod),
      ElementsAre(Pair("NAME", "web"), Pair("NS", "shop"), Pair("UID", "1234-abcd"),
                  Pair("TIER", "front"), Pair("OWNER", "team \"a\""), Pair("NONE", ""),
                  Pair("NODE", "host-1"), Pair("SA", "builder"), Pair("HOST_IP", "192.0.2.10"),
                  Pair("HOST_IPS", "192.0.2.10,2001:db8::10"), Pair("POD_IP", "10.0.0.5"),
                  Pair("POD_IPS", "10.0.0.5")));
  auto labels = ResolveFieldRef(pod, {"v1", "metadata.labels"}, Node());
  ASSERT_TRUE(labels);
  EXPECT_EQ(*labels, "app=\"web\"\ntier=\"front\"");
}

TEST(EnvResolution, ResourceFieldRefsRoundUpAndDefaultToNodeAllocatable) {
  Pod pod = ParseWithConfig(R"(  containers:
    - name: app
      resources:
        requests: {cpu: 250m, memory: 100Mi}
        limits: {cpu: 1500m, memory: 1Gi}
      env:
        - {name: CPU_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
        - {name: CPU_MILLI, valueFrom: {resourceFieldRef: {resource: requests.cpu, divisor: 1m}}}
        - {name: CPU_REQ, valueFrom: {resourceFieldRef: {resource: requests.cpu}}}
        - {name: MEM_MI, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
        - {name: MEM_REQ_G, valueFrom: {resourceFieldRef: {resource: requests.memory, divisor: 1G}}}
        - name: SIDE_MEM
          valueFrom: {resourceFieldRef: {containerName: side, resource: limits.memory}}
        - name: SIDE_STORAGE
          valueFrom: {resourceFieldRef: {containerName: side, resource: limits.ephemeral-storage, divisor: 1Gi}}
        - name: SIDE_CPU
          valueFrom: {resourceFieldRef: {containerName: side, resource: limits.cpu}}
    - name: side
)");
  EXPECT_THAT(Resolve(pod),
              ElementsAre(Pair("CPU_LIMIT", "2"), Pair("CPU_MILLI", "250"), Pair("CPU_REQ", "1"),
                          Pair("MEM_MI", "1024"), Pair("MEM_REQ_G", "1"),
                          Pair("SIDE_MEM", std::to_string(int64_t{8} << 30)),
                          Pair("SIDE_STORAGE", "100"), Pair("SIDE_CPU", "4")));
}

TEST(EnvResolution, SubPathExprNeedsEveryVariable) {
  EnvPairs env = {{"POD", "web"}, {"EMPTY", ""}};
  EXPECT_EQ(*ExpandSubPathExpr("logs/$(POD)", env), "logs/web");
  auto missing = ExpandSubPathExpr("$(EMPTY)/$(NOPE)", env);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message(), "subPathExpr: missing value for EMPTY, NOPE");
  EXPECT_THAT(EnvReferences("a$(X)$$(Y)$(Z"), ElementsAre("X"));
}

}  // namespace
}  // namespace podvisor::pod
