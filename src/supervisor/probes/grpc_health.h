// gRPC health probes (S7.1): one `grpc.health.v1.Health/Check` call over
// HTTP/2 cleartext, made through the HttpClient (so from inside the pod's
// network namespace, non-blocking in the loop). The probe succeeds when
// the call ends with grpc-status 0 and the answer is SERVING, as the
// kubelet's gRPC prober decides.
//
// The protobuf messages are tiny (HealthCheckRequest{string service = 1},
// HealthCheckResponse{ServingStatus status = 1}), so they are encoded and
// decoded here by hand rather than pulling in a gRPC library.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/result.h"
#include "supervisor/probes/http_client.h"

namespace podvisor::supervisor::probes {

struct GrpcHealthCheck {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string service;  // the probe's `service`, "" for the server as a whole
  Duration timeout = std::chrono::seconds(1);
  std::string netns;  // as HttpRequest::netns
};

struct GrpcHealthResult {
  bool serving = false;
  std::string message;  // why not, or "SERVING"
};

// The request as a gRPC length-prefixed message.
std::string EncodeHealthCheckRequest(std::string_view service);
// The ServingStatus of a length-prefixed HealthCheckResponse (0 when the
// field is absent, as proto3 defaults it).
Result<int> DecodeHealthCheckResponse(std::string_view body);
// "UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN", or the number.
std::string ServingStatusName(int status);
// The probe's verdict on a finished call (pure, for tests).
GrpcHealthResult InterpretHealthResponse(const GrpcHealthCheck& check,
                                         const HttpResponse& response);

// Starts the call; `done` runs once, later, from the loop. Destroying the
// transfer cancels it.
std::unique_ptr<HttpTransfer> StartGrpcHealthCheck(
    HttpClient& client, const GrpcHealthCheck& check,
    std::function<void(const GrpcHealthResult&)> done);

}  // namespace podvisor::supervisor::probes
