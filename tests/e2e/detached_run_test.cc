// Tier 2 (fake runtime): a container whose start follows its create at once
// (docs/SEMANTICS.md S1.1) is created and started by one `run --detach`
// call, which podvisor makes only for runtimes known to have it (runc and
// crun, by file name). Here the fake runtime is that runtime, under the
// name "runc" (a symlink). What must hold: the calls made, the order of
// the starts, and the exit status of a container that has run and exited
// before `run` itself returned (podvisor then adopts a zombie from the pid
// file; signals/reaper.h keeps it from being reaped as an orphan first),
// and, as crun leaves it, an init that is still the child of a process
// the runtime forked when the call returns.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

class DetachedRun : public E2eTest {
 protected:
  static void SetUpTestSuite() {
    char dir[] = "/tmp/podvisor-detached-run-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    link_dir_ = dir;
    fs::create_symlink(RequiredEnv("PODVISOR_FAKE_RUNTIME"), link_dir_ / "runc");
  }
  static void TearDownTestSuite() { fs::remove_all(link_dir_); }

  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = (link_dir_ / "runc").string();
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }

  // "COMMAND NAME" for each runtime call, NAME the container's name (the
  // runtime id is POD_NAME_INSTANCE_ATTEMPT).
  std::vector<std::string> Calls(const std::string& pod) const {
    std::vector<std::string> out;
    std::ifstream in(CallsFile());
    std::string command, id;
    while (in >> command >> id) {
      std::string name = id.substr(pod.size() + 1);
      name = name.substr(0, name.find('_'));
      if (command == "run" || command == "create" || command == "start") {
        out.push_back(command + " " + name);
      }
    }
    return out;
  }
  std::string CallsEnv() const { return "FAKE_RUNTIME_CALLS=" + CallsFile().string(); }
  fs::path CallsFile() const { return link_dir_ / ("calls-" + std::to_string(::getpid())); }

  void TearDown() override {
    fs::remove(CallsFile());
    E2eTest::TearDown();
  }

  static inline fs::path link_dir_;
};

std::string Pod(const std::string& name, const std::string& body) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         "}\nspec:\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 5\n" + body;
}

TEST_F(DetachedRun, OnlyAnInstanceWhoseStartFollowsAtOnceIsRun) {
  // first: its turn at once. second: created ahead, started after first
  // exits. app-1: the first of the regular chain. app-2: waits for app-1.
  WritePod(Pod("calls",
               "  initContainers:\n"
               "  - {name: first, image: img, command: " +
                   HelperCmd("first", "exit 0") +
                   "}\n"
                   "  - {name: second, image: img, command: " +
                   HelperCmd("second", "exit 0") +
                   "}\n"
                   "  containers:\n"
                   "  - {name: app-1, image: img, command: " +
                   HelperCmd("app-1", "exit 0") +
                   "}\n"
                   "  - {name: app-2, image: img, command: " +
                   HelperCmd("app-2", "exit 0") + "}\n"));
  ASSERT_EQ(Run({}, {CallsEnv()}), 0) << RunStderr();
  std::vector<std::string> calls = Calls("calls");
  EXPECT_THAT(calls, UnorderedElementsAre("run first", "create second", "start second", "run app-1",
                                          "create app-2", "start app-2"));
  // The starts keep their order (S1.1, S1.4): app-2's after app-1's run.
  auto at = [&](const std::string& call) {
    return std::find(calls.begin(), calls.end(), call) - calls.begin();
  };
  EXPECT_LT(at("run app-1"), at("start app-2"));
  std::vector<std::string> started;
  for (const auto& e : HelperEvents()) {
    if (e.verb == "Started") started.push_back(e.name);
  }
  EXPECT_THAT(started, ElementsAre("first", "second", "app-1", "app-2"));
}

TEST_F(DetachedRun, AContainerThatExitedBeforeRunReturnedKeepsItsExitStatus) {
  // An init container that exits at once and a regular container that
  // fails at once, each exited before its `run` returned (the fake waits
  // for that): their exits come after their starts, with their codes.
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("pod " + std::to_string(i));
    WritePod(Pod("quick",
                 "  initContainers:\n  - {name: init, image: img, command: [/bin/true]}\n"
                 "  containers:\n  - {name: app, image: img, command: " +
                     ShCmd("exit 3") + "}\n"));
    EXPECT_EQ(Run({}, {CallsEnv(), "FAKE_RUNTIME_RUN_AWAIT_EXIT=1"}), 1) << RunStderr();  // Failed
    auto pod = Status();
    ASSERT_TRUE(pod.has_value());
    const auto& init = (*pod)["status"]["initContainerStatuses"][0]["state"]["terminated"];
    EXPECT_EQ(init.value("exitCode", -1), 0) << pod->dump(2);
    EXPECT_EQ(init.value("reason", ""), "Completed") << pod->dump(2);
    const auto& app = (*pod)["status"]["containerStatuses"][0]["state"]["terminated"];
    EXPECT_EQ(app.value("exitCode", -1), 3) << pod->dump(2);
    EXPECT_EQ(app.value("reason", ""), "Error") << pod->dump(2);
    EXPECT_EQ((*pod)["status"].value("phase", ""), "Failed");
    EXPECT_THAT(Calls("quick"), ElementsAre("run init", "run app"));
    fs::remove(CallsFile());
    ASSERT_EQ(Client({"rm", "quick"}, true).exit_code, 0);
  }
}

