#include "supervisor/probes/http2_exchange.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cctype>
#include <vector>

namespace podvisor::supervisor::probes {
namespace {

std::string Lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

class Http2Exchange final : public HttpExchange {
 public:
  explicit Http2Exchange(std::string body) : body_(std::move(body)) {}
  ~Http2Exchange() override {
    if (session_) nghttp2_session_del(session_);
  }
  Http2Exchange(const Http2Exchange&) = delete;
  Http2Exchange& operator=(const Http2Exchange&) = delete;

  Status Begin(const HttpRequest& request, const HttpTarget& target);
  Status Produce(std::string& out) override;
  Status Consume(std::string_view in) override;
  Status PeerClosed() override {
    if (done_) return Ok();
    return Error("the server closed the connection before the HTTP/2 stream ended");
  }
  bool done() const override { return done_; }
  HttpResponse TakeResponse() override { return std::move(response_); }

 private:
  // nghttp2's C callbacks; user_data is the exchange.
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void* self);
  static int OnData(nghttp2_session*, uint8_t, int32_t stream, const uint8_t* data, size_t len,
                    void* self);
  static int OnStreamClose(nghttp2_session*, int32_t stream, uint32_t error_code, void* self);
  static ssize_t ReadBody(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                          nghttp2_data_source*, void* self);

  nghttp2_session* session_ = nullptr;
  int32_t stream_ = -1;
  std::string body_;
  std::size_t body_sent_ = 0;
  bool done_ = false;
  uint32_t reset_code_ = 0;
  HttpResponse response_;
};

int Http2Exchange::OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                            size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                            void* self) {
  auto* ex = static_cast<Http2Exchange*>(self);
  if (frame->hd.type != NGHTTP2_HEADERS || frame->hd.stream_id != ex->stream_) return 0;
  std::string_view n(reinterpret_cast<const char*>(name), namelen);
  std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  if (n == ":status") {
    long status = 0;
    for (char ch : v) status = status * 10 + (ch - '0');
    ex->response_.status = status;
  } else if (!n.empty() && n.front() != ':') {
    // Headers and trailers alike: grpc-status arrives in either.
    ex->response_.headers.emplace_back(std::string(n), std::string(v));
  }
  return 0;
}

int Http2Exchange::OnData(nghttp2_session*, uint8_t, int32_t stream, const uint8_t* data,
                          size_t len, void* self) {
  auto* ex = static_cast<Http2Exchange*>(self);
  std::string& body = ex->response_.body;
  if (stream == ex->stream_ && body.size() < kBodyMax) {
    body.append(reinterpret_cast<const char*>(data), std::min(len, kBodyMax - body.size()));
  }
  return 0;
}

int Http2Exchange::OnStreamClose(nghttp2_session*, int32_t stream, uint32_t error_code,
                                 void* self) {
  auto* ex = static_cast<Http2Exchange*>(self);
  if (stream != ex->stream_) return 0;
  ex->done_ = true;
  ex->reset_code_ = error_code;
  return 0;
}

ssize_t Http2Exchange::ReadBody(nghttp2_session*, int32_t, uint8_t* buf, size_t length,
                                uint32_t* flags, nghttp2_data_source*, void* self) {
  auto* ex = static_cast<Http2Exchange*>(self);
  std::size_t n = std::min(length, ex->body_.size() - ex->body_sent_);
  // A byte range of the body, not a C string.
  std::copy_n(ex->body_.data() + ex->body_sent_, n, buf);
  ex->body_sent_ += n;
  if (ex->body_sent_ == ex->body_.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

Status Http2Exchange::Begin(const HttpRequest& request, const HttpTarget& target) {
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) return Error("nghttp2: out of memory");
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &OnHeader);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &OnData);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &OnStreamClose);
  int rv = nghttp2_session_client_new(&session_, callbacks, this);
  nghttp2_session_callbacks_del(callbacks);
  if (rv != 0) return Error(std::string("nghttp2: ") + nghttp2_strerror(rv));
  // The client preface is followed by our SETTINGS frame (empty: defaults).
  rv = nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
  if (rv != 0) return Error(std::string("nghttp2: ") + nghttp2_strerror(rv));

  // HTTP/2 header names are lower case; the values outlive the submit
  // because nghttp2 copies them (NGHTTP2_NV_FLAG_NONE).
  std::vector<std::pair<std::string, std::string>> fields = {
      {":method", request.post ? "POST" : "GET"},
      {":scheme", target.scheme},
      {":authority", target.Authority()},
      {":path", target.path}};
  for (const auto& [name, value] : request.headers) {
    std::string lower = Lower(name);
    if (lower == "host") {
      fields[2].second = value;  // HTTP/2's Host is :authority
      continue;
    }
    fields.emplace_back(std::move(lower), value);
  }
  std::vector<nghttp2_nv> nva;
  nva.reserve(fields.size());
  for (auto& [name, value] : fields) {
    nva.push_back({reinterpret_cast<uint8_t*>(name.data()),
                   reinterpret_cast<uint8_t*>(value.data()), name.size(), value.size(),
                   NGHTTP2_NV_FLAG_NONE});
  }
  nghttp2_data_provider provider{};
  provider.read_callback = &ReadBody;
  stream_ = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(),
                                   request.post ? &provider : nullptr, this);
  if (stream_ < 0) return Error(std::string("nghttp2: ") + nghttp2_strerror(stream_));
  return Ok();
}

Status Http2Exchange::Produce(std::string& out) {
  for (;;) {
    const uint8_t* data = nullptr;
    ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) return Error(std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(n)));
    if (n == 0) return Ok();
    out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
}

Status Http2Exchange::Consume(std::string_view in) {
  ssize_t n =
      nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(in.data()), in.size());
  if (n < 0) return Error(std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(n)));
  if (done_ && reset_code_ != 0 && response_.status == 0) {
    return Error(std::string("HTTP/2 stream reset: ") + nghttp2_http2_strerror(reset_code_));
  }
  return Ok();
}

}  // namespace

Result<std::unique_ptr<HttpExchange>> MakeHttp2Exchange(const HttpRequest& request,
                                                        const HttpTarget& target) {
  auto exchange = std::make_unique<Http2Exchange>(request.body);
  if (auto s = exchange->Begin(request, target); !s) return s.error();
  return std::unique_ptr<HttpExchange>(std::move(exchange));
}

}  // namespace podvisor::supervisor::probes
