// `logs --tail N` read backwards (S11.2): the window ReadLogTail returns
// prints what reading every file from its start would, and reading it
// costs a block at the end of the newest file, not the files' size.
#include "supervisor/logs/log_tail.h"

#include <unistd.h>
#include <zlib.h>

#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "supervisor/logs/log_files.h"

namespace podvisor::supervisor::logs {
namespace {

namespace fs = std::filesystem;

const WallTime kT{std::chrono::seconds(1'700'000'000)};

// What the printer of `podvisor logs` shows of `bytes`: complete lines (and
// with `finish`, those still open), kept ones only, the last `n` of them;
// and the lines still open, which `-f` prints later when their F comes.
struct Shown {
  std::vector<std::string> lines;
  std::vector<std::string> open;
  friend bool operator==(const Shown&, const Shown&) = default;
};
Shown Show(const std::string& bytes, std::size_t n,
           const std::function<bool(const LogLine&)>& keeps, bool finish) {
  LogLineJoiner joiner;
  std::vector<LogLine> lines;
  std::size_t start = 0;
  while (start < bytes.size()) {
    std::size_t nl = bytes.find('\n', start);
    if (nl == std::string::npos) nl = bytes.size();
    auto rec = ParseCriRecord(std::string_view(bytes).substr(start, nl - start));
    start = nl + 1;
    if (!rec) continue;
    if (auto line = joiner.Add(*rec)) lines.push_back(*line);
  }
  Shown shown;
  for (auto& line : joiner.Finish()) {
    shown.open.push_back(line.time + " " + line.content);
    if (finish) lines.push_back(line);
  }
  std::vector<std::string> kept;
  for (const auto& line : lines) {
    if (!keeps || keeps(line)) kept.push_back(line.time + " " + line.content);
  }
  std::size_t from = kept.size() > n ? kept.size() - n : 0;
  shown.lines.assign(kept.begin() + static_cast<std::ptrdiff_t>(from), kept.end());
  return shown;
}

// Files held in memory, counting what the reader opens and reads.
struct CountingFiles {
  std::vector<std::string> data;
  std::vector<std::size_t> opened;
  uint64_t bytes_read = 0;

  class Bytes : public LogFileBytes {
   public:
    Bytes(const std::string& d, uint64_t& counter) : data_(d), counter_(counter) {}
    Result<uint64_t> Size() override { return data_.size(); }
    Result<std::string> ReadAt(uint64_t offset, std::size_t length) override {
      std::string out = data_.substr(offset, length);
      counter_ += out.size();
      return out;
    }

   private:
    const std::string& data_;
    uint64_t& counter_;
  };

  LogFileOpener Opener() {
    return [this](std::size_t i) -> Result<std::unique_ptr<LogFileBytes>> {
      opened.push_back(i);
      return std::unique_ptr<LogFileBytes>(std::make_unique<Bytes>(data[i], bytes_read));
    };
  }
};

std::string Record(int second, LogStream s, bool partial, const std::string& content) {
  return FormatCriRecord(kT + std::chrono::seconds(second), s, partial, content);
}

// Lines of ~100 bytes up to `size`, numbered from `first`.
std::string ManyLines(std::size_t size, int first, int* next = nullptr) {
  std::string out;
  int i = first;
  while (out.size() < size) {
    out += Record(i, LogStream::kStdout, false, "line " + std::to_string(i) + std::string(50, 'x'));
    ++i;
  }
  if (next) *next = i;
  return out;
}

TEST(LogTail, S11_2_TailOfABigFileReadsOneBlockFromTheEnd) {
  CountingFiles files;
  files.data = {ManyLines(4 << 20, 0)};
  auto window = ReadLogTail(1, files.Opener(), {5, {}});
  ASSERT_TRUE(window.ok()) << window.error().message();
  std::string all = files.data[0];
  EXPECT_EQ(Show(*window, 5, {}, true), Show(all, 5, {}, true));
  // Reading from the start would read the 4 MiB; one block is 64 KiB.
  EXPECT_LE(files.bytes_read, 64u * 1024);
  EXPECT_LT(window->size(), 64u * 1024);
}

TEST(LogTail, S11_2_OlderRotatedFilesAreOpenedOnlyWhenTheNewerHoldTooFewLines) {
  CountingFiles files;
  int next = 0;
  files.data.push_back(ManyLines(1 << 20, 0, &next));     // oldest rotated
  files.data.push_back(ManyLines(1 << 20, next, &next));  // newest rotated
  files.data.push_back(Record(next, LogStream::kStdout, false, "current 1") +
                       Record(next + 1, LogStream::kStdout, false, "current 2"));
  std::string all = files.data[0] + files.data[1] + files.data[2];

  // Two lines: the current file's, and the last block of the newest
  // rotated file, which shows that the first of them did not begin there.
  auto two = ReadLogTail(3, files.Opener(), {2, {}});
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(Show(*two, 2, {}, true), Show(all, 2, {}, true));
  EXPECT_EQ(files.opened, std::vector<std::size_t>({2, 1}));
  EXPECT_LE(files.bytes_read, 64u * 1024 + files.data[2].size());

  // Five lines: the two of the current file and three from the end of the
  // newest rotated one; the oldest file is never opened.
  files.opened.clear();
  files.bytes_read = 0;
  auto five = ReadLogTail(3, files.Opener(), {5, {}});
  ASSERT_TRUE(five.ok());
  EXPECT_EQ(Show(*five, 5, {}, true), Show(all, 5, {}, true));
  EXPECT_EQ(files.opened, std::vector<std::size_t>({2, 1}));
  EXPECT_LE(files.bytes_read, 64u * 1024 + files.data[2].size());
}

TEST(LogTail, S11_2_ALongLineWhoseFirstPartsAreFarBackIsReadWhole) {
  // A stderr line of many P records began before a megabyte of stdout
  // lines and ends last: --tail 1 must print all of it.
  std::string p;
  for (int i = 0; i < 8; ++i) p += Record(0, LogStream::kStderr, true, std::string(1000, 'a' + i));
  int next = 0;
  std::string bytes = Record(0, LogStream::kStderr, false, "earlier") + p +
                      ManyLines(1 << 20, 1, &next) + Record(next, LogStream::kStderr, false, "end");
  CountingFiles files;
  files.data = {bytes};
  auto window = ReadLogTail(1, files.Opener(), {1, {}});
  ASSERT_TRUE(window.ok());
  Shown shown = Show(*window, 1, {}, true);
  ASSERT_EQ(shown.lines.size(), 1u);
  EXPECT_EQ(shown.lines[0].substr(shown.lines[0].find(' ') + 1).size(), 8000u + 3)
      << "the line's first P records are missing";
  EXPECT_EQ(shown, Show(bytes, 1, {}, true));
}

TEST(LogTail, S11_2_ALineStillOpenAtTheEndIsWholeForFollow) {
  // -f prints a line still open (P at the end) once its F comes: its
  // first P records, before the N lines, must be in the window.
  int next = 0;
  std::string bytes = Record(0, LogStream::kStderr, true, std::string(5000, 'p')) +
                      ManyLines(1 << 20, 1, &next) +
                      Record(next, LogStream::kStderr, true, "still going");
  CountingFiles files;
  files.data = {bytes};
  auto window = ReadLogTail(1, files.Opener(), {3, {}});
  ASSERT_TRUE(window.ok());
  EXPECT_EQ(Show(*window, 3, {}, false), Show(bytes, 3, {}, false));
  EXPECT_EQ(Show(*window, 3, {}, true), Show(bytes, 3, {}, true));
}

TEST(LogTail, S11_2_SinceFiltersBeforeTailCounts) {
  // A --since that keeps every other line (by the time's last digit): the
  // tail counts 5 kept lines, so it reaches back over 10.
  CountingFiles files;
  std::string bytes = ManyLines(1 << 20, 0);
  files.data = {bytes};
  auto keeps = [](const LogLine& l) { return (l.time[18] - '0') % 2 == 0; };
  auto window = ReadLogTail(1, files.Opener(), {5, keeps});
  ASSERT_TRUE(window.ok());
  EXPECT_EQ(Show(*window, 5, keeps, true), Show(bytes, 5, keeps, true));
  EXPECT_EQ(Show(*window, 5, keeps, true).lines.size(), 5u);
}

// Random streams of P and F records on both streams, split into files at
// record boundaries: for every N and both modes, the window shows what the
// whole stream shows.
TEST(LogTail, S11_2_WindowShowsWhatTheWholeStreamShows) {
  std::mt19937 rng(42);
  for (int round = 0; round < 25; ++round) {
    std::vector<std::string> records;
    int count = std::uniform_int_distribution<int>(0, 4000)(rng);
    for (int i = 0; i < count; ++i) {
      LogStream s = rng() % 3 == 0 ? LogStream::kStderr : LogStream::kStdout;
      bool partial = rng() % 4 == 0;
      std::size_t len = rng() % 7 == 0 ? rng() % 3000 : rng() % 80;
      records.push_back(Record(i, s, partial, std::string(len, static_cast<char>('a' + i % 26))));
    }
    CountingFiles files;
    files.data.emplace_back();
    for (const auto& r : records) {
      if (rng() % 500 == 0) files.data.emplace_back();
      files.data.back() += r;
    }
    std::string all;
    for (const auto& d : files.data) all += d;
    for (std::size_t n : {0u, 1u, 2u, 7u, 50u, 400u, 5000u}) {
      auto window = ReadLogTail(files.data.size(), files.Opener(), {n, {}});
      ASSERT_TRUE(window.ok());
      for (bool finish : {false, true}) {
        EXPECT_EQ(Show(*window, n, {}, finish), Show(all, n, {}, finish))
            << "round " << round << " n " << n << " finish " << finish;
      }
    }
  }
}

class LogTailFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("log-tail-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(LogTailFiles, S11_2_PlainAndGzipFilesAndAFileRetentionRemoved) {
  std::string gone = Record(0, LogStream::kStdout, false, "removed by retention");
  std::string old = Record(1, LogStream::kStdout, false, "in the gzip file");
  std::string newer = Record(2, LogStream::kStdout, false, "rotated");
  std::string current = Record(3, LogStream::kStdout, false, "current");
  std::ofstream(dir_ / "0.log.20231114-221320", std::ios::binary) << old;
  ASSERT_TRUE(CompressLogFile(dir_ / "0.log.20231114-221320").ok());
  std::ofstream(dir_ / "0.log.20231114-221321", std::ios::binary) << newer;
  std::ofstream(dir_ / "0.log", std::ios::binary) << current;
  std::vector<fs::path> paths = {dir_ / "0.log.20231114-221319", dir_ / "0.log.20231114-221320.gz",
                                 dir_ / "0.log.20231114-221321", dir_ / "0.log"};
  auto open = [&](std::size_t i) { return OpenLogFileBytes(paths[i]); };
  auto window = ReadLogTail(paths.size(), open, {10, {}});
  ASSERT_TRUE(window.ok()) << window.error().message();
  EXPECT_EQ(*window, old + newer + current);
}

}  // namespace
}  // namespace podvisor::supervisor::logs
