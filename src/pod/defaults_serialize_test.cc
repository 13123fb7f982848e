// Tests for ApplyDefaults (defaults.cc) and for the JSON the model
// serializes back to (serialize.cc): API defaults filled in once, round
// trips through ToJson and the decoder, and enums printed as words.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pod/defaults.h"
#include "pod/model.h"
#include "pod/parse.h"
#include "pod/pod_test_util.h"
#include "pod/serialize.h"

namespace podvisor::pod {
namespace {

using nlohmann::json;
using namespace test_util;
using ::testing::IsEmpty;

// ---------------------------------------------------------------------------
// Defaults

TEST(Defaults, TerminationGracePeriodIs30WhenAbsent) {
  Pod pod = ParseClean("  containers: [{name: c}]\n");
  EXPECT_FALSE(pod.spec.termination_grace_period_seconds);
  ApplyDefaults(pod);
  EXPECT_EQ(pod.spec.termination_grace_period_seconds, 30);

  Pod zero = ParseClean("  terminationGracePeriodSeconds: 0\n  containers: [{name: c}]\n");
  ApplyDefaults(zero);
  EXPECT_EQ(zero.spec.termination_grace_period_seconds, 0);  // given, even if 0
}

TEST(Defaults, RequestsDefaultToLimitsPerResourceInEveryContainerKind) {
  Pod pod = ParseClean(R"(  initContainers:
    - name: init
      resources: {limits: {cpu: 500m, memory: 1Gi}}
    - name: sidecar
      restartPolicy: Always
      resources: {limits: {memory: 128Mi, hugepages-2Mi: 4Mi}, requests: {memory: 64Mi}}
  containers:
    - name: app
      resources: {limits: {cpu: "1", example.com/gpu: 2}, requests: {cpu: 250m}}
    - name: none
)");
  ApplyDefaults(pod);
  const ResourceRequirements& init = pod.spec.init_containers[0].resources;
  EXPECT_EQ(init.requests.cpu, Q("500m"));
  EXPECT_EQ(init.requests.memory, Q("1Gi"));
  const ResourceRequirements& sidecar = pod.spec.init_containers[1].resources;
  EXPECT_EQ(sidecar.requests.memory, Q("64Mi"));  // an explicit request stays
  EXPECT_FALSE(sidecar.requests.cpu);
  EXPECT_EQ(sidecar.requests.other.at("hugepages-2Mi"), Q("4Mi"));
  const ResourceRequirements& app = pod.spec.containers[0].resources;
  EXPECT_EQ(app.requests.cpu, Q("250m"));
  EXPECT_FALSE(app.requests.memory);
  EXPECT_EQ(app.requests.other.at("example.com/gpu"), Q("2"));
  EXPECT_TRUE(pod.spec.containers[1].resources.requests.empty());
}

TEST(Defaults, HttpGetPathAndSchemeInProbesAndHooks) {
  Pod pod = ParseClean(R"(  containers:
    - name: c
      startupProbe: {httpGet: {port: 1}}
      readinessProbe: {httpGet: {port: 2, path: "", scheme: ""}}
      livenessProbe: {httpGet: {port: 3, path: /live, scheme: HTTPS}}
      lifecycle:
        postStart: {httpGet: {port: 4}}
        preStop: {httpGet: {port: 5, scheme: ""}}
)");
  ApplyDefaults(pod);
  const Container& c = pod.spec.containers[0];
  for (const HttpGetAction* get :
       {&*c.startup_probe->handler.http_get, &*c.readiness_probe->handler.http_get,
        &*c.lifecycle->post_start->handler.http_get, &*c.lifecycle->pre_stop->handler.http_get}) {
    EXPECT_EQ(get->path, "/");
    EXPECT_EQ(get->scheme, "HTTP");
  }
  EXPECT_EQ(c.liveness_probe->handler.http_get->path, "/live");
  EXPECT_EQ(c.liveness_probe->handler.http_get->scheme, "HTTPS");
}

TEST(Defaults, NamespaceIsDefault) {
  Pod pod = Parse(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: \"\"}\n"
                "spec: {containers: [{name: c}]}\n")
                .pod;
  EXPECT_EQ(pod.metadata.namespace_name, "");
  ApplyDefaults(pod);
  EXPECT_EQ(pod.metadata.namespace_name, "default");
  EXPECT_EQ(ParseClean("  containers: [{name: c}]\n").metadata.namespace_name, "default");
}

TEST(Defaults, ProbeZeroesPortProtocolAndMessagePathTakeApiDefaults) {
  Pod pod = ParseClean(R"(  containers:
    - name: c
      ports: [{containerPort: 80, protocol: ""}]
      terminationMessagePath: ""
      livenessProbe:
        exec: {command: [x]}
        initialDelaySeconds: 0
        timeoutSeconds: 0
        periodSeconds: 0
        successThreshold: 0
        failureThreshold: 0
)");
  ApplyDefaults(pod);  // S7.1
  const Container& c = pod.spec.containers[0];
  EXPECT_EQ(c.ports[0].protocol, "TCP");
  EXPECT_EQ(c.termination_message_path, "/dev/termination-log");
  EXPECT_EQ(c.liveness_probe->initial_delay_seconds, 0);
  EXPECT_EQ(c.liveness_probe->timeout_seconds, 1);
  EXPECT_EQ(c.liveness_probe->period_seconds, 10);
  EXPECT_EQ(c.liveness_probe->success_threshold, 1);
  EXPECT_EQ(c.liveness_probe->failure_threshold, 3);
}

TEST(Defaults, ApplyingTwiceChangesNothing) {
  for (const char* name : {"every-field.yaml", "job-with-sidecars.yaml"}) {
    Pod once = ParseTestData(name);
    ApplyDefaults(once);
    Pod twice = once;
    ApplyDefaults(twice);
    EXPECT_TRUE(once == twice) << name;
  }
}

// ---------------------------------------------------------------------------
// Serialization

TEST(Serialize, RoundTripsTheTestdataManifests) {
  for (const char* name : {"every-field.yaml", "every-field.json", "job-with-sidecars.yaml"}) {
    Pod pod = ParseTestData(name);
    for (bool defaulted : {false, true}) {
      if (defaulted) ApplyDefaults(pod);
      json serialized = ToJson(pod);
      ParseOutput back = DecodePod(serialized);
      EXPECT_THAT(ErrorLines(back), IsEmpty()) << name;
      EXPECT_THAT(WarningLines(back), IsEmpty()) << name;
      EXPECT_TRUE(back.pod == pod) << name << " defaulted=" << defaulted << "\n"
                                   << serialized.dump(2) << "\n"
                                   << ToJson(back.pod).dump(2);
      // And through text, as `podvisor status -o json` | a script would.
      Result<ParseOutput> reparsed = ParseManifest(serialized.dump(), ManifestFormat::kJson);
      ASSERT_TRUE(reparsed.ok());
      EXPECT_TRUE(reparsed->pod == pod) << name;
    }
  }
}

TEST(Serialize, MinimalPodOmitsEmptyFields) {
  Pod pod = ParseClean("  containers: [{name: app, image: busybox}]\n");
  ApplyDefaults(pod);
  EXPECT_EQ(ToJson(pod), json::parse(R"({
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {
      "restartPolicy": "Always",
      "terminationGracePeriodSeconds": 30,
      "containers": [{
        "name": "app",
        "image": "busybox",
        "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File"
      }]
    }
  })"));
}

TEST(Serialize, QuantitiesInCanonicalForm) {
  Pod pod = ParseClean(R"(  containers:
    - name: c
      resources:
        limits: {cpu: 0.5, memory: 1024Mi, ephemeral-storage: "1000"}
)");
  ApplyDefaults(pod);
  json resources = ToJson(pod.spec.containers[0])["resources"];
  EXPECT_EQ(resources["limits"], json::parse(R"({"cpu": "500m", "memory": "1Gi",
                                                 "ephemeral-storage": "1k"})"));
  EXPECT_EQ(resources["requests"], resources["limits"]);
  EXPECT_EQ(ToJson(Q("128Mi")), "128Mi");
}

TEST(Serialize, ProbesShowTheirDefaultedNumbers) {
  Pod pod = ParseClean(R"(  containers:
    - name: c
      livenessProbe: {httpGet: {port: http}}
      readinessProbe: {tcpSocket: {port: 80}, initialDelaySeconds: 5}
)");
  ApplyDefaults(pod);
  json c = ToJson(pod.spec.containers[0]);
  EXPECT_EQ(c["livenessProbe"], json::parse(R"({
    "httpGet": {"path": "/", "port": "http", "scheme": "HTTP"},
    "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})"));
  EXPECT_EQ(c["readinessProbe"]["initialDelaySeconds"], 5);
  EXPECT_EQ(c["readinessProbe"]["tcpSocket"], json::parse(R"({"port": 80})"));
}

TEST(Serialize, LifecycleSecurityAndVolumes) {
  Pod pod = ParseTestData("every-field.yaml");
  json spec = ToJson(pod.spec);
  EXPECT_EQ(spec["restartPolicy"], "OnFailure");
  EXPECT_EQ(spec["volumes"][0], json::parse(R"({"name": "scratch",
      "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}})"));
  EXPECT_EQ(spec["volumes"][2], json::parse(R"({"name": "cache", "emptyDir": {}})"));
  json app = spec["containers"][0];
  EXPECT_EQ(app["lifecycle"]["preStop"], json::parse(R"j({
      "exec": {"command": ["/app/server", "shutdown", "--reason=$(STOP_REASON)"]},
      "reasonDelivery": {"env": "STOP_REASON"}})j"));
  EXPECT_EQ(app["lifecycle"]["stopSignal"], "SIGINT");
  EXPECT_EQ(app["securityContext"]["capabilities"], json::parse(R"({"add": ["NET_BIND_SERVICE"],
      "drop": ["ALL"]})"));
  EXPECT_EQ(app["terminationMessagePolicy"], "FallbackToLogsOnError");
  EXPECT_EQ(app["ports"][0], json::parse(R"({"name": "http", "containerPort": 8080,
      "hostPort": 18080, "protocol": "TCP", "hostIP": "127.0.0.1"})"));
  EXPECT_EQ(spec["initContainers"][1]["restartPolicy"], "Always");
  EXPECT_FALSE(spec.contains("hostNetwork"));  // false is omitted
  EXPECT_EQ(spec["shareProcessNamespace"], true);
}

TEST(Serialize, ConfigVolumesEnvSourcesAndUnsupportedKinds) {
  Pod pod = ParseClean(R"(  containers:
    - name: c
      env: [{name: N, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
      envFrom: [{prefix: P_, secretRef: {name: s, optional: true}}]
  volumes:
    - {name: cfg, configMap: {name: x, items: [{key: k, path: p, mode: 0400}]}}
    - {name: sec, secret: {secretName: s, defaultMode: 0440}}
    - name: all
      projected:
        sources:
          - secret: {name: s}
          - downwardAPI: {items: [{path: l, fieldRef: {fieldPath: metadata.labels}}]}
    - {name: pvc, persistentVolumeClaim: {claimName: c}}
)");
  json spec = ToJson(pod.spec);
  EXPECT_EQ(spec["volumes"][0], json::parse(R"({"name": "cfg", "configMap": {"name": "x",
                "items": [{"key": "k", "path": "p", "mode": 256}]}})"));
  EXPECT_EQ(spec["volumes"][1],
            json::parse(R"({"name": "sec", "secret": {"secretName": "s", "defaultMode": 288}})"));
  EXPECT_EQ(spec["volumes"][2]["projected"]["sources"], json::parse(R"([{"secret": {"name": "s"}},
                {"downwardAPI": {"items": [{"path": "l",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}}]}}])"));
  EXPECT_EQ(spec["volumes"][3], json::parse(R"({"name": "pvc", "persistentVolumeClaim": {}})"));
  EXPECT_EQ(spec["containers"][0]["env"][0],
            json::parse(R"({"name": "N", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                "fieldPath": "metadata.name"}}})"));
  EXPECT_EQ(spec["containers"][0]["envFrom"][0],
            json::parse(R"({"prefix": "P_", "secretRef": {"name": "s", "optional": true}})"));
}

TEST(ModelNames, EnumsPrintAsWords) {
  EXPECT_EQ(RestartPolicyName(RestartPolicy::kAlways), "Always");
  EXPECT_EQ(RestartPolicyName(RestartPolicy::kOnFailure), "OnFailure");
  EXPECT_EQ(RestartPolicyName(RestartPolicy::kNever), "Never");
  EXPECT_EQ(TerminationMessagePolicyName(TerminationMessagePolicy::kFile), "File");
  EXPECT_EQ(TerminationMessagePolicyName(TerminationMessagePolicy::kFallbackToLogsOnError),
            "FallbackToLogsOnError");
}

}  // namespace
}  // namespace podvisor::pod
