// Validation of env sources, config volumes and sysctls
// (validate_config.cc): the API server's messages, plus the references to
// config objects the kubelet would only find missing at container start.
#include "pod/defaults.h"
#include "pod/pod_test_util.h"

namespace podvisor::pod {
namespace {

using test_util::ErrorLines;
using test_util::Parse;
using testing::ElementsAre;
using testing::IsEmpty;

std::vector<std::string> Validate(std::string_view spec) {
  std::string text = std::string(R"(apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {LOG_LEVEL: debug}
binaryData: {logo: YQ==}
---
apiVersion: v1
kind: Secret
metadata: {name: sec}
stringData: {token: t}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
)") + std::string(spec);
  ParseOutput out = Parse(text);
  EXPECT_THAT(ErrorLines(out), IsEmpty());
  ApplyDefaults(out.pod);
  std::vector<std::string> lines;
  for (const FieldError& e : ValidatePod(out.pod)) lines.push_back(e.ToString());
  return lines;
}

TEST(ValidateConfig, ReferencesThatResolveAreValid) {
  EXPECT_THAT(Validate(R"(  securityContext:
    fsGroup: 2000
    sysctls: [{name: net.ipv4.ip_local_port_range, value: "1024 65000"}, {name: kernel.msgmax, value: "65536"}]
  containers:
    - name: app
      image: busybox
      envFrom: [{configMapRef: {name: cfg}}, {prefix: S_, secretRef: {name: sec}}, {configMapRef: {name: none, optional: true}}]
      env:
        - {name: L, valueFrom: {configMapKeyRef: {name: cfg, key: logo}}}
        - {name: T, valueFrom: {secretKeyRef: {name: sec, key: token}}}
        - {name: N, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
        - {name: M, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
        - {name: O, valueFrom: {secretKeyRef: {name: sec, key: nope, optional: true}}}
      volumeMounts:
        - {name: c, mountPath: /c}
        - {name: all, mountPath: /all, subPathExpr: "$(S_token)/x"}
  volumes:
    - {name: c, configMap: {name: cfg, defaultMode: 0400, items: [{key: LOG_LEVEL, path: conf/level}]}}
    - name: all
      projected:
        defaultMode: 0440
        sources:
          - secret: {name: sec}
          - downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}, {path: mem, resourceFieldRef: {containerName: app, resource: requests.memory}}]}
          - configMap: {name: gone, optional: true, items: [{key: k, path: k}]}
)"),
              IsEmpty());
}

TEST(ValidateConfig, MissingObjectsAndKeysAreNamed) {
  const std::string e = "spec.containers[0].env";
  EXPECT_THAT(
      Validate(R"(  containers:
    - name: app
      image: busybox
      envFrom: [{configMapRef: {name: nope}}, {}, {prefix: "1", secretRef: {name: sec}}]
      env:
        - {name: A, valueFrom: {configMapKeyRef: {name: cfg, key: MISSING}}}
        - {name: B, valueFrom: {secretKeyRef: {name: nope, key: k}}}
        - {name: C, value: x, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
        - {name: D, valueFrom: {}}
)"),
      ElementsAre(
          e + "[0].valueFrom.configMapKeyRef.key: Invalid value: \"MISSING\": no such key in "
              "configmap/cfg (or mark the reference optional: true)",
          e + "[1].valueFrom.secretKeyRef.name: Invalid value: \"nope\": no secret of this name "
              "in the bundle (or mark the reference optional: true)",
          e + "[2].valueFrom: Invalid value: may not be specified when `value` is not empty",
          e + "[3].valueFrom: Invalid value: must specify one of: `fieldRef`, "
              "`resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
          "spec.containers[0].envFrom[0].configMapRef.name: Invalid value: \"nope\": no "
          "configmap of this name in the bundle (or mark the reference optional: true)",
          "spec.containers[0].envFrom[1]: Invalid value: must specify one of: `configMapRef` or "
          "`secretRef`",
          "spec.containers[0].envFrom[2].prefix: Invalid value: \"1\": a valid environment "
          "variable name must consist of alphabetic characters, digits, '_', '-', or '.', and "
          "must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or "
          "'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"));
}

TEST(ValidateConfig, DownwardApiSelectors) {
  EXPECT_THAT(
      Validate(R"(  containers:
    - name: app
      image: busybox
      env:
        - {name: A, valueFrom: {fieldRef: {fieldPath: metadata.labels}}}
        - {name: B, valueFrom: {fieldRef: {apiVersion: v2, fieldPath: "metadata.labels['a b']"}}}
        - {name: C, valueFrom: {resourceFieldRef: {resource: limits.gpu}}}
        - {name: D, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 2}}}
        - {name: E, valueFrom: {resourceFieldRef: {containerName: nope, resource: limits.cpu}}}
  volumes:
    - name: d
      downwardAPI:
        items:
          - {path: ../up, fieldRef: {fieldPath: spec.nodeName}}
          - {path: r, mode: 01000, resourceFieldRef: {resource: limits.memory}}
)"),
      ElementsAre(
          "spec.volumes[0].downwardAPI.items[0].path: Invalid value: \"../up\": must not "
          "contain '..'",
          "spec.volumes[0].downwardAPI.items[0].path: Invalid value: \"../up\": must not start "
          "with '..'",
          "spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath: Unsupported value: "
          "\"spec.nodeName\": supported values: \"metadata.name\", \"metadata.namespace\", "
          "\"metadata.labels\", \"metadata.annotations\", \"metadata.uid\"",
          "spec.volumes[0].downwardAPI.items[1].mode: Invalid value: 512: must be a number "
          "between 0 and 0777 (octal), both inclusive",
          "spec.volumes[0].downwardAPI.items[1].resourceFieldRef.containerName: Required value",
          "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "
          "\"metadata.labels\": supported values: \"metadata.name\", \"metadata.namespace\", "
          "\"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", "
          "\"status.hostIP\", \"status.hostIPs\", \"status.podIP\", \"status.podIPs\"",
          "spec.containers[0].env[1].valueFrom.fieldRef.apiVersion: Unsupported value: \"v2\": "
          "supported values: \"v1\"",
          "spec.containers[0].env[1].valueFrom.fieldRef.fieldPath: Invalid value: "
          "\"metadata.labels['a b']\": name part must consist of alphanumeric characters, '-', "
          "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  "
          "or 'my.name',  or '123-abc', regex used for validation is "
          "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
          "spec.containers[0].env[2].valueFrom.resourceFieldRef.resource: Unsupported value: "
          "\"limits.gpu\": supported values: \"limits.cpu\", \"limits.memory\", "
          "\"limits.ephemeral-storage\", \"requests.cpu\", \"requests.memory\", "
          "\"requests.ephemeral-storage\"",
          "spec.containers[0].env[3].valueFrom.resourceFieldRef.divisor: Invalid value: \"2\": "
          "only divisor's values 1m, 1 are supported with the cpu resource",
          "spec.containers[0].env[4].valueFrom.resourceFieldRef.containerName: Invalid value: "
          "\"nope\": must name a container of the pod"));
}

