// ControlApi: the control socket's requests (docs/INTERFACE.md "Control
// socket") read, checked and carried out on a PodControl. Every request
// that is malformed, names no container of the pod or asks for what
// cannot be done now is answered with its code (control_error.h) before
// anything reaches the pod; the wire format of requests and replies is
// the interface's, unchanged.
#pragma once

#include <nlohmann/json.hpp>

#include "supervisor/control/control_server.h"
#include "supervisor/control/pod_control.h"

namespace podvisor::supervisor::control {

class ControlApi {
 public:
  explicit ControlApi(PodControl& pod) : pod_(pod) {}

  // A ControlServer::Handler: answers `request` through `respond`, at once
  // or (stop) when the pod has ended.
  void Handle(const nlohmann::json& request, ControlServer::Responder respond);

 private:
  void Status(const nlohmann::json& request, const ControlServer::Responder& respond);
  void Stop(const nlohmann::json& request, ControlServer::Responder respond);
  void Kill(const nlohmann::json& request, const ControlServer::Responder& respond);
  nlohmann::json Exec(const nlohmann::json& request);

  PodControl& pod_;
};

}  // namespace podvisor::supervisor::control
