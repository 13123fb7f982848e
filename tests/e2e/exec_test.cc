// Tier 2 (fake runtime), issue 16 point 4: `podvisor exec` runs a command
// through the runtime's exec in a running container of a running pod, with
// the container's environment; the exit code is the command's; -i passes
// stdin. (The terminal and the namespaces are tier 3, runc_exec_test.cc.)
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;

class Exec : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }

  // `podvisor exec --state-dir DIR ARGS`: the state dir before the "--"
  // (Client() would append it to the command).
  testing::CommandResult ExecCmd(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {RequiredEnv("PODVISOR"), "exec", "--state-dir",
                                     state_dir_.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunCommand(argv);
  }

  // `podvisor exec ARGS` with `input` on its stdin.
  testing::CommandResult ExecWith(const std::vector<std::string>& args, const std::string& input) {
    fs::path in = dir_ / "stdin";
    std::ofstream(in) << input;
    std::string line = "exec \"$PODVISOR\" exec --state-dir '" + state_dir_.string() + "'";
    for (const auto& a : args) line += " '" + a + "'";
    return testing::RunCommand({"/bin/sh", "-c", line + " < '" + in.string() + "'"});
  }
};

TEST_F(Exec, ExitCodeOutputEnvironmentAndStdin) {
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: shell}\nspec:\n  restartPolicy: Never\n"
      "  terminationGracePeriodSeconds: 5\n  containers:\n"
      "  - name: app\n    image: img\n    env: [{name: GREETING, value: hello}]\n"
      "    command: " +
      HelperCmd("app", "sleep 100000") + "\n");
  StartRun();
  WaitUntilRunning();
  auto r = ExecCmd({"app", "--", "/bin/sh", "-c", "echo $GREETING; echo oops >&2; exit 7"});
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.out, "hello\n");
  EXPECT_EQ(r.err, "oops\n");
  auto named = ExecCmd({"shell", "app", "--", "/bin/true"});
  EXPECT_EQ(named.exit_code, 0) << named.err;
  // Without -i the command reads nothing; with -i it reads our stdin.
  auto no_input = ExecWith({"app", "--", "/bin/cat"}, "typed\n");
  EXPECT_EQ(no_input.exit_code, 0) << no_input.err;
  EXPECT_EQ(no_input.out, "");
  auto input = ExecWith({"-i", "app", "--", "/bin/cat"}, "typed\n");
  EXPECT_EQ(input.exit_code, 0) << input.err;
  EXPECT_EQ(input.out, "typed\n");

  auto missing = ExecCmd({"nope", "--", "/bin/true"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("no container named nope"));
  auto no_cmd = ExecCmd({"app"});
  EXPECT_EQ(no_cmd.exit_code, 1);
  EXPECT_THAT(no_cmd.err, HasSubstr("exec needs a command after --"));
  // The supervisor survived every request.
  EXPECT_TRUE(RunIsAlive());
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 4);
  auto ended = ExecCmd({"app", "--", "/bin/true"});
  EXPECT_EQ(ended.exit_code, 1);
  EXPECT_THAT(ended.err, HasSubstr("is not running"));
}

// S14.25: kubectl's habits — POD first, -c for the container, else the
// pod's default-container annotation, else its first container.
TEST_F(Exec, PodFirstDashCAndTheDefaultContainer) {
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: shell\n  annotations:\n"
      "    kubectl.kubernetes.io/default-container: side\n"
      "spec:\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 5\n  containers:\n"
      "  - name: app\n    image: img\n    env: [{name: WHO, value: app}]\n"
      "    command: " +
      HelperCmd("app", "sleep 100000") +
      "\n"
      "  - name: side\n    image: img\n    env: [{name: WHO, value: side}]\n"
      "    command: " +
      HelperCmd("side", "sleep 100000") + "\n");
  StartRun();
  WaitUntilRunning();
  auto by_pod = ExecCmd({"shell", "--", "/bin/sh", "-c", "echo $WHO"});
  EXPECT_EQ(by_pod.exit_code, 0) << by_pod.err;
  EXPECT_EQ(by_pod.out, "side\n");  // the annotation's, silently
  EXPECT_EQ(by_pod.err, "");
  auto dash_c = ExecCmd({"shell", "-c", "app", "--", "/bin/sh", "-c", "echo $WHO"});
  EXPECT_EQ(dash_c.out, "app\n") << dash_c.err;
  auto only_pod = ExecCmd({"-c", "app", "--", "/bin/sh", "-c", "echo $WHO"});
  EXPECT_EQ(only_pod.out, "app\n") << only_pod.err;
  auto old_form = ExecCmd({"app", "--", "/bin/sh", "-c", "echo $WHO"});
  EXPECT_EQ(old_form.out, "app\n") << old_form.err;
  auto twice = ExecCmd({"shell", "app", "-c", "side", "--", "/bin/true"});
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_THAT(twice.err, HasSubstr("both as argument and with -c"));
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  WaitRun();
}

}  // namespace
}  // namespace podvisor::e2e
