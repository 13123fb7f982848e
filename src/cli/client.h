// Talking to a pod's supervisor: shared by the client commands (status,
// stop, kill, list, logs, events); finding pods is pod_records.h.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/default_dirs.h"
#include "common/result.h"
#include "supervisor/control/control_error.h"

namespace podvisor::cli {

// Sends one request to the pod's supervisor; an {"error": ..., "code": ...}
// reply is an Error, "pod POD: MESSAGE". When `refusal` is given, it gets
// that reply's code and text (supervisor/control/control_error.h), and
// nullopt for anything else: an answer, or a connection that failed.
Result<nlohmann::json> AskSupervisor(
    const std::filesystem::path& state_dir, const std::string& pod, const nlohmann::json& request,
    bool wait_forever = false, std::optional<supervisor::control::ControlError>* refusal = nullptr);

// Left-aligned columns separated by three spaces, like kubectl. Cells are
// shown TerminalSafe (S14.20, S14.21): one line each, aligned by the
// columns they take on a terminal.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace podvisor::cli
