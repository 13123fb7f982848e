// gRPC health probes (S7.1): the hand-made protobuf messages and the
// verdict on a finished call.
#include "supervisor/probes/grpc_health.h"

#include <gtest/gtest.h>

namespace podvisor::supervisor::probes {
namespace {

std::string Frame(const std::string& message) {
  std::string f(1, '\0');
  auto len = static_cast<uint32_t>(message.size());
  for (int shift = 24; shift >= 0; shift -= 8)
    f.push_back(static_cast<char>((len >> shift) & 0xff));
  return f + message;
}

HttpResponse Answer(const std::string& body, const char* grpc_status = "0") {
  HttpResponse r;
  r.received = true;
  r.status = 200;
  r.body = body;
  r.headers = {{"content-type", "application/grpc"}};
  if (grpc_status) r.headers.emplace_back("grpc-status", grpc_status);
  return r;
}

TEST(GrpcHealth, S7_1_RequestCarriesTheServiceName) {
  EXPECT_EQ(EncodeHealthCheckRequest(""), std::string("\0\0\0\0\0", 5));
  EXPECT_EQ(EncodeHealthCheckRequest("mesh.health"),
            Frame(std::string("\x0a\x0b", 2) + "mesh.health"));
  std::string long_name(200, 'x');  // a two-byte varint length
  EXPECT_EQ(EncodeHealthCheckRequest(long_name), Frame(std::string("\x0a\xc8\x01", 3) + long_name));
}

TEST(GrpcHealth, S7_1_ResponseStatusIsDecoded) {
  EXPECT_EQ(*DecodeHealthCheckResponse(Frame("\x08\x01")), 1);
  EXPECT_EQ(*DecodeHealthCheckResponse(Frame("\x08\x02")), 2);
  EXPECT_EQ(*DecodeHealthCheckResponse(Frame("")), 0);  // proto3 default: UNKNOWN
  // Unknown fields of every wire type are skipped.
  EXPECT_EQ(*DecodeHealthCheckResponse(Frame(std::string("\x12\x02hi\x18\x05\x08\x01", 8))), 1);
  EXPECT_FALSE(DecodeHealthCheckResponse("\0\0"));
  EXPECT_FALSE(DecodeHealthCheckResponse(std::string("\0\0\0\0\x09\x08", 6)));      // truncated
  EXPECT_FALSE(DecodeHealthCheckResponse(std::string("\1\0\0\0\x02\x08\x01", 7)));  // compressed
}

TEST(GrpcHealth, S7_1_OnlyServingWithGrpcStatusZeroSucceeds) {
  GrpcHealthCheck check;
  check.port = 9000;
  EXPECT_TRUE(InterpretHealthResponse(check, Answer(Frame("\x08\x01"))).serving);
  GrpcHealthResult not_serving = InterpretHealthResponse(check, Answer(Frame("\x08\x02")));
  EXPECT_FALSE(not_serving.serving);
  EXPECT_EQ(not_serving.message, "service unhealthy (responded with \"NOT_SERVING\")");
  EXPECT_FALSE(InterpretHealthResponse(check, Answer(Frame(""))).serving);  // UNKNOWN
}

TEST(GrpcHealth, S7_1_ErrorStatusFromTrailersOrTrailersOnlyFails) {
  GrpcHealthCheck check;
  check.port = 9000;
  HttpResponse unknown = Answer("", "5");
  unknown.headers.emplace_back("grpc-message", "unknown service");
  GrpcHealthResult r = InterpretHealthResponse(check, unknown);
  EXPECT_FALSE(r.serving);
  EXPECT_EQ(r.message, "rpc error: code = NotFound desc = unknown service");
  EXPECT_FALSE(InterpretHealthResponse(check, Answer(Frame("\x08\x01"), nullptr)).serving);
}

TEST(GrpcHealth, S7_1_TransportErrorsAndNonGrpcAnswersFail) {
  GrpcHealthCheck check;
  check.port = 9000;
  HttpResponse refused;
  refused.error = "Connection refused";
  GrpcHealthResult r = InterpretHealthResponse(check, refused);
  EXPECT_FALSE(r.serving);
  EXPECT_EQ(r.message, "failed to connect service \"127.0.0.1:9000\": Connection refused");
  HttpResponse http404 = Answer(Frame("\x08\x01"));
  http404.status = 404;
  EXPECT_FALSE(InterpretHealthResponse(check, http404).serving);
}

}  // namespace
}  // namespace podvisor::supervisor::probes
