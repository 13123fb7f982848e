// S11.2 log rotation and retention, and the CRI format log shippers parse
// (fluent-bit's "cri" parser, vector's kubernetes_logs): file names, the
// retention plan, gzip, reading across rotated files, and the writer's
// rotation never splitting a record.
#include "supervisor/logs/log_files.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace podvisor::supervisor::logs {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// 2023-11-14T22:13:20Z
const WallTime kT{std::chrono::seconds(1'700'000'000)};

// fluent-bit's parsers.conf, [PARSER] Name cri (vector's kubernetes_logs
// reads the same four fields), and the time field as RFC 3339 with
// nanoseconds in UTC, as its Time_Format %Y-%m-%dT%H:%M:%S.%L%z takes it.
// The regex ends in "(.*)$" there; any line from getline matches that, and
// libstdc++'s std::regex recurses once per character of a ".*" (a 16 KiB
// line overflows the stack under ASan), so only the three fields are
// matched, anchored at the start of the line.
const std::regex kFluentBitCri("^([^ ]+) (stdout|stderr) ([^ ]*) ");
const std::regex kRfc3339Nano(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$)");

void ExpectShipperParsable(const std::string& data, const std::string& what) {
  ASSERT_FALSE(data.empty()) << what;
  ASSERT_EQ(data.back(), '\n') << what << ": a record is split across files";
  std::istringstream in(data);
  int n = 0;
  for (std::string line; std::getline(in, line); ++n) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, kFluentBitCri, std::regex_constants::match_continuous))
        << what << " line " << n << ": " << line;
    EXPECT_TRUE(std::regex_match(m[1].str(), kRfc3339Nano)) << what << ": " << m[1];
    EXPECT_TRUE(m[3] == "F" || m[3] == "P") << what << ": " << line;
  }
}

class LogFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("log-files-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Touch(const std::string& name, const std::string& data = "") {
    std::ofstream(dir_ / name, std::ios::binary) << data;
  }
  fs::path dir_;
};

TEST(LogFileNames, S11_2_RotatedNamesAreTimestamped) {
  EXPECT_EQ(RotatedLogName({}, 3, kT), "3.log.20231114-221320");
  // S14.18: a second rotation in the same second takes a sequence number,
  // so names stay unique and in rotation order.
  EXPECT_EQ(RotatedLogName({"3.log.20231114-221320.gz", "3.log"}, 3, kT),
            "3.log.20231114-221320.000001");
  EXPECT_EQ(RotatedLogName({"3.log.20231114-221320", "3.log.20231114-221320.000001.gz"}, 3, kT),
            "3.log.20231114-221320.000002");
  // A later second starts without one.
  EXPECT_EQ(RotatedLogName({"3.log.20231114-221319.000007"}, 3, kT), "3.log.20231114-221320");
  // A clock that stepped back still sorts after the newest, in its second.
  EXPECT_EQ(RotatedLogName({"3.log.20231114-230000"}, 3, kT), "3.log.20231114-230000.000001");
  // Other instances' names do not matter.
  EXPECT_EQ(RotatedLogName({"2.log.20231114-221320"}, 3, kT), "3.log.20231114-221320");
  // Only a million rotations in one second move to the next.
  EXPECT_EQ(RotatedLogName({"3.log.20231114-235959.999999"}, 3, kT), "3.log.20231115-000000");
}

TEST(LogFileNames, S14_18_RotationsAtAHighRateNeverNameAFutureSecond) {
  // 40 rotations a second for 30 seconds: "the next free second" named
  // the last of them 20 minutes ahead of the clock.
  std::vector<std::string> names = {"0.log"};
  std::vector<std::string> made;
  WallTime t = kT;
  for (int i = 0; i < 1200; ++i) {
    std::string name = RotatedLogName(names, 0, t);
    auto parsed = ParseLogFileName(name);
    ASSERT_TRUE(parsed) << name;
    std::string second = parsed->stamp.substr(0, 15);
    std::string now = RotatedLogName({}, 0, t).substr(6);
    ASSERT_LE(second, now) << "rotation " << i << " named " << name << " at " << now;
    ASSERT_TRUE(made.empty() || made.back() < parsed->stamp) << name << " after " << made.back();
    made.push_back(parsed->stamp);
    names.push_back(name);
    t += std::chrono::milliseconds(25);
  }
  EXPECT_EQ(made.back(), "20231114-221349.000039");
  // Rotation order is the order of InstanceLogFiles and of `podvisor logs`.
  std::vector<std::string> sorted = made;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, made);
}

