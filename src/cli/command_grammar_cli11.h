// The CLI11 road of the client commands whose grammar is a table
// (command_grammar.h): the subcommand, its options and positionals made
// from the table, so that CLI11 reads a command line as the early and the
// plain road do, and fills what they fill (PlainArgs).
#pragma once

#include <memory>

#include <CLI/CLI.hpp>

#include "cli/command_grammar.h"
#include "cli/plain_args.h"

namespace podvisor::cli {

// Adds `command` to `app`; each parse of it fills `*args` (emptied first).
// The caller sets the subcommand's callback.
CLI::App* AddGrammarCommand(CLI::App& app, const grammar::Command& command,
                            const std::shared_ptr<PlainArgs>& args);

}  // namespace podvisor::cli
