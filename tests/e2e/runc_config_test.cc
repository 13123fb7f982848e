// Test tier 3 (TESTING.md), issue 15 with runc: configMap, secret,
// downwardAPI and projected volumes as the container sees them (modes,
// fsGroup ownership, tmpfs for secrets, read-only, subPath, subPathExpr),
// sysctls inside the pod, and a manifest from `kubectl get pod -o yaml`
// run as it is. Needs root; skipped otherwise.
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

// `podvisor validate ARGS...` (a command without --state-dir).
testing::CommandResult Validate(std::vector<std::string> args) {
  args.insert(args.begin(), {RequiredEnv("PODVISOR"), "validate"});
  return testing::RunCommand(args);
}

using ::testing::HasSubstr;

using RuncConfig = RuncE2eTest;

TEST_F(RuncConfig, VolumesModesOwnersTmpfsReadOnlySubPathsAndSysctls) {
  // Each line of /shared/out is one check: "name value".
  const std::string script =
      "exec > /shared/out 2>&1; "
      "echo level $(stat -L -c '%a %g' /etc/cfg/level) $(cat /etc/cfg/level); "
      "echo conf $(stat -L -c '%a %g' /etc/cfg/conf/app.conf); "
      "echo data $(readlink /etc/cfg/..data | cut -c1-4); "
      "echo secret $(stat -L -c '%a %g' /etc/secret/password) $(cat /etc/secret/password); "
      "echo secretfs $(grep ' /etc/secret ' /proc/mounts | cut -d' ' -f3); "
      "echo cfgfs $(grep ' /etc/cfg ' /proc/mounts | cut -d' ' -f4 | cut -d, -f1); "
      "touch /etc/cfg/new 2>/dev/null && echo write rw || echo write ro; "
      "echo groups $(id -G); "
      "echo labels $(cat /etc/podinfo/labels | tr '\\n' ' '); "
      "echo mem $(cat /etc/podinfo/mem); "
      "echo subpath $(cat /app/level.conf); "
      "echo marker > /data/marker; echo expr $(ls /all); "
      "echo ports $(cat /proc/sys/net/ipv4/ip_local_port_range | tr '\\t' ' '); "
      "echo env $LEVEL $TOKEN";
  WritePod(R"(apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data:
  level: debug
  app.conf: "a=1"
---
apiVersion: v1
kind: Secret
metadata: {name: db}
stringData: {password: s3cret}
---
apiVersion: v1
kind: Pod
metadata: {name: cfgpod, labels: {app: cfg}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  securityContext:
    fsGroup: 2000
    sysctls: [{name: net.ipv4.ip_local_port_range, value: "20000 30000"}]
  volumes:
    - {name: shared, hostPath: {path: "{{HOSTDIR}}", type: DirectoryOrCreate}}
    - name: cfg
      configMap:
        name: app-config
        defaultMode: 0440
        items: [{key: level, path: level}, {key: app.conf, path: conf/app.conf, mode: 0400}]
    - {name: secret, secret: {secretName: db, defaultMode: 0400}}
    - name: podinfo
      downwardAPI:
        items:
          - {path: labels, fieldRef: {fieldPath: metadata.labels}}
          - {path: mem, resourceFieldRef: {containerName: app, resource: limits.memory, divisor: 1Mi}}
    - {name: scratch, emptyDir: {}}
  containers:
    - name: app
      image: img
      resources: {limits: {memory: 32Mi}}
      env:
        - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: LEVEL, valueFrom: {configMapKeyRef: {name: app-config, key: level}}}
        - {name: TOKEN, valueFrom: {secretKeyRef: {name: db, key: password}}}
      command: [/bin/sh, -c, ")" +
           script + R"("]
      volumeMounts:
        - {name: shared, mountPath: /shared}
        - {name: cfg, mountPath: /etc/cfg}
        - {name: secret, mountPath: /etc/secret}
        - {name: podinfo, mountPath: /etc/podinfo}
        - {name: cfg, mountPath: /app/level.conf, subPath: level}
        - {name: scratch, mountPath: /data, subPathExpr: '$(POD)'}
        - {name: scratch, mountPath: /all}
)");
  EXPECT_EQ(Run(), 0) << RunStderr();
  std::ifstream in(scratch_ / "out");
  std::map<std::string, std::string> got;
  for (std::string line; std::getline(in, line);) {
    auto space = line.find(' ');
    got[line.substr(0, space)] = space == std::string::npos ? "" : line.substr(space + 1);
  }
  EXPECT_EQ(got["level"], "440 2000 debug");
  EXPECT_EQ(got["conf"], "440 2000") << "0400 plus group read for the fsGroup";
  EXPECT_EQ(got["data"], "..20");
  EXPECT_EQ(got["secret"], "440 2000 s3cret");
  EXPECT_EQ(got["secretfs"], "tmpfs");
  EXPECT_EQ(got["cfgfs"], "ro");
  EXPECT_EQ(got["write"], "ro");
  EXPECT_THAT(got["groups"], HasSubstr("2000"));
  EXPECT_EQ(got["labels"], "app=\"cfg\"");
  EXPECT_EQ(got["mem"], "32");
  EXPECT_EQ(got["subpath"], "debug");
  EXPECT_EQ(got["expr"], "cfgpod");
  EXPECT_EQ(got["ports"], "20000 30000");
  EXPECT_EQ(got["env"], "debug s3cret");
}

