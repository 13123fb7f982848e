// kill, status and stop read their plain command lines without CLI11
// (src/cli/plain_args.h) and hand anything else to it. Both roads must end
// in the same place: the same output and exit status for the same request,
// and CLI11's usage errors for what is not a valid command line.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "run_command.h"

namespace podvisor::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Podvisor() {
  const char* bin = std::getenv("PODVISOR");
  return bin ? bin : "podvisor";
}

class ClientForms : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/podvisor-client-forms.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    state_ = tmpl;
    // A pod that left events but neither a socket nor a record: not
    // running, and every client command says so.
    fs::create_directories(state_ / "web");
    std::ofstream(state_ / "web" / "events.jsonl") << "";
  }
  void TearDown() override { fs::remove_all(state_); }

  CommandResult Run(std::vector<std::string> words) {
    words.insert(words.begin(), Podvisor());
    return RunCommand(words);
  }

  fs::path state_;
};

void ExpectSame(const CommandResult& plain, const CommandResult& parsed) {
  EXPECT_EQ(plain.exit_code, parsed.exit_code);
  EXPECT_EQ(plain.out, parsed.out);
  EXPECT_EQ(plain.err, parsed.err);
}

// `--` before the positionals is valid for CLI11 and not plain: the same
// request by both roads.
TEST_F(ClientForms, KillPlainAndThroughCli11Agree) {
  auto plain = Run({"kill", "web", "app", "TERM", "--state-dir", state_});
  auto parsed = Run({"kill", "--state-dir", state_, "--", "web", "app", "TERM"});
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_THAT(plain.err, HasSubstr("pod web is not running"));
  ExpectSame(plain, parsed);
  ExpectSame(Run({"kill", "--state-dir=" + state_.string(), "web", "app"}),
             Run({"kill", "--state-dir", state_, "--", "web", "app"}));
}

TEST_F(ClientForms, StatusPlainAndThroughCli11Agree) {
  auto plain = Run({"status", "web", "--state-dir", state_, "-o", "json"});
  auto parsed = Run({"status", "--state-dir", state_, "-ojson", "--", "web"});
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_THAT(plain.err, HasSubstr("pod web has no record"));
  ExpectSame(plain, parsed);
  auto unknown = Run({"status", "nope", "--state-dir", state_});
  EXPECT_THAT(unknown.err, HasSubstr("no pod named nope"));
  ExpectSame(unknown, Run({"status", "--state-dir", state_, "--", "nope"}));
  // A bad format is Status's own check, the same by both roads.
  auto bad = Run({"status", "web", "--state-dir", state_, "--output=xml"});
  EXPECT_EQ(bad.exit_code, 2);
  ExpectSame(bad, Run({"status", "--state-dir", state_, "-oxml", "--", "web"}));
}

TEST_F(ClientForms, StopPlainAndThroughCli11Agree) {
  auto plain = Run({"stop", "web", "--no-wait", "--grace", "1.5", "--reason", "Eviction",
                    "--state-dir", state_});
  auto parsed = Run({"stop", "--state-dir", state_, "--grace=1.5", "--reason=Eviction", "--no-wait",
                     "--", "web"});
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_THAT(plain.err, HasSubstr("pod web is not running"));
  ExpectSame(plain, parsed);
}

// What is not a valid command line is CLI11's to report, as before: usage
// errors exit 2 and name what is wrong.
TEST_F(ClientForms, InvalidCommandLinesAreCli11UsageErrors) {
  struct Case {
    std::vector<std::string> words;
    const char* mentions;
  };
  const std::string dir = state_;
  for (const Case& c : std::vector<Case>{
           {{"kill", "--state-dir", dir}, "ARGS"},
           {{"kill", "a", "b", "c", "d", "--state-dir", dir}, "ARGS"},
           {{"status", "a", "b", "--state-dir", dir}, "b"},
           {{"stop", "web", "--grace", "-1", "--state-dir", dir}, "grace"},
           {{"stop", "web", "--grace", "soon", "--state-dir", dir}, "grace"},
           {{"stop", "web", "--grace", "inf", "--state-dir", dir}, "grace"},
           {{"stop", "web", "--state-dir", dir, "--reason"}, "--reason"},
           {{"kill", "web", "app", "--signal", "TERM", "--state-dir", dir}, "signal"},
       }) {
    auto r = Run(c.words);
    EXPECT_EQ(r.exit_code, 2) << c.words[0] << " " << c.words[1] << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.mentions)) << r.err;
  }
}

}  // namespace
}  // namespace podvisor::testing
