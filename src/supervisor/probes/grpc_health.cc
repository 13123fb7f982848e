#include "supervisor/probes/grpc_health.h"

#include <cstdint>
#include <cstdlib>
#include <iterator>

namespace podvisor::supervisor::probes {
namespace {

constexpr const char* kHealthCheckPath = "/grpc.health.v1.Health/Check";
constexpr const char* kProbeUserAgent = "kube-probe/1.33";  // as the kubelet's prober
constexpr int kServing = 1;

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

bool GetVarint(std::string_view& in, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
    auto byte = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return true;
  }
  return false;
}

// The names of gRPC status codes, for messages like grpc-go's.
std::string CodeName(const std::string& code) {
  static const char* const kNames[] = {
      "OK",       "Canceled",       "Unknown",          "InvalidArgument",   "DeadlineExceeded",
      "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
      "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
      "DataLoss", "Unauthenticated"};
  char* end = nullptr;
  long n = std::strtol(code.c_str(), &end, 10);
  if (end && *end == '\0' && n >= 0 && n < static_cast<long>(std::size(kNames))) return kNames[n];
  return "Code(" + code + ")";
}

}  // namespace

std::string EncodeHealthCheckRequest(std::string_view service) {
  std::string message;
  if (!service.empty()) {
    message.push_back(0x0a);  // field 1, length-delimited
    PutVarint(message, service.size());
    message.append(service);
  }
  std::string frame;
  frame.push_back(0);  // not compressed
  auto len = static_cast<uint32_t>(message.size());
  for (int shift = 24; shift >= 0; shift -= 8)
    frame.push_back(static_cast<char>((len >> shift) & 0xff));
  return frame + message;
}

Result<int> DecodeHealthCheckResponse(std::string_view body) {
  if (body.size() < 5) return Error("gRPC response shorter than its 5-byte prefix");
  if (body[0] != 0) return Error("gRPC response is compressed");
  uint32_t len = 0;
  for (int i = 1; i <= 4; ++i) len = (len << 8) | static_cast<uint8_t>(body[i]);
  body.remove_prefix(5);
  if (body.size() < len) return Error("gRPC response message is truncated");
  std::string_view msg = body.substr(0, len);
  int status = 0;
  while (!msg.empty()) {
    uint64_t key = 0;
    if (!GetVarint(msg, key)) return Error("malformed HealthCheckResponse");
    uint64_t field = key >> 3;
    switch (key & 7) {
      case 0: {
        uint64_t v = 0;
        if (!GetVarint(msg, v)) return Error("malformed HealthCheckResponse");
        if (field == 1) status = static_cast<int>(v);
        break;
      }
      case 1:
      case 5: {
        std::size_t skip = (key & 7) == 1 ? 8 : 4;
        if (msg.size() < skip) return Error("malformed HealthCheckResponse");
        msg.remove_prefix(skip);
        break;
      }
      case 2: {
        uint64_t n = 0;
        if (!GetVarint(msg, n) || msg.size() < n) return Error("malformed HealthCheckResponse");
        msg.remove_prefix(static_cast<std::size_t>(n));
        break;
      }
      default:
        return Error("malformed HealthCheckResponse");
    }
  }
  return status;
}

std::string ServingStatusName(int status) {
  switch (status) {
    case 0:
      return "UNKNOWN";
    case 1:
      return "SERVING";
    case 2:
      return "NOT_SERVING";
    case 3:
      return "SERVICE_UNKNOWN";
  }
  return std::to_string(status);
}

GrpcHealthResult InterpretHealthResponse(const GrpcHealthCheck& check, const HttpResponse& r) {
  std::string target = check.host + ":" + std::to_string(check.port);
  if (!r.received) return {false, "failed to connect service \"" + target + "\": " + r.error};
  if (r.status != 200) {
    return {false, "service \"" + target + "\" answered HTTP " + std::to_string(r.status) +
                       ", not a gRPC response"};
  }
  // grpc-status comes in the trailers, or in the headers of a
  // trailers-only answer (an error without a message).
  const std::string* code = r.Header("grpc-status");
  if (!code) return {false, "service \"" + target + "\" sent no grpc-status"};
  if (*code != "0") {
    const std::string* desc = r.Header("grpc-message");
    return {false,
            "rpc error: code = " + CodeName(*code) + " desc = " + (desc ? *desc : std::string())};
  }
  auto status = DecodeHealthCheckResponse(r.body);
  if (!status) return {false, status.error().message()};
  if (*status != kServing) {
    return {false, "service unhealthy (responded with \"" + ServingStatusName(*status) + "\")"};
  }
  return {true, "SERVING"};
}

std::unique_ptr<HttpTransfer> StartGrpcHealthCheck(
    HttpClient& client, const GrpcHealthCheck& check,
    std::function<void(const GrpcHealthResult&)> done) {
  HttpRequest req;
  req.host = check.host;
  req.port = check.port;
  req.path = kHealthCheckPath;
  req.post = true;
  req.body = EncodeHealthCheckRequest(check.service);
  req.http2_prior_knowledge = true;
  req.timeout = check.timeout;
  req.netns = check.netns;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(check.timeout).count();
  req.headers = {{"Content-Type", "application/grpc"},
                 {"TE", "trailers"},
                 {"User-Agent", kProbeUserAgent},
                 {"grpc-timeout", std::to_string(ms) + "m"}};
  return client.Start(std::move(req), [check, done = std::move(done)](const HttpResponse& r) {
    done(InterpretHealthResponse(check, r));
  });
}

}  // namespace podvisor::supervisor::probes
