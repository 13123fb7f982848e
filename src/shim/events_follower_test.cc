#include "shim/events_follower.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <vector>

#include <gtest/gtest.h>

namespace podvisor::shim {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Out of line: GCC 12 inlining Result<EventLoop>'s destructor into SetUp
// warns of a free of a non-heap object that cannot happen.
[[gnu::noinline]] supervisor::loop::EventLoop NewLoop() {
  return std::move(supervisor::loop::EventLoop::Create()).value();
}

class EventsFollowerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pv-follow-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    loop_.emplace(NewLoop());
  }
  void TearDown() override {
    follower_.reset();
    fs::remove_all(dir_);
  }
  void Follow() {
    auto f = EventsFollower::Start(*loop_, dir_ / "state", "web",
                                   [this](const std::string& line) { lines_.push_back(line); });
    ASSERT_TRUE(f.ok()) << f.error().message();
    follower_ = std::move(*f);
  }
  void Append(const std::string& text) {
    std::ofstream(dir_ / "state" / "web" / "events.jsonl", std::ios::app) << text;
  }
  // Runs the loop until `n` lines came (or 5 s passed).
  void AwaitLines(size_t n) {
    for (int i = 0; i < 50 && lines_.size() < n; ++i) ASSERT_TRUE(loop_->RunOnce(100ms).ok());
  }

  fs::path dir_;
  std::optional<supervisor::loop::EventLoop> loop_;
  std::unique_ptr<EventsFollower> follower_;
  std::vector<std::string> lines_;
};

TEST_F(EventsFollowerTest, SeesLinesOfAPodDirectoryMadeAfterTheStart) {
  Follow();
  fs::create_directories(dir_ / "state" / "web");
  Append("{\"reason\":\"Created\"}\n");
  AwaitLines(1);
  Append("{\"reason\":\"OOMKilled\"}\n{\"reason\":\"Started\"}\n");
  AwaitLines(3);
  ASSERT_EQ(lines_.size(), 3u);
  EXPECT_EQ(lines_[0], R"({"reason":"Created"})");
  EXPECT_EQ(lines_[1], R"({"reason":"OOMKilled"})");
  EXPECT_EQ(lines_[2], R"({"reason":"Started"})");
}

TEST_F(EventsFollowerTest, ALineIsHandedOnOnlyOnceItEnds) {
  fs::create_directories(dir_ / "state" / "web");
  Append("{\"reason\":");
  Follow();
  EXPECT_TRUE(loop_->RunOnce(50ms).ok());
  EXPECT_TRUE(lines_.empty());
  Append("\"Killing\"}\n");
  AwaitLines(1);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0], R"({"reason":"Killing"})");
}

TEST_F(EventsFollowerTest, AReplacedFileIsReadFromItsStart) {
  fs::create_directories(dir_ / "state" / "web");
  Append("old 1\nold 2\n");
  Follow();
  ASSERT_EQ(lines_.size(), 2u);
  fs::remove(dir_ / "state" / "web" / "events.jsonl");
  Append("new 1\n");
  AwaitLines(3);
  ASSERT_EQ(lines_.size(), 3u);
  EXPECT_EQ(lines_[2], "new 1");
}

TEST_F(EventsFollowerTest, DrainReadsWhatTheLoopHasNotSeenYet) {
  Follow();
  fs::create_directories(dir_ / "state" / "web");
  Append("last\n");
  follower_->Drain();
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0], "last");
}

}  // namespace
}  // namespace podvisor::shim
