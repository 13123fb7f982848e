// One grammar per client command (command_grammar.h), read by three roads:
// the same command lines, good and bad, go to the early road (when built),
// the plain road and CLI11, and every road that takes a line reads the
// same positionals, values and flags from it. A road may leave a line to
// the next (the early and the plain road take only plain forms); a line
// CLI11 refuses, no road takes.
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/command_grammar.h"
#include "cli/command_grammar_cli11.h"
#include "cli/plain_args.h"
#if defined(PODVISOR_EARLY_ROAD)
#include "cli/early_client.h"
#endif

namespace podvisor::cli {
namespace {

// What a road read, in one form for all: PlainArgs' fields.
struct Reading {
  std::vector<std::string> positionals;
  std::map<std::string, std::string, std::less<>> values;
  std::set<std::string, std::less<>> flags;
  bool operator==(const Reading&) const = default;
};

Reading FromPlain(const PlainArgs& a) {
  return {a.positionals, a.values, a.flags};
}

std::string Show(const std::optional<Reading>& r) {
  if (!r) return "(not taken)";
  std::string out = "positionals:";
  for (const auto& p : r->positionals) out += " " + p;
  out += "; values:";
  for (const auto& [k, v] : r->values) out += " " + k + "=" + v;
  out += "; flags:";
  for (const auto& f : r->flags) out += " " + f;
  return out;
}

struct Argv {
  explicit Argv(std::vector<std::string> words) : words_(std::move(words)) {
    words_.insert(words_.begin(), "podvisor");
    for (std::string& w : words_) pointers_.push_back(w.data());
    pointers_.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(words_.size()); }
  char** argv() { return pointers_.data(); }

