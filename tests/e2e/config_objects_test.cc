// Test tier 2 (TESTING.md), issue 15 against the fake runtime: a pod that
// reads its configuration from ConfigMaps, Secrets and the downward API,
// from the documents of pod.yaml, BUNDLE/config/ and --configmap/--secret;
// workloads run as their template; what run would refuse is refused before
// anything starts. (The fake runtime runs processes on the host, so the
// mounts are checked in tier 3, runc_config_test.cc.)
#include <unistd.h>

#include <fstream>

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
using ::testing::Not;

class ConfigObjects : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
  void WriteBundleFile(const std::string& name, const std::string& text) {
    fs::create_directories((bundle_ / name).parent_path());
    std::ofstream(bundle_ / name) << text;
  }
};

constexpr const char* kConfig = R"(apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data:
  LOG_LEVEL: debug
  GREETING: hello
  1st-key: skipped
---
apiVersion: v1
kind: Secret
metadata: {name: db}
data:
  password: czNjcjN0LXZhbHVl
---
)";

TEST_F(ConfigObjects, EnvComesFromConfigMapsSecretsAndTheDownwardApi) {
  WritePod(std::string(kConfig) + R"(apiVersion: v1
kind: Pod
metadata: {name: configured, namespace: shop, labels: {tier: front}}
spec:
  restartPolicy: Never
  containers:
    - name: app
      image: img
      resources: {limits: {memory: 64Mi}}
      envFrom:
        - configMapRef: {name: app-config}
        - prefix: DB_
          secretRef: {name: db}
      env:
        - {name: LOG_LEVEL, value: 'override-$(GREETING)'}
        - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: TIER, valueFrom: {fieldRef: {fieldPath: "metadata.labels['tier']"}}}
        - {name: POD_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}
        - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
        - {name: PASS, valueFrom: {secretKeyRef: {name: db, key: password}}}
      command: )" +
           ShCmd("echo \"$LOG_LEVEL|$POD|$NS|$TIER|$MEM|$PASS|$DB_password|${POD_UID:+uid}\" "
                 "> {{DIR}}/env") +
           "\n");
  EXPECT_EQ(Run(), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("env"),
            "override-hello|configured|shop|front|64|s3cr3t-value|"
            "s3cr3t-value|uid");
  EXPECT_THAT(RunStderr(), HasSubstr("keys [1st-key] from configmap/app-config are skipped"));
  // The secret's value reaches the container and nothing else.
  auto status = Client({"status", "configured", "-o", "json"});
  EXPECT_THAT(status.out + status.err, Not(HasSubstr("s3cr3t")));
  EXPECT_THAT(RunStderr(), Not(HasSubstr("s3cr3t")));
  for (const auto& e : PodEvents()) EXPECT_THAT(e.dump(), Not(HasSubstr("s3cr3t")));
}

TEST_F(ConfigObjects, BundleConfigDirectoryAndCommandLineFiles) {
  WriteBundleFile("config/app.yaml",
                  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-dir}\n"
                  "data: {A: dir}\n");
  std::ofstream(dir_ / "cm.yaml")
      << "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-flag}\n"
         "data: {B: flag}\n";
  std::ofstream(dir_ / "secret.yaml") << "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"
                                         "stringData: {C: secret}\n";
  WritePod(R"(apiVersion: v1
kind: Pod
metadata: {name: files}
spec:
  restartPolicy: Never
  containers:
    - name: app
      image: img
      envFrom: [{configMapRef: {name: from-dir}}, {configMapRef: {name: from-flag}}, {secretRef: {name: s}}]
      command: )" +
           ShCmd("echo \"$A $B $C\" > {{DIR}}/env") + "\n");
  std::vector<std::string> flags = {"--configmap", (dir_ / "cm.yaml").string(), "--secret",
                                    (dir_ / "secret.yaml").string()};
  auto validated = Validate({bundle_.string(), "--configmap", (dir_ / "cm.yaml").string(),
                             "--secret", (dir_ / "secret.yaml").string()});
  EXPECT_EQ(validated.exit_code, 0) << validated.err;
  EXPECT_EQ(Run(flags), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("env"), "dir flag secret");
  // Without the flags the references do not resolve: exit 2, nothing started.
  fs::remove_all(state_dir_ / "files");
  EXPECT_EQ(Run(), 2);
  EXPECT_THAT(RunStderr(),
              HasSubstr("spec.containers[0].envFrom[1].configMapRef.name: Invalid "
                        "value: \"from-flag\": no configmap of this name in the bundle"));
  EXPECT_FALSE(fs::exists(state_dir_ / "files"));
}

