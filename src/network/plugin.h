// Executing one CNI plugin (CNI spec, "Execution protocol").
//
// The plugin is a separate program found by its "type" in the plugin
// directories (CNI_PATH). Its parameters arrive in CNI_* environment
// variables, its network configuration on stdin; it answers a result (ADD)
// or nothing (DEL, CHECK) on stdout and exits 0, or exits non-zero with a
// JSON error {"code", "msg", "details"} on stdout.
//
// stdin, stdout and stderr are memfds rather than pipes: the child cannot
// block on a full pipe, podvisor needs no read loop, and the one thing to
// wait for is the process's exit, which its pidfd signals. That wait is
// bounded (`timeout`): a plugin that hangs (a stuck iptables lock, a
// wedged netlink call) is SIGKILLed and reported, so a network can never
// hold up the pod forever.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"

namespace podvisor::network {

enum class CniCommand { kAdd, kDel, kCheck };
// "ADD", "DEL", "CHECK": the CNI_COMMAND values.
const char* CniCommandName(CniCommand command);

// The kubelet's CRI runtimes give a plugin a few seconds to minutes;
// podvisor bounds each plugin call by this unless told otherwise. A bridge
// or host-local call takes milliseconds, portmap and firewall (iptables)
// tens of milliseconds, so a minute only ever catches a stuck plugin.
inline constexpr Duration kDefaultPluginTimeout = std::chrono::seconds(60);

struct PluginCall {
  CniCommand command = CniCommand::kAdd;
  std::string type;                             // the plugin's binary name
  std::vector<std::filesystem::path> bin_dirs;  // searched in order; also CNI_PATH
  std::string container_id;                     // CNI_CONTAINERID
  std::string netns;                            // CNI_NETNS (may be empty for DEL)
  std::string ifname = "eth0";                  // CNI_IFNAME
  std::string args;                             // CNI_ARGS ("K=V;K=V")
  std::string stdin_config;                     // the network configuration JSON
  Duration timeout = kDefaultPluginTimeout;
};

// A plugin's error as it reported it (CNI spec "Error"), or as podvisor
// describes a plugin that did not answer one (code 0).
struct PluginError {
  unsigned code = 0;  // CNI error code (1-99 reserved by the spec, 100+ plugin-specific)
  std::string msg;
  std::string details;
  // "failed to allocate for range 0: no IP addresses available in range set
  // (CNI error 7: ...details)"
  std::string ToString() const;
};

struct PluginOutcome {
  bool ok = false;
  std::string stdout_text;           // the result (ADD) when ok
  std::optional<PluginError> error;  // when !ok
};

// The plugin binary for `type`: the first regular executable file named so
// in `bin_dirs`. ENOENT naming every directory searched when there is none.
Result<std::filesystem::path> FindPlugin(const std::string& type,
                                         const std::vector<std::filesystem::path>& bin_dirs);

// Decodes a failed plugin's stdout (the CNI error object); a plugin that
// printed something else gets its stdout/stderr text as the message.
PluginError DecodePluginError(const std::string& stdout_text, const std::string& stderr_text,
                              int exit_code);

// Runs the plugin and waits for it, bounded by call.timeout. An Error is
// returned when the plugin could not be run at all (binary missing, spawn
// failure); a plugin that ran and failed, or that was killed at its
// timeout, gives an outcome with ok = false and its error.
Result<PluginOutcome> RunPlugin(const PluginCall& call);

}  // namespace podvisor::network
