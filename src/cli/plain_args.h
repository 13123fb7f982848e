// The plain forms of the client commands (kill, status, stop), read without
// building CLI11's app: its options, validators and the C++ locale they
// touch cost as much as the request itself (README.md, "Static build").
// Anything that is not plain goes to CLI11 as before, which then parses,
// reports errors and prints help; both end in the same command function,
// and both read the command's grammar (command_grammar.h).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command_grammar.h"

namespace podvisor::cli {

// What a road read off a command line by its grammar: the plain road's
// scan and the CLI11 road's parse (command_grammar_cli11.h) fill the same.
struct PlainArgs {
  std::vector<std::string> positionals;
  std::map<std::string, std::string, std::less<>> values;  // by the option's long name
  std::set<std::string, std::less<>> flags;                // by the flag's long name

  const std::string* Value(std::string_view option) const;
  bool Flag(std::string_view flag) const { return flags.contains(flag); }
};

// `words`: what follows the subcommand. Plain is: words that do not start
// with '-' (at least the grammar's least number of them and at most its
// most), each value option once as `NAME VALUE` or `--long=VALUE` (a VALUE
// that starts with '-' is not plain, nor one not of its option's kind),
// and each flag once. Anything else (`--`, an unknown or repeated option,
// joined short options, a missing value, one word too many): nullopt.
std::optional<PlainArgs> ScanPlainArgs(std::span<char* const> words,
                                       const grammar::Command& command);

// A value of kind kSeconds as a number: what CLI11's NonNegativeNumber
// takes; nullopt for anything else.
std::optional<double> ParseSeconds(const std::string& text);

// The plain forms of `status`, and of `stop` and `kill`, run to the end:
// the exit status, or nullopt when `words` (after the subcommand) are not
// plain and CLI11 should parse them.
std::optional<int> RunStatusPlain(std::span<char* const> words);
std::optional<int> RunStopPlain(std::span<char* const> words);
std::optional<int> RunKillPlain(std::span<char* const> words);

}  // namespace podvisor::cli
