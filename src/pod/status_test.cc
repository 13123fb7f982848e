#include "pod/status.h"

#include <gtest/gtest.h>

namespace podvisor::pod {
namespace {

using std::chrono::seconds;

const WallTime kT0 = WallTime(seconds(1'700'000'000));  // 2023-11-14T22:13:20Z

Container MakeContainer(std::string name, bool sidecar = false) {
  Container c;
  c.name = std::move(name);
  c.image = "busybox";
  if (sidecar) c.restart_policy = RestartPolicy::kAlways;
  return c;
}

ContainerStatus Waiting(std::string name, std::string reason, int32_t restarts = 0) {
  ContainerStatus s;
  s.name = std::move(name);
  s.image = "busybox";
  s.state.waiting = ContainerStateWaiting{std::move(reason), ""};
  s.started = false;
  s.restart_count = restarts;
  return s;
}

ContainerStatus Running(std::string name, bool ready, bool started = true) {
  ContainerStatus s;
  s.name = std::move(name);
  s.image = "busybox";
  s.state.running = ContainerStateRunning{kT0};
  s.ready = ready;
  s.started = started;
  return s;
}

ContainerStatus Terminated(std::string name, int32_t code, std::string reason, int32_t signal = 0) {
  ContainerStatus s;
  s.name = std::move(name);
  s.image = "busybox";
  ContainerStateTerminated t;
  t.exit_code = code;
  t.signal = signal;
  t.reason = std::move(reason);
  t.started_at = kT0;
  t.finished_at = kT0 + seconds(5);
  s.state.terminated = t;
  s.started = false;
  return s;
}

PodCondition Condition(std::string_view type, bool value) {
  return PodCondition{std::string(type), value ? ConditionStatus::kTrue : ConditionStatus::kFalse,
                      kT0, "", ""};
}

// Spec: init "setup", sidecar "proxy", regular "app" and "worker".
PodSpec SidecarSpec() {
  PodSpec spec;
  spec.init_containers = {MakeContainer("setup"), MakeContainer("proxy", true)};
  spec.containers = {MakeContainer("app"), MakeContainer("worker")};
  return spec;
}

PodStatus Initialized(PodPhase phase) {
  PodStatus st;
  st.phase = phase;
  st.conditions = {Condition(kConditionInitialized, true), Condition(kConditionReady, true)};
  return st;
}

TEST(PodStatusJson, KubernetesFieldNamesAndRfc3339) {
  PodStatus st;
  st.phase = PodPhase::kRunning;
  st.stop_reason = "Eviction";
  st.start_time = kT0;
  st.qos_class = "BestEffort";
  st.conditions = {Condition(kConditionReady, true)};
  ContainerStatus app = Running("app", true);
  app.container_id = "podvisor://web-app-0";
  app.restart_count = 2;
  app.last_state.terminated = Terminated("app", 137, "Error", 9).state.terminated;
  st.container_statuses = {app};
  st.init_container_statuses = {Terminated("setup", 0, "Completed")};

  const nlohmann::json j = PodStatusToJson(st);
  EXPECT_EQ(j["phase"], "Running");
  EXPECT_EQ(j["stopReason"], "Eviction");
  EXPECT_EQ(j["startTime"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(j["qosClass"], "BestEffort");
  EXPECT_FALSE(j.contains("reason"));
  EXPECT_FALSE(j.contains("message"));
  EXPECT_EQ(j["conditions"][0], (nlohmann::json{{"type", "Ready"},
                                                {"status", "True"},
                                                {"lastTransitionTime", "2023-11-14T22:13:20Z"}}));
  const nlohmann::json& c = j["containerStatuses"][0];
  EXPECT_EQ(c["name"], "app");
  EXPECT_EQ(c["image"], "busybox");
  EXPECT_EQ(c["ready"], true);
  EXPECT_EQ(c["started"], true);
  EXPECT_EQ(c["restartCount"], 2);
  EXPECT_EQ(c["containerID"], "podvisor://web-app-0");
  EXPECT_EQ(c["state"], (nlohmann::json{{"running", {{"startedAt", "2023-11-14T22:13:20Z"}}}}));
  EXPECT_EQ(c["lastState"]["terminated"], (nlohmann::json{{"exitCode", 137},
                                                          {"signal", 9},
                                                          {"reason", "Error"},
                                                          {"startedAt", "2023-11-14T22:13:20Z"},
                                                          {"finishedAt", "2023-11-14T22:13:25Z"}}));
  EXPECT_EQ(j["initContainerStatuses"][0]["state"]["terminated"]["reason"], "Completed");
}

TEST(PodStatusJson, EmptyLastStateIsAnEmptyObject) {
  const nlohmann::json c = ContainerStatusToJson(Waiting("app", "ContainerCreating"));
  EXPECT_TRUE(c["lastState"].is_object());
  EXPECT_TRUE(c["lastState"].empty());
  EXPECT_EQ(c["state"]["waiting"], (nlohmann::json{{"reason", "ContainerCreating"}}));
  EXPECT_FALSE(c.contains("containerID"));
}

TEST(PodStatusJson, DeletionTimestampGoesToMetadata) {
  PodStatus st;
  st.deletion_timestamp = kT0 + seconds(30);
  nlohmann::json pod = {{"metadata", {{"name", "web"}}}};
  AddStatusToPodJson(st, pod);
  EXPECT_EQ(pod["metadata"]["deletionTimestamp"], "2023-11-14T22:13:50Z");
  EXPECT_EQ(pod["metadata"]["name"], "web");
  EXPECT_EQ(pod["status"]["phase"], "Pending");
  EXPECT_TRUE(pod["status"]["containerStatuses"].is_array());
}

TEST(PodStatusNames, EnumsPrintAsWords) {
  EXPECT_EQ(PodPhaseName(PodPhase::kSucceeded), "Succeeded");
  EXPECT_EQ(ConditionStatusName(ConditionStatus::kFalse), "False");
}

TEST(PodSummary, S9_4_InitProgressCountsSidecarsInM) {
  PodSpec spec = SidecarSpec();
  PodStatus st;
  st.phase = PodPhase::kPending;
  st.init_container_statuses = {Terminated("setup", 0, "Completed"),
                                Running("proxy", false, false)};
  st.container_statuses = {Waiting("app", "PodInitializing"), Waiting("worker", "PodInitializing")};
  const PodSummary s = SummarizePod(spec, st);
  EXPECT_EQ(s.status, "Init:1/2");
  EXPECT_EQ(s.ReadyColumn(), "0/3");
}

TEST(PodSummary, S9_4_InitFailureShowsReason) {
  PodSpec spec = SidecarSpec();
  PodStatus st;
  st.phase = PodPhase::kPending;
  st.init_container_statuses = {Terminated("setup", 1, "Error"),
                                Waiting("proxy", "PodInitializing")};
  EXPECT_EQ(SummarizePod(spec, st).status, "Init:Error");
  st.init_container_statuses[0] = Waiting("setup", "CrashLoopBackOff", 3);
  const PodSummary s = SummarizePod(spec, st);
  EXPECT_EQ(s.status, "Init:CrashLoopBackOff");
  EXPECT_EQ(s.restarts, 3);
  st.init_container_statuses[0] = Terminated("setup", 2, "");
  EXPECT_EQ(SummarizePod(spec, st).status, "Init:ExitCode:2");
}

TEST(PodSummary, S9_4_PodInitializingOnceInitsAreDone) {
  PodSpec spec = SidecarSpec();
  PodStatus st = Initialized(PodPhase::kPending);
  st.conditions[1].status = ConditionStatus::kFalse;
  st.init_container_statuses = {Terminated("setup", 0, "Completed"), Running("proxy", true)};
  st.container_statuses = {Waiting("app", "PodInitializing"), Waiting("worker", "PodInitializing")};
  const PodSummary s = SummarizePod(spec, st);
  EXPECT_EQ(s.status, "PodInitializing");
  EXPECT_EQ(s.ReadyColumn(), "1/3");
}

TEST(PodSummary, S9_4_RunningAndReadyCount) {
  PodSpec spec = SidecarSpec();
  PodStatus st = Initialized(PodPhase::kRunning);
  st.init_container_statuses = {Terminated("setup", 0, "Completed"), Running("proxy", true)};
  st.container_statuses = {Running("app", true), Running("worker", false)};
  const PodSummary s = SummarizePod(spec, st);
  EXPECT_EQ(s.status, "Running");
  EXPECT_EQ(s.ReadyColumn(), "2/3");
}

TEST(PodSummary, S9_4_CompletedWithARunningContainerIsRunningOrNotReady) {
  PodSpec spec = SidecarSpec();
  PodStatus st = Initialized(PodPhase::kRunning);
  st.init_container_statuses = {Terminated("setup", 0, "Completed"), Running("proxy", true)};
  // Scanned last to first: app's "Completed" is the final reason.
  st.container_statuses = {Terminated("app", 0, "Completed"), Running("worker", true)};
  EXPECT_EQ(SummarizePod(spec, st).status, "Running");
  st.conditions[1].status = ConditionStatus::kFalse;
  EXPECT_EQ(SummarizePod(spec, st).status, "NotReady");
}

TEST(PodSummary, S9_4_CompletedErrorOomKilled) {
  PodSpec spec;
  spec.containers = {MakeContainer("app")};
  PodStatus st = Initialized(PodPhase::kSucceeded);
  st.container_statuses = {Terminated("app", 0, "Completed")};
  EXPECT_EQ(SummarizePod(spec, st).status, "Completed");
  st.phase = PodPhase::kFailed;
  st.container_statuses = {Terminated("app", 1, "Error")};
  EXPECT_EQ(SummarizePod(spec, st).status, "Error");
  st.container_statuses = {Terminated("app", 137, "OOMKilled", 9)};
  EXPECT_EQ(SummarizePod(spec, st).status, "OOMKilled");
  st.container_statuses = {Terminated("app", 137, "", 9)};
  EXPECT_EQ(SummarizePod(spec, st).status, "Signal:9");
}

TEST(PodSummary, S9_4_AFailedPodNeverReadsCompleted) {
  PodSpec spec;
  spec.containers = {MakeContainer("setup-like"), MakeContainer("app"), MakeContainer("oom")};
  PodStatus st = Initialized(PodPhase::kFailed);
  st.container_statuses = {Terminated("setup-like", 0, "Completed"), Terminated("app", 1, "Error"),
                           Terminated("oom", 137, "OOMKilled", 9)};
  EXPECT_EQ(SummarizePod(spec, st).status, "Error");  // kubectl: Completed
  st.container_statuses = {Terminated("setup-like", 0, "Completed"),
                           Terminated("app", 0, "Completed"),
                           Terminated("oom", 137, "OOMKilled", 9)};
  EXPECT_EQ(SummarizePod(spec, st).status, "OOMKilled");
  // Failed with every container completed (a Job's backoff limit, say):
  // the phase reason.
  st.reason = "BackoffLimitExceeded";
  st.container_statuses = {Terminated("setup-like", 0, "Completed"),
                           Terminated("app", 0, "Completed"), Terminated("oom", 0, "Completed")};
  EXPECT_EQ(SummarizePod(spec, st).status, "BackoffLimitExceeded");
  st.phase = PodPhase::kSucceeded;
  st.reason.clear();
  EXPECT_EQ(SummarizePod(spec, st).status, "Completed");
}

TEST(PodSummary, S9_4_CrashLoopBackOffAndRestartsSum) {
  PodSpec spec = SidecarSpec();
  PodStatus st = Initialized(PodPhase::kRunning);
  ContainerStatus proxy = Running("proxy", true);
  proxy.restart_count = 1;
  ContainerStatus app = Waiting("app", "CrashLoopBackOff", 4);
  app.last_state.terminated = Terminated("app", 1, "Error").state.terminated;
  // The init's own restarts no longer count once the pod is initialized.
  ContainerStatus setup = Terminated("setup", 0, "Completed");
  setup.restart_count = 7;
  st.init_container_statuses = {setup, proxy};
  st.container_statuses = {app, Running("worker", true)};
  const PodSummary s = SummarizePod(spec, st);
  EXPECT_EQ(s.status, "CrashLoopBackOff");
  EXPECT_EQ(s.restarts, 5);
  ASSERT_TRUE(s.last_restart);
  EXPECT_EQ(s.RestartsColumn(kT0 + seconds(65)), "5 (60s ago)");
}

TEST(PodSummary, S9_4_TerminatingWhileDeletionPendingAndNotTerminal) {
  PodSpec spec;
  spec.containers = {MakeContainer("app")};
  PodStatus st = Initialized(PodPhase::kRunning);
  st.container_statuses = {Running("app", true)};
  st.deletion_timestamp = kT0;
  EXPECT_EQ(SummarizePod(spec, st).status, "Terminating");
  st.phase = PodPhase::kSucceeded;
  st.container_statuses = {Terminated("app", 0, "Completed")};
  EXPECT_EQ(SummarizePod(spec, st).status, "Completed");
}

TEST(PodSummary, S9_4_DeadlineExceeded) {
  PodSpec spec;
  spec.containers = {MakeContainer("app")};
  PodStatus st = Initialized(PodPhase::kFailed);
  st.reason = "DeadlineExceeded";
  st.container_statuses = {Terminated("app", 143, "Error", 15)};
  EXPECT_EQ(SummarizePod(spec, st).status, "DeadlineExceeded");
}

TEST(HumanDuration, MatchesKubectl) {
  EXPECT_EQ(HumanDuration(seconds(42)), "42s");
  EXPECT_EQ(HumanDuration(seconds(119)), "119s");
  EXPECT_EQ(HumanDuration(seconds(310)), "5m10s");
  EXPECT_EQ(HumanDuration(seconds(600)), "10m");
  EXPECT_EQ(HumanDuration(seconds(3 * 3600 + 60)), "3h1m");
  EXPECT_EQ(HumanDuration(seconds(10 * 3600)), "10h");
  EXPECT_EQ(HumanDuration(seconds(53 * 3600)), "2d5h");
  EXPECT_EQ(HumanDuration(seconds(-5)), "<invalid>");
}

}  // namespace
}  // namespace podvisor::pod
