// The control protocol's errors (docs/INTERFACE.md "Control socket"): a
// reply {"error": MESSAGE, "code": CODE}. MESSAGE is for people (and for
// clients older than the code, which print it); CODE is what a client
// branches on: the CLI and the containerd shim, which turns it into the
// ttrpc status containerd understands. The codes are a few of gRPC's.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace podvisor::supervisor::control {

enum class ControlCode {
  kInvalidArgument,     // the request is malformed or a value is out of range
  kNotFound,            // it names a container the pod does not have
  kFailedPrecondition,  // not now: e.g. the container is not running
  kPermissionDenied,    // the peer may not use the socket
  kUnavailable,         // the supervisor cannot take it now (too many connections)
  kUnimplemented,       // an op this supervisor does not know or serve
  kInternal,            // the supervisor failed carrying it out
  kUnknown,             // a reply without a code (an older supervisor) or an unknown one
};

// "InvalidArgument", "NotFound", ...: the code's word in a reply.
std::string_view ControlCodeName(ControlCode code);
// The code a reply's word names; kUnknown for any other word.
ControlCode ParseControlCode(std::string_view name);

// The reply for an error: {"error": message, "code": name}.
nlohmann::json ControlErrorReply(ControlCode code, std::string message);

struct ControlError {
  ControlCode code;
  std::string message;
};

// The error a reply carries, or nullopt when it is no error reply. A reply
// with an "error" but no (known) "code" has kUnknown.
std::optional<ControlError> ControlErrorOf(const nlohmann::json& reply);

}  // namespace podvisor::supervisor::control
