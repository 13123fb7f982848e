// Tier 3: containerd-shim-podvisor-v1 under Debian's containerd
// (containerd_fixture.h). One containerd for the suite; each test imports
// what it runs and leaves nothing behind.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "containerd_fixture.h"

namespace podvisor::testing {
namespace {

using ::testing::HasSubstr;

// A sidecar and an app that run until stopped, each with its own ROLE.
// Ready once the shell's SIGTERM trap is set: until then a SIGTERM to the
// container's PID 1 is ignored, and a test that stops a "2/2" pod would
// wait for the SIGKILL.
constexpr const char* kLongPod = R"(apiVersion: v1
kind: Pod
metadata:
  name: ctrd-long
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 10
  initContainers:
  - name: side
    image: busybox
    restartPolicy: Always
    env: [{name: ROLE, value: sidecar}]
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; touch /tmp/trapped; while true; do sleep 1; done"]
    readinessProbe: {exec: {command: [test, -f, /tmp/trapped]}, periodSeconds: 1}
  containers:
  - name: app
    image: busybox
    env: [{name: ROLE, value: app}]
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; touch /tmp/trapped; sleep 1000 & wait"]
    readinessProbe: {exec: {command: [test, -f, /tmp/trapped]}, periodSeconds: 1}
)";

constexpr const char* kSucceedingPod = R"(apiVersion: v1
kind: Pod
metadata:
  name: ctrd-ok
spec:
  restartPolicy: Never
  initContainers:
  - name: side
    image: busybox
    restartPolicy: Always
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
  containers:
  - name: app
    image: busybox
    command: ["/bin/sh", "-c", "echo done"]
)";

constexpr const char* kFailingPod = R"(apiVersion: v1
kind: Pod
metadata:
  name: ctrd-fail
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox
    command: ["/bin/sh", "-c", "exit 3"]
)";

// An app that runs until stopped, and a container that goes over its
// memory limit once: dd's 64 MiB buffer in a 32 MiB cgroup.
constexpr const char* kOomPod = R"(apiVersion: v1
kind: Pod
metadata:
  name: ctrd-oom
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: busybox
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; sleep 1000 & wait"]
  - name: hog
    image: busybox
    command: ["/bin/dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1"]
    resources: {limits: {memory: 32Mi}}
)";

