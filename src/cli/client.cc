#include "cli/client.h"

#include <algorithm>

#include "supervisor/control/control_server.h"

namespace podvisor::cli {

std::vector<std::string> RunningPods(const std::filesystem::path& state_dir) {
  std::vector<std::string> pods;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(state_dir, ec)) {
    if (std::filesystem::exists(entry.path() / "control.sock", ec)) {
      pods.push_back(entry.path().filename().string());
    }
  }
  std::sort(pods.begin(), pods.end());
  return pods;
}

Result<std::string> ChoosePod(const std::filesystem::path& dir, const std::string& name,
                              bool need_socket) {
  if (!name.empty()) return name;
  std::vector<std::string> pods;
  if (need_socket) {
    pods = RunningPods(dir);
  } else {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (entry.is_directory(ec)) pods.push_back(entry.path().filename().string());
    }
    std::sort(pods.begin(), pods.end());
  }
  if (pods.size() == 1) return pods[0];
  if (pods.empty()) {
    return Error(std::string(need_socket ? "no pod is running" : "no pod found") + " under " +
                 dir.string());
  }
  std::string names;
  for (const auto& p : pods) names += (names.empty() ? "" : ", ") + p;
  return Error("several pods under " + dir.string() + " (" + names + "): name one");
}

Result<nlohmann::json> AskSupervisor(const std::filesystem::path& state_dir,
                                     const std::string& pod, const nlohmann::json& request,
                                     bool wait_forever) {
  std::filesystem::path sock = state_dir / pod / "control.sock";
  std::error_code ec;
  if (!std::filesystem::exists(sock, ec)) return Error("pod " + pod + " is not running (no " + sock.string() + ")");
  auto reply = supervisor::ControlRequest(sock, request,
                                          wait_forever ? Duration::zero() : std::chrono::seconds(10));
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
