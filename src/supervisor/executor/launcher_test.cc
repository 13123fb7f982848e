// launcher.h: the runtime's command lines the production launcher hands to
// its spawner, and fake_launcher.h's contract (calls recorded, exits in the
// order a test chooses).
#include "supervisor/executor/launcher.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "process/spawn.h"
#include "supervisor/executor/fake_launcher.h"

namespace podvisor::supervisor::executor {
namespace {

struct Spawned {
  oci::RuntimeCommand cmd;
  std::filesystem::path log_file;
  int stdout_fd = 0;
  int stderr_fd = 0;
  RuntimeLauncher::Done done;
};

bool Has(const std::vector<std::string>& argv, const std::string& word) {
  return std::find(argv.begin(), argv.end(), word) != argv.end();
}

class CliLauncherTest : public ::testing::Test {
 protected:
  RuntimeCliLauncher Launcher(std::string runtime_name) {
    oci::RuntimeCli cli({runtime_name, "/usr/bin/" + runtime_name},
                        {"/run/pod/runtime", false, {}});
    return RuntimeCliLauncher(
        cli,
        [this](const oci::RuntimeCommand& cmd, const std::filesystem::path& log_file, int out,
               int err, RuntimeLauncher::Done done) -> Result<pid_t> {
          if (spawn_errno_) return Error::FromErrno("spawn", spawn_errno_);
          spawned_.push_back({cmd, log_file, out, err, std::move(done)});
          return 42;
        });
  }
  RuntimeLauncher::Files files_{"/pods/p/c/id-1", "/pods/p/c/id-1/init.pid",
                                "/pods/p/c/id-1/runtime.log"};
  std::vector<Spawned> spawned_;
  int spawn_errno_ = 0;
};

TEST_F(CliLauncherTest, CreateHandsTheInitTheGivenStdioAndTheRuntimeItsLogAndPidFile) {
  auto launcher = Launcher("runc");
  int exits = 0;
  ASSERT_TRUE(launcher.Create("id-1", files_, false, 7, 8, [&](const auto&) { ++exits; }));
  ASSERT_EQ(spawned_.size(), 1u);
  const Spawned& s = spawned_[0];
  EXPECT_EQ(s.cmd.step, "create");
  EXPECT_TRUE(Has(s.cmd.argv, "create"));
  EXPECT_FALSE(Has(s.cmd.argv, "--detach"));
  EXPECT_TRUE(Has(s.cmd.argv, files_.bundle.string()));
  EXPECT_TRUE(Has(s.cmd.argv, files_.pid_file.string()));
  EXPECT_EQ(s.cmd.argv.back(), "id-1");
  EXPECT_EQ(s.log_file, files_.log_file);
  EXPECT_EQ(s.stdout_fd, 7);
  EXPECT_EQ(s.stderr_fd, 8);
  s.done(process::ExitInfo::Exited(42, 0));
  EXPECT_EQ(exits, 1);  // the exit reaches the caller's callback
}

TEST_F(CliLauncherTest, RunIsADetachedRunWhoseFailureIsTheCreates) {
  auto launcher = Launcher("crun");
  EXPECT_TRUE(launcher.HasDetachedRun());
  ASSERT_TRUE(launcher.Create("id-1", files_, true, 7, 8, [](const auto&) {}));
  EXPECT_TRUE(Has(spawned_[0].cmd.argv, "run"));
  EXPECT_TRUE(Has(spawned_[0].cmd.argv, "--detach"));
  EXPECT_EQ(spawned_[0].cmd.step, "create");
}

TEST_F(CliLauncherTest, StartAndDeleteGetNoStdio) {
  auto launcher = Launcher("runc");
  ASSERT_TRUE(launcher.Start("id-1", files_, [](const auto&) {}));
  ASSERT_TRUE(launcher.Delete("id-1", files_, [](const auto&) {}));
  ASSERT_EQ(spawned_.size(), 2u);
  EXPECT_EQ(spawned_[0].cmd.step, "start");
  EXPECT_EQ(spawned_[1].cmd.step, "delete");
  EXPECT_TRUE(Has(spawned_[1].cmd.argv, "--force"));
  for (const Spawned& s : spawned_) {
    EXPECT_EQ(s.stdout_fd, process::SpawnOptions::kDevNull);
    EXPECT_EQ(s.stderr_fd, process::SpawnOptions::kDevNull);
    EXPECT_EQ(s.log_file, files_.log_file);
  }
}

TEST_F(CliLauncherTest, OtherRuntimesHaveNoDetachedRun) {
  EXPECT_FALSE(Launcher("my-runtime").HasDetachedRun());
}

TEST_F(CliLauncherTest, ASpawnFailureKeepsItsErrno) {
  auto launcher = Launcher("runc");
  spawn_errno_ = EMFILE;  // S14.11 tells a lack of descriptors by it
  Status s = launcher.Delete("id-1", files_, [](const auto&) {});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code(), EMFILE);
}

TEST(FakeLauncher, DeliversExitsInTheOrderTheTestChooses) {
  FakeLauncher fake;
  std::vector<std::string> order;
  RuntimeLauncher::Files files;
  ASSERT_TRUE(fake.Create("a", files, true, 3, 4, [&](const auto& e) {
    order.push_back("run a " + std::to_string(e.code));
  }));
  ASSERT_TRUE(fake.Start("b", files, [&](const auto&) { order.push_back("start b"); }));
  EXPECT_EQ(fake.Running("run", "a"), 0);
  EXPECT_EQ(fake.Running("start", "b"), 1);
  EXPECT_TRUE(fake.Exit(1));
  EXPECT_TRUE(fake.Exit(0, 1));
  EXPECT_FALSE(fake.Exit(0));  // once
  EXPECT_EQ(fake.Running("run", "a"), -1);
  EXPECT_EQ(order, (std::vector<std::string>{"start b", "run a 1"}));
}

TEST(FakeLauncher, InjectedSpawnFailureRecordsNoCall) {
  FakeLauncher fake;
  fake.fail_next_spawn = EAGAIN;
  Status s = fake.Delete("a", {}, [](const auto&) {});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code(), EAGAIN);
  EXPECT_TRUE(fake.calls().empty());
  EXPECT_TRUE(fake.Delete("a", {}, [](const auto&) {}));  // only the next one
}

}  // namespace
}  // namespace podvisor::supervisor::executor
