// `podvisor events` as `kubectl get events` prints them, read from an
// events.jsonl the test writes (docs/INTERFACE.md "Events"): no supervisor is
// needed, as after a pod has ended.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "run_command.h"

namespace podvisor::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

std::string Podvisor() {
  const char* bin = std::getenv("PODVISOR");
  return bin ? bin : "podvisor";
}

// RFC 3339 with nanoseconds, at least `seconds_ago` before now (whole
// seconds, so the age printed is never one second short).
std::string TimeAgo(int seconds_ago) {
  std::time_t t = std::time(nullptr) - seconds_ago;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S.000000000Z", &tm);
  return buf;
}

std::string Line(int ago, const char* type, const char* reason, const char* object,
                 const char* message) {
  return std::string("{\"time\":\"") + TimeAgo(ago) + "\",\"type\":\"" + type + "\",\"reason\":\"" +
         reason + "\",\"object\":\"" + object + "\",\"message\":\"" + message + "\"}\n";
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

class EventsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = fs::path(::testing::TempDir()) / ("events-cli-" + std::to_string(::getpid()));
    fs::remove_all(state_);
    fs::create_directories(state_ / "web");
    std::ofstream(state_ / "web" / "events.jsonl")
        << Line(300, "Normal", "Created", "container/app", "Created container app")
        << Line(299, "Normal", "Started", "container/app", "Started container app")
        << Line(240, "Warning", "BackOff", "container/app",
                "Back-off restarting failed container app")
        << Line(120, "Warning", "BackOff", "container/app",
                "Back-off restarting failed container app")
        << Line(30, "Warning", "BackOff", "container/app",
                "Back-off restarting failed container app")
        << Line(5, "Normal", "PodStopping", "pod", "Stopping pod (reason Decommissioned)");
  }
  void TearDown() override { fs::remove_all(state_); }
  fs::path state_;
};

TEST_F(EventsCli, TableHasKubectlColumnsAndAggregatesRepeats) {
  auto r = RunCommand({Podvisor(), "events", "--state-dir", state_.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 5u) << r.out;  // header + 4 distinct events
  EXPECT_THAT(lines[0], MatchesRegex("LAST SEEN +TYPE +REASON +OBJECT +MESSAGE"));
  EXPECT_THAT(lines[1],
              MatchesRegex("5m(1s|2s)? +Normal +Created +container/app +Created container app"));
  // Three BackOffs are one row, where the first happened, as kubectl shows
  // a repeated event: "<last> (x<count> over <age of the first>)".
  EXPECT_THAT(lines[3],
              MatchesRegex("3[012]s \\(x3 over 4m(1s|2s)?\\) +Warning +BackOff +container/app +"
                           "Back-off restarting failed container app"));
  // The pod is named as kubectl names it.
  EXPECT_THAT(lines[4], MatchesRegex("[567]s +Normal +PodStopping +pod/web +Stopping pod.*"));
}

TEST_F(EventsCli, WideAddsFirstSeenAndCount) {
  auto r = RunCommand({Podvisor(), "events", "web", "-o", "wide", "--state-dir", state_.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 5u) << r.out;
  EXPECT_THAT(lines[0],
              MatchesRegex("LAST SEEN +TYPE +REASON +OBJECT +MESSAGE +FIRST SEEN +COUNT"));
  EXPECT_THAT(lines[3], ContainsRegex("failed container app +4m(1s|2s)? +3$"));
  EXPECT_THAT(lines[1], ContainsRegex("Created container app +5m(1s|2s)? +1$"));
}

TEST_F(EventsCli, JsonPrintsTheLinesAsTheyAre) {
  auto r = RunCommand({Podvisor(), "events", "-o", "json", "--state-dir", state_.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(state_ / "web" / "events.jsonl");
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(r.out, file);
}

TEST_F(EventsCli, UnknownPodNamesTheFile) {
  auto r = RunCommand({Podvisor(), "events", "nosuch", "--state-dir", state_.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("nosuch"));
}

}  // namespace
}  // namespace podvisor::testing
