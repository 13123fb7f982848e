// The one grammar of each client command that three roads parse: the
// early road before the C library starts (early_client.h), the plain road
// without CLI11 (plain_args.h), and CLI11 (command_grammar_cli11.h). Each
// road reads its options, their value kinds and the positionals from the
// table here, so a command line means the same on every road; a road may
// only take less (the early and the plain road leave what they do not take
// to the next), never read it differently (command_grammar_test.cc).
//
// Freestanding: the early road reads these tables before the C library has
// started, so they are plain constant arrays of structs, no std::string and
// nothing that needs a constructor to run.
#pragma once

#include <cstddef>

#include "cli/default_dirs.h"

namespace podvisor::cli::grammar {

enum class ValueKind {
  kFlag,     // no value: given or not
  kText,     // any word that does not start with '-'
  kSeconds,  // a non-negative number of seconds
};

struct Option {
  const char* long_name;   // "--output"
  const char* short_name;  // "-o", or nullptr
  ValueKind kind;
  const char* default_value;  // what help shows as the default, or nullptr
  const char* help;
};

struct Positionals {
  const char* name;  // as help shows it: "POD", "ARGS"
  const char* help;
  int min;
  int max;
};

struct Command {
  const char* name;
  const char* description;
  const Option* options;
  std::size_t option_count;
  Positionals positionals;
};

// Every command's --state-dir default, as help shows it.
inline constexpr const char* kStateDirDefault = kDefaultStateDir;

// The number of options in a table, for Command::option_count.
template <std::size_t N>
constexpr std::size_t CountOf(const Option (&)[N]) {
  return N;
}

// status [POD] [--state-dir DIR] [-o FORMAT] [-w]
namespace status {
inline constexpr std::size_t kStateDir = 0;
inline constexpr std::size_t kOutput = 1;
inline constexpr std::size_t kWatch = 2;
inline constexpr Option kOptions[] = {
    {"--state-dir", nullptr, ValueKind::kText, kStateDirDefault, "as given to run"},
    {"--output", "-o", ValueKind::kText, "table",
     "table, wide (more per-container detail), json (a v1 Pod), yaml, name, or "
     "jsonpath=TEMPLATE (kubectl's JSONPath)"},
    {"--watch", "-w", ValueKind::kFlag, nullptr, "print again on every change until the pod ends"},
};
}  // namespace status
inline constexpr Command kStatus = {"status",
                                    "Show the pod's state (kubectl get pod)",
                                    status::kOptions,
                                    CountOf(status::kOptions),
                                    {"POD", "the pod (may be left out when there is one)", 0, 1}};

// stop [POD] [--state-dir DIR] [--reason R] [--grace SECONDS] [--no-wait]
namespace stop {
inline constexpr std::size_t kStateDir = 0;
inline constexpr std::size_t kReason = 1;
inline constexpr std::size_t kGrace = 2;
inline constexpr std::size_t kNoWait = 3;
inline constexpr Option kOptions[] = {
    {"--state-dir", nullptr, ValueKind::kText, kStateDirDefault, "as given to run"},
    {"--reason", nullptr, ValueKind::kText, nullptr,
     "termination reason for preStop hooks (Eviction, Decommissioned, ...)"},
    {"--grace", nullptr, ValueKind::kSeconds, nullptr,
     "seconds; may only shorten the pod's grace period"},
    {"--no-wait", nullptr, ValueKind::kFlag, nullptr,
     "return once the supervisor accepted the request"},
};
}  // namespace stop
inline constexpr Command kStop = {"stop",
                                  "Terminate the pod; returns when it has ended (SEMANTICS S5, S6)",
                                  stop::kOptions,
                                  CountOf(stop::kOptions),
                                  {"POD", "the pod (may be left out when one runs)", 0, 1}};

// kill [POD] CONTAINER [SIGNAL] [--state-dir DIR]
namespace kill {
inline constexpr std::size_t kStateDir = 0;
inline constexpr Option kOptions[] = {
    {"--state-dir", nullptr, ValueKind::kText, kStateDirDefault, "as given to run"},
};
}  // namespace kill
inline constexpr Command kKill = {
    "kill",
    "Deliver a signal (default SIGKILL) to a container's init process directly",
    kill::kOptions,
    CountOf(kill::kOptions),
    {"ARGS", "[POD] CONTAINER [SIGNAL]", 1, 3}};

// upgrade [POD | -f BUNDLE] [--state-dir DIR] [--binary PATH] [--timeout DURATION]
// (CLI11's road only: an upgrade is not a command to shave microseconds
// off, and its --timeout is a duration, "30s", which no road but CLI11's
// reads).
namespace upgrade {
inline constexpr std::size_t kStateDir = 0;
inline constexpr std::size_t kBinary = 1;
inline constexpr std::size_t kTimeout = 2;
inline constexpr std::size_t kFilename = 3;
inline constexpr Option kOptions[] = {
    {"--state-dir", nullptr, ValueKind::kText, kStateDirDefault, "as given to run"},
    {"--binary", nullptr, ValueKind::kText, nullptr,
     "the podvisor binary to re-execute (default: the one now at the path the supervisor was "
     "started from)"},
    {"--timeout", nullptr, ValueKind::kText, "30s",
     "how long to wait for runtime calls and hooks to end, and then for the new binary to "
     "answer (at most 10m)"},
    {"--filename", "-f", ValueKind::kText, nullptr,
     "the pod of this bundle directory or manifest file (its metadata.name), as given to run; "
     "instead of POD"},
};
}  // namespace upgrade
inline constexpr Command kUpgrade = {
    "upgrade",
    "Re-execute the pod's supervisor in place with a new podvisor binary, keeping the pod "
    "running (SEMANTICS S15.2)",
    upgrade::kOptions,
    CountOf(upgrade::kOptions),
    {"POD", "the pod (may be left out when one runs)", 0, 1}};

// The most options and positionals of any command here: the early road's
// fixed buffers.
inline constexpr std::size_t kMaxOptions = 4;
inline constexpr int kMaxPositionals = 3;

// kill's two words are CONTAINER SIGNAL when the second could not be a
// container name (container names are lower-case DNS labels, so a number
// or an upper-case word is a signal), else POD CONTAINER.
constexpr bool KillSecondWordIsSignal(const char* word) {
  for (; *word != '\0'; ++word) {
    const char c = *word;
    if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || c == '+' || c == '-')) return false;
  }
  return true;
}

// kill's positionals (1 to 3 words) as pod, container and signal; a null
// pod or signal when the words leave it out.
struct KillWords {
  const char* pod;
  const char* container;
  const char* signal;
};
constexpr KillWords ReadKillWords(const char* const* words, int count) {
  if (count == 3) return {words[0], words[1], words[2]};
  if (count == 2 && KillSecondWordIsSignal(words[1])) return {nullptr, words[0], words[1]};
  if (count == 2) return {words[0], words[1], nullptr};
  return {nullptr, words[0], nullptr};
}

}  // namespace podvisor::cli::grammar
