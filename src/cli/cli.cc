#include "cli/cli.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "cli/init_mode.h"
#include "cli/plain_args.h"

namespace podvisor::cli {

namespace {

std::size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string UnknownCommandMessage(const std::string& typed,
                                  const std::vector<std::string>& commands) {
  // cobra's rule: a command within edit distance 2, or one the typed word
  // is a prefix of.
  std::vector<std::string> near;
  for (const std::string& c : commands) {
    if (EditDistance(typed, c) <= 2 || c.starts_with(typed)) near.push_back(c);
  }
  std::string out = "Error: unknown command \"" + typed + "\" for \"podvisor\"\n";
  if (!near.empty()) {
    out += "\nDid you mean this?\n";
    for (const auto& c : near) out += "\t" + c + "\n";
  }
  out += "\nRun 'podvisor --help' for usage.\n";
  return out;
}

namespace {

// kill, status and stop in their plain forms skip CLI11
// (cli/plain_args.h): their exit status, or nothing for any other form.
std::optional<int> RunPlainForm(int argc, char** argv) {
  if (argc < 2 || ::getpid() == 1) return std::nullopt;
  const std::string_view command = argv[1];
  const std::span<char* const> words(argv + 2, static_cast<std::size_t>(argc - 2));
  std::optional<int> done;
  if (command == "kill") {
    done = RunKillPlain(words);
  } else if (command == "status") {
    done = RunStatusPlain(words);
  } else if (command == "stop") {
    done = RunStopPlain(words);
  }
  return done;
}

// exec's command is everything after its "--", taken out before CLI11
// parses: its words must not fill exec's own [POD] CONTAINER. `argc`
// then ends before the "--".
std::vector<std::string> TakeExecCommand(int& argc, char** argv) {
  std::vector<std::string> exec_command;
  if (argc >= 2 && std::string(argv[1]) == "exec") {
    for (int i = 2; i < argc; ++i) {
      if (std::string(argv[i]) == "--") {
        exec_command.assign(argv + i + 1, argv + argc);
        argc = i;
        break;
      }
    }
  }
  return exec_command;
}

void AddCommands(CLI::App& app, int& exit_code, const std::vector<std::string>& exec_command,
                 int argc, char** argv) {
  // Each group of subcommands with the function that adds it. Only the
  // group of the command being run is added: CLI11's options are most of
  // what a client command (kill, status, stop) does before it talks to the
  // supervisor (README.md, "Static build"). The top-level help, --help-all,
  // a mistyped command and PID 1 (init mode) see every command.
  struct Group {
    std::string_view names[3];  // unused ones empty
    void (*add)(CLI::App&, int&);
  };
  static constexpr Group kGroups[] = {
      {{"run"}, &AddRunCommand},
      {{"status"}, &AddStatusCommand},
      {{"stop", "kill", "list"}, &AddControlCommands},
      {{"patch"}, &AddPatchCommand},
      {{"logs", "events", "compress-log"}, &AddLogCommands},
      {{"describe"}, &AddDescribeCommand},
      {{"exec"}, nullptr},  // takes its command as well: below
      {{"port-forward"}, &AddPortForwardCommand},
      {{"rm", "prune", "images"}, &AddRecordCommands},
      {{"validate"}, &AddValidateCommand},
      {{"apply"}, &AddApplyCommand},
      {{"pack"}, &AddPackCommand},
      {{"pull", "pull-worker"}, &AddPullCommands},
      {{"version"}, &AddVersionCommand},
      {{"oci-config"}, &AddOciConfigCommand},
      {{"upgrade", "handover-check"}, &AddUpgradeCommands},
      {{"sandbox-init"}, &AddSandboxInitCommand},
  };
  auto add = [&](const Group& g) {
    if (g.add) {
      g.add(app, exit_code);
    } else {
      AddExecCommand(app, exit_code, exec_command);
    }
  };
  const Group* only = nullptr;
  if (argc >= 2 && argv[1][0] != '\0' && ::getpid() != 1 &&
      std::none_of(argv + 1, argv + argc,
                   [](const char* a) { return std::strcmp(a, "--help-all") == 0; })) {
    for (const Group& g : kGroups) {
      if (std::find(std::begin(g.names), std::end(g.names), std::string_view(argv[1])) !=
          std::end(g.names)) {
        only = &g;
      }
    }
  }
  if (only) {
    add(*only);
  } else {
    for (const Group& g : kGroups) add(g);
  }
}

// cobra's (kubectl's) answer to a mistyped command, rather than CLI11's
// "A subcommand is required": true when it was given.
bool RefuseUnknownCommand(const CLI::App& app, int argc, char** argv,
                          const std::vector<std::string>& subcommands) {
  if (argc < 2 || argv[1][0] == '-' ||
      std::find(subcommands.begin(), subcommands.end(), argv[1]) != subcommands.end()) {
    return false;
  }
  std::vector<std::string> visible;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (!sub->get_group().empty()) visible.push_back(sub->get_name());
  }
  std::fputs(UnknownCommandMessage(argv[1], visible).c_str(), stderr);
  return true;
}

// CLI11's parse, which runs the command; help, version and usage errors
// by docs/INTERFACE.md's exit statuses.
int ParseAndRun(CLI::App& app, int argc, char** argv, const int& exit_code) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return kExitSucceeded;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return kExitSucceeded;
  } catch (const CLI::CallForVersion& e) {
    // Printed here rather than by App::exit(), which writes to the C++
    // standard output: the static build never sets the standard streams up
    // (src/static_iostreams.cc).
    std::printf("%s\n", e.what());
    return kExitSucceeded;
  } catch (const CLI::ParseError& e) {
    // CLI11 has its own exit codes; docs/INTERFACE.md has one for all usage
    // errors. Its other "successes" (CLI::Success) print nothing.
    if (e.get_exit_code() == 0) return kExitSucceeded;
    std::fprintf(stderr, "podvisor: %s\nRun 'podvisor --help' for usage.\n", e.what());
    return kExitUsage;
  }
  return exit_code;
}

}  // namespace

int Main(int argc, char** argv) {
  if (auto done = RunPlainForm(argc, argv)) return *done;
  CLI::App app{"podvisor: supervises one Kubernetes-style pod through an OCI runtime", "podvisor"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");

  int exit_code = kExitSucceeded;
  std::vector<std::string> exec_command = TakeExecCommand(argc, argv);
  AddCommands(app, exit_code, exec_command, argc, argv);

  // PID 1 without a subcommand: the init of a VM image (docs/INTERFACE.md).
  std::vector<std::string> subcommands;
  for (const CLI::App* sub : app.get_subcommands({})) subcommands.push_back(sub->get_name());
  if (ShouldRunAsInit(std::vector<std::string>(argv + std::min(argc, 1), argv + argc),
                      subcommands)) {
    return RunAsInit();
  }
  if (RefuseUnknownCommand(app, argc, argv, subcommands)) return kExitUsage;
  return ParseAndRun(app, argc, argv, exit_code);
}

}  // namespace podvisor::cli
