// HTTP/2 over cleartext with prior knowledge ("h2c"), the transport of
// gRPC health probes (S7.1), spoken through nghttp2's session API on the
// bytes HttpConnection moves. One stream per connection: the request's
// headers and body, then the response's headers, DATA (the first kBodyMax
// bytes kept) and trailers, where gRPC puts grpc-status.
#pragma once

#include <memory>

#include "supervisor/probes/http_connection.h"

namespace podvisor::supervisor::probes {

Result<std::unique_ptr<HttpExchange>> MakeHttp2Exchange(const HttpRequest& request,
                                                        const HttpTarget& target);

}  // namespace podvisor::supervisor::probes
