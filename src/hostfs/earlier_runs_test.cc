#include "hostfs/earlier_runs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

namespace podvisor::hostfs {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& file) {
  std::ifstream in(file);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class EarlierRunsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("earlier-runs-test-" + std::to_string(::getpid()));
    pod_ = dir_ / "state" / "web";
    logs_ = dir_ / "logs" / "web";
    fs::create_directories(pod_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // What a run leaves: its record, events, one log line, its log-dir file.
  void EndRun(const std::string& uid, const fs::path& logs) {
    std::ofstream(pod_ / "status.json") << R"({"metadata":{"uid":")" << uid << R"("}})";
    std::ofstream(pod_ / "events.jsonl") << R"({"reason":"Started","uid":")" << uid << "\"}\n";
    fs::create_directories(logs / "app");
    std::ofstream(logs / "app" / "0.log") << "line of " << uid << "\n";
    ASSERT_TRUE(RememberLogDir(pod_, logs));
  }

  fs::path dir_, pod_, logs_;
};

TEST_F(EarlierRunsTest, AFirstRunHasNothingToSetAside) {
  auto run = SetEarlierRunAside(pod_, logs_);
  ASSERT_TRUE(run);
  EXPECT_FALSE(run->has_value());
  EXPECT_FALSE(fs::exists(pod_ / kEarlierRunsDir));
}

TEST_F(EarlierRunsTest, ThePreviousRunsFilesMoveAsideWhereverItsLogsWent) {
  const fs::path old_logs = dir_ / "old-logs" / "web";
  EndRun("uid-1", old_logs);
  auto run = SetEarlierRunAside(pod_, logs_);
  ASSERT_TRUE(run) << run.error().message();
  ASSERT_TRUE(run->has_value());
  const EarlierRun& r = **run;
  EXPECT_EQ(r.id, "uid-1");
  EXPECT_FALSE(fs::exists(pod_ / "status.json"));
  EXPECT_FALSE(fs::exists(pod_ / "events.jsonl"));
  EXPECT_FALSE(fs::exists(old_logs / "app"));
  EXPECT_EQ(Read(pod_ / ".runs" / "uid-1" / "events.jsonl"),
            "{\"reason\":\"Started\",\"uid\":\"uid-1\"}\n");
  EXPECT_EQ(Read(old_logs / ".runs" / "uid-1" / "app" / "0.log"), "line of uid-1\n");
  EXPECT_EQ(RememberedLogDir(pod_ / ".runs" / "uid-1"), old_logs / ".runs" / "uid-1");
  // rm finds both log directories: the earlier run's and the current one.
  ASSERT_TRUE(RememberLogDir(pod_, logs_));
  EXPECT_EQ(AllLogDirs(pod_), (std::vector<fs::path>{logs_, old_logs}));
}

TEST_F(EarlierRunsTest, ARunThatNeverStartedPutsItBack) {
  EndRun("uid-1", logs_);
  auto run = SetEarlierRunAside(pod_, logs_);
  ASSERT_TRUE(run && run->has_value());
  PutEarlierRunBack(**run, pod_);
  EXPECT_EQ(Read(logs_ / "app" / "0.log"), "line of uid-1\n");
  EXPECT_TRUE(fs::exists(pod_ / "status.json"));
  EXPECT_EQ(RememberedLogDir(pod_), logs_);
  EXPECT_FALSE(fs::exists(pod_ / kEarlierRunsDir));
  EXPECT_FALSE(fs::exists(logs_ / kEarlierRunsDir));
}

TEST_F(EarlierRunsTest, OnlyTheNewestAreKeptAndASameUidGetsItsOwnPlace) {
  // A manifest that sets metadata.uid gives every run the same one.
  const int runs_made = kEarlierRunsKept + 2;
  for (int i = 0; i < runs_made; ++i) {
    EndRun("same", logs_);
    std::ofstream(logs_ / "app" / "0.log") << "run " << i << "\n";
    auto run = SetEarlierRunAside(pod_, logs_);
    ASSERT_TRUE(run && run->has_value());
  }
  std::vector<EarlierRun> runs = EarlierRuns(pod_);
  ASSERT_EQ(runs.size(), static_cast<std::size_t>(kEarlierRunsKept));
  EXPECT_EQ(Read(runs.back().logs / "app" / "0.log"),
            "run " + std::to_string(runs_made - 1) + "\n");
  EXPECT_EQ(Read(runs.front().logs / "app" / "0.log"), "run 2\n");
  std::size_t log_archives = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(logs_ / ".runs")) ++log_archives;
  EXPECT_EQ(log_archives, static_cast<std::size_t>(kEarlierRunsKept));  // the oldest's logs went
}

}  // namespace
}  // namespace podvisor::hostfs
