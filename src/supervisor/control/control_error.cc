#include "supervisor/control/control_error.h"

#include <array>
#include <utility>

namespace podvisor::supervisor::control {
namespace {

constexpr std::array<std::pair<ControlCode, std::string_view>, 8> kNames = {{
    {ControlCode::kInvalidArgument, "InvalidArgument"},
    {ControlCode::kNotFound, "NotFound"},
    {ControlCode::kFailedPrecondition, "FailedPrecondition"},
    {ControlCode::kPermissionDenied, "PermissionDenied"},
    {ControlCode::kUnavailable, "Unavailable"},
    {ControlCode::kUnimplemented, "Unimplemented"},
    {ControlCode::kInternal, "Internal"},
    {ControlCode::kUnknown, "Unknown"},
}};

}  // namespace

std::string_view ControlCodeName(ControlCode code) {
  for (const auto& [c, name] : kNames) {
    if (c == code) return name;
  }
  return "Unknown";
}

ControlCode ParseControlCode(std::string_view name) {
  for (const auto& [c, word] : kNames) {
    if (word == name) return c;
  }
  return ControlCode::kUnknown;
}

nlohmann::json ControlErrorReply(ControlCode code, std::string message) {
  return {{"error", std::move(message)}, {"code", std::string(ControlCodeName(code))}};
}

std::optional<ControlError> ControlErrorOf(const nlohmann::json& reply) {
  if (!reply.is_object()) return std::nullopt;
  auto error = reply.find("error");
  if (error == reply.end()) return std::nullopt;
  ControlError out{ControlCode::kUnknown,
                   error->is_string() ? error->get<std::string>() : error->dump()};
  if (auto code = reply.find("code"); code != reply.end() && code->is_string()) {
    out.code = ParseControlCode(code->get<std::string>());
  }
  return out;
}

}  // namespace podvisor::supervisor::control