TEST(LogFileNames, ParsesCurrentRotatedAndCompressed) {
  auto cur = ParseLogFileName("12.log");
  ASSERT_TRUE(cur);
  EXPECT_EQ(cur->instance, 12);
  EXPECT_EQ(cur->stamp, "");
  auto rot = ParseLogFileName("0.log.20231114-221320.gz");
  ASSERT_TRUE(rot);
  EXPECT_EQ(rot->stamp, "20231114-221320");
  EXPECT_TRUE(rot->compressed);
  auto seq = ParseLogFileName("0.log.20231114-221320.000012.gz");
  ASSERT_TRUE(seq);
  EXPECT_EQ(seq->stamp, "20231114-221320.000012");
  EXPECT_TRUE(seq->compressed);
  for (const char* bad : {"0.log.20231114-221320.gz.partial", "x.log", "0.log.yesterday", "0.txt",
                          "0.log.2023111-221320", ".log", "0.log.20231114-221320.1",
                          "0.log.20231114-221320.0000001", "0.log.20231114-221320.00000x"}) {
    EXPECT_FALSE(ParseLogFileName(bad)) << bad;
  }
}

TEST(LogRetention, S11_2_KeepsMaxFilesCompressesAllButTheNewestRotated) {
  std::vector<std::string> names = {"0.log",
                                    "0.log.20231114-100000.gz",
                                    "0.log.20231114-100001.gz",
                                    "0.log.20231114-100002",
                                    "0.log.20231114-100003",
                                    "0.log.20231114-100004",
                                    "1.log.20231114-090000.gz",
                                    "1.log"};
  RetentionPlan plan = PlanRetention(names, 0, 5);
  EXPECT_THAT(plan.remove, ElementsAre("0.log.20231114-100000.gz"));
  EXPECT_THAT(plan.compress, ElementsAre("0.log.20231114-100002", "0.log.20231114-100003"));
  // Another instance's files are its own: nothing to do for instance 1.
  EXPECT_EQ(PlanRetention(names, 1, 5), RetentionPlan{});
}

TEST(LogRetention, S14_19_AFileBeingCompressedIsNeverRemovedNorPlannedTwice) {
  // The compressor of 100000 has written its .gz.partial; two rotations
  // since made it too old for max-files 3.
  std::vector<std::string> names = {"0.log", "0.log.20231114-100000",
                                    "0.log.20231114-100000.gz.partial", "0.log.20231114-100001",
                                    "0.log.20231114-100002"};
  RetentionPlan plan = PlanRetention(names, 0, 3, {"0.log.20231114-100000"});
  EXPECT_THAT(plan.remove, IsEmpty()) << "retention must wait for the compressor";
  EXPECT_THAT(plan.compress, ElementsAre("0.log.20231114-100001"));
  // Its .gz renamed into place, before the original is unlinked.
  names.push_back("0.log.20231114-100000.gz");
  EXPECT_EQ(PlanRetention(names, 0, 5, {"0.log.20231114-100000"}),
            (RetentionPlan{{"0.log.20231114-100001"}, {}}));
  // The compressor done: the next plan removes the whole file.
  std::erase(names, "0.log.20231114-100000");
  std::erase(names, "0.log.20231114-100000.gz.partial");
  EXPECT_THAT(PlanRetention(names, 0, 3).remove, ElementsAre("0.log.20231114-100000.gz"));
}

TEST(LogRetention, S14_19_APlainAndGzipPairWithoutACompressorIsOneFile) {
  // A compressor died between its rename and its unlink: the .gz is whole
  // (fsynced before the rename), the plain copy goes; the pair counts once.
  std::vector<std::string> names = {"0.log", "0.log.20231114-100000", "0.log.20231114-100000.gz",
                                    "0.log.20231114-100001"};
  RetentionPlan loose = PlanRetention(names, 0, 5);
  EXPECT_THAT(loose.remove, ElementsAre("0.log.20231114-100000"));
  EXPECT_THAT(loose.compress, IsEmpty());
  RetentionPlan tight = PlanRetention(names, 0, 2);
  EXPECT_THAT(tight.remove, ElementsAre("0.log.20231114-100000", "0.log.20231114-100000.gz"));
  EXPECT_THAT(tight.compress, IsEmpty());
}

