// The plain forms of the client commands (kill, status, stop), read without
// building CLI11's app: its options, validators and the C++ locale they
// touch cost as much as the request itself (README.md, "Static build").
// Anything that is not plain goes to CLI11 as before, which then parses,
// reports errors and prints help; both end in the same command function.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace podvisor::cli {

struct PlainArgs {
  std::vector<std::string> positionals;
  std::map<std::string, std::string, std::less<>> values;  // by the option's first name
  std::set<std::string, std::less<>> flags;                // by the flag's first name

  const std::string* Value(std::string_view option) const;
  bool Flag(std::string_view flag) const { return flags.contains(flag); }
};

// One option or flag: its names, e.g. {"-o", "--output"}.
struct PlainOption {
  std::string_view short_name;  // empty: none
  std::string_view long_name;
};

// `words`: what follows the subcommand. Plain is: words that do not start
// with '-' (at most `max_positionals` of them), each value option once as
// `NAME VALUE` or `--long=VALUE` (a VALUE that starts with '-' is not
// plain), and each flag once. Anything else (`--`, an unknown or repeated
// option, joined short options, a missing value, one word too many):
// nullopt.
std::optional<PlainArgs> ScanPlainArgs(std::span<char* const> words,
                                       std::span<const PlainOption> value_options,
                                       std::span<const PlainOption> flag_options,
                                       std::size_t max_positionals);

// The plain forms of `status`, and of `stop` and `kill`, run to the end:
// the exit status, or nullopt when `words` (after the subcommand) are not
// plain and CLI11 should parse them.
std::optional<int> RunStatusPlain(std::span<char* const> words);
std::optional<int> RunStopPlain(std::span<char* const> words);
std::optional<int> RunKillPlain(std::span<char* const> words);

}  // namespace podvisor::cli
