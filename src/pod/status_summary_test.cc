// The one summariser of a pod's status (status_summary.h), used by the
// supervisor's "summary" reply and the CLI's status table alike: the
// columns and container lines it computes from a typed status.
#include "pod/status_summary.h"

#include <gtest/gtest.h>

namespace podvisor::pod {
namespace {

using std::chrono::seconds;

const WallTime kT0 = WallTime(seconds(1'700'000'000));

Container MakeContainer(std::string name, bool sidecar = false) {
  Container c;
  c.name = std::move(name);
  c.image = "busybox";
  if (sidecar) c.restart_policy = RestartPolicy::kAlways;
  return c;
}

ContainerStateTerminated Ended(int32_t code, std::string reason, int32_t signal, WallTime at) {
  ContainerStateTerminated t;
  t.exit_code = code;
  t.signal = signal;
  t.reason = std::move(reason);
  t.started_at = kT0;
  t.finished_at = at;
  return t;
}

TEST(DescribeState, EachStateInAFewWords) {
  const WallTime now = kT0 + seconds(300);
  ContainerState running;
  running.running = ContainerStateRunning{kT0};
  EXPECT_EQ(DescribeState(running, now), "Running (5m)");
  ContainerState ended;
  ended.terminated = Ended(1, "", 0, now - seconds(12));
  EXPECT_EQ(DescribeState(ended, now), "Terminated: Error (exit 1, 12s ago)");
  ended.terminated = Ended(137, "OOMKilled", 9, now - seconds(12));
  EXPECT_EQ(DescribeState(ended, now), "Terminated: OOMKilled (exit 137, signal 9, 12s ago)");
  ContainerState waiting;
  waiting.waiting = ContainerStateWaiting{"CrashLoopBackOff", ""};
  EXPECT_EQ(DescribeState(waiting, now), "Waiting: CrashLoopBackOff");
  waiting.waiting = ContainerStateWaiting{"", ""};
  EXPECT_EQ(DescribeState(waiting, now), "Waiting");
  EXPECT_EQ(DescribeState(ContainerState{}, now), "-");
}

TEST(SummarizePodLine, PodColumnsFromTheStatusAndTheFacts) {
  PodSpec spec;
  spec.containers = {MakeContainer("app")};
  PodStatus st;
  st.phase = PodPhase::kRunning;
  ContainerStatus app;
  app.name = "app";
  app.image = "busybox";
  app.ready = true;
  app.started = true;
  app.state.running = ContainerStateRunning{kT0};
  st.container_statuses = {app};
  const WallTime now = kT0 + seconds(90);
  PodLine line = SummarizePodLine(spec, st, {"web", kT0, "host1", "10.0.0.2"}, now);
  EXPECT_EQ(line.name, "web");
  EXPECT_EQ(line.ready, "1/1");
  EXPECT_EQ(line.status, "Running");
  EXPECT_EQ(line.restarts, "0");
  EXPECT_EQ(line.age, "90s");
  EXPECT_EQ(line.node, "host1");
  EXPECT_EQ(line.ip, "10.0.0.2");
  // No creation time: no age.
  line = SummarizePodLine(spec, st, {"web", std::nullopt, "-", "<none>"}, now);
  EXPECT_EQ(line.age, "-");
}

TEST(SummarizePodLine, LostSupervisorIsUnknownWhateverTheContainersSaid) {
  PodSpec spec;
  spec.containers = {MakeContainer("app")};
  PodStatus st;
  st.phase = PodPhase::kUnknown;
  ContainerStatus app;
  app.name = "app";
  app.state.running = ContainerStateRunning{kT0};
  st.container_statuses = {app};
  EXPECT_EQ(SummarizePodLine(spec, st, {}, kT0).status, "Unknown");
}

TEST(SummarizePodLine, ContainerLinesInitListFirstWithTypesAndRestarts) {
  PodSpec spec;
  spec.init_containers = {MakeContainer("setup"), MakeContainer("proxy", true)};
  spec.containers = {MakeContainer("app")};
  PodStatus st;
  st.phase = PodPhase::kRunning;
  ContainerStatus setup;
  setup.name = "setup";
  setup.state.terminated = Ended(0, "Completed", 0, kT0);
  ContainerStatus proxy;
  proxy.name = "proxy";
  proxy.started = true;
  proxy.state.running = ContainerStateRunning{kT0};
  proxy.container_id = "runc://web-proxy-1";
  ContainerStatus app;
  app.name = "app";
  app.image = "busybox";
  app.started = false;
  app.restart_count = 3;
  app.state.waiting = ContainerStateWaiting{"CrashLoopBackOff", ""};
  app.last_state.terminated = Ended(2, "Error", 0, kT0 + seconds(48));
  st.init_container_statuses = {setup, proxy};
  st.container_statuses = {app};
  const PodLine line = SummarizePodLine(spec, st, {}, kT0 + seconds(60));
  ASSERT_EQ(line.containers.size(), 3u);
  EXPECT_EQ(line.containers[0].name, "setup");
  EXPECT_EQ(line.containers[0].type, "init");
  EXPECT_EQ(line.containers[0].started, "-");
  EXPECT_EQ(line.containers[0].last_state, "-");
  EXPECT_EQ(line.containers[1].type, "sidecar");
  EXPECT_EQ(line.containers[1].started, "true");
  EXPECT_EQ(line.containers[1].container_id, "runc://web-proxy-1");
  EXPECT_EQ(line.containers[2].type, "container");
  EXPECT_EQ(line.containers[2].image, "busybox");
  EXPECT_EQ(line.containers[2].started, "false");
  EXPECT_EQ(line.containers[2].state, "Waiting: CrashLoopBackOff");
  EXPECT_EQ(line.containers[2].last_state, "Terminated: Error (exit 2, 12s ago)");
  EXPECT_EQ(line.containers[2].restart_count, 3);
  EXPECT_EQ(line.containers[2].restarts, "3 (12s ago)");
  EXPECT_EQ(line.restarts, "3 (12s ago)");
}

}  // namespace
}  // namespace podvisor::pod
