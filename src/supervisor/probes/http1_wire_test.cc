// The HTTP/1.1 wire format of our prober (S7.2): what it sends, and how it
// frames the answers servers give, fed in arbitrary pieces.
#include "supervisor/probes/http1_wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace podvisor::supervisor::probes {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Feeds `wire` one byte at a time, as the worst-case socket would.
Http1ResponseParser ParseBytewise(const std::string& wire, bool close_at_end) {
  Http1ResponseParser parser;
  for (char ch : wire) {
    Status s = parser.Feed(std::string_view(&ch, 1));
    EXPECT_TRUE(s) << s.error().message();
  }
  if (close_at_end) {
    Status s = parser.Eof();
    EXPECT_TRUE(s) << s.error().message();
  }
  return parser;
}

TEST(Http1Wire, RequestCarriesDefaultsUnlessTheProbeGivesThem) {
  HttpRequest req;
  req.headers = {{"User-Agent", "kube-probe/1.33"}, {"X-Empty", ""}};
  HttpTarget target{"http", "::1", 8080, "/healthz?x=1"};
  std::string wire = FormatHttp1Request(req, target);
  EXPECT_EQ(wire,
            "GET /healthz?x=1 HTTP/1.1\r\nHost: [::1]:8080\r\nUser-Agent: kube-probe/1.33\r\n"
            "X-Empty: \r\nAccept: */*\r\nConnection: close\r\n\r\n");
  req.headers = {{"host", "app.example"}, {"accept", "text/plain"}};
  wire = FormatHttp1Request(req, target);
  EXPECT_THAT(wire, HasSubstr("host: app.example\r\n"));
  EXPECT_THAT(wire, Not(HasSubstr("Host: [::1]")));
  EXPECT_THAT(wire, Not(HasSubstr("*/*")));
}

TEST(Http1Wire, ContentLengthFramesTheBodyWithoutWaitingForTheClose) {
  auto p =
      ParseBytewise("HTTP/1.1 201 Created\r\nContent-Length: 5\r\nX-A:  v \r\n\r\nhello", false);
  ASSERT_TRUE(p.done());
  EXPECT_EQ(p.response().status, 201);
  EXPECT_EQ(p.response().body, "hello");
  ASSERT_NE(p.response().Header("x-a"), nullptr);
  EXPECT_EQ(*p.response().Header("x-a"), "v");
}

TEST(Http1Wire, ChunkedBodiesAndTrailersAreDecoded) {
  auto p = ParseBytewise(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n",
      false);
  ASSERT_TRUE(p.done());
  EXPECT_EQ(p.response().body, "hello world");
  ASSERT_NE(p.response().Header("x-trailer"), nullptr);
}

TEST(Http1Wire, ABodyWithoutLengthEndsWithTheConnection) {
  Http1ResponseParser p = ParseBytewise("HTTP/1.0 200 OK\r\n\r\nuntil the end", false);
  EXPECT_FALSE(p.done());
  ASSERT_TRUE(p.Eof());
  EXPECT_TRUE(p.done());
  EXPECT_EQ(p.response().body, "until the end");
}

TEST(Http1Wire, InterimAnswersAreSkipped) {
  auto p = ParseBytewise("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX-B: 1\r\n\r\n",
                         false);
  ASSERT_TRUE(p.done());
  EXPECT_EQ(p.response().status, 204);
  EXPECT_EQ(p.response().headers.size(), 1u);
}

TEST(Http1Wire, OnlyTheFirst10KiBOfTheBodyAreRead) {
  std::string body(kBodyMax + 500, 'x');
  Http1ResponseParser p;
  ASSERT_TRUE(p.Feed("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\n\r\n" + body));
  EXPECT_TRUE(p.done());
  EXPECT_EQ(p.response().body.size(), kBodyMax);
}

TEST(Http1Wire, MalformedOrCutShortAnswersAreErrors) {
  Http1ResponseParser garbage;
  EXPECT_FALSE(garbage.Feed("SSH-2.0-OpenSSH_9.2\r\n"));
  Http1ResponseParser cut;
  ASSERT_TRUE(cut.Feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"));
  Status s = cut.Eof();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), HasSubstr("in the middle of its answer"));
  Http1ResponseParser silent;
  s = silent.Eof();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), HasSubstr("without answering"));
  Http1ResponseParser huge;
  EXPECT_FALSE(huge.Feed("HTTP/1.1 200 OK\r\nX: " + std::string(70 * 1024, 'a')));
  Http1ResponseParser bad_length;
  EXPECT_FALSE(bad_length.Feed("HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n"));
}

}  // namespace
}  // namespace podvisor::supervisor::probes
