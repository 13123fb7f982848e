#include "cli/cli.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/init_mode.h"

namespace podvisor::cli {

int Main(int argc, char** argv) {
  CLI::App app{"podvisor: supervises one Kubernetes-style pod through an OCI runtime",
               "podvisor"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");

  int exit_code = kExitSucceeded;
  AddRunCommand(app, exit_code);
  AddControlCommands(app, exit_code);
  AddLogCommands(app, exit_code);
  AddValidateCommand(app, exit_code);
  AddVersionCommand(app, exit_code);
  AddOciConfigCommand(app, exit_code);
  AddSandboxInitCommand(app, exit_code);

  // PID 1 without a subcommand: the init of a VM image (docs/INTERFACE.md).
  std::vector<std::string> subcommands;
  for (const CLI::App* sub : app.get_subcommands({})) subcommands.push_back(sub->get_name());
  if (ShouldRunAsInit(std::vector<std::string>(argv + std::min(argc, 1), argv + argc), subcommands)) {
    return RunAsInit();
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return kExitSucceeded;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return kExitSucceeded;
  } catch (const CLI::ParseError& e) {
    // CLI11 has its own exit codes; docs/INTERFACE.md has one for all usage
    // errors. A subcommand's --help arrives here as a "success" ParseError.
    if (e.get_exit_code() == 0) {
      app.exit(e);
      return kExitSucceeded;
    }
    std::fprintf(stderr, "podvisor: %s\nRun 'podvisor --help' for usage.\n", e.what());
    return kExitUsage;
  }
  return exit_code;
}

}  // namespace podvisor::cli
