// S11.1: CRI log records.
#include "supervisor/logs/cri_log.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace podvisor::supervisor::logs {
namespace {

namespace fs = std::filesystem;
const WallTime kT{std::chrono::seconds(1'700'000'000) + std::chrono::nanoseconds(5)};

class CriLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("cri-log-" + std::to_string(getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Contents() {
    std::ifstream in(dir_ / "app" / "0.log");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  CriLogWriter OpenWriter() {
    auto w = CriLogWriter::Open(dir_ / "app" / "0.log");
    EXPECT_TRUE(w.ok());
    return std::move(w).value();
  }
  fs::path dir_;
};

TEST(CriLog, S11_1_RecordFormat) {
  EXPECT_EQ(FormatCriRecord(kT, LogStream::kStdout, false, "hello"),
            "2023-11-14T22:13:20.000000005Z stdout F hello\n");
  EXPECT_EQ(FormatCriRecord(kT, LogStream::kStderr, true, ""),
            "2023-11-14T22:13:20.000000005Z stderr P \n");
}

TEST_F(CriLogTest, S11_1_CompleteLinesAreFullRecords) {
  auto w = OpenWriter();
  ASSERT_TRUE(w.Append(LogStream::kStdout, "one\ntwo\n", kT).ok());
  EXPECT_EQ(Contents(),
            "2023-11-14T22:13:20.000000005Z stdout F one\n"
            "2023-11-14T22:13:20.000000005Z stdout F two\n");
}

TEST_F(CriLogTest, S11_1_LinesSplitAcrossReadsAreJoined) {
  auto w = OpenWriter();
  ASSERT_TRUE(w.Append(LogStream::kStdout, "hel", kT).ok());
  ASSERT_TRUE(w.Append(LogStream::kStderr, "err\n", kT).ok());
  ASSERT_TRUE(w.Append(LogStream::kStdout, "lo\n", kT).ok());
  EXPECT_EQ(Contents(),
            "2023-11-14T22:13:20.000000005Z stderr F err\n"
            "2023-11-14T22:13:20.000000005Z stdout F hello\n");
}

TEST_F(CriLogTest, S11_1_FinalPartialLineIsFlushedAsPartialAtExit) {
  auto w = OpenWriter();
  ASSERT_TRUE(w.Append(LogStream::kStdout, "no newline", kT).ok());
  EXPECT_EQ(Contents(), "");
  ASSERT_TRUE(w.Close(LogStream::kStdout, kT).ok());
  EXPECT_EQ(Contents(), "2023-11-14T22:13:20.000000005Z stdout P no newline\n");
  ASSERT_TRUE(w.Close(LogStream::kStdout, kT).ok());  // nothing more to flush
  EXPECT_EQ(Contents(), "2023-11-14T22:13:20.000000005Z stdout P no newline\n");
}

TEST_F(CriLogTest, S11_1_LongLinesSplitAt16KiB) {
  auto w = OpenWriter();
  std::string line(40 * 1024, 'x');
  ASSERT_TRUE(w.Append(LogStream::kStdout, line + "\n", kT).ok());
  auto lines = ReadCriLog(dir_ / "app" / "0.log");
  ASSERT_TRUE(lines.ok());
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_EQ((*lines)[0].content, line);

  std::ifstream in(dir_ / "app" / "0.log");
  std::string raw;
  std::vector<CriRecord> records;
  while (std::getline(in, raw)) records.push_back(*ParseCriRecord(raw));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_TRUE(records[0].partial);
  EXPECT_EQ(records[0].content.size(), kMaxCriRecordContent);
  EXPECT_TRUE(records[1].partial);
  EXPECT_FALSE(records[2].partial);
  EXPECT_EQ(records[2].content.size(), 40u * 1024 - 2 * kMaxCriRecordContent);
}

TEST_F(CriLogTest, S11_1_ExactlyMaxLengthLineIsOneFullRecord) {
  auto w = OpenWriter();
  ASSERT_TRUE(w.Append(LogStream::kStdout, std::string(kMaxCriRecordContent, 'y') + "\n", kT).ok());
  std::ifstream in(dir_ / "app" / "0.log");
  std::string raw;
  int n = 0;
  while (std::getline(in, raw)) {
    ++n;
    EXPECT_FALSE(ParseCriRecord(raw)->partial);
  }
  EXPECT_EQ(n, 1);
}

TEST_F(CriLogTest, AppendsToAnExistingFileAndCountsBytes) {
  {
    auto w = OpenWriter();
    ASSERT_TRUE(w.Append(LogStream::kStdout, "a\n", kT).ok());
  }
  auto w = OpenWriter();
  EXPECT_EQ(w.bytes_written(), FormatCriRecord(kT, LogStream::kStdout, false, "a").size());
  ASSERT_TRUE(w.Append(LogStream::kStdout, "b\n", kT).ok());
  auto lines = ReadCriLog(w.path());
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_EQ((*lines)[1].content, "b");
}

TEST(CriLog, ParsesWhatLogShippersParse) {
  auto r = ParseCriRecord("2023-11-14T22:13:20.000000005Z stderr F with  spaces ");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->stream, LogStream::kStderr);
  EXPECT_FALSE(r->partial);
  EXPECT_EQ(r->content, "with  spaces ");
  EXPECT_EQ(r->time, "2023-11-14T22:13:20.000000005Z");
  EXPECT_TRUE(ParseCriRecord("2023-11-14T22:13:20Z stdout F"));
  EXPECT_FALSE(ParseCriRecord("garbage"));
  EXPECT_FALSE(ParseCriRecord("t stdin F x"));
  EXPECT_FALSE(ParseCriRecord("t stdout X x"));
}

}  // namespace
}  // namespace podvisor::supervisor::logs
