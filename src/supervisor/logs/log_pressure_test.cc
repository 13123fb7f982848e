// S14.16 and S14.17: the CRI writer under a full log file system. A record
// is written whole or not at all, writing resumes cleanly when space
// returns, and failures are reported as notices at most once a minute.
// A file size limit (RLIMIT_FSIZE) cuts a write short the way a full disk
// does and needs no root; a real full tmpfs needs root and says so.
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "supervisor/logs/cri_log.h"

namespace podvisor::supervisor::logs {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const WallTime kT{std::chrono::seconds(1'700'000'000)};
const MonoTime kMono{std::chrono::hours(1)};

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every line a whole record, the file ending with a newline.
void ExpectWholeRecords(const std::string& data) {
  ASSERT_FALSE(data.empty());
  EXPECT_EQ(data.back(), '\n') << "the file ends inside a record";
  std::istringstream in(data);
  for (std::string line; std::getline(in, line);) {
    auto record = ParseCriRecord(line);
    ASSERT_TRUE(record) << line;
    EXPECT_THAT(record->content, ::testing::StartsWith("line-")) << line;
    EXPECT_THAT(record->content, ::testing::EndsWith("-end")) << line;
  }
}

std::string Line(int i) {
  return "line-" + std::to_string(i) + "-" + std::string(100, 'x') + "-end\n";
}

// Lowers this process's file size limit to `bytes` for the test's
// duration; writes past it are cut short, then fail with EFBIG.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);  // else the write kills us
    struct rlimit limit = saved_;
    limit.rlim_cur = bytes;
    EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  }
  ~FileSizeLimit() { Lift(); }
  void Lift() {
    if (lifted_) return;
    lifted_ = true;
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    ::signal(SIGXFSZ, old_handler_);
  }

 private:
  struct rlimit saved_ {};
  sighandler_t old_handler_ = SIG_DFL;
  bool lifted_ = false;
};

class LogPressure : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("log-pressure-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    fs::remove_all(dir_);
  }
  fs::path dir_;
  bool mounted_ = false;
};

TEST_F(LogPressure, S14_16_ARecordCutShortIsRemovedAndWritingResumesWhole) {
  auto w = CriLogWriter::Open(dir_ / "0.log");
  ASSERT_TRUE(w) << w.error().message();
  ASSERT_TRUE(w->Append(LogStream::kStdout, Line(0) + Line(1), kT));
  std::string before = ReadAll(dir_ / "0.log");
  {
    // Room for half a record: the kernel writes that half, then refuses.
    FileSizeLimit limit(before.size() + 60);
    Status s = w->Append(LogStream::kStdout, Line(2) + Line(3), kT);
    EXPECT_FALSE(s) << "the failure is returned";
    EXPECT_EQ(w->records_dropped(), 2u);
    EXPECT_EQ(ReadAll(dir_ / "0.log"), before) << "no torn record is left behind";
  }
  // Space again: the next records are written whole, after the last one
  // that was; nothing of the dropped ones leaks into them.
  ASSERT_TRUE(w->Append(LogStream::kStdout, Line(4), kT));
  std::string after = ReadAll(dir_ / "0.log");
  ExpectWholeRecords(after);
  EXPECT_EQ(after, before + FormatCriRecord(kT, LogStream::kStdout, false,
                                            Line(4).substr(0, Line(4).size() - 1)));
  EXPECT_EQ(w->bytes_written(), after.size());
}

TEST_F(LogPressure, S14_16_AFailedLineDoesNotMergeWithTheNextOne) {
  auto w = CriLogWriter::Open(dir_ / "0.log");
  ASSERT_TRUE(w) << w.error().message();
  {
    FileSizeLimit limit(10);
    EXPECT_FALSE(w->Append(LogStream::kStdout, "lost\n", kT));
  }
  ASSERT_TRUE(w->Append(LogStream::kStdout, "kept\n", kT));
  EXPECT_EQ(ReadAll(dir_ / "0.log"), FormatCriRecord(kT, LogStream::kStdout, false, "kept"));
}

