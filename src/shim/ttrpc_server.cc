#include "shim/ttrpc_server.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

#include "ttrpc.pb.h"

namespace podvisor::shim {

std::string ErrorResponse(RpcCode code, const std::string& message) {
  podvisor::ttrpc::Response response;
  response.mutable_status()->set_code(static_cast<int32_t>(code));
  response.mutable_status()->set_message(message);
  return response.SerializeAsString();
}

std::string OkResponse(const google::protobuf::MessageLite& message) {
  podvisor::ttrpc::Response response;
  response.set_payload(message.SerializeAsString());
  return response.SerializeAsString();
}

void Reply::Ok(const google::protobuf::MessageLite& message) const {
  std::string payload = OkResponse(message);
  if (payload.size() > kMaxMessageLength) {
    Send(ErrorResponse(RpcCode::kResourceExhausted, "response larger than 4 MiB"));
    return;
  }
  Send(payload);
}

void Reply::Fail(RpcCode code, const std::string& message) const {
  Send(ErrorResponse(code, message.substr(0, 64 * 1024)));
}

void Reply::Send(const std::string& response_payload) const {
  if (*done_) return;
  *done_ = true;
  if (auto conn = conn_.lock()) {
    conn->Write(EncodeFrame(stream_id_, FrameType::kResponse, response_payload));
  }
}

TtrpcServer::~TtrpcServer() {
  // Close() calls Forget(), which must not find the map being walked.
  auto connections = std::move(connections_);
  connections_.clear();
  for (auto& [fd, conn] : connections) conn->Close();
  if (listener_.valid()) loop_.Remove(listener_.get());
}

Status TtrpcServer::Serve(Fd listener) {
  listener_ = std::move(listener);
  return loop_.Add(listener_.get(), EPOLLIN, [this](uint32_t) { OnAccept(); });
}

void TtrpcServer::OnAccept() {
  // Drains the accept queue: the listener is level-triggered anyway, but one
  // wakeup for several connections saves rounds.
  for (;;) {
    int fd = accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;  // EAGAIN, or a transient error: the next wakeup retries
    auto conn = std::make_shared<Connection>(*this, loop_, Fd(fd), handler_);
    if (!conn->Start()) continue;  // dropped: its Fd closes
    connections_[fd] = std::move(conn);
  }
}

void TtrpcServer::Forget(int fd) {
  // Keeps the connection alive until this handler returns: erasing it here
  // may destroy the object whose member function called us.
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  std::shared_ptr<Connection> keep = std::move(it->second);
  connections_.erase(it);
  loop_.AddTimer(MonoTime{}, [keep] {});
}

Status Connection::Start() {
  return loop_.Add(fd_.get(), EPOLLIN | EPOLLRDHUP, [this](uint32_t events) { OnEvents(events); });
}

void Connection::Close() {
  if (closed_) return;
  closed_ = true;
  loop_.Remove(fd_.get());
  int fd = fd_.get();
  fd_.Reset();
  server_.Forget(fd);
}

void Connection::OnEvents(uint32_t events) {
  auto self = shared_from_this();
  if (events & EPOLLOUT) Flush();
  if (closed_) return;
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
    char buf[64 * 1024];
    for (;;) {
      ssize_t n = read(fd_.get(), buf, sizeof buf);
      if (n > 0) {
        std::vector<Frame> frames;
        reader_.Feed(std::string_view(buf, static_cast<std::size_t>(n)), frames);
        for (const auto& frame : frames) {
          HandleFrame(frame);
          if (closed_) return;
        }
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        if (errno == EINTR) continue;
        return;
      }
      Close();  // EOF or a broken connection
      return;
    }
  }
}

void Connection::HandleFrame(const Frame& frame) {
  const uint32_t stream = frame.header.stream_id;
  if (frame.oversized) {
    Write(EncodeFrame(stream, FrameType::kResponse,
                      ErrorResponse(RpcCode::kResourceExhausted,
                                    "message length " + std::to_string(frame.header.length) +
                                        " exceeds maximum message size of " +
                                        std::to_string(kMaxMessageLength))));
    return;
  }
  if (frame.header.type != static_cast<uint8_t>(FrameType::kRequest)) return;  // future types
  podvisor::ttrpc::Request request;
  if (!request.ParseFromString(frame.payload)) {
    Write(EncodeFrame(stream, FrameType::kResponse,
                      ErrorResponse(RpcCode::kInvalidArgument, "unmarshal request error")));
    return;
  }
  if (stream % 2 != 1) {
    Write(EncodeFrame(stream, FrameType::kResponse,
                      ErrorResponse(RpcCode::kInvalidArgument,
                                    "StreamID must be odd for client initiated streams")));
    return;
  }
  RpcRequest rpc{request.service(), request.method(), request.payload()};
  handler_(rpc, Reply(weak_from_this(), stream));
}

void Connection::Write(const std::string& bytes) {
  if (closed_) return;
  out_.append(bytes);
  Flush();
}

void Connection::Flush() {
  while (!out_.empty()) {
    ssize_t n = send(fd_.get(), out_.data(), out_.size(), MSG_NOSIGNAL);
    if (n > 0) {
      out_.erase(0, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      (void)loop_.Modify(fd_.get(), EPOLLIN | EPOLLRDHUP | EPOLLOUT);
      return;
    }
    Close();
    return;
  }
  (void)loop_.Modify(fd_.get(), EPOLLIN | EPOLLRDHUP);
}

}  // namespace podvisor::shim
