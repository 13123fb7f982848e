// The HTTP/1.1 wire format of probe and hook requests (S7.2, S8.1): the
// request podvisor writes and an incremental parser for the response it
// reads. Pure code, no sockets: HttpConnection feeds it what arrives.
//
// Only what a prober needs: one request per connection ("Connection:
// close", like the kubelet's prober, which never reuses connections), a
// body framed by Content-Length, chunked encoding or the end of the
// connection, interim 1xx answers skipped, and no more of the body kept
// than a probe reports (kBodyMax); the rest is not read at all.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/result.h"
#include "supervisor/probes/http_client.h"

namespace podvisor::supervisor::probes {

// What a probe keeps of a response body (the kubelet reads 10 KiB).
inline constexpr std::size_t kBodyMax = 10 * 1024;

// Where one request goes, after redirects are resolved: an IP address
// (IPv6 without brackets), the port and the path with its query.
struct HttpTarget {
  std::string scheme = "http";  // "http" or "https"
  std::string host;
  int port = 0;
  std::string path = "/";
  // "host:port" as in a URL, IPv6 in brackets (the default Host header).
  std::string Authority() const;
};

// The request line and headers (and body, for a POST). The request's own
// headers come in order; "Host" and "Accept" are defaulted unless given,
// as the kubelet does.
std::string FormatHttp1Request(const HttpRequest& request, const HttpTarget& target);

class Http1ResponseParser {
 public:
  // Takes the next bytes; an error means a malformed response.
  Status Feed(std::string_view data);
  // The peer closed the connection: completes a body that runs to the end
  // of the connection, or is an error when the response was cut short.
  Status Eof();
  bool done() const { return state_ == State::kDone; }
  HttpResponse& response() { return response_; }

 private:
  enum class State {
    kStatusLine,
    kHeaders,
    kBody,
    kChunkSize,
    kChunkData,
    kChunkEnd,
    kTrailers,
    kDone
  };
  Status Line(std::string_view line);
  Status HeadersEnded();
  void Keep(std::string_view data);

  State state_ = State::kStatusLine;
  std::string pending_;  // a line not yet complete
  std::size_t head_bytes_ = 0;
  bool chunked_ = false;
  bool has_length_ = false;
  uint64_t left_ = 0;  // of the body (Content-Length) or of the current chunk
  HttpResponse response_;
};

}  // namespace podvisor::supervisor::probes
