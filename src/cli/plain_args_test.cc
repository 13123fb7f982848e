// The plain forms the client commands take without CLI11, and what is
// left to CLI11 (nullopt): the fast path must never read a command line
// differently from CLI11, so anything unusual goes there.
#include "cli/plain_args.h"

#include <gtest/gtest.h>

namespace podvisor::cli {
namespace {

constexpr grammar::Option kOptions[] = {
    {"--state-dir", nullptr, grammar::ValueKind::kText, nullptr, ""},
    {"--output", "-o", grammar::ValueKind::kText, nullptr, ""},
    {"--watch", "-w", grammar::ValueKind::kFlag, nullptr, ""},
    {"--grace", nullptr, grammar::ValueKind::kSeconds, nullptr, ""},
};

std::optional<PlainArgs> Scan(std::vector<std::string> words, int max_positionals = 2,
                              int min_positionals = 0) {
  static std::vector<std::string> keep;
  keep = std::move(words);
  std::vector<char*> argv;
  for (auto& w : keep) argv.push_back(w.data());
  const grammar::Command command = {"test",
                                    "",
                                    kOptions,
                                    grammar::CountOf(kOptions),
                                    {"ARGS", "", min_positionals, max_positionals}};
  return ScanPlainArgs(argv, command);
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
  EXPECT_FALSE(Scan({"a"}, 2, 2));          // a word too few
  EXPECT_FALSE(Scan({"--grace", "soon"}));  // a value not of its option's kind
  EXPECT_FALSE(Scan({"--grace=-1"}));
}

TEST(PlainArgs, SecondsAreNonNegativeFiniteNumbers) {
  auto a = Scan({"--grace", "1.5"});
  ASSERT_TRUE(a);
  EXPECT_EQ(*a->Value("--grace"), "1.5");
  EXPECT_EQ(ParseSeconds("1e2"), 100.0);
  EXPECT_EQ(ParseSeconds("0"), 0.0);
  EXPECT_FALSE(ParseSeconds("-0.5"));
  EXPECT_FALSE(ParseSeconds("inf"));
  EXPECT_FALSE(ParseSeconds("1s"));
  EXPECT_FALSE(ParseSeconds(""));
}

}  // namespace
}  // namespace podvisor::cli
