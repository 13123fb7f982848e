#include "cli/client.h"

#include <algorithm>
#include <cerrno>

#include "supervisor/control/control_server.h"

namespace podvisor::cli {

Result<nlohmann::json> AskSupervisor(const std::filesystem::path& state_dir, const std::string& pod,
                                     const nlohmann::json& request, bool wait_forever) {
  std::filesystem::path sock = state_dir / pod / "control.sock";
  // Connecting is the check: no stat first (a client's whole cost is its
  // start-up and this round trip).
  auto reply = supervisor::ControlRequest(
      sock, request, wait_forever ? Duration::zero() : std::chrono::seconds(10));
  if (!reply && reply.error().code() == ENOENT) {
    return Error("pod " + pod + " is not running (no " + sock.string() + ")", ENOENT);
  }
  if (!reply) return reply.take_error().Wrap("pod " + pod);
  if (reply->is_object() && reply->contains("error")) {
    return Error("pod " + pod + ": " + (*reply)["error"].get<std::string>());
  }
  return reply;
}

std::string FormatTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 3, ' ');
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace podvisor::cli
