// `logs --tail N` with and without -f through LogFollower (S11.2): the tail
// comes from the end of the newest files, and following goes on from the
// size the tail was read up to, so a line appended after the tail prints
// once, and an older rotated file that is not needed is never read.
#include "cli/log_follow.h"

#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

namespace podvisor::cli {
namespace {

namespace fs = std::filesystem;
using supervisor::logs::LogStream;

const WallTime kT{std::chrono::seconds(1'700'000'000)};

std::string Line(int second, const std::string& text) {
  return supervisor::logs::FormatCriRecord(kT + std::chrono::seconds(second), LogStream::kStdout,
                                           false, text);
}

class LogFollowTail : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("log-follow-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Append(const std::string& name, const std::string& data) {
    std::ofstream(dir_ / name, std::ios::binary | std::ios::app) << data;
  }
  fs::path dir_;
};

TEST_F(LogFollowTail, S11_2_TailThenFollowPrintsEachLineOnce) {
  // The oldest rotated file is not a log at all: a tail that read it would
  // print its lines. A whole read (no --tail) does.
  Append("0.log.20231114-221300", Line(0, "never read by --tail 3"));
  std::string rotated;
  for (int i = 1; i <= 2000; ++i) rotated += Line(i, "rotated " + std::to_string(i));
  Append("0.log.20231114-221320", rotated);
  Append("0.log", Line(3000, "current 1") + Line(3001, "current 2"));

  LogPrinter printer(false);
  LogFollower follower(dir_, 0, printer);
  supervisor::logs::LogTailRequest tail{3, {}};
  ::testing::internal::CaptureStdout();
  auto so_far = follower.Start(&tail);
  ASSERT_TRUE(so_far.ok()) << so_far.error().message();
  printer.Hold();
  printer.Feed(*so_far);
  printer.Release(3);
  Append("0.log", Line(3002, "appended"));
  while (follower.CatchUp()) {
  }
  printer.Finish();
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "rotated 2000\ncurrent 1\ncurrent 2\nappended\n");
  EXPECT_EQ(so_far->find("never read"), std::string::npos);
  EXPECT_LE(so_far->size(), 64u * 1024 + 200);  // the current file and one block

  LogPrinter whole_printer(false);
  LogFollower whole(dir_, 0, whole_printer);
  auto all = whole.Start();
  ASSERT_TRUE(all.ok());
  EXPECT_NE(all->find("never read"), std::string::npos);
}

}  // namespace
}  // namespace podvisor::cli
