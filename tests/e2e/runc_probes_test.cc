// Test tier 3 (docs/TESTING.md) for probes and hooks: `podvisor run` with runc
// and busybox rootfs bundles, so exec probes go through `runc exec` and
// httpGet/tcpSocket/gRPC probes reach servers that listen only inside the
// pod's network namespace (busybox httpd and nc, the helper's serve-grpc). Needs root; skipped
// otherwise. The fixture repeats runc_test.cc's few lines rather than sharing them, to keep that
// file untouched.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using RuncProbes = RuncE2eTest;

constexpr const char* kSharedMount = ", volumeMounts: [{name: shared, mountPath: /shared}]";

std::string Header(const std::string& name, const std::string& restart_policy, int grace = 3) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         "}\nspec:\n  restartPolicy: " + restart_policy +
         "\n  terminationGracePeriodSeconds: " + std::to_string(grace) +
         "\n  volumes: [{name: shared, hostPath: {path: \"{{HOSTDIR}}\", type: "
         "DirectoryOrCreate}}]\n";
}

std::string Entry(const std::string& name, const std::string& command,
                  const std::string& extra = "") {
  return "  - {name: " + name + ", image: img, command: " + command + kSharedMount + extra + "}\n";
}

// An exec probe on a marker file in /shared, every second, deciding on
// its first result.
std::string FileProbe(const std::string& kind, const std::string& file) {
  return ", " + kind + ": {exec: {command: [\"/bin/sh\", \"-c\", \"test -e /shared/" + file +
         "\"]}, periodSeconds: 1, failureThreshold: 1}";
}

void Touch(const fs::path& p) {
  std::ofstream(p) << "";
}

bool ContainerReady(const nlohmann::json& pod, const std::string& name) {
  const nlohmann::json* s = FindContainerStatus(pod, name);
  return s && s->value("ready", false);
}

TEST_F(RuncProbes, S7_ExecHttpGetTcpSocketAndGrpcProbesAndStartupGating) {
  // The sidecar is started (S1.3) only once its exec startup probe passes;
  // the servers listen on the pod's loopback, where podvisor probes them.
  std::string httpd = ShCmd(
      "mkdir -p /shared/www && echo ok > /shared/www/index.html && exec httpd -f -p 8080 -h "
      "/shared/www");
  std::string nc =
      ShCmd("trap 'exit 0' TERM; while true; do nc -l -p 9090 < /dev/null; done & wait");
  WritePod(Header("runc-probes", "Never") + "  initContainers:\n" +
           Entry("side", HelperCmd("side", "trap-sigterm 20 0"),
                 ", restartPolicy: Always" + FileProbe("startupProbe", "go")) +
           "  containers:\n" +
           Entry("web", httpd,
                 ", readinessProbe: {httpGet: {port: 8080, path: /index.html}, periodSeconds: 1}") +
           Entry("tcp", nc, ", readinessProbe: {tcpSocket: {port: 9090}, periodSeconds: 1}") +
           Entry("grpc", HelperCmd("grpc", "serve-grpc 9000 1"),
                 ", readinessProbe: {grpc: {port: 9000}, periodSeconds: 1}"));
  StartRun();
  ASSERT_TRUE(WaitForHelperEvent("side Started"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto pod = Status();
  ASSERT_TRUE(pod);
  EXPECT_FALSE((*pod)["status"]["initContainerStatuses"][0].value("started", true)) << pod->dump(2);
  EXPECT_NE(StateOf(*pod, "web"), "running") << pod->dump(2);
  Touch(scratch_ / "go");
  pod = WaitForStatus([](const nlohmann::json& p) { return ConditionStatus(p, "Ready") == "True"; },
                      "Ready=True: httpGet, tcpSocket and gRPC readiness inside the pod");
  EXPECT_TRUE(ContainerReady(*pod, "web"));
  EXPECT_TRUE(ContainerReady(*pod, "tcp"));
  EXPECT_TRUE(ContainerReady(*pod, "grpc"));
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  WaitRun();
}

TEST_F(RuncProbes, S7_5_ReadinessFlipsReadyAndS3_3_LivenessRestartsThroughPreStop) {
  Touch(scratch_ / "alive");
  Touch(scratch_ / "ready");
  std::string pre_stop =
      ", lifecycle: {preStop: {exec: {command: " + HelperCmd("prestop", "exit 0") + "}}}";
  WritePod(
      Header("runc-liveness", "Always", 2) + "  containers:\n" +
      Entry("app", HelperCmd("app", "trap-sigterm 20 0"),
            FileProbe("livenessProbe", "alive") + FileProbe("readinessProbe", "ready") + pre_stop));
  StartRun({"--backoff-initial", "100ms"});
  WaitForStatus([](const nlohmann::json& p) { return ConditionStatus(p, "Ready") == "True"; },
                "Ready=True");
  fs::remove(scratch_ / "ready");
  auto pod =
      WaitForStatus([](const nlohmann::json& p) { return ConditionStatus(p, "Ready") == "False"; },
                    "Ready=False after the readiness file went away");
  EXPECT_FALSE(ContainerReady(pod, "app"));
  Touch(scratch_ / "ready");
  WaitForStatus([](const nlohmann::json& p) { return ConditionStatus(p, "Ready") == "True"; },
                "Ready=True again");

  fs::remove(scratch_ / "alive");
  ASSERT_TRUE(WaitForHelperEvent("prestop Started"));
  Touch(scratch_ / "alive");  // the next instance must find it alive
  ASSERT_TRUE(WaitForHelperEvent("app Started", 2));
  auto events = HelperEvents();
  int pre = IndexOf(events, "prestop Started"), exited = IndexOf(events, "app Exiting");
  ASSERT_GE(exited, 0) << Describe(events);
  EXPECT_LT(pre, exited) << "preStop must run before the stop signal" << Describe(events);
  WaitForStatus(
      [](const nlohmann::json& p) {
        const nlohmann::json* s = FindContainerStatus(p, "app");
        return s && s->value("restartCount", 0) == 1;
      },
      "restartCount 1");
  bool unhealthy = false;
  for (const auto& e : PodEvents()) {
    unhealthy |= e.value("reason", "") == "Unhealthy" &&
                 e.value("message", "").rfind("Liveness probe failed", 0) == 0;
  }
  EXPECT_TRUE(unhealthy) << "no Unhealthy event for the liveness probe";
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  WaitRun();
}

}  // namespace
}  // namespace podvisor::e2e