class Shim : public ContainerdTest {
 protected:
  // Until `podvisor status` of the task's pod shows its 2 containers ready
  // (10 s at most).
  static std::string WaitForPodReady(const std::string& id) {
    const auto state = TaskBundle(id) / "podvisor" / "state";
    CommandResult st;
    for (int i = 0; i < 500; ++i) {
      st = RunCommand({std::getenv("PODVISOR"), "status", "--state-dir", state.string()});
      if (st.out.find("2/2") != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return st.out;
  }
  // The pids of the task's containers' inits (each instance's init.pid in
  // the pod's state), sorted.
  static std::vector<pid_t> InitPids(const std::string& id) {
    std::vector<pid_t> pids;
    std::error_code ec;
    const auto state = TaskBundle(id) / "podvisor" / "state";
    for (auto it = std::filesystem::recursive_directory_iterator(state, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (it->path().filename() != "init.pid") continue;
      std::ifstream in(it->path());
      pid_t pid = 0;
      if (in >> pid && pid > 0) pids.push_back(pid);
    }
    std::sort(pids.begin(), pids.end());
    return pids;
  }
  static void SetUpTestSuite() {
    ContainerdTest::SetUpTestSuite();
    if (!skip_.empty() || ::testing::Test::HasFatalFailure()) return;
    ImportBundle("long", kLongPod);
    ImportBundle("ok", kSucceedingPod);
    ImportBundle("fail", kFailingPod);
    ImportBundle("oom", kOomPod);
  }
  // `ctr run --rm` attached: returns when the task ends, with its status.
  std::future<CommandResult> RunAttached(const std::string& image, const std::string& id) {
    return std::async(std::launch::async, [image, id] {
      return Ctr({"run", "--rm", "--fifo-dir", (root_ / "fifo").string(), "--runtime",
                  "io.containerd.podvisor.v1", "--annotation", "podvisor.network=none",
                  "podvisor.test/" + image + ":latest", id});
    });
  }
};

TEST_F(Shim, ImportedBundleRunsWithItsSidecarAndStopsOnKill) {
  tasks_.emplace_back("long1", "ctrd-long");
  // Events of the whole life of the task, in containerd's own words.
  auto events = std::async(std::launch::async, [] {
    return RunCommand(
        {"/usr/bin/timeout", "12", "ctr", "-a", (root_ / "c.sock").string(), "events"});
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the subscription is up
  auto run = RunDetached("long", "long1", {"--annotation", "podvisor.stop-reason=rollout"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(TaskStatus("long1"), "RUNNING");
  // Both containers run: the pod's own status, from the state dir the shim gave run.
  const auto state = TaskBundle("long1") / "podvisor" / "state";
  EXPECT_THAT(WaitForPodReady("long1"), HasSubstr("ctrd-long   2/2     Running"));
  // ps: the supervisor and, below it, both containers' processes.
  auto ps = Ctr({"task", "ps", "long1"});
  EXPECT_THAT(ps.out, HasSubstr(std::to_string(TaskPid("long1"))));
  EXPECT_GE(std::count(ps.out.begin(), ps.out.end(), '\n'), 4) << ps.out;

  // Stats: the pod cgroup's v2 metrics (the unified hierarchy, hybrid hosts too).
  auto metrics = Ctr({"task", "metrics", "long1"});
  EXPECT_EQ(metrics.exit_code, 0) << metrics.err;
  EXPECT_THAT(metrics.out, HasSubstr("pids.current")) << metrics.out;
  // Pause has no meaning for a pod: containerd's NotImplemented, with the reason.
  auto pause = Ctr({"task", "pause", "long1"});
  EXPECT_NE(pause.exit_code, 0);
  EXPECT_THAT(pause.err, HasSubstr("a pod cannot be paused")) << pause.err;
  EXPECT_EQ(TaskStatus("long1"), "RUNNING");
  ASSERT_EQ(Ctr({"task", "kill", "long1"}).exit_code, 0);  // SIGTERM: a stop with a reason
  ASSERT_TRUE(WaitForStatus("long1", "STOPPED", 20));
  std::ifstream jsonl(state / "ctrd-long" / "events.jsonl");
  std::stringstream pod_events;
  pod_events << jsonl.rdbuf();
  EXPECT_THAT(pod_events.str(), HasSubstr("Stopping pod (reason: rollout), grace period 10s"));
  auto deleted = Ctr({"task", "delete", "long1"});
  EXPECT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_EQ(TaskStatus("long1"), "");
  std::string log = events.get().out;
  for (const char* topic : {"/tasks/create", "/tasks/start", "/tasks/exit", "/tasks/delete"}) {
    EXPECT_THAT(log, HasSubstr(topic)) << log;
  }
  EXPECT_LT(log.find("/tasks/create"), log.find("/tasks/start"));
  EXPECT_LT(log.find("/tasks/start"), log.find("/tasks/exit"));
}

TEST_F(Shim, OomKillIsPublishedWhileThePodRuns) {
  tasks_.emplace_back("oom1", "ctrd-oom");
  const auto log = root_ / "oom-events.log";
  pid_t events = fork();
  if (events == 0) {
    freopen(log.c_str(), "w", stdout);
    execlp("ctr", "ctr", "-a", (root_ / "c.sock").c_str(), "events", nullptr);
    _exit(127);
  }
  ASSERT_GT(events, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the subscription is up
  ASSERT_EQ(RunDetached("oom", "oom1").exit_code, 0);
  // containerd hears of the OOM kill while the pod goes on (its app still
  // runs), as it does from runc's shim: not only once the task has ended.
  bool published = false;
  for (int i = 0; i < 1500 && !published; ++i) {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    published = text.str().find("/tasks/oom") != std::string::npos;
    if (!published) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(published) << "no /tasks/oom within 15 s";
  EXPECT_EQ(TaskStatus("oom1"), "RUNNING");
  ASSERT_EQ(Ctr({"task", "kill", "oom1"}).exit_code, 0);
  EXPECT_TRUE(WaitForStatus("oom1", "STOPPED", 20));
  EXPECT_EQ(Ctr({"task", "delete", "oom1"}).exit_code, 0);
  kill(events, SIGTERM);
  waitpid(events, nullptr, 0);
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  // One kill, one event: the pod's end does not repeat it.
  const std::string all = text.str();
  EXPECT_EQ(all.find("/tasks/oom"), all.rfind("/tasks/oom")) << all;
}

TEST_F(Shim, ExitStatusIsRunsForSucceededAndFailedPods) {
  tasks_.emplace_back("ok1", "ctrd-ok");
  tasks_.emplace_back("fail1", "ctrd-fail");
  auto ok = RunAttached("ok", "ok1").get();
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  // The task's stdout/stderr carry the supervisor's own log.
  EXPECT_THAT(ok.out + ok.err, HasSubstr("pod ctrd-ok ended: phase Succeeded"));
  auto failed = RunAttached("fail", "fail1").get();
  EXPECT_EQ(failed.exit_code, 1) << failed.out << failed.err;
  EXPECT_THAT(failed.out + failed.err, HasSubstr("container app failed: exit code 3"));
}

TEST_F(Shim, SigkillIsAStopWithGraceZero) {
  tasks_.emplace_back("long2", "ctrd-long");
  auto run = RunAttached("long", "long2");
  ASSERT_TRUE(WaitForStatus("long2", "RUNNING", 20));
  // Stopped before its containers run, a pod fails (S5); this test is about
  // the running pod's grace.
  ASSERT_THAT(WaitForPodReady("long2"), HasSubstr("2/2"));
  auto started = std::chrono::steady_clock::now();
  ASSERT_EQ(Ctr({"task", "kill", "-s", "SIGKILL", "long2"}).exit_code, 0);
  auto result = run.get();
  auto took = std::chrono::steady_clock::now() - started;
  // Both containers trap SIGTERM and exit 0, so the pod succeeds; the
  // budget is the 1 s floor, not the pod's 10 s grace (S5.1, S5.5).
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_THAT(result.out + result.err, HasSubstr("grace period 1s"));
  EXPECT_LT(took, std::chrono::seconds(8));
}

TEST_F(Shim, ExecRunsInTheNamedContainer) {
  tasks_.emplace_back("long3", "ctrd-long");
  auto run = RunDetached("long", "long3", {"--annotation", "podvisor.container=side"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string fifo = (root_ / "fifo").string();
  auto exec = Ctr({"task", "exec", "--fifo-dir", fifo, "--exec-id", "e1", "long3", "/bin/sh", "-c",
                   "echo role=$ROLE host=$(hostname); exit 7"});
  EXPECT_EQ(exec.exit_code, 7) << exec.err;
  EXPECT_THAT(exec.out, HasSubstr("role=sidecar host=ctrd-long"));
  // Without the annotation, the pod's first container: app.
  tasks_.emplace_back("long4", "ctrd-long");
  ASSERT_EQ(RunDetached("long", "long4").exit_code, 0);
  // The same pod name twice: each task has its own state dir, but the pod
  // cgroup (/podvisor/ctrd-long) would be shared; this test only execs.
  auto exec2 = Ctr({"task", "exec", "--fifo-dir", fifo, "--exec-id", "e2", "long4", "/bin/sh", "-c",
                    "echo $ROLE"});
  EXPECT_EQ(exec2.exit_code, 0) << exec2.err;
  EXPECT_EQ(exec2.out, "app\n");
}

TEST_F(Shim, ContainerdRestartDoesNotTouchThePod) {
  // The shim re-attached keeps its task (issue 30): the same shim, the
  // same supervisor and containers; listed, ps'd, stopped and deleted
  // through the new containerd.
  tasks_.emplace_back("long5", "ctrd-long");
  ASSERT_EQ(RunDetached("long", "long5").exit_code, 0);
  EXPECT_THAT(WaitForPodReady("long5"), HasSubstr("2/2"));
  int pid = TaskPid("long5");
  ASSERT_GT(pid, 0);
  const pid_t shim = ShimPid("long5");
  const std::vector<pid_t> inits = InitPids("long5");
  ASSERT_EQ(inits.size(), 2u);
  StopContainerd();
  EXPECT_EQ(kill(pid, 0), 0) << "the supervisor died with containerd";
  StartContainerd();
  EXPECT_EQ(TaskStatus("long5"), "RUNNING");
  EXPECT_EQ(TaskPid("long5"), pid);
  EXPECT_EQ(ShimPid("long5"), shim) << "another shim serves the task";
  EXPECT_EQ(InitPids("long5"), inits) << "a container was restarted";
  for (pid_t init : inits) EXPECT_EQ(kill(init, 0), 0) << init;
  auto ps = Ctr({"task", "ps", "long5"});
  EXPECT_EQ(ps.exit_code, 0) << ps.err;
  EXPECT_THAT(ps.out, HasSubstr(std::to_string(pid)));
  ASSERT_EQ(Ctr({"task", "kill", "long5"}).exit_code, 0);
  EXPECT_TRUE(WaitForStatus("long5", "STOPPED", 20));
  auto del = Ctr({"task", "delete", "long5"});
  EXPECT_EQ(del.exit_code, 0) << del.out << del.err;
  EXPECT_EQ(TaskStatus("long5"), "");
}

TEST_F(Shim, SigkilledSupervisorEndsTheTask) {
  // What happens today (SHIM.md "What survives what"): the shim does not
  // start another supervisor to adopt the pod; the supervisor's death is
  // the task's exit, and containerd's delete recovers the pod. Issue 30
  // asks for the task to be kept; this records that it is not.
  tasks_.emplace_back("long7", "ctrd-long");
  ASSERT_EQ(RunDetached("long", "long7").exit_code, 0);
  EXPECT_THAT(WaitForPodReady("long7"), HasSubstr("2/2"));
  const int supervisor = TaskPid("long7");
  ASSERT_GT(supervisor, 0);
  const pid_t shim = ShimPid("long7");
  const std::vector<pid_t> inits = InitPids("long7");
  ASSERT_EQ(inits.size(), 2u);
  ASSERT_EQ(kill(supervisor, SIGKILL), 0);
  EXPECT_TRUE(WaitForStatus("long7", "STOPPED", 10)) << TaskStatus("long7");
  EXPECT_EQ(ShimPid("long7"), shim) << "the shim stays, to serve the delete";
  // The containers outlive their supervisor until the delete (the
  // sandbox holder keeps them, S15.4).
  int alive = 0;
  for (pid_t init : inits) alive += kill(init, 0) == 0;
  std::printf("after the supervisor's SIGKILL: task %s, %d of 2 container inits alive\n",
              TaskStatus("long7").c_str(), alive);
  auto del = Ctr({"task", "delete", "long7"});
  EXPECT_EQ(del.exit_code, 0) << del.out << del.err;
  std::printf("ctr task delete: %s%s", del.out.c_str(), del.err.c_str());
  for (int i = 0; i < 1000 && alive > 0; ++i) {
    alive = 0;
    for (pid_t init : inits) alive += kill(init, 0) == 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(alive, 0) << "a container outlived the task's delete";
  // The fixture's check after the test: processes, mounts, bundle, socket, cgroups.
}

TEST_F(Shim, SigkilledShimLeavesNothingAfterContainerdsDelete) {
  tasks_.emplace_back("long6", "ctrd-long");
  ASSERT_EQ(RunDetached("long", "long6").exit_code, 0);
  int supervisor = TaskPid("long6");
  pid_t shim = ShimPid("long6");
  ASSERT_GT(shim, 0);
  ASSERT_EQ(kill(shim, SIGKILL), 0);
  // containerd notices the closed connection and runs `shim delete`, which
  // kills the supervisor and recovers the pod as `run` would.
  for (int i = 0; i < 1000 && !TaskStatus("long6").empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(TaskStatus("long6"), "");
  // The task leaves containerd's list when the connection closes, before
  // the delete has run: the delete's work is awaited (10 s at most).
  for (int i = 0; i < 1000 && kill(supervisor, 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(kill(supervisor, 0), 0) << "the supervisor outlived containerd's delete";
  // The fixture's check after the test: processes, mounts, bundle, socket,
  // cgroups, and the pod's sandbox holder, which outlives a dead supervisor
  // from its first kept descriptor (S15.4): recovery finds it by the
  // handover state or, when the shim was killed before the first one was
  // written, by sandbox-holder.json.
}

TEST_F(Shim, ImageWithoutAPodIsRefusedAtCreate) {
  tasks_.emplace_back("plain1", "none");
  const auto src = std::filesystem::path(std::getenv("PODVISOR_SOURCE_ROOT"));
  const auto dir = root_ / "images" / "plain";
  ASSERT_EQ(RunCommand({(src / "scripts/make-rootfs.sh").string(), dir.string()}).exit_code, 0);
  ImportLayerAsImage("plain", dir / "rootfs");
  auto run = RunDetached("plain", "plain1");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.err, HasSubstr("not a podvisor bundle"));
}

// The shim loads the pod with the library `validate` uses
// (loading/pod_loading.h) and sends containerd the problems themselves,
// not an exit status: `ctr run` prints the field at fault.
TEST_F(Shim, InvalidPodIsRefusedAtCreateWithItsProblems) {
  tasks_.emplace_back("invalid1", "none");
  const auto dir = root_ / "images" / "invalid";
  std::filesystem::create_directories(dir / "bundle");
  std::ofstream(dir / "bundle" / "pod.yaml") << "apiVersion: v1\nkind: Pod\n"
                                                "metadata: {name: invalid}\n"
                                                "spec:\n  restartPolicy: Sometimes\n"
                                                "  containers:\n  - name: app\n"
                                                "    image: busybox\n    command: [true]\n";
  ImportLayerAsImage("invalid", dir / "bundle");
  auto run = RunDetached("invalid", "invalid1");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.err, HasSubstr("spec.restartPolicy"));
  EXPECT_THAT(run.err, HasSubstr("Sometimes"));
}

}  // namespace
}  // namespace podvisor::testing