TEST_F(LogPressure, S14_16_AFullTmpfsNeverHoldsATornRecord) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  // Three pages: one for a filler file, two for the log.
  ASSERT_EQ(::mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=12k"), 0) << std::strerror(errno);
  mounted_ = true;
  std::ofstream(dir_ / "filler") << std::string(4096, 'f');
  auto w = CriLogWriter::Open(dir_ / "0.log");
  ASSERT_TRUE(w) << w.error().message();
  int failed = 0;
  for (int i = 0; i < 200; ++i) {
    if (!w->Append(LogStream::kStdout, Line(i), kT)) ++failed;
  }
  EXPECT_GT(failed, 50) << "the tmpfs did fill up";
  EXPECT_EQ(w->records_dropped(), static_cast<uint64_t>(failed));
  ExpectWholeRecords(ReadAll(dir_ / "0.log"));
  auto notice = w->TakeNotice(kMono);
  ASSERT_TRUE(notice);
  EXPECT_FALSE(notice->resumed);
  EXPECT_THAT(notice->message, HasSubstr("No space left on device"));
  EXPECT_THAT(notice->message, HasSubstr(std::to_string(failed) + " log records dropped"));
  // Space returns: writing resumes with whole records.
  fs::remove(dir_ / "filler");
  ASSERT_TRUE(w->Append(LogStream::kStdout, Line(1000), kT));
  std::string data = ReadAll(dir_ / "0.log");
  ExpectWholeRecords(data);
  EXPECT_THAT(data, HasSubstr("line-1000-"));
  notice = w->TakeNotice(kMono + std::chrono::seconds(1));
  ASSERT_TRUE(notice);
  EXPECT_TRUE(notice->resumed);
}

TEST_F(LogPressure, S14_17_FailuresAreNoticedOncePerIntervalWithTheirCount) {
  // /dev/full: every write fails with ENOSPC.
  auto w = CriLogWriter::Open("/dev/full");
  ASSERT_TRUE(w) << w.error().message();
  EXPECT_FALSE(w->TakeNotice(kMono)) << "nothing failed yet";
  for (int i = 0; i < 1000; ++i) (void)w->Append(LogStream::kStderr, Line(i), kT);
  auto first = w->TakeNotice(kMono);
  ASSERT_TRUE(first);
  EXPECT_FALSE(first->resumed);
  EXPECT_EQ(first->dropped, 1000u);
  EXPECT_THAT(first->message, HasSubstr("/dev/full"));
  EXPECT_THAT(first->message, HasSubstr("No space left on device"));
  EXPECT_THAT(first->message, HasSubstr("1000 log records dropped"));
  EXPECT_THAT(first->message, ::testing::Not(HasSubstr("xxxx"))) << "never the log's content";
  // Within the minute: counted, not reported.
  for (int i = 0; i < 5000; ++i) (void)w->Append(LogStream::kStderr, Line(i), kT);
  EXPECT_FALSE(w->TakeNotice(kMono + std::chrono::seconds(30)));
  EXPECT_FALSE(w->TakeNotice(kMono + std::chrono::seconds(59)));
  auto second = w->TakeNotice(kMono + std::chrono::seconds(60));
  ASSERT_TRUE(second);
  EXPECT_EQ(second->dropped, 5000u);
  EXPECT_FALSE(w->TakeNotice(kMono + std::chrono::seconds(200))) << "nothing new";
  // The instance ends: what is left is reported at once.
  (void)w->Append(LogStream::kStderr, "last\n", kT);
  auto flushed = w->TakeNotice(kMono + std::chrono::seconds(201), true);
  ASSERT_TRUE(flushed);
  EXPECT_EQ(flushed->dropped, 1u);
  EXPECT_EQ(w->records_dropped(), 6001u);
}

TEST_F(LogPressure, S14_17_ResumingIsNoticedWithWhatWasDropped) {
  auto w = CriLogWriter::Open(dir_ / "0.log");
  ASSERT_TRUE(w) << w.error().message();
  {
    FileSizeLimit limit(1);
    for (int i = 0; i < 10; ++i) (void)w->Append(LogStream::kStdout, Line(i), kT);
  }
  ASSERT_TRUE(w->Append(LogStream::kStdout, Line(10), kT));
  auto notice = w->TakeNotice(kMono);
  ASSERT_TRUE(notice);
  EXPECT_TRUE(notice->resumed);
  EXPECT_EQ(notice->dropped, 10u);
  EXPECT_THAT(notice->message, HasSubstr("10 log records dropped"));
  EXPECT_THAT(notice->message, HasSubstr("File too large"));
}

}  // namespace
}  // namespace podvisor::supervisor::logs