TEST_F(ConfigObjects, RunRefusesWhatValidateRefusesBeforeStartingAnything) {
  WritePod(std::string(kConfig) + R"(apiVersion: v1
kind: Pod
metadata: {name: broken}
spec:
  containers:
    - name: app
      image: img
      tty: true
      env: [{name: X, valueFrom: {configMapKeyRef: {name: app-config, key: MISSING}}}]
)");
  auto validated = Validate({bundle_.string()});
  EXPECT_EQ(validated.exit_code, 2);
  const std::string key_line =
      "spec.containers[0].env[0].valueFrom.configMapKeyRef.key: Invalid value: \"MISSING\": no "
      "such key in configmap/app-config";
  EXPECT_THAT(validated.err, HasSubstr(key_line));
  EXPECT_THAT(validated.err, HasSubstr("spec.containers[0].tty: Forbidden"));
  EXPECT_EQ(Run(), 2);
  EXPECT_THAT(RunStderr(), HasSubstr(key_line));
  EXPECT_FALSE(fs::exists(state_dir_ / "broken"));

  // No command and an image without Entrypoint or Cmd: found by validate,
  // not by a crash loop.
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: nocmd}\nspec:\n  containers:\n"
      "    - {name: app, image: img}\n");
  validated = Validate({bundle_.string()});
  EXPECT_EQ(validated.exit_code, 2);
  EXPECT_THAT(validated.err, HasSubstr("spec.containers[0]: Forbidden: no command: the container "
                                       "sets neither command nor args and image \"img\" has no "
                                       "Entrypoint or Cmd"));
  EXPECT_EQ(Run(), 2);
  EXPECT_FALSE(fs::exists(state_dir_ / "nocmd"));
}

TEST_F(ConfigObjects, AJobRunsItsTemplateAsThePod) {
  WritePod(R"(apiVersion: batch/v1
kind: Job
metadata: {name: report, labels: {team: data}}
spec:
  backoffLimit: 2
  template:
    metadata: {labels: {app: report}}
    spec:
      restartPolicy: Never
      containers:
        - name: run
          image: img
          env: [{name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}},
                {name: LABELS, valueFrom: {fieldRef: {fieldPath: "metadata.labels['team']"}}}]
          command: )" +
           ShCmd("echo \"$POD $LABELS\" > {{DIR}}/out") + "\n");
  EXPECT_EQ(Run(), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("out"), "report data");
  // S3.6: under Never a higher limit would mean new pods, which podvisor
  // does not make.
  EXPECT_THAT(RunStderr(), HasSubstr("Warning: spec.backoffLimit: a Job's retries under "
                                     "restartPolicy Never are new pods"));

  WritePod(
      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n"
      "    spec:\n      restartPolicy: Never\n      containers: [{name: app, image: img, "
      "command: [x], ports: [{containerPort: 70000}]}]\n");
  auto validated = Validate({bundle_.string()});
  EXPECT_EQ(validated.exit_code, 2);
  EXPECT_THAT(validated.err, HasSubstr("spec.template.spec.restartPolicy: Unsupported value: "
                                       "\"Never\": supported values: \"Always\""));
  EXPECT_THAT(validated.err, HasSubstr("spec.template.spec.containers[0].ports[0].containerPort: "
                                       "Invalid value: 70000"));
}

