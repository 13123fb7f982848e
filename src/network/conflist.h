// CNI network configuration lists: parse, validate, pick.
//
// A configuration list (`.conflist`) names a network and the chain of
// plugins that attach a pod to it; a single network configuration
// (`.conf`, `.json`) is a one-plugin list, as libcni treats it. Files in
// the configuration directory are considered in file-name order and,
// unless `--cni-network NAME` picks one by its "name", the first valid
// one is used (libcni's rule, and so podman's and CRI-O's).
//
// Only the fields podvisor acts on are checked here: "name", "cniVersion",
// and each plugin's "type" (its binary) and "capabilities"; everything
// else is the plugin's own business and reaches it unchanged on stdin.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace podvisor::network {

// CNI specification versions whose results podvisor can read (0.3.x and
// 0.4.0 carry `ips[].version`, 1.0.0 and 1.1.0 do not).
bool SupportedCniVersion(std::string_view version);

struct NetworkConfigList {
  std::string name;
  std::string cni_version;
  // Each plugin's configuration object as written; "type" is a string.
  std::vector<nlohmann::json> plugins;
  // The file it came from; empty for one built in memory.
  std::filesystem::path source;

  // The list as JSON (a single .conf is given back as a one-plugin list).
  nlohmann::json ToJson() const;
};

// Parses a .conflist (or, with `single_conf`, a .conf) document. The
// error names `source` and the offending field: "bad.conflist: plugins[1]:
// \"type\" must be a non-empty string".
Result<NetworkConfigList> ParseConfList(std::string_view text, const std::filesystem::path& source,
                                        bool single_conf = false);

// Reads one configuration file (.conflist, .conf or .json).
Result<NetworkConfigList> LoadConfFile(const std::filesystem::path& file);

// The configuration files of `dir` that libcni would consider, sorted by
// file name. A missing directory gives an empty list.
Result<std::vector<std::filesystem::path>> ConfFiles(const std::filesystem::path& dir);

// The network to use from `dir`: the one named `name`, or without a name
// the first file (by name) that parses. nullopt when `dir` holds no
// configuration at all (the caller then uses the built-in default
// network). Errors: a named network that is not there; a directory whose
// every file is invalid (each file's error is in the message).
Result<std::optional<NetworkConfigList>> SelectNetwork(const std::filesystem::path& dir,
                                                       const std::optional<std::string>& name);

}  // namespace podvisor::network
