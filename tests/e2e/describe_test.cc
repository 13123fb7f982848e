// Tier 2 (fake runtime), issue 16 point 3: `podvisor describe` prints
// kubectl describe pod's layout, for a running pod and for an ended one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

class Describe : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
};

TEST_F(Describe, RunningThenEndedPodInKubectlsLayout) {
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: shop, labels: {app: shop}}\nspec:\n"
      "  restartPolicy: Never\n  terminationGracePeriodSeconds: 5\n"
      "  volumes:\n  - {name: cache, emptyDir: {}}\n"
      "  initContainers:\n"
      "  - {name: setup, image: img, command: " +
      ShCmd("exit 0") +
      "}\n"
      "  - {name: proxy, image: img, restartPolicy: Always, command: " +
      HelperCmd("proxy", "trap-sigterm 10 0") +
      "}\n"
      "  containers:\n"
      "  - name: app\n    image: img\n    command: " +
      HelperCmd("app", "sleep 100000") +
      "\n"
      "    env: [{name: MODE, value: fast}]\n"
      "    volumeMounts: [{name: cache, mountPath: /cache}]\n"
      "    resources: {limits: {memory: 64Mi}}\n"
      "    readinessProbe: {exec: {command: [\"true\"]}, periodSeconds: 1}\n");
  StartRun();
  WaitUntilRunning();
  auto r = Client({"describe"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string& out = r.out;
  EXPECT_THAT(out, ContainsRegex("^Name: +shop\nNamespace: +default\n"));
  EXPECT_THAT(out, ContainsRegex("\nLabels: +app=shop\n"));
  EXPECT_THAT(out, ContainsRegex("\nStatus: +Running\n"));
  EXPECT_THAT(out, HasSubstr("\nInit Containers:\n  setup:\n"));
  EXPECT_THAT(out, HasSubstr("\n  proxy:  (sidecar)\n"));
  EXPECT_THAT(out, HasSubstr("\nContainers:\n  app:\n"));
  EXPECT_THAT(
      out,
      ContainsRegex("\n    State: +Terminated\n      Reason: +Completed\n      Exit Code: +0\n"));
  EXPECT_THAT(out,
              ContainsRegex("\n    State: +Running\n      Started: +[A-Z][a-z]{2}, [0-9]{2} "));
  EXPECT_THAT(out, ContainsRegex("\n    Readiness: +exec \\[true\\] delay=0s timeout=1s period=1s "
                                 "#success=1 #failure=3\n"));
  EXPECT_THAT(out, HasSubstr("\n    Environment:\n      MODE:  fast\n"));
  EXPECT_THAT(out, HasSubstr("\n    Mounts:\n      /cache from cache (rw)\n"));
  EXPECT_THAT(out, HasSubstr("\n    Limits:\n      memory:  64Mi\n"));
  EXPECT_THAT(out, ContainsRegex("\nConditions:\n  Type +Status\n"));
  EXPECT_THAT(out, ContainsRegex("\n  Initialized +True\n"));
  EXPECT_THAT(out, HasSubstr("\nVolumes:\n  cache:\n    Type:"));
  EXPECT_THAT(out, HasSubstr("EmptyDir (a temporary directory that shares a pod's lifetime)"));
  EXPECT_THAT(out, ContainsRegex("\nQoS Class: +Burstable\n"));
  EXPECT_THAT(
      out,
      ContainsRegex(
          "\nEvents:\n  Type +Reason +Age +From +Message\n  ---- +------ +---- +---- +-------\n"));
  EXPECT_THAT(out, ContainsRegex("\n  Normal +Started +[0-9]+s +kubelet +Started container app\n"));
  EXPECT_THAT(
      out,
      ContainsRegex("\n  Normal +Exited +[0-9]+s +podvisor +Container setup exited with code 0"));

  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 4);
  auto ended = Client({"describe", "shop"});
  ASSERT_EQ(ended.exit_code, 0) << ended.err;
  EXPECT_THAT(ended.out, ContainsRegex("\nStatus: +Failed\n"));
  EXPECT_THAT(ended.out, ContainsRegex("\n  app:\n(.*\n)*    State: +Terminated\n      Reason: "
                                       "+Error\n      Exit Code: +(137|143)\n"));
  EXPECT_THAT(
      ended.out,
      ContainsRegex("\n  Normal +StopSignal +[0-9]+s +podvisor +Sent SIGTERM to container app\n"));
}

}  // namespace
}  // namespace podvisor::e2e
