#include "common/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace podvisor::log {
namespace {

// 2026-11-24T05:12:03.123456789Z
constexpr long long kNs = 1795497123123456789LL;

TEST(Log, TextLineIsUtcMillisecondsProgramLevelAndMessage) {
  EXPECT_EQ(FormatLine(Style::kText, Level::kInfo, "pod started", kNs),
            "2026-11-24T05:12:03.123Z podvisor info: pod started");
  EXPECT_EQ(FormatLine(Style::kText, Level::kWarning, "w", kNs),
            "2026-11-24T05:12:03.123Z podvisor warning: w");
}

TEST(Log, ShimLineHasMicroseconds) {
  EXPECT_EQ(FormatLine(Style::kShim, Level::kError, "gone", kNs),
            "2026-11-24T05:12:03.123456Z error containerd-shim-podvisor-v1 gone");
}

TEST(Log, JsonLineEscapesTheMessageAndParses) {
  std::string message = "say \"hi\"\\ \n\ttab \x01 end";
  std::string line = FormatLine(Style::kJson, Level::kCritical, message, kNs);
  auto parsed = nlohmann::json::parse(line);
  EXPECT_EQ(parsed["time"], "2026-11-24T05:12:03.123456Z");
  EXPECT_EQ(parsed["level"], "critical");
  EXPECT_EQ(parsed["logger"], "podvisor");
  EXPECT_EQ(parsed["msg"], message);
}

// A container's termination message quoted in a warning of `run`: its
// escape sequences, carriage return, newline, C1 CSI and invalid UTF-8
// must not reach the operator's terminal as they are.
constexpr std::string_view kHostile = "msg \x1b]0;owned\x07\x1b[2K\rok\nfake\xc2\x9b\xff";

TEST(Log, S14_22_TextAndShimLinesEscapeControlCharacters) {
  EXPECT_EQ(FormatLine(Style::kText, Level::kWarning, kHostile, kNs),
            "2026-11-24T05:12:03.123Z podvisor warning: "
            "msg \\x1b]0;owned\\x07\\x1b[2K\\rok\\nfake\\u009b\\xff");
  EXPECT_EQ(FormatLine(Style::kShim, Level::kError, kHostile, kNs),
            "2026-11-24T05:12:03.123456Z error containerd-shim-podvisor-v1 "
            "msg \\x1b]0;owned\\x07\\x1b[2K\\rok\\nfake\\u009b\\xff");
}

TEST(Log, S14_22_JsonLineIsValidJsonWithNoRawControlBytes) {
  std::string line = FormatLine(Style::kJson, Level::kWarning, kHostile, kNs);
  for (char c : line) {
    auto u = static_cast<unsigned char>(c);
    EXPECT_FALSE(u < 0x20 || u == 0x7f) << "raw control byte " << int{u} << " in " << line;
  }
  EXPECT_EQ(line.find("\xc2\x9b"), std::string::npos) << "raw C1 CSI in " << line;
  auto parsed = nlohmann::json::parse(line, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << line;
  EXPECT_EQ(parsed["msg"], "msg \x1b]0;owned\x07\x1b[2K\rok\nfake\u009b\ufffd");
}

TEST(Log, ParseLevelTakesTheNamesAndTheirShortFormsOnly) {
  EXPECT_EQ(ParseLevel("trace"), Level::kTrace);
  EXPECT_EQ(ParseLevel("warn"), Level::kWarning);
  EXPECT_EQ(ParseLevel("warning"), Level::kWarning);
  EXPECT_EQ(ParseLevel("err"), Level::kError);
  EXPECT_EQ(ParseLevel("off"), Level::kOff);
  EXPECT_FALSE(ParseLevel("loud").has_value());
  EXPECT_FALSE(ParseLevel("").has_value());
}

TEST(Log, LevelFiltersAndOffSilencesEverything) {
  Configure(Style::kText, Level::kWarning);
  EXPECT_FALSE(Enabled(Level::kInfo));
  EXPECT_TRUE(Enabled(Level::kWarning));
  EXPECT_TRUE(Enabled(Level::kCritical));
  SetLevel(Level::kOff);
  EXPECT_FALSE(Enabled(Level::kCritical));
  Configure(Style::kText, Level::kInfo);
}

// Write goes to fd 2 as whole lines: captured through a pipe.
TEST(Log, WriteAppendsOneLineToStderrAndFormatsArguments) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  int saved = ::dup(STDERR_FILENO);
  ::dup2(fds[1], STDERR_FILENO);
  Configure(Style::kText, Level::kInfo);
  Info("container {} exited with {}", "app", 3);
  Debug("not shown {}", 1);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(fds[1]);
  char buf[512];
  ssize_t n = ::read(fds[0], buf, sizeof buf);
  ::close(fds[0]);
  ASSERT_GT(n, 0);
  std::string got(buf, static_cast<std::size_t>(n));
  EXPECT_NE(got.find(" podvisor info: container app exited with 3\n"), std::string::npos) << got;
  EXPECT_EQ(got.find("not shown"), std::string::npos) << got;
  EXPECT_EQ(got.back(), '\n');
}

}  // namespace
}  // namespace podvisor::log