TEST_F(DetachedRun, AnInitStillHeldByTheRuntimesForkIsAdoptedWhenTheForkExits) {
  // crun's run --detach returns while its fork, the init's parent, lives
  // on (here 300 ms): the adoption waits for the fork's exit. A sidecar
  // that runs on, an init that exits at once (a zombie when the fork
  // exits), a regular container that succeeds.
  WritePod(Pod("held",
               "  initContainers:\n"
               "  - {name: init, image: img, command: [/bin/true]}\n"
               "  - {name: side, image: img, restartPolicy: Always, command: " +
                   HelperCmd("side", "trap-sigterm 100 0") +
                   "}\n"
                   "  containers:\n"
                   "  - {name: app, image: img, command: " +
                   HelperCmd("app", "exit 0") + "}\n"));
  ASSERT_EQ(Run({}, {CallsEnv(), "FAKE_RUNTIME_RUN_LINGER=300", "FAKE_RUNTIME_RUN_AWAIT_EXIT=1"}),
            0)
      << RunStderr();
  auto pod = Status();
  ASSERT_TRUE(pod.has_value());
  EXPECT_EQ((*pod)["status"].value("phase", ""), "Succeeded") << pod->dump(2);
  const auto& init = (*pod)["status"]["initContainerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(init.value("reason", ""), "Completed") << pod->dump(2);
  const auto& app = (*pod)["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(app.value("reason", ""), "Completed") << pod->dump(2);
  EXPECT_THAT(RunStderr(), ::testing::Not(::testing::HasSubstr("adopting")));
  // side is created ahead while init runs (the two calls race to the
  // file), so only its start follows.
  EXPECT_THAT(Calls("held"),
              UnorderedElementsAre("run init", "create side", "start side", "run app"));
}

TEST_F(DetachedRun, ALongRunningInitHeldByTheRuntimesForkIsSignalledDirectly) {
  // The app runs until the pod is stopped: the SIGTERM reaches it through
  // the adopted pidfd (a trapped SIGTERM exits 0; a SIGKILL at the end of
  // the grace period would be 137).
  WritePod(Pod("held-long",
               "  containers:\n"
               "  - {name: app, image: img, command: " +
                   HelperCmd("app", "trap-sigterm 100 0") + "}\n"));
  StartRun({}, {"FAKE_RUNTIME_RUN_LINGER=300"});
  WaitUntilRunning();
  ASSERT_EQ(Client({"stop", "held-long"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  auto pod = Status();
  ASSERT_TRUE(pod.has_value());
  const auto& app = (*pod)["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(app.value("exitCode", -1), 0) << pod->dump(2);
  EXPECT_EQ(CountOf(HelperEvents(), "app Exiting"), 1) << Describe(HelperEvents());
}

TEST_F(DetachedRun, AForkExitingJustAsTheCallReturnsNeverFailsTheCreate) {
  // No linger: the fork exits around the moment the call does, so over
  // many pods the adoption meets every order of the two exits, including
  // the fork's exit between two looks at the init's parent.
  for (int i = 0; i < 25; ++i) {
    SCOPED_TRACE("pod " + std::to_string(i));
    WritePod(Pod("race", "  containers:\n  - {name: app, image: img, command: [/bin/true]}\n"));
    ASSERT_EQ(Run({}, {"FAKE_RUNTIME_RUN_LINGER=0"}), 0) << RunStderr();
    ASSERT_EQ(Client({"rm", "race"}, true).exit_code, 0);
  }
}

TEST_F(DetachedRun, AForkThatNeverExitsIsKilledAtTheRuntimeTimeout) {
  // The wait for the fork is part of the create: --runtime-timeout bounds
  // it, and the create fails with the timeout's message; nothing is left.
  WritePod(Pod("held-hung",
               "  containers:\n"
               "  - {name: app, image: img, command: " +
                   HelperCmd("app", "sleep 100000") + "}\n"));
  EXPECT_EQ(Run({"--runtime-timeout", "1s"}, {"FAKE_RUNTIME_RUN_LINGER=100000"}), 1) << RunStderr();
  auto pod = Status();
  ASSERT_TRUE(pod.has_value());
  EXPECT_THAT(pod->dump(), ::testing::HasSubstr("runtime create did not finish within 1s"))
      << pod->dump(2);
}

TEST_F(DetachedRun, AnInitThatExitedBeforeItsRunCouldBeWaitedForIsNoOrphan) {
  // runc is multithreaded: its last thread hands the init over a moment
  // before runc itself can be waited for. An init that exited at once is
  // then our zombie before the call's exit is: it must be held for the
  // call's handler, not reaped as an orphan (the fake makes the moment
  // 200 ms).
  WritePod(Pod("orphaned",
               "  initContainers:\n  - {name: init, image: img, command: [/bin/true]}\n"
               "  containers:\n  - {name: app, image: img, command: " +
                   ShCmd("exit 3") + "}\n"));
  EXPECT_EQ(Run({}, {CallsEnv(), "FAKE_RUNTIME_RUN_ORPHAN_INIT=200"}), 1) << RunStderr();
  auto pod = Status();
  ASSERT_TRUE(pod.has_value());
  const auto& init = (*pod)["status"]["initContainerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(init.value("reason", ""), "Completed") << pod->dump(2);
  const auto& app = (*pod)["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(app.value("exitCode", -1), 3) << pod->dump(2);
  EXPECT_THAT(RunStderr(), ::testing::Not(::testing::HasSubstr("adopting"))) << RunStderr();
  EXPECT_THAT(Calls("orphaned"), ElementsAre("run init", "run app"));
}

}  // namespace
}  // namespace podvisor::e2e
