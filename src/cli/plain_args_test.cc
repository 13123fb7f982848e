// The plain forms the client commands take without CLI11, and what is
// left to CLI11 (nullopt): the fast path must never read a command line
// differently from CLI11, so anything unusual goes there.
#include "cli/plain_args.h"

#include <gtest/gtest.h>

namespace podvisor::cli {
namespace {

constexpr PlainOption kValues[] = {{"", "--state-dir"}, {"-o", "--output"}};
constexpr PlainOption kFlags[] = {{"-w", "--watch"}};

std::optional<PlainArgs> Scan(std::vector<std::string> words, std::size_t max_positionals = 2) {
  static std::vector<std::string> keep;
  keep = std::move(words);
  std::vector<char*> argv;
  for (auto& w : keep) argv.push_back(w.data());
  return ScanPlainArgs(argv, kValues, kFlags, max_positionals);
}

TEST(PlainArgs, PositionalsOptionsAndFlagsInAnyOrder) {
  auto a = Scan({"web", "--state-dir", "/s", "-o", "json", "app", "-w"});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->positionals, (std::vector<std::string>{"web", "app"}));
  ASSERT_TRUE(a->Value("--state-dir"));
  EXPECT_EQ(*a->Value("--state-dir"), "/s");
  ASSERT_TRUE(a->Value("--output"));
  EXPECT_EQ(*a->Value("--output"), "json");
  EXPECT_TRUE(a->Flag("--watch"));
}

TEST(PlainArgs, LongOptionWithEquals) {
  auto a = Scan({"--state-dir=/run/x", "--output=jsonpath={.status.phase}"});
  ASSERT_TRUE(a);
  EXPECT_EQ(*a->Value("--state-dir"), "/run/x");
  EXPECT_EQ(*a->Value("--output"), "jsonpath={.status.phase}");
  EXPECT_FALSE(a->Flag("--watch"));
  EXPECT_TRUE(a->positionals.empty());
}

TEST(PlainArgs, NothingIsPlain) {
  auto a = Scan({});
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->positionals.empty());
  EXPECT_EQ(a->Value("--state-dir"), nullptr);
}

TEST(PlainArgs, LeavesEverythingElseToCli11) {
  EXPECT_FALSE(Scan({"--help"}));
  EXPECT_FALSE(Scan({"-h"}));
  EXPECT_FALSE(Scan({"--"}));
  EXPECT_FALSE(Scan({"--unknown"}));
  EXPECT_FALSE(Scan({"-9"}));                           // a negative number or a short option
  EXPECT_FALSE(Scan({"-ojson"}));                       // a short option with its value joined
  EXPECT_FALSE(Scan({"-o=json"}));                      // only long options take =VALUE
  EXPECT_FALSE(Scan({"-wo", "json"}));                  // joined short flags
  EXPECT_FALSE(Scan({"--state-dir"}));                  // a missing value
  EXPECT_FALSE(Scan({"--state-dir", "--output"}));      // a value that looks like an option
  EXPECT_FALSE(Scan({"--state-dir="}));                 // an empty value
  EXPECT_FALSE(Scan({"-o", "json", "--output", "x"}));  // an option given twice
  EXPECT_FALSE(Scan({"-w", "--watch"}));                // a flag given twice
  EXPECT_FALSE(Scan({"--watch=true"}));                 // a flag with a value
  EXPECT_FALSE(Scan({"a", "b", "c"}));                  // a word too many
  EXPECT_FALSE(Scan({"a"}, 0));
}

}  // namespace
}  // namespace podvisor::cli
