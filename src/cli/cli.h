// The podvisor command line (CLI11): one entry point the few-line main.cc
// hands argv to. Returns the process exit status of docs/INTERFACE.md.
#pragma once

#include <string>
#include <vector>

namespace podvisor::cli {

int Main(int argc, char** argv);

// What kubectl (cobra) says of an unknown command: the nearest of
// `commands` (edit distance at most 2, or a prefix) as suggestions.
std::string UnknownCommandMessage(const std::string& typed,
                                  const std::vector<std::string>& commands);

}  // namespace podvisor::cli
