// Test tier 3 (TESTING.md), with runc: a pod with pod-level resources
// (spec.resources, SEMANTICS S10.11) on a host without a usable cgroup v2,
// such as the development hosts' v1/v2 hybrid, is refused by `validate`
// and by `run` before anything starts, with run's message, instead of
// running without the limits it asked for. On a cgroup v2 host the pod
// cgroup is checked in tier 4 instead (tests/tier4). Needs root.
#include <sys/statfs.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;

constexpr long kCgroup2SuperMagic = 0x63677270;

testing::CommandResult Validate(std::vector<std::string> args) {
  args.insert(args.begin(), {RequiredEnv("PODVISOR"), "validate"});
  return testing::RunCommand(args);
}

class RuncPodResources : public RuncE2eTest {
 protected:
  void SetUp() override {
    struct statfs fs {};
    if (::statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == kCgroup2SuperMagic) {
      GTEST_SKIP() << "this host has cgroup v2 (unified): the refusal is for other hosts; "
                      "tier 4 checks the pod cgroup";
    }
    RuncE2eTest::SetUp();
  }
};

TEST_F(RuncPodResources, S10_11_RefusedWithoutCgroupV2BeforeAnythingStarts) {
  WritePod(R"(apiVersion: v1
kind: Pod
metadata: {name: podres}
spec:
  restartPolicy: Never
  resources:
    requests: {cpu: 250m, memory: 64Mi}
    limits: {cpu: 500m, memory: 128Mi}
  volumes: [{name: shared, hostPath: {path: "{{HOSTDIR}}", type: DirectoryOrCreate}}]
  containers:
    - name: app
      image: img
      command: )" +
           HelperCmd("app", "exit 0") +
           R"(
      volumeMounts: [{name: shared, mountPath: /shared}]
)");
  const std::string why =
      "this host cannot run the pod: pod-level resources (spec.resources) need cgroup v2 "
      "(as in Kubernetes); this host's cgroups are ";
  auto validated = Validate({bundle_.string()});
  EXPECT_EQ(validated.exit_code, 3) << validated.err;
  EXPECT_THAT(validated.err, HasSubstr(why));
  EXPECT_THAT(validated.err, HasSubstr("(S10.11)"));

  EXPECT_EQ(Run(), 3) << RunStderr();
  EXPECT_THAT(RunStderr(), HasSubstr("podvisor: " + why));
  // Nothing started: no container ran, no pod directory was made.
  EXPECT_TRUE(HelperEvents().empty());
  EXPECT_FALSE(fs::exists(state_dir_ / "podres"));

  // The same pod without spec.resources runs here (the per-container
  // limits go to the runtime, S10.4).
  WritePod(R"(apiVersion: v1
kind: Pod
metadata: {name: podres}
spec:
  restartPolicy: Never
  volumes: [{name: shared, hostPath: {path: "{{HOSTDIR}}", type: DirectoryOrCreate}}]
  containers:
    - name: app
      image: img
      resources: {limits: {cpu: 500m, memory: 128Mi}}
      command: )" +
           HelperCmd("app", "exit 0") +
           R"(
      volumeMounts: [{name: shared, mountPath: /shared}]
)");
  EXPECT_EQ(Validate({bundle_.string()}).exit_code, 0);
  EXPECT_EQ(Run(), 0) << RunStderr();
  EXPECT_TRUE(WaitForHelperEvent("app Started"));
}

}  // namespace
}  // namespace podvisor::e2e
