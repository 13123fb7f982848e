// Tier 2 (fake runtime), issue 16 point 5: `status -o name`, `-o
// jsonpath=...` and `status -w` (a line per change until the pod ends).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

class StatusOutput : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
};

TEST_F(StatusOutput, NameAndJsonPathOnARunningAndAnEndedPod) {
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: paths}\nspec:\n  restartPolicy: Never\n"
      "  terminationGracePeriodSeconds: 5\n  containers:\n"
      "  - {name: app, image: img, command: " +
      HelperCmd("app", "sleep 100000") +
      "}\n"
      "  - {name: quick, image: img, command: " +
      ShCmd("exit 4") + "}\n");
  StartRun();
  WaitForStatus([](const nlohmann::json& p) { return StateOf(p, "quick") == "terminated"; },
                "quick terminated");
  auto name = Client({"status", "-o", "name"});
  EXPECT_EQ(name.out, "pod/paths\n") << name.err;
  auto phase = Client({"status", "-o", "jsonpath={.status.phase}"});
  EXPECT_EQ(phase.out, "Running") << phase.err;
  auto codes =
      Client({"status", "-o",
              "jsonpath={range "
              ".status.containerStatuses[*]}{.name}={.state.terminated.exitCode}{\"\\n\"}{end}"});
  EXPECT_EQ(codes.out, "app=\nquick=4\n") << codes.err;
  auto filter = Client(
      {"status", "-o",
       "jsonpath={.status.containerStatuses[?(@.name==\"quick\")].state.terminated.reason}"});
  EXPECT_EQ(filter.out, "Error") << filter.err;
  auto bad = Client({"status", "-o", "jsonpath={.status"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("unclosed"));
  auto unknown = Client({"status", "-o", "xml"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("unknown format \"xml\""));
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 4);
  auto ended = Client({"status", "paths", "-o", "jsonpath={.status.phase}"});
  EXPECT_EQ(ended.out, "Failed") << ended.err;
}

TEST_F(StatusOutput, WatchPrintsALinePerChangeUntilThePodEnds) {
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: watched}\nspec:\n  restartPolicy: Never\n"
      "  containers:\n"
      "  - {name: app, image: img, command: " +
      ShCmd("while [ ! -e " + (scratch_ / "go").string() + " ]; do sleep 0.05; done; exit 0") +
      "}\n");
  StartRun();
  WaitUntilRunning();
  // `status -w` in the background, its output into a file.
  const fs::path out_file = dir_ / "watch.out";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int fd = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    std::string exe = RequiredEnv("PODVISOR"), dir = state_dir_.string();
    ::execl(exe.c_str(), exe.c_str(), "status", "-w", "--state-dir", dir.c_str(), nullptr);
    ::_exit(127);
  }
  // Give the watcher its first line, then let the app finish.
  for (int i = 0; i < 200 && (!fs::exists(out_file) || fs::file_size(out_file) == 0); ++i) {
    ::usleep(20'000);
  }
  std::ofstream(scratch_ / "go") << "";
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  int status = 0;
  // The watch ends with the pod.
  for (int i = 0; i < 500 && ::waitpid(pid, &status, WNOHANG) == 0; ++i) ::usleep(20'000);
  if (::waitpid(pid, &status, WNOHANG) == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    ADD_FAILURE() << "status -w did not end with the pod";
  }
  std::ifstream in(out_file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text,
              ContainsRegex("^NAME +READY +STATUS +RESTARTS +AGE\nwatched +1/1 +Running +0 "));
  // After the container table, later states as single pod lines.
  EXPECT_THAT(text, ContainsRegex("\nwatched +0/1 +Completed +0 +[0-9]+s\n$")) << text;
}

}  // namespace
}  // namespace podvisor::e2e
