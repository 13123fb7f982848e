// One function per subcommand: each registers its options on the CLI11 app
// and returns the callback result through `exit_code` (docs/INTERFACE.md exit
// statuses). Kept apart so cli.cc reads as the table of commands.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace podvisor::cli {

// Exit statuses of docs/INTERFACE.md.
constexpr int kExitSucceeded = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitHost = 3;
// S14.40: the pod was stopped on request (SIGTERM, SIGINT, `podvisor stop`)
// and did not end Succeeded. Not 1: an ordinary `systemctl stop` of an app
// that exits 143 on SIGTERM, or has to be SIGKILLed, is not a failure of
// the unit (packaging/systemd/podvisor@.service lists it in
// SuccessExitStatus=), yet the status stays apart from a Succeeded pod's.
constexpr int kExitStopped = 4;

void AddRunCommand(CLI::App& app, int& exit_code);
void AddStatusCommand(CLI::App& app, int& exit_code);
void AddControlCommands(CLI::App& app, int& exit_code);  // stop, kill, list
void AddPatchCommand(CLI::App& app, int& exit_code);     // patch --subresource resize (S17)
void AddLogCommands(CLI::App& app, int& exit_code);      // logs, events
void AddDescribeCommand(CLI::App& app, int& exit_code);
// `command`: the words after exec's "--", split off before parsing.
void AddExecCommand(CLI::App& app, int& exit_code, const std::vector<std::string>& command);
void AddPortForwardCommand(CLI::App& app, int& exit_code);
void AddRecordCommands(CLI::App& app, int& exit_code);  // rm, prune, images ls|prune
void AddValidateCommand(CLI::App& app, int& exit_code);
void AddApplyCommand(CLI::App& app, int& exit_code);
void AddPackCommand(CLI::App& app, int& exit_code);
void AddPullCommands(CLI::App& app, int& exit_code);  // pull, pull-worker (internal)
void AddVersionCommand(CLI::App& app, int& exit_code);
void AddOciConfigCommand(CLI::App& app, int& exit_code);
void AddUpgradeCommands(CLI::App& app, int& exit_code);     // upgrade, handover-check (internal)
void AddSandboxInitCommand(CLI::App& app, int& exit_code);  // internal

}  // namespace podvisor::cli
