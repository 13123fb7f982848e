// Talking to a pod's supervisor: shared by the client commands (status,
// stop, kill, list, logs, events); finding pods is pod_records.h.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/default_dirs.h"
#include "common/clock.h"
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

// How long a client waits for a supervisor's reply, unless told otherwise.
inline constexpr Duration kReplyTimeout = std::chrono::seconds(10);

// AskSupervisor with its own bound on the reply (zero: none, for a reply
// that comes when the pod has ended).
Result<nlohmann::json> AskSupervisorWithin(
    const std::filesystem::path& state_dir, const std::string& pod, const nlohmann::json& request,
    Duration reply_timeout, std::optional<supervisor::control::ControlError>* refusal = nullptr);

// A request for a pod that must be running (stop, kill, upgrade): `name`
// is chosen as SelectPod chooses (pod_records.h; "" for the only one), and
// a pod whose supervisor does not answer is named as not running, with
// its phase. The reply's error, if any, is the Error's text.
struct PodReply {
  std::string pod;
  nlohmann::json reply;
};
Result<PodReply> AskRunningPod(const std::filesystem::path& state_dir, const std::string& name,
                               const nlohmann::json& request, Duration reply_timeout);

// Left-aligned columns separated by three spaces, like kubectl. Cells are
// shown TerminalSafe (S14.20, S14.21): one line each, aligned by the
// columns they take on a terminal.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace podvisor::cli