 private:
  std::vector<std::string> words_;
  std::vector<char*> pointers_;
};

const grammar::Command* GrammarOf(const std::string& name) {
  for (const grammar::Command* g : {&grammar::kKill, &grammar::kStatus, &grammar::kStop}) {
    if (name == g->name) return g;
  }
  return nullptr;
}

std::optional<Reading> EarlyRoad(Argv& line) {
#if defined(PODVISOR_EARLY_ROAD)
  early::Words w;
  if (!early::ReadCommandLine(line.argc(), line.argv(), w)) return std::nullopt;
  Reading r;
  for (int i = 0; i < w.count; ++i) r.positionals.emplace_back(w.positionals[i]);
  for (std::size_t k = 0; k < w.command->option_count; ++k) {
    const grammar::Option& o = w.command->options[k];
    if (w.values[k] == nullptr) continue;
    if (o.kind == grammar::ValueKind::kFlag) {
      r.flags.insert(o.long_name);
    } else {
      r.values[o.long_name] = w.values[k];
    }
  }
  return r;
#else
  (void)line;
  return std::nullopt;
#endif
}

std::optional<Reading> PlainRoad(Argv& line) {
  const std::span<char* const> words(line.argv() + 2, static_cast<std::size_t>(line.argc() - 2));
  auto args = ScanPlainArgs(words, *GrammarOf(line.argv()[1]));
  if (!args) return std::nullopt;
  return FromPlain(*args);
}

std::optional<Reading> Cli11Road(Argv& line) {
  CLI::App app{"test", "podvisor"};
  app.require_subcommand(1);
  auto args = std::make_shared<PlainArgs>();
  AddGrammarCommand(app, *GrammarOf(line.argv()[1]), args);
  try {
    app.parse(line.argc(), line.argv());
  } catch (const CLI::ParseError&) {
    return std::nullopt;
  }
  return FromPlain(*args);
}

enum Roads : unsigned { kCli11Only = 0, kEarly = 1, kPlain = 2, kAll = kEarly | kPlain };

struct Case {
  std::vector<std::string> argv;
  std::optional<Reading> reading;  // nullopt: every road refuses it
  unsigned fast_roads;             // which roads before CLI11 take it
};

const std::vector<Case>& Cases() {
  using V = std::map<std::string, std::string, std::less<>>;
  using F = std::set<std::string, std::less<>>;
  static const std::vector<Case> cases = {
      // status
      {{"status"}, Reading{}, kAll},
      {{"status", "web", "-o", "wide", "--state-dir", "/s"},
       Reading{{"web"}, V{{"--output", "wide"}, {"--state-dir", "/s"}}, {}},
       kAll},
      {{"status", "web", "-o", "json"}, Reading{{"web"}, V{{"--output", "json"}}, {}}, kPlain},
      {{"status", "-w", "web"}, Reading{{"web"}, {}, F{"--watch"}}, kPlain},
      {{"status", "--output=yaml"}, Reading{{}, V{{"--output", "yaml"}}, {}}, kPlain},
      {{"status", "-ojson"}, Reading{{}, V{{"--output", "json"}}, {}}, kCli11Only},
      {{"status", "a", "b"}, std::nullopt, 0},
      {{"status", "--bogus"}, std::nullopt, 0},
      {{"status", "-o"}, std::nullopt, 0},
      // stop
      {{"stop", "web", "--no-wait", "--grace", "1.5", "--reason", "Eviction"},
       Reading{{"web"}, V{{"--grace", "1.5"}, {"--reason", "Eviction"}}, F{"--no-wait"}},
       kAll},
      {{"stop", "--no-wait", "--reason", "two words"},
       Reading{{}, V{{"--reason", "two words"}}, F{"--no-wait"}},
       kAll},
      {{"stop", "web"}, Reading{{"web"}, {}, {}}, kPlain},
      {{"stop", "--grace", "1e2", "--no-wait"},
       Reading{{}, V{{"--grace", "1e2"}}, F{"--no-wait"}},
       kPlain},
      {{"stop", "--reason", "say \"hi\"", "--no-wait"},
       Reading{{}, V{{"--reason", "say \"hi\""}}, F{"--no-wait"}},
       kPlain},
      {{"stop", "--no-wait", "--no-wait"}, Reading{{}, {}, F{"--no-wait"}}, kCli11Only},
      {{"stop", "--grace", "-1"}, std::nullopt, 0},
      {{"stop", "--grace", "abc"}, std::nullopt, 0},
      {{"stop", "--grace", "1e-400"}, std::nullopt, 0},
      // A flag's value is CLI11's alone: the fast roads leave it.
      {{"stop", "--no-wait=true"}, Reading{{}, {}, F{"--no-wait"}}, kCli11Only},
      {{"stop", "--no-wait=false"}, Reading{}, kCli11Only},
      {{"stop", "a", "b", "--no-wait"}, std::nullopt, 0},
      // kill
      {{"kill", "app"}, Reading{{"app"}, {}, {}}, kAll},
      {{"kill", "web", "app", "TERM", "--state-dir", "/s"},
       Reading{{"web", "app", "TERM"}, V{{"--state-dir", "/s"}}, {}},
       kAll},
      {{"kill", "app", "SIGUSR1"}, Reading{{"app", "SIGUSR1"}, {}, {}}, kAll},
      {{"kill", "app", "--state-dir=/s"}, Reading{{"app"}, V{{"--state-dir", "/s"}}, {}}, kPlain},
      {{"kill"}, std::nullopt, 0},
      {{"kill", "a", "b", "c", "d"}, std::nullopt, 0},
      {{"kill", "--signal", "9", "app"}, std::nullopt, 0},
      {{"kill", "app", "--state-dir"}, std::nullopt, 0},
  };
  return cases;
}

TEST(CommandGrammar, EveryRoadReadsTheSameCommandLineTheSameWay) {
#if defined(PODVISOR_EARLY_ROAD)
  const bool early_built = true;
#else
  const bool early_built = false;
#endif
  for (const Case& c : Cases()) {
    std::string line;
    for (const auto& w : c.argv) line += " " + w;
    SCOPED_TRACE("podvisor" + line);
    Argv a(c.argv), b(c.argv), d(c.argv);
    const std::optional<Reading> early = EarlyRoad(a);
    const std::optional<Reading> plain = PlainRoad(b);
    const std::optional<Reading> cli11 = Cli11Road(d);
    // The last road decides: it reads what the grammar says, or refuses.
    EXPECT_EQ(Show(cli11), Show(c.reading));
    // The roads before it take what they should, and read it the same.
    const bool early_takes = early_built && (c.fast_roads & kEarly) != 0;
    EXPECT_EQ(Show(early), early_takes ? Show(c.reading) : Show(std::nullopt));
    EXPECT_EQ(Show(plain), (c.fast_roads & kPlain) != 0 ? Show(c.reading) : Show(std::nullopt));
  }
}

TEST(CommandGrammar, KillReadsItsWordsOneWay) {
  const char* three[] = {"web", "app", "TERM"};
  grammar::KillWords k = grammar::ReadKillWords(three, 3);
  EXPECT_STREQ(k.pod, "web");
  EXPECT_STREQ(k.container, "app");
  EXPECT_STREQ(k.signal, "TERM");
  const char* signal_second[] = {"app", "9"};
  k = grammar::ReadKillWords(signal_second, 2);
  EXPECT_EQ(k.pod, nullptr);
  EXPECT_STREQ(k.container, "app");
  EXPECT_STREQ(k.signal, "9");
  const char* pod_first[] = {"web", "app"};
  k = grammar::ReadKillWords(pod_first, 2);
  EXPECT_STREQ(k.pod, "web");
  EXPECT_STREQ(k.container, "app");
  EXPECT_EQ(k.signal, nullptr);
  const char* one[] = {"app"};
  k = grammar::ReadKillWords(one, 1);
  EXPECT_EQ(k.pod, nullptr);
  EXPECT_STREQ(k.container, "app");
  EXPECT_EQ(k.signal, nullptr);
}

}  // namespace
}  // namespace podvisor::cli
