// The client commands' early road: `podvisor kill`, `status` and
// `stop --no-wait` in their plainest forms, answered from the program's
// entry point before the C library has started (README.md, "Static
// build"). glibc's own start-up is most of what a client command costs:
// 0.3 ms of a static program that returns at once, mostly CPUID
// instructions of its CPU and cache probe, each a trap to the hypervisor
// in a VM. A command the early road can answer needs none of it: read
// argv, connect, send one line, read the reply, write one text, exit.
//
// So the code here runs without the C library: no errno, no thread
// pointer (no stack protector), no IFUNC-resolved string functions (a
// static link resolves them in __libc_start_main), no allocation. It is
// built freestanding, and a test checks that its object file calls nothing
// outside itself but `_start` (tests: early-client-freestanding).
//
// Anything the early road does not take (another command or form, a pod
// to be found among several, a socket that does not answer, an answer it
// does not expect to a request that can be repeated) it leaves to main:
// the program then starts as always, and the same command runs by the
// plain-argument or the CLI11 road (cli/plain_args.h). It never leaves to
// main a `kill` or `stop` request it has sent: that would repeat it.
#pragma once

#include <cstddef>

#include "cli/command_grammar.h"

namespace podvisor::cli::early {

enum class Command { kKill, kStatus, kStop };

// One request of the early road, as PlanRequest reads it off argv.
struct Plan {
  Command command;
  char socket_path[108];  // sockaddr_un's sun_path, NUL-terminated
  char pod[64];           // a DNS label
  char container[256];    // kill's container, for its reply line
  char request[1024];     // one JSON object and a newline
  std::size_t request_len;
};

// What the early road read off a command line by its command's grammar
// (cli/command_grammar.h).
struct Words {
  const grammar::Command* command;
  const char* positionals[grammar::kMaxPositionals];
  int count;
  // By the option's index in the grammar: its value, or for a flag the
  // word itself; null when not given.
  const char* values[grammar::kMaxOptions];
};

// Reads argv (argv[1] the command) by the command's grammar and returns
// true when the early road takes the command line: `kill [POD] CONTAINER
// [SIGNAL]`, `status [POD] [-o table|wide]` and `stop [POD] --no-wait
// [--reason R] [--grace SECONDS]`, each with an optional `--state-dir
// DIR`, options as separate words and each once, values the request can
// carry as they are. Reads nothing but argv.
bool ReadCommandLine(int argc, char* const* argv, Words& words);

// Fills `plan` from the command line and returns true when the early road
// takes it: `kill [POD] CONTAINER [SIGNAL]`, `status [POD] [-o table|wide]`
// and `stop [POD] --no-wait [--reason R] [--grace SECONDS]`, each with an
// optional `--state-dir DIR`, options as separate words and each once, a
// named pod by its DNS label or the one pod directory under the state
// directory. Makes no request; reads the state directory only to find an
// unnamed pod.
bool PlanRequest(int argc, char* const* argv, Plan& plan);

// The top-level member `key` of the JSON object `json` (n bytes), when it
// is a string: decoded into `out` (`cap` bytes, NUL-terminated), its
// length returned. -1: absent, another type or longer than cap - 1; -2:
// `json` is not one well-formed object.
long TopLevelString(const char* json, std::size_t n, const char* key, char* out, std::size_t cap);

}  // namespace podvisor::cli::early

// Called by the entry stub with the process's initial stack pointer (argc,
// argv, envp, auxv); returns only when it leaves the command to main.
extern "C" void podvisor_early_client(long* initial_stack);