// The pattern of many charts: an init container renders a config file into
// an emptyDir, and the app mounts that one file with subPath. The subPath
// is made when each container is created (the kubelet's order), so the
// init container writes a file, not into a directory made for the app,
// and the second init container, which mounts it too, is not created
// ahead of the first one's run.
TEST_F(RuncConfig, SubPathOfAFileAnInitContainerWroteIsThatFile) {
  WritePod(R"(apiVersion: v1
kind: Pod
metadata: {name: render}
spec:
  restartPolicy: Never
  volumes:
    - {name: shared, hostPath: {path: "{{HOSTDIR}}", type: DirectoryOrCreate}}
    - {name: config, emptyDir: {}}
  initContainers:
    - name: render
      image: img
      command: [/bin/sh, -c, "echo listen=8080 > /config/app.conf"]
      volumeMounts: [{name: config, mountPath: /config}]
    - name: check
      image: img
      command: [/bin/sh, -c, "cat /etc/app.conf > /shared/init-saw"]
      volumeMounts:
        - {name: config, mountPath: /etc/app.conf, subPath: app.conf}
        - {name: shared, mountPath: /shared}
  containers:
    - name: app
      image: img
      command: [/bin/sh, -c, "test -f /etc/app.conf && cat /etc/app.conf > /shared/app-saw"]
      volumeMounts:
        - {name: config, mountPath: /etc/app.conf, subPath: app.conf}
        - {name: shared, mountPath: /shared}
)");
  EXPECT_EQ(Run(), 0) << RunStderr();
  std::ifstream init_saw(scratch_ / "init-saw"), app_saw(scratch_ / "app-saw");
  std::string init_line, app_line;
  std::getline(init_saw, init_line);
  std::getline(app_saw, app_line);
  EXPECT_EQ(init_line, "listen=8080");
  EXPECT_EQ(app_line, "listen=8080");
}

TEST_F(RuncConfig, ManifestFromKubectlGetPodRunsAsItIs) {
  std::ifstream manifest(fs::path(RequiredEnv("PODVISOR_SOURCE_ROOT")) / "tests" / "e2e" /
                         "testdata" / "kubectl-get-pod.yaml");
  std::stringstream text;
  text << manifest.rdbuf();
  ASSERT_FALSE(text.str().empty());
  std::ofstream(bundle_ / "pod.yaml") << text.str();
  // The image the manifest names, with an image config whose command shows
  // what the kube-api-access volume holds.
  fs::path image = bundle_ / "images" / "nginx:1.27";
  fs::copy(bundle_ / "images" / "img", image,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  std::ofstream(image / "image.json")
      << R"({"config": {"Entrypoint": ["/bin/sh", "-c"], "Cmd": ["ls /var/run/secrets/kubernetes.io/serviceaccount; cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo; echo $HOSTNAME; exec sleep 300"]}})";
  pod_name_ = "web-7d9c8f6b5-x2kqp";
  auto validated = Validate({bundle_.string()});
  EXPECT_EQ(validated.exit_code, 0) << validated.err;
  EXPECT_THAT(validated.err, HasSubstr("serviceAccountToken: skipped"));
  StartRun();
  WaitUntilRunning();
  nlohmann::json status;
  for (int i = 0; i < 100; ++i) {
    auto logs = Client({"logs", pod_name_, "web"}, true);
    if (logs.out.find(pod_name_) != std::string::npos) {
      EXPECT_EQ(logs.out, "namespace\ndefault\n" + pod_name_ + "\n");
      break;
    }
    ::usleep(50'000);
    if (i == 99) ADD_FAILURE() << "no output: " << logs.out << logs.err;
  }
  auto st = Status();
  ASSERT_TRUE(st);
  EXPECT_EQ((*st)["metadata"]["uid"], "5f0c2b9e-6d1a-4f47-8c3e-2a9b7d41e6f0");
  // The image's shell is PID 1 and ignores SIGTERM: a short grace; the
  // stop was asked for, so exit 4 when the shell is SIGKILLed (S14.40).
  EXPECT_EQ(Client({"stop", pod_name_, "--grace", "1"}).exit_code, 0);
  int code = WaitRun();
  EXPECT_TRUE(code == 0 || code == 4) << code;
}

}  // namespace
}  // namespace podvisor::e2e
