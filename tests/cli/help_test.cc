// `--help` works on every subcommand: usage on stdout, exit 0, and the
// options a user needs named.
#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "run_command.h"

namespace podvisor::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Podvisor() {
  const char* bin = std::getenv("PODVISOR");
  return bin ? bin : "podvisor";
}

struct HelpCase {
  const char* command;
  const char* mentions;  // an option or argument its help must name
};

class SubcommandHelp : public ::testing::TestWithParam<HelpCase> {};

TEST_P(SubcommandHelp, LongAndShortFlagPrintUsageAndExitZero) {
  for (const char* flag : {"--help", "-h"}) {
    auto r = RunCommand({Podvisor(), GetParam().command, flag});
    EXPECT_EQ(r.exit_code, 0) << flag << ": " << r.err;
    EXPECT_THAT(r.out, HasSubstr(std::string("Usage: podvisor ") + GetParam().command)) << flag;
    EXPECT_THAT(r.out, HasSubstr(GetParam().mentions)) << flag;
    EXPECT_EQ(r.err, "") << flag;
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryCommand, SubcommandHelp,
    ::testing::Values(HelpCase{"run", "--log-level"}, HelpCase{"status", "--output"},
                      HelpCase{"stop", "--reason"}, HelpCase{"kill", "CONTAINER"},
                      HelpCase{"list", "--state-dir"}, HelpCase{"logs", "--previous"},
                      HelpCase{"events", "--output"}, HelpCase{"validate", "--no-images"},
                      HelpCase{"oci-config", "--instance"}, HelpCase{"version", "--runtime"},
                      HelpCase{"rm", "POD"}, HelpCase{"prune", "--log-dir"},
                      HelpCase{"images", "prune"}, HelpCase{"describe", "--state-dir"},
                      HelpCase{"exec", "--tty"}, HelpCase{"port-forward", "REMOTE"},
                      HelpCase{"upgrade", "--binary"}, HelpCase{"apply", "--prune"}),
    [](const auto& info) {
      std::string name = info.param.command;
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

TEST(Help, TopLevelListsEverySubcommandButTheInternalOne) {
  auto r = RunCommand({Podvisor(), "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* cmd : {"run", "status", "stop", "kill", "list", "logs", "events", "validate",
                          "oci-config", "version", "rm", "prune", "images", "describe", "exec",
                          "port-forward", "upgrade", "pull", "apply"}) {
    EXPECT_THAT(r.out, HasSubstr(std::string("  ") + cmd)) << cmd;
  }
  EXPECT_THAT(r.out, Not(HasSubstr("sandbox-init")));
  EXPECT_THAT(r.out, Not(HasSubstr("pull-worker")));
}

TEST(Help, HelpAllShowsEachSubcommandsOptions) {
  auto r = RunCommand({Podvisor(), "--help-all"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("--no-wait"));
  EXPECT_THAT(r.out, HasSubstr("--timestamps"));
}

TEST(Help, NoSubcommandIsAUsageError) {
  auto r = RunCommand({Podvisor()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("podvisor --help"));
}

// cobra's message, as kubectl prints it for `kubectl stauts`.
TEST(Help, UnknownCommandNamesItAndSuggestsTheNearest) {
  auto r = RunCommand({Podvisor(), "stauts"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "Error: unknown command \"stauts\" for \"podvisor\"\n\nDid you mean this?\n\tstatus\n\n"
            "Run 'podvisor --help' for usage.\n");
  auto far = RunCommand({Podvisor(), "frobnicate"});
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_THAT(far.err, HasSubstr("unknown command \"frobnicate\" for \"podvisor\""));
  EXPECT_THAT(far.err, Not(HasSubstr("Did you mean")));
  // Hidden internal commands are never suggested.
  auto hidden = RunCommand({Podvisor(), "sandbox-ini"});
  EXPECT_THAT(hidden.err, Not(HasSubstr("sandbox-init")));
}

}  // namespace
}  // namespace podvisor::testing