// S3.6: a failing migration Job under OnFailure stops after backoffLimit
// restarts, as its controller would stop it, instead of retrying forever.
TEST_F(ConfigObjects, AJobsBackoffLimitEndsItsFailingPod) {
  WritePod(R"(apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  backoffLimit: 2
  template:
    spec:
      restartPolicy: OnFailure
      containers:
        - name: m
          image: img
          command: )" +
           ShCmd("echo try >> {{DIR}}/tries; exit 3") + "\n");
  EXPECT_EQ(Run({"--backoff-initial", "10ms"}), 1) << RunStderr();
  EXPECT_EQ(ReadScratch("tries"), "try\ntry\ntry");  // the run and 2 restarts
  auto status = Client({"status", "migrate", "-o", "json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  nlohmann::json pod = nlohmann::json::parse(status.out);
  EXPECT_EQ(pod["status"]["phase"], "Failed");
  EXPECT_EQ(pod["status"]["reason"], "BackoffLimitExceeded");
  EXPECT_EQ(pod["status"]["containerStatuses"][0]["restartCount"], 2);
  auto events = Client({"events", "migrate"});
  EXPECT_THAT(events.out, HasSubstr("BackoffLimitExceeded"));
}

TEST_F(ConfigObjects, ConfigMapVolumeIsWrittenAsTheKubeletWritesIt) {
  WritePod(std::string(kConfig) + R"(apiVersion: v1
kind: Pod
metadata: {name: vol}
spec:
  restartPolicy: Never
  volumes:
    - {name: cfg, configMap: {name: app-config, items: [{key: GREETING, path: conf/greeting, mode: 0600}]}}
  containers:
    - name: app
      image: img
      volumeMounts: [{name: cfg, mountPath: /etc/app}]
      command: )" +
           HelperCmd("app", "sleep 100000") + "\n");
  StartRun();
  ASSERT_TRUE(WaitForHelperEvent("app Started")) << RunStderr();
  fs::path volume = state_dir_ / "vol" / "volumes" / "cfg";
  EXPECT_EQ(fs::read_symlink(volume / "conf"), "..data/conf");
  EXPECT_THAT(fs::read_symlink(volume / "..data").string(), ::testing::StartsWith("..20"));
  std::ifstream in(volume / "conf" / "greeting");
  std::string greeting;
  std::getline(in, greeting);
  EXPECT_EQ(greeting, "hello");
  EXPECT_EQ(fs::status(volume / "conf" / "greeting").permissions(),
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(Client({"stop", "vol"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 4);
  EXPECT_FALSE(fs::exists(volume)) << "volumes are removed with the pod";
}

// run --node-memory: the node's allocatable memory is what the downward
// API gives a container without a memory limit, and the size of a Memory
// emptyDir that nothing else bounds (S14.4); a bad value is refused
// before anything starts.
TEST_F(ConfigObjects, S14_4_NodeMemoryBoundsMemoryVolumesAndTheDownwardApi) {
  WritePod(R"(apiVersion: v1
kind: Pod
metadata: {name: sized}
spec:
  restartPolicy: Never
  volumes: [{name: scratch, emptyDir: {medium: Memory}}]
  containers:
    - name: app
      image: img
      volumeMounts: [{name: scratch, mountPath: /scratch}]
      env:
        - name: MEM
          valueFrom: {resourceFieldRef: {resource: limits.memory}}
      command: ["/bin/sh", "-c", "echo $MEM > {{DIR}}/mem; grep -o 'volumes/scratch .*' /proc/self/mountinfo > {{DIR}}/mount; true"]
)");
  auto bad = Run({"--node-memory", "lots"});
  EXPECT_EQ(bad, 2) << RunStderr();
  EXPECT_THAT(RunStderr(), HasSubstr("--node-memory: invalid size \"lots\""));
  EXPECT_EQ(ReadScratch("mem"), "") << "nothing started";

  ASSERT_EQ(Run({"--node-memory", "96Mi"}), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("mem"), "100663296");
  if (::geteuid() == 0) {
    // The tmpfs of the emptyDir, sized by the node's memory.
    EXPECT_THAT(ReadScratch("mount"), HasSubstr("size=98304k"));
  }
}

}  // namespace
}  // namespace podvisor::e2e
