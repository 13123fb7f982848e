// Test tier 2 (TESTING.md) for the two older forms podvisor reads: the
// 2018–2020 sidecar draft's `lifecycle.type: Sidecar` (SEMANTICS S12) and
// the init-container annotation of Kubernetes 1.3–1.5 (S13), end to end
// against the fake OCI runtime. Ordering comes from the test helper's
// timestamped event log.
#include <fstream>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

class DraftForms : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
};

std::string Header(const std::string& name, const std::string& restart_policy, int grace = 5) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         "}\nspec:\n  restartPolicy: " + restart_policy +
         "\n  terminationGracePeriodSeconds: " + std::to_string(grace) + "\n";
}

// One list entry: "  - {name: N, image: img, command: CMD<extra>}".
std::string Entry(const std::string& name, const std::string& command,
                  const std::string& extra = "") {
  return "  - {name: " + name + ", image: img, command: " + command + extra + "}\n";
}

// A hook command that logs "<name> <verb>" to the helper's event log.
std::string LogLine(const std::string& name, const std::string& verb) {
  return "{{H}} --log-file {{LOG}} log " + name + " " + verb;
}

void ExpectOrder(const std::vector<HelperEvent>& events, const std::vector<std::string>& keys) {
  int last = -1;
  std::string last_key;
  for (const auto& k : keys) {
    int at = IndexOf(events, k);
    ASSERT_GE(at, 0) << "missing \"" << k << "\" in" << Describe(events);
    EXPECT_GT(at, last) << "\"" << k << "\" came before \"" << last_key << "\" in"
                        << Describe(events);
    last = at;
    last_key = k;
  }
}

// S12.1, S12.3, S12.4: the job starts once its sidecar runs, the pod
// completes when the job did, the sidecar is stopped last, and its exit 1
// on SIGTERM does not fail the pod (`run` exits 0: Succeeded).
TEST_F(DraftForms, S12_3_JobWithADraftSidecarCompletesAndTheSidecarStopsLast) {
  WritePod(Header("job", "Never") + "  containers:\n" +
           Entry("job", HelperCmd("job", "sleep 300")) +
           Entry("proxy", HelperCmd("proxy", "trap-sigterm 20 1"), ", lifecycle: {type: Sidecar}"));
  EXPECT_EQ(Run(), 0) << RunStderr();
  ExpectOrder(HelperEvents(), {"proxy Started", "job Started", "job Exiting", "proxy Exiting"});
  bool completed = false;
  for (const auto& e : PodEvents())
    completed = completed || e.value("reason", "") == "PodCompleted";
  EXPECT_TRUE(completed) << "no PodCompleted event in events.jsonl";
  EXPECT_THAT(RunStderr(), ::testing::HasSubstr("spec.containers[1].lifecycle.type"));
}

// S12.1: the web container waits for its proxy's readiness probe.
TEST_F(DraftForms, S12_1_WebPodStartsItsAppOnlyOnceTheDraftSidecarIsReady) {
  const std::string readiness =
      ", readinessProbe: {periodSeconds: 1, exec: {command: " + ShCmd("test -f {{DIR}}/ready") +
      "}}";
  WritePod(Header("web", "Always") + "  containers:\n" +
           Entry("web", HelperCmd("web", "trap-sigterm 20 0")) +
           Entry("proxy", HelperCmd("proxy", "trap-sigterm 20 0"),
                 ", lifecycle: {type: Sidecar}" + readiness));
  StartRun();
  ASSERT_TRUE(WaitForHelperEvent("proxy Started"));
  // At least one failed readiness run (the first runs at once, S7.6).
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto pod = Status();
  ASSERT_TRUE(pod);
  EXPECT_EQ(IndexOf(HelperEvents(), "web Started"), -1) << Describe(HelperEvents());
  EXPECT_EQ(StateOf(*pod, "web"), "waiting") << pod->dump(2);
  auto ready_at = Clock::now();
  std::ofstream(scratch_ / "ready") << "ok\n";
  ASSERT_TRUE(WaitForHelperEvent("web Started"));
  auto events = HelperEvents();
  EXPECT_GE(MsBetween(ready_at, events[IndexOf(events, "web Started")].time), 0)
      << Describe(events);
  WaitUntilRunning();
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  ExpectOrder(HelperEvents(), {"proxy Started", "web Started", "web Exiting", "proxy Exiting"});
}

