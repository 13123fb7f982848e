#include "oci/runtime_cli.h"

#include <unistd.h>

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace podvisor::oci {
namespace {

using ::testing::ElementsAre;

RuntimeCli Cli(bool no_pivot = false) {
  return RuntimeCli({"runc", "/usr/sbin/runc"},
                    {"/run/podvisor/web/runtime", no_pivot, "/run/podvisor/web/runtime.log"});
}

TEST(RuntimeCli, CreateUsesThePodsOwnRootAndLog) {
  auto cmd = Cli().Create("web.app.0", "/run/podvisor/web/bundles/app", "/run/app.pid");
  EXPECT_EQ(cmd.step, "create");
  EXPECT_THAT(cmd.argv, ElementsAre("/usr/sbin/runc", "--root", "/run/podvisor/web/runtime",
                                    "--log", "/run/podvisor/web/runtime.log", "--log-format",
                                    "json", "create", "--bundle", "/run/podvisor/web/bundles/app",
                                    "--pid-file", "/run/app.pid", "web.app.0"));
}

TEST(RuntimeCli, RunCreatesAndStartsDetachedWithCreatesOptions) {
  auto cmd = Cli(true).Run("web.init.0", "/b", "/p");
  EXPECT_EQ(cmd.step, "create");
  EXPECT_THAT(std::vector<std::string>(cmd.argv.begin() + 7, cmd.argv.end()),
              ElementsAre("run", "--detach", "--bundle", "/b", "--pid-file", "/p", "--no-pivot",
                          "web.init.0"));
}

TEST(RuntimeCli, DetachedRunOnlyForRuntimesKnownToHaveIt) {
  for (const char* name : {"runc", "crun"}) {
    EXPECT_TRUE(RuntimeCli({name, "/x"}, {}).HasDetachedRun()) << name;
  }
  for (const char* name : {"fake-runtime", "youki", "kata-runtime"}) {
    EXPECT_FALSE(RuntimeCli({name, "/x"}, {}).HasDetachedRun()) << name;
  }
}

TEST(RuntimeCli, NoPivotForInitramfsRoots) {
  auto cmd = Cli(true).Create("c", "/b", "/p");
  EXPECT_EQ(cmd.argv[cmd.argv.size() - 2], "--no-pivot");
}

TEST(RuntimeCli, OtherSteps) {
  EXPECT_THAT(Cli().Start("c").argv, ::testing::Contains("start"));
  EXPECT_EQ(Cli().Delete("c").argv.back(), "c");
  EXPECT_EQ(Cli().Delete("c").argv[Cli().Delete("c").argv.size() - 2], "--force");
  auto exec = Cli().Exec("c", "/run/probe.json");
  EXPECT_THAT(std::vector<std::string>(exec.argv.end() - 4, exec.argv.end()),
              ElementsAre("exec", "--process", "/run/probe.json", "c"));
}

TEST(RuntimeCli, ParsesState) {
  auto s = ParseRuntimeState(R"({"ociVersion":"1.0.2","id":"c","pid":42,"status":"running"})");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->id, "c");
  EXPECT_EQ(s->pid, 42);
  EXPECT_EQ(s->status, "running");
  EXPECT_FALSE(ParseRuntimeState("not json").ok());
  EXPECT_FALSE(ParseRuntimeState(R"({"id":"c"})").ok());
}

TEST(RuntimeCli, LastErrorFromTheRuntimeLog) {
  auto path = std::filesystem::path(::testing::TempDir()) / ("rt-log-" + std::to_string(getpid()));
  std::ofstream(path) << R"({"level":"info","msg":"starting"})"
                      << "\n"
                      << R"({"level":"error","msg":"exec: \"nope\": executable file not found"})"
                      << "\n";
  EXPECT_EQ(LastRuntimeError(path), "exec: \"nope\": executable file not found");
  std::filesystem::remove(path);
  EXPECT_EQ(LastRuntimeError(path), "");
}

}  // namespace
}  // namespace podvisor::oci