TEST(ValidateConfig, ConfigVolumes) {
  EXPECT_THAT(
      Validate(R"(  containers:
    - name: app
      image: busybox
      volumeMounts: [{name: a, mountPath: /a, subPath: x, subPathExpr: '$(UNDEFINED)'}]
  volumes:
    - {name: a, configMap: {name: cfg, items: [{key: nope, path: /abs}]}}
    - {name: b, secret: {secretName: missing, defaultMode: 01777}}
    - {name: c, secret: {}}
    - name: d
      projected:
        sources:
          - {configMap: {name: cfg, defaultMode: 0400}, secret: {name: sec}}
          - secret: {name: nope}
    - {name: e, configMap: {name: cfg}, emptyDir: {}}
)"),
      ElementsAre(
          "spec.volumes[0].configMap.items[0].key: Invalid value: \"nope\": no such key in "
          "configmap/cfg (or mark the volume optional: true)",
          "spec.volumes[0].configMap.items[0].path: Invalid value: \"/abs\": must be a relative "
          "path",
          "spec.volumes[1].secret.defaultMode: Invalid value: 1023: must be a number between 0 "
          "and 0777 (octal), both inclusive",
          "spec.volumes[1].secret.secretName: Invalid value: \"missing\": no secret of this name "
          "in the bundle (or mark the reference optional: true)",
          "spec.volumes[2].secret.secretName: Required value",
          "spec.volumes[3].projected.sources[0]: Forbidden: may not specify more than 1 volume "
          "projection",
          "spec.volumes[3].projected.sources[1].secret.name: Invalid value: \"nope\": no secret "
          "of this name in the bundle (or mark the reference optional: true)",
          "spec.volumes[4].configMap: Forbidden: may not specify more than 1 volume type",
          "spec.containers[0].volumeMounts[0].subPathExpr: Invalid value: \"$(UNDEFINED)\": "
          "subPathExpr and subPath are mutually exclusive",
          "spec.containers[0].volumeMounts[0].subPathExpr: Invalid value: \"$(UNDEFINED)\": "
          "$(UNDEFINED) is not a variable of the container's env or envFrom"));
}

TEST(ValidateConfig, SysctlsMustBeNamespacedAndMatchTheHostNamespaces) {
  EXPECT_THAT(
      Validate(R"(  hostNetwork: true
  securityContext:
    sysctls:
      - {name: vm.swappiness, value: "10"}
      - {name: net.core.somaxconn, value: "1024"}
      - {name: kernel.shm_rmid_forced, value: "1"}
      - {name: kernel/shm_rmid_forced, value: "1"}
      - {name: kernel.hostname, value: x}
      - {name: "Bad..Name", value: x}
  containers: [{name: app, image: busybox, tty: true, stdin: true}]
)"),
      ElementsAre(
          "spec.containers[0].tty: Forbidden: podvisor gives containers pipes to their log, not "
          "a terminal; remove tty: true",
          "spec.containers[0].stdin: Forbidden: podvisor attaches nothing to a container's "
          "stdin; remove stdin: true",
          "spec.securityContext.sysctls[0].name: Forbidden: sysctl \"vm.swappiness\" is not "
          "namespaced: setting it would change the whole host",
          "spec.securityContext.sysctls[1].name: Forbidden: sysctl \"net.core.somaxconn\" not "
          "allowed with hostNetwork",
          "spec.securityContext.sysctls[3].name: Duplicate value: \"kernel/shm_rmid_forced\"",
          "spec.securityContext.sysctls[4].name: Forbidden: sysctl \"kernel.hostname\" is set "
          "from spec.hostname",
          "spec.securityContext.sysctls[5].name: Invalid value: \"Bad..Name\": must have at most "
          "253 characters and match regex "
          "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$"));
}

}  // namespace
}  // namespace podvisor::pod
