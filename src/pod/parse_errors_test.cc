// Tests for what decoding reports (parse.cc, decode_model.cc, field_error.cc):
// kubectl-style type errors with their field paths, unknown and unsupported
// fields as warnings, every problem in one run, and manifests of the wrong
// shape or randomly damaged that must still come back with an answer.
#include <random>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pod/defaults.h"
#include "pod/parse.h"
#include "pod/pod_test_util.h"
#include "pod/serialize.h"

namespace podvisor::pod {
namespace {

using nlohmann::json;
using namespace test_util;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// ---------------------------------------------------------------------------
// Type errors

TEST(ParseManifest, IntOrStringRejectsOtherTypes) {
  ParseOutput out = Parse(PodYaml(R"(  containers:
    - name: c
      readinessProbe: {tcpSocket: {port: 80.5}}
      livenessProbe: {tcpSocket: {port: [80]}}
)"));
  EXPECT_THAT(
      ErrorLines(out),
      UnorderedElementsAre("spec.containers[0].readinessProbe.tcpSocket.port: Invalid value: 80.5: "
                           "must be an integer",
                           "spec.containers[0].livenessProbe.tcpSocket.port: Invalid value: [80]: "
                           "must be an integer or a string"));
}

TEST(ParseManifest, MalformedQuantityNamesTheResourceWithBrackets) {
  ParseOutput out = Parse(PodYaml(R"(  containers:
    - name: c
      resources:
        limits: {memory: 12Q, cpu: true}
  volumes:
    - name: v
      emptyDir: {sizeLimit: lots}
)"));
  EXPECT_THAT(
      ErrorLines(out),
      UnorderedElementsAre(
          "spec.containers[0].resources.limits[memory]: Invalid value: \"12Q\": quantities must "
          "match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
          "spec.containers[0].resources.limits[cpu]: Invalid value: true: must be a quantity: a "
          "string such as \"500m\" or \"128Mi\", or a number",
          "spec.volumes[0].emptyDir.sizeLimit: Invalid value: \"lots\": quantities must match the "
          "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"));
  EXPECT_EQ(out.errors[0].type == FieldErrorType::kInvalid ||
                out.errors[0].type == FieldErrorType::kTypeInvalid,
            true);
}

TEST(ParseManifest, QuotedNumberIsATypeErrorForContainerPort) {
  ParseOutput out = Parse(PodYaml(R"(  containers:
    - name: c
      ports:
        - containerPort: "8080"
        - containerPort: abc
)"));
  EXPECT_THAT(ErrorLines(out),
              ElementsAre("spec.containers[0].ports[0].containerPort: Invalid value: \"8080\": "
                          "must be an integer",
                          "spec.containers[0].ports[1].containerPort: Invalid value: \"abc\": "
                          "must be an integer"));
  EXPECT_EQ(out.errors[0].type, FieldErrorType::kTypeInvalid);
}

TEST(ParseManifest, EnvValuesMustBeStrings) {
  // `value: "true"` is the string; unquoted true is a boolean, which the
  // API server rejects for an env var.
  Pod pod = ParseClean(R"(  containers:
    - name: c
      env:
        - {name: A, value: "true"}
        - {name: B, value: "8080"}
)");
  EXPECT_EQ(pod.spec.containers[0].env[0].value, "true");
  EXPECT_EQ(pod.spec.containers[0].env[1].value, "8080");

  ParseOutput out = Parse(PodYaml(R"(  containers:
    - name: c
      env:
        - {name: A, value: true}
        - {name: B, value: 8080}
)"));
  EXPECT_THAT(
      ErrorLines(out),
      ElementsAre("spec.containers[0].env[0].value: Invalid value: true: must be a string",
                  "spec.containers[0].env[1].value: Invalid value: 8080: must be a string"));
}

TEST(ParseManifest, IntegersOutOfRangeAreErrors) {
  ParseOutput out = Parse(PodYaml(R"(  terminationGracePeriodSeconds: 99999999999999999999
  containers:
    - name: c
      ports: [{containerPort: 2147483648}, {containerPort: -2147483649}]
      livenessProbe: {exec: {command: [x]}, periodSeconds: 2147483647}
)"));
  EXPECT_THAT(
      ErrorLines(out),
      UnorderedElementsAre(
          "spec.terminationGracePeriodSeconds: Invalid value: 1e+20: must be an integer between "
          "-9223372036854775808 and 9223372036854775807",
          "spec.containers[0].ports[0].containerPort: Invalid value: 2147483648: must be an "
          "integer between -2147483648 and 2147483647",
          "spec.containers[0].ports[1].containerPort: Invalid value: -2147483649: must be an "
          "integer between -2147483648 and 2147483647"));
  EXPECT_EQ(out.pod.spec.containers[0].liveness_probe->period_seconds, 2147483647);
}

TEST(ParseManifest, WrongTypesGiveKubectlStyleErrors) {
  ParseOutput typed = Parse(R"(apiVersion: v1
kind: Pod
metadata:
  name: p
  labels: {version: 1, app: web}
  annotations: [a]
spec:
  hostNetwork: "true"
  terminationGracePeriodSeconds: "30"
  containers:
    - name: c
      image: 7
      command: sleep 10
      args: [1, two]
      stdin: yes
      securityContext: [privileged]
  volumes: {name: v}
)");
  EXPECT_THAT(
      ErrorLines(typed),
      UnorderedElementsAre(
          "metadata.labels[version]: Invalid value: 1: must be a string",
          "metadata.annotations: Invalid value: [\"a\"]: must be an object of strings",
          "spec.hostNetwork: Invalid value: \"true\": must be a boolean",
          "spec.terminationGracePeriodSeconds: Invalid value: \"30\": must be an integer",
          "spec.containers[0].image: Invalid value: 7: must be a string",
          "spec.containers[0].command: Invalid value: \"sleep 10\": must be a list",
          "spec.containers[0].args[0]: Invalid value: 1: must be a string",
          "spec.containers[0].stdin: Invalid value: \"yes\": must be a boolean",
          "spec.containers[0].securityContext: Invalid value: [\"privileged\"]: must be an object",
          "spec.volumes: Invalid value: {\"name\":\"v\"}: must be a list"));
  // What was well-typed is still decoded.
  EXPECT_EQ(typed.pod.metadata.labels.at("app"), "web");
  EXPECT_EQ(typed.pod.spec.containers[0].args.at(1), "two");
}

TEST(ParseManifest, ErrorValuesAreAbbreviated) {
  ParseOutput out = Parse(
      PodYaml("  hostname:\n    long: " + std::string(100, 'x') + "\n  containers: [{name: c}]\n"));
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_EQ(out.errors[0].value.size(), 64u);
  EXPECT_THAT(out.errors[0].value, testing::EndsWith("..."));
}

// ---------------------------------------------------------------------------
// Warnings

TEST(ParseManifest, UnknownFieldsWarnWithTheirPath) {
  ParseOutput out = Parse(R"(apiVersion: v1
kind: Pod
extra: 1
metadata:
  name: p
  colour: blue
spec:
  containerz: []
  containers:
    - name: c
      foo: bar
      livenessProbe: {exec: {command: [x], shell: sh}, periodSecond: 5}
      resources: {limit: {cpu: 1}}
)");
  EXPECT_THAT(ErrorLines(out), IsEmpty());
  EXPECT_THAT(WarningLines(out),
              UnorderedElementsAre("extra: unknown field", "metadata.colour: unknown field",
                                   "spec.containerz: unknown field",
                                   "spec.containers[0].foo: unknown field",
                                   "spec.containers[0].livenessProbe.exec.shell: unknown field",
                                   "spec.containers[0].livenessProbe.periodSecond: unknown field",
                                   "spec.containers[0].resources.limit: unknown field"));
}

TEST(ParseManifest, KnownButUnsupportedFieldsWarnWithTheReason) {
  ParseOutput out = Parse(R"(apiVersion: v1
kind: Pod
metadata:
  name: p
  creationTimestamp: null
spec:
  nodeSelector: {disk: ssd}
  tolerations: [{key: k, operator: Exists}]
  affinity: {}
  serviceAccountName: web
  dnsPolicy: ClusterFirst
  priorityClassName: high
  schedulerName: default-scheduler
  containers:
    - name: c
      envFrom: [{configMapRef: {name: cm}}]
      securityContext: {seLinuxOptions: {level: "s0"}}
status:
  phase: Running
)");
  EXPECT_THAT(ErrorLines(out), IsEmpty());
  const std::string scheduler = "ignored: podvisor runs a single pod without a scheduler";
  EXPECT_THAT(
      WarningLines(out),
      UnorderedElementsAre(
          "metadata.creationTimestamp: ignored: set by the API server, not by a manifest",
          "spec.nodeSelector: " + scheduler, "spec.tolerations: " + scheduler,
          "spec.affinity: " + scheduler, "spec.priorityClassName: " + scheduler,
          "spec.schedulerName: " + scheduler,
          "spec.containers[0].securityContext.seLinuxOptions: ignored: podvisor sets no SELinux "
          "labels (nor do the kubelet's runtimes on a host without SELinux, such as Debian's)",
          "status: ignored: the status is computed by podvisor"));
}

// ---------------------------------------------------------------------------
// Required fields and many problems at once

TEST(ParseManifest, ApiVersionAndKindAreRequired) {
  ParseOutput out = Parse("metadata: {name: p}\nspec: {containers: [{name: c}]}\n");
  EXPECT_THAT(ErrorLines(out), ElementsAre("apiVersion: Required value", "kind: Required value"));
  ParseOutput nulls = Parse("apiVersion: ~\nkind:\nspec: {containers: [{name: c}]}\n");
  EXPECT_THAT(ErrorLines(nulls), ElementsAre("apiVersion: Required value", "kind: Required value"));
}

TEST(ParseManifest, ApiVersionAndKindMustBeV1Pod) {
  ParseOutput out = Parse("apiVersion: apps/v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n");
  EXPECT_THAT(ErrorLines(out),
              ElementsAre("apiVersion: Unsupported value: \"apps/v1\": supported values: \"v1\""));
  EXPECT_EQ(out.errors[0].type, FieldErrorType::kUnsupported);
  ParseOutput service = Parse("apiVersion: v1\nkind: Service\nmetadata: {name: p}\nspec: {}\n");
  EXPECT_THAT(ErrorLines(service),
              ElementsAre("kind: Unsupported value: \"Service\": supported values: \"Pod\""));
  ParseOutput typed = Parse("apiVersion: 1\nkind: Pod\nspec: {}\n");
  EXPECT_THAT(ErrorLines(typed), ElementsAre("apiVersion: Invalid value: 1: must be a string"));
}

TEST(ParseManifest, MissingSpecIsRequired) {
  ParseOutput out = Parse("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n");
  EXPECT_THAT(ErrorLines(out), ElementsAre("spec: Required value"));
}

TEST(ParseManifest, EveryProblemIsReportedInOneRun) {
  ParseOutput out = Parse(R"(apiVersion: v2
kind: Pod
metadata: {name: p}
spec:
  restartPolicy: Sometimes
  initContainers:
    - name: sc
      restartPolicy: Sometimes
  containers:
    - name: a
      ports: [{containerPort: x}]
      terminationMessagePolicy: Always
    - name: b
      resources: {requests: {memory: 1GB}}
      bogus: true
)");
  EXPECT_THAT(
      ErrorLines(out),
      UnorderedElementsAre(
          "apiVersion: Unsupported value: \"v2\": supported values: \"v1\"",
          "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", "
          "\"OnFailure\", \"Never\"",
          "spec.initContainers[0].restartPolicy: Unsupported value: \"Sometimes\": supported "
          "values: \"Always\"",
          "spec.containers[0].ports[0].containerPort: Invalid value: \"x\": must be an integer",
          "spec.containers[0].terminationMessagePolicy: Unsupported value: \"Always\": supported "
          "values: \"File\", \"FallbackToLogsOnError\"",
          testing::StartsWith("spec.containers[1].resources.requests[memory]: Invalid value: "
                              "\"1GB\": quantities must match")));
  EXPECT_THAT(WarningLines(out), ElementsAre("spec.containers[1].bogus: unknown field"));
  EXPECT_EQ(out.pod.spec.containers.size(), 2u);
}

// ---------------------------------------------------------------------------
// Robustness

TEST(ParseManifest, WrongShapesNeverThrow) {
  const char* manifests[] = {
      "apiVersion: v1\nkind: Pod\nspec: []\n",
      "apiVersion: v1\nkind: Pod\nspec: {containers: {name: c}}\n",
      "apiVersion: v1\nkind: Pod\nspec: {containers: [1, x, [], null, {}]}\n",
      "apiVersion: v1\nkind: Pod\nmetadata: 5\nspec: {containers: [{lifecycle: [], env: [1]}]}\n",
      "apiVersion: [v1]\nkind: {a: b}\nspec: {volumes: [{hostPath: 1, emptyDir: [], x: y}]}\n",
      "apiVersion: v1\nkind: Pod\nspec: {containers: [{resources: {limits: [], requests: 1}}]}\n",
      "apiVersion: v1\nkind: Pod\nspec: {containers: [{livenessProbe: {httpGet: {port: {}}}}]}\n",
  };
  for (const char* text : manifests) {
    ParseOutput out = Parse(text);
    EXPECT_FALSE(out.errors.empty()) << text;
  }
}

TEST(ParseManifest, DecodePodReportsANonObjectDocument) {
  ParseOutput out = DecodePod(json::array());
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_EQ(out.errors[0].type, FieldErrorType::kTypeInvalid);
}

// Random damage to a real manifest: parsing must always come back with an
// answer (this is the fuzzer's job too; this keeps a cheap version in CI).
TEST(ParseManifest, DamagedManifestsNeverCrash) {
  const std::string yaml = ReadFile(TestData("every-field.yaml"));
  const std::string json_text = ReadFile(TestData("every-field.json"));
  std::mt19937 rng(12345);
  const std::string alphabet = "{}[]:,-&*!|>'\"#\n \t?%@`0x1e.~<\\\xff";
  for (int round = 0; round < 300; ++round) {
    for (const std::string* original : {&yaml, &json_text}) {
      std::string text = *original;
      int edits = 1 + static_cast<int>(rng() % 8);
      for (int e = 0; e < edits && !text.empty(); ++e) {
        std::size_t pos = rng() % text.size();
        switch (rng() % 4) {
          case 0:
            text[pos] = alphabet[rng() % alphabet.size()];
            break;
          case 1:
            text.erase(pos, 1 + rng() % 16);
            break;
          case 2:
            text.insert(pos, 1, alphabet[rng() % alphabet.size()]);
            break;
          default:
            text.resize(pos);
        }
      }
      for (ManifestFormat f : {ManifestFormat::kYaml, ManifestFormat::kJson}) {
        Result<ParseOutput> r = ParseManifest(text, f);
        if (r) {
          ApplyDefaults(r->pod);
          (void)ToJson(r->pod).dump();
        }
      }
    }
  }
}

}  // namespace
}  // namespace podvisor::pod
