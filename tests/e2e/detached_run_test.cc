// Tier 2 (fake runtime): a container whose start follows its create at once
// (docs/SEMANTICS.md S1.1) is created and started by one `run --detach`
// call, which podvisor makes only for runtimes known to have it (runc and
// crun, by file name). Here the fake runtime is that runtime, under the
// name "runc" (a symlink). What must hold: the calls made, the order of
// the starts, and the exit status of a container that has run and exited
// before `run` itself returned (podvisor then adopts a zombie from the pid
// file; signals/reaper.h keeps it from being reaped as an orphan first).
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
  WritePod(Pod("calls", "  initContainers:\n"
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
  EXPECT_THAT(calls, UnorderedElementsAre("run first", "create second", "start second",
                                          "run app-1", "create app-2", "start app-2"));
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
    WritePod(Pod("quick", "  initContainers:\n  - {name: init, image: img, command: [/bin/true]}\n"
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

}  // namespace
}  // namespace podvisor::e2e
