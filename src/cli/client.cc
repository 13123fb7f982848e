#include "cli/client.h"

#include <algorithm>
#include <cerrno>

#include "cli/pod_records.h"
#include "common/pod_dir.h"
#include "common/terminal_text.h"
#include "supervisor/control/control_server.h"

namespace podvisor::cli {

Result<nlohmann::json> AskSupervisor(const std::filesystem::path& state_dir, const std::string& pod,
                                     const nlohmann::json& request, bool wait_forever,
                                     std::optional<supervisor::control::ControlError>* refusal) {
  return AskSupervisorWithin(state_dir, pod, request,
                             wait_forever ? Duration::zero() : kReplyTimeout, refusal);
}

Result<nlohmann::json> AskSupervisorWithin(
    const std::filesystem::path& state_dir, const std::string& pod, const nlohmann::json& request,
    Duration reply_timeout, std::optional<supervisor::control::ControlError>* refusal) {
  if (refusal != nullptr) refusal->reset();
  std::filesystem::path sock = PodDir(state_dir, pod).ControlSocket();
  // Connecting is the check: no stat first (a client's whole cost is its
  // start-up and this round trip).
  auto reply = supervisor::control::ControlRequest(sock, request, reply_timeout);
  if (!reply && reply.error().code() == ENOENT) {
    return Error("pod " + pod + " is not running (no " + sock.string() + ")", ENOENT);
  }
  if (!reply) return reply.take_error().Wrap("pod " + pod);
  if (auto error = supervisor::control::ControlErrorOf(*reply)) {
    Error refused("pod " + pod + ": " + error->message);
    if (refusal != nullptr) *refusal = std::move(*error);
    return refused;
  }
  return reply;
}

Result<PodReply> AskRunningPod(const std::filesystem::path& state_dir, const std::string& name,
                               const nlohmann::json& request, Duration reply_timeout) {
  auto pod = SelectPod(state_dir, name);
  if (!pod) return pod.take_error();
  std::optional<supervisor::control::ControlError> refusal;
  auto reply = AskSupervisorWithin(state_dir, *pod, request, reply_timeout, &refusal);
  if (reply) return PodReply{*pod, std::move(*reply)};
  // The supervisor answered, with a refusal of its own (a container it
  // does not have, one not running, a request out of range): that is the
  // pod's answer, whatever became of its socket since.
  if (refusal) return reply.take_error();
  // The request itself finds out (one connection, not a probe first): no
  // socket, or one nobody listens on, is a pod that is not running.
  const std::filesystem::path sock = PodDir(state_dir, *pod).ControlSocket();
  std::error_code ec;
  if (reply.error().code() == ECONNREFUSED || !std::filesystem::exists(sock, ec)) {
    auto record = LoadPodRecord(state_dir, *pod);
    std::string phase = record ? (*record)["status"].value("phase", "Unknown") : "Unknown";
    return Error("pod " + *pod + " is not running (phase " + phase + ")");
  }
  return reply.take_error();
}

std::string FormatTable(const std::vector<std::vector<std::string>>& rows) {
  // S14.21: every cell is made one line of visible text before the
  // columns are measured, and measured in terminal columns, not bytes: a
  // termination message's newline cannot add a row, nor its tab, escape
  // sequence or wide characters move the next column.
  std::vector<std::vector<std::string>> cells;
  std::vector<std::size_t> widths;
  cells.reserve(rows.size());
  for (const auto& row : rows) {
    std::vector<std::string>& safe = cells.emplace_back();
    for (std::size_t i = 0; i < row.size(); ++i) {
      safe.push_back(TerminalSafe(row[i]));
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], DisplayWidth(safe.back()));
    }
  }
  std::string out;
  for (const auto& row : cells) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - DisplayWidth(row[i]) + 3, ' ');
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace podvisor::cli