TEST_F(LogFiles, S11_2_CompressedFilesReadBackAndListInRotationOrder) {
  Touch("0.log.20231114-100000", "2023-11-14T10:00:00.000000000Z stdout P first \n");
  Touch("0.log.20231114-100001", "2023-11-14T10:00:01.000000000Z stdout F half\n");
  Touch("0.log", "2023-11-14T10:00:02.000000000Z stderr F current\n");
  Touch("1.log", "other instance\n");
  ASSERT_TRUE(CompressLogFile(dir_ / "0.log.20231114-100000"));
  EXPECT_FALSE(fs::exists(dir_ / "0.log.20231114-100000"));
  EXPECT_FALSE(fs::exists(dir_ / "0.log.20231114-100000.gz.partial"));
  std::ifstream gz(dir_ / "0.log.20231114-100000.gz", std::ios::binary);
  char magic[2] = {};
  gz.read(magic, 2);
  EXPECT_EQ(static_cast<unsigned char>(magic[0]), 0x1f);  // a real gzip file
  EXPECT_EQ(static_cast<unsigned char>(magic[1]), 0x8b);

  auto files = InstanceLogFiles(dir_, 0);
  EXPECT_THAT(files, ElementsAre(dir_ / "0.log.20231114-100000.gz", dir_ / "0.log.20231114-100001",
                                 dir_ / "0.log"));
  // The P record of the rotated file joins the F of the next one.
  auto lines = ReadCriLogs(files);
  ASSERT_TRUE(lines) << lines.error().message();
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_EQ((*lines)[0].content, "first half");
  EXPECT_EQ((*lines)[1].content, "current");
  EXPECT_THAT(LogInstances(dir_), ElementsAre(0, 1));
}

TEST_F(LogFiles, S11_2_WriterRotatesBetweenRecordsAndFilesStayShipperParsable) {
  int rotations = 0;
  fs::path current = dir_ / "0.log";
  auto w = CriLogWriter::Open(current, 1024, [&] { ++rotations; });
  ASSERT_TRUE(w) << w.error().message();
  std::string expected;
  WallTime t = kT;
  for (int i = 0; i < 200; ++i) {
    std::string line =
        "line " + std::to_string(i) + " " + std::string(static_cast<std::size_t>(i % 37), 'x');
    expected += line + "\n";
    ASSERT_TRUE(w->Append(i % 3 ? LogStream::kStdout : LogStream::kStderr, line + "\n", t));
    t += std::chrono::milliseconds(7);
  }
  // A line over 16 KiB (P records) and a final partial line (P at exit).
  std::string big(20000, 'b');
  ASSERT_TRUE(w->Append(LogStream::kStdout, big + "\ntail", t));
  ASSERT_TRUE(w->Close(LogStream::kStdout, t));
  EXPECT_GT(rotations, 10);

  auto files = InstanceLogFiles(dir_, 0);
  ASSERT_EQ(files.size(), static_cast<std::size_t>(rotations) + 1);
  std::string all;
  for (const auto& f : files) {
    auto data = ReadLogFile(f);
    ASSERT_TRUE(data) << data.error().message();
    ExpectShipperParsable(*data, f.string());
    // Only a single record larger than the limit makes a file larger.
    if (data->size() > 1024) {
      EXPECT_EQ(std::count(data->begin(), data->end(), '\n'), 1) << f;
    }
    all += *data;
  }
  EXPECT_NE(all.find(" stdout P " + big.substr(0, 16384) + "\n"), std::string::npos);
  EXPECT_NE(all.find(" stdout P tail\n"), std::string::npos);
  auto lines = ReadCriLogs(files);
  ASSERT_TRUE(lines);
  std::string joined;
  for (std::size_t i = 0; i + 2 < lines->size(); ++i) joined += (*lines)[i].content + "\n";
  // Streams interleave differently from the input; compare as sets of lines.
  EXPECT_EQ(lines->size(), 202u);
  std::multiset<std::string> want, got;
  std::istringstream a(expected);
  for (std::string l; std::getline(a, l);) want.insert(l);
  std::istringstream b(joined);
  for (std::string l; std::getline(b, l);) got.insert(l);
  EXPECT_EQ(got, want);
  EXPECT_EQ((*lines)[200].content, big);
  EXPECT_EQ((*lines)[201].content, "tail");
}

TEST_F(LogFiles, S11_3_TailOfLogSpansARotation) {
  std::string older, newer;
  for (int i = 0; i < 50; ++i)
    older += "2023-11-14T10:00:00.000000000Z stdout F old " + std::to_string(i) + "\n";
  for (int i = 0; i < 40; ++i)
    newer += "2023-11-14T10:00:01.000000000Z stderr F new " + std::to_string(i) + "\n";
  Touch("0.log.20231114-100000", older);
  Touch("0.log", newer);
  // Already compressed: small files, so the tail reaches into the gzip.
  ASSERT_TRUE(CompressLogFile(dir_ / "0.log.20231114-100000"));
  std::string text = TailOfLog(InstanceLogFiles(dir_, 0), 80, 1 << 20);
  EXPECT_EQ(text.substr(0, 7), "old 10\n");  // 80 lines: the last 40 old, 40 new
  EXPECT_EQ(text.substr(text.size() - 7), "new 39\n");
  std::string capped = TailOfLog(InstanceLogFiles(dir_, 0), 80, 20);
  EXPECT_EQ(capped, "ew 37\nnew 38\nnew 39\n");  // the last bytes, as the kubelet cuts
}

}  // namespace
}  // namespace podvisor::supervisor::logs