// S12.5, S12.6, S6.2: the draft sidecar's preStop first (with the stop
// reason), then the app's preStop and stop signal, then the draft sidecar's
// stop signal, then the KEP-753 sidecar; each preStop runs once.
TEST_F(DraftForms, S12_5_StopRunsSidecarPreStopFirstAndStopsSidecarsLast) {
  const std::string proxy_pre_stop =
      ", lifecycle: {type: Sidecar, preStop: {exec: {command: " +
      ShCmd(LogLine("proxy-preStop", "Start") +
            "; echo \"$KUBE_POD_TERM_REASON\" > {{DIR}}/proxy-reason;"
            " sleep 0.5; " +
            LogLine("proxy-preStop", "Done")) +
      "}}}";
  const std::string app_pre_stop = ", lifecycle: {preStop: {exec: {command: " +
                                   ShCmd(LogLine("app-preStop", "Start") + "; sleep 0.2") + "}}}";
  WritePod(Header("stop-order", "Always", 10) + "  initContainers:\n" +
           Entry("mesh", HelperCmd("mesh", "trap-sigterm 20 0"), ", restartPolicy: Always") +
           "  containers:\n" + Entry("app", HelperCmd("app", "trap-sigterm 300 0"), app_pre_stop) +
           Entry("proxy", HelperCmd("proxy", "trap-sigterm 20 0"), proxy_pre_stop));
  StartRun();
  WaitUntilRunning();
  auto stop = Client({"stop", "--reason", "Update"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  auto events = HelperEvents();
  ExpectOrder(events, {"proxy-preStop Start", "proxy-preStop Done", "app-preStop Start",
                       "app Exiting", "proxy Exiting", "mesh Exiting"});
  EXPECT_EQ(CountOf(events, "proxy-preStop Start"), 1) << Describe(events);
  EXPECT_EQ(CountOf(events, "app-preStop Start"), 1) << Describe(events);
  EXPECT_EQ(ReadScratch("proxy-reason"), "Update");
}

// S13: a Kubernetes 1.4 manifest runs its annotation's init containers in
// order before the app, and `status -o json` reports them as
// initContainerStatuses without writing the old status annotation.
TEST_F(DraftForms, S13_1_A14ManifestRunsItsBetaAnnotationInitContainersInOrder) {
  std::ifstream in(fs::path(RequiredEnv("PODVISOR_SOURCE_ROOT")) /
                   "tests/e2e/testdata/init-containers-beta-1.4.yaml");
  ASSERT_TRUE(in) << "fixture missing";
  std::stringstream text;
  text << in.rdbuf();
  WritePod(text.str());
  StartRun();
  auto pod = WaitUntilRunning();
  ASSERT_TRUE(pod["status"].contains("initContainerStatuses")) << pod.dump(2);
  const auto& inits = pod["status"]["initContainerStatuses"];
  ASSERT_EQ(inits.size(), 2u) << pod.dump(2);
  EXPECT_EQ(inits[0].value("name", ""), "init-myservice");
  EXPECT_EQ(inits[1].value("name", ""), "init-mydb");
  for (const auto& s : inits) {
    EXPECT_EQ(s["state"]["terminated"].value("exitCode", -1), 0) << s.dump(2);
  }
  EXPECT_EQ(ConditionStatus(pod, "Initialized"), "True");
  EXPECT_EQ(pod["spec"]["initContainers"].size(), 2u) << pod["spec"].dump(2);
  const auto& annotations = pod["metadata"]["annotations"];
  EXPECT_FALSE(annotations.contains("pod.beta.kubernetes.io/init-container-statuses"))
      << annotations.dump(2);
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  ExpectOrder(HelperEvents(),
              {"init-myservice Started", "init-myservice Exiting", "init-mydb Started",
               "init-mydb Exiting", "myapp-container Started"});
  EXPECT_THAT(RunStderr(),
              ::testing::HasSubstr("metadata.annotations[pod.beta.kubernetes.io/init-containers]"));
}

}  // namespace
}  // namespace podvisor::e2e
