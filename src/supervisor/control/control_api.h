// ControlApi: the control socket's requests (docs/INTERFACE.md "Control
// socket") read, checked and carried out on a PodControl. Every request
// that is malformed, names no container of the pod or asks for what
// cannot be done now is answered with its code (control_error.h) before
// anything reaches the pod; the wire format of requests and replies is
// the interface's, unchanged.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "supervisor/control/control_server.h"
#include "supervisor/control/pod_control.h"

namespace podvisor::supervisor::control {

// S15.2: `upgrade`'s "timeout_ms" when absent, and its largest value.
inline constexpr int64_t kDefaultUpgradeTimeoutMs = 30000;
inline constexpr int64_t kMaxUpgradeTimeoutMs = 600000;

class ControlApi {
 public:
  explicit ControlApi(PodControl& pod) : pod_(pod) {}

  // A ControlServer::Handler: answers `request` through `respond`, at once
  // or later (stop: when the pod has ended; upgrade: when the handover is
  // refused, or just before the re-execution).
  void Handle(const nlohmann::json& request, ControlServer::Responder respond);

 private:
  void Status(const nlohmann::json& request, const ControlServer::Responder& respond);
  void Stop(const nlohmann::json& request, ControlServer::Responder respond);
  void Kill(const nlohmann::json& request, const ControlServer::Responder& respond);
  nlohmann::json Exec(const nlohmann::json& request);
  void Upgrade(const nlohmann::json& request, ControlServer::Responder respond);
  ControlReply Resize(const nlohmann::json& request);

  PodControl& pod_;
};

}  // namespace podvisor::supervisor::control
