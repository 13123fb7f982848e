// Runs a program to completion and captures its output: enough for tests
// that drive the real podvisor binary the way a user does.
#pragma once

#include <string>
#include <vector>

namespace podvisor::testing {

struct CommandResult {
  int exit_code = -1;  // -1 when killed by a signal
  std::string out;
  std::string err;
};

CommandResult RunCommand(const std::vector<std::string>& argv);

}  // namespace podvisor::testing
