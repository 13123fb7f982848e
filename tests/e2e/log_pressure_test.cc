// Test tier 2 (docs/TESTING.md): container logs under pressure, end to end
// against the fake runtime. A full log directory is reported once, as an
// event `podvisor events` shows, never tears a record, and writing resumes
// when space returns (S14.16, S14.17; a small tmpfs as the log directory,
// root); a chatty container's rotations at a high rate keep their names at
// the clock and retention never races the compressor (S14.18, S14.19).
#include <sys/mount.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;

class LogPressure : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
  void TearDown() override {
    if (log_tmpfs_) ::umount2(log_dir_.c_str(), MNT_DETACH);
    E2eTest::TearDown();
  }
  bool log_tmpfs_ = false;
};

std::string ReadFileText(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

// Every line a whole CRI record of the container's: a torn record would
// end early (no "-end") or run into the next one.
void ExpectWholeRecords(const std::string& text) {
  static const std::regex record(
      R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z stdout F (line-\d+-\.+-end|after-space-returns)$)");
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n') << "the log ends inside a record";
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    ASSERT_TRUE(std::regex_match(line, record)) << "not a whole record: " << line;
  }
}

TEST_F(LogPressure, S14_17_AFullLogDirectoryIsReportedOnceAndNeverTearsARecord) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the log directory is a small tmpfs";
  fs::create_directories(log_dir_);
  ASSERT_EQ(::mount("tmpfs", log_dir_.c_str(), "tmpfs", 0, "size=64k"), 0) << std::strerror(errno);
  log_tmpfs_ = true;
  // Half of it taken: removing this is the space coming back.
  std::ofstream(log_dir_ / "filler") << std::string(32 * 1024, 'f');
  // 3000 records of 120 bytes, ten times what fits.
  std::string app =
      ShCmd("i=0; while [ $i -lt 3000 ]; do echo \"line-$i-" + std::string(80, '.') +
            "-end\"; i=$((i+1)); done; touch {{DIR}}/flooded; "
            "while [ ! -e {{DIR}}/go ]; do sleep 0.05; done; echo after-space-returns; sleep 0.3");
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: flood}\nspec:\n  restartPolicy: Never\n"
      "  containers:\n  - {name: app, image: img, command: " +
      app + "}\n");
  StartRun();
  for (int i = 0; i < 300 && !fs::exists(scratch_ / "flooded"); ++i) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_TRUE(fs::exists(scratch_ / "flooded")) << RunStderr();
  auto reasons = [&](const std::string& reason) {
    std::vector<nlohmann::json> out;
    for (const auto& e : PodEvents()) {
      if (e.value("reason", "") == reason) out.push_back(e);
    }
    return out;
  };
  for (int i = 0; i < 100 && reasons("LogWriteFailed").empty(); ++i) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  auto failed = reasons("LogWriteFailed");
  EXPECT_EQ(failed.size(), 1u) << RunStderr().substr(0, 4000);
  for (const auto& e : failed) {
    EXPECT_EQ(e.value("type", ""), "Warning");
    EXPECT_EQ(e.value("object", ""), "container/app");
    EXPECT_THAT(e.value("message", ""), HasSubstr("ENOSPC"));
    EXPECT_THAT(e.value("message", ""), HasSubstr("log records dropped"));
  }
  EXPECT_THAT(Client({"events", "flood"}).out, HasSubstr("LogWriteFailed"));
  // Space returns; the container goes on (and ends) whatever was seen above.
  fs::remove(log_dir_ / "filler");
  std::ofstream(scratch_ / "go") << "";
  EXPECT_EQ(WaitRun(), 0) << RunStderr();

  EXPECT_EQ(reasons("LogWriteFailed").size(), 1u) << "once a minute, not once a record";
  auto resumed = reasons("LogWriteResumed");
  ASSERT_EQ(resumed.size(), 1u);
  EXPECT_EQ(resumed[0].value("type", ""), "Normal");
  EXPECT_THAT(resumed[0].value("message", ""), HasSubstr("log records dropped"));
  // One warning in the supervisor's own log, not one per record.
  EXPECT_LE(Count(RunStderr(), "ENOSPC"), 3) << RunStderr().substr(0, 4000);
  std::string log = ReadFileText(log_dir_ / "flood" / "app" / "0.log");
  ExpectWholeRecords(log);
  EXPECT_THAT(log, HasSubstr("line-0-"));
  EXPECT_THAT(log, HasSubstr("after-space-returns")) << "writing resumed when space returned";
  EXPECT_EQ(::umount2(log_dir_.c_str(), 0), 0) << std::strerror(errno);
  log_tmpfs_ = false;
}

TEST_F(LogPressure, S14_18_ManyRotationsASecondKeepNamesAtTheClockAndRetentionWaitsForGzip) {
  // 4000 records of 120 bytes into 1 KiB files: several hundred rotations
  // within a second or two, while compressors run.
  std::string app = ShCmd("i=0; while [ $i -lt 4000 ]; do echo \"line-$i-" + std::string(80, '.') +
                          "-end\"; i=$((i+1)); done");
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: rapid}\nspec:\n  restartPolicy: Never\n"
      "  containers:\n  - {name: app, image: img, command: " +
      app + "}\n");
  EXPECT_EQ(Run({"--log-max-size", "1Ki", "--log-max-files", "4"}), 0) << RunStderr();
  auto now = std::chrono::system_clock::now();
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);

  fs::path dir = log_dir_ / "rapid" / "app";
  static const std::regex name(R"(^0\.log(\.(\d{8}-\d{6})(\.\d{6})?(\.gz)?)?$)");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  std::ostringstream listing;
  for (const auto& n : names) listing << n << " ";
  EXPECT_LE(names.size(), 4u) << "--log-max-files 4: " << listing.str();
  for (const auto& n : names) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(n, m, name)) << n << " in " << listing.str();
    if (m[2].matched) {
      EXPECT_LE(m[2].str(), std::string(stamp)) << n << " is named after a second still to come";
    }
  }
  EXPECT_EQ(Count(RunStderr(), "compressing"), 0) << RunStderr().substr(0, 4000);
  // Everything left reads whole, the last line last.
  auto logs = Client({"logs", "rapid", "app"}, true);
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_THAT(logs.out, ::testing::EndsWith("line-3999-" + std::string(80, '.') + "-end\n"));
}

}  // namespace
}  // namespace podvisor::e2e
