// Finding a running pod and talking to its supervisor: shared by the
// client commands (status, stop, kill, list, logs, events).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace podvisor::cli {

constexpr const char* kDefaultStateDir = "/run/podvisor";
constexpr const char* kDefaultLogDir = "/var/log/podvisor";

// Pods with a control socket under `state_dir`, by name.
std::vector<std::string> RunningPods(const std::filesystem::path& state_dir);

// `name`, or the only pod with a directory under `dir` when `name` is
// empty; an error naming the choices otherwise. `need_socket` restricts
// the choice to running pods.
Result<std::string> ChoosePod(const std::filesystem::path& dir, const std::string& name,
                              bool need_socket);

// Sends one request to the pod's supervisor; an {"error": ...} reply is
// an Error.
Result<nlohmann::json> AskSupervisor(const std::filesystem::path& state_dir,
                                     const std::string& pod, const nlohmann::json& request,
                                     bool wait_forever = false);

// Left-aligned columns separated by three spaces, like kubectl.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace podvisor::cli
