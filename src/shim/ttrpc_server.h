// A ttrpc server on the shim's unix socket, driven by the EventLoop: it
// accepts connections (containerd keeps one; a restarted containerd opens a
// new one), cuts requests out of each byte stream (ttrpc_frame.h) and hands
// them to one handler. Answers may come later than the request (Wait
// answers when the pod ends): the handler gets a Reply it may keep.
//
// What the server refuses itself, as containerd's ttrpc server does: a
// message over 4 MiB (RESOURCE_EXHAUSTED), a payload that is not a Request
// (INVALID_ARGUMENT), an even stream id (INVALID_ARGUMENT: clients use odd
// ones); frames that are not requests are ignored. A connection that
// breaks is closed; replies meant for it are dropped.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/fd.h"
#include "common/result.h"
#include "shim/ttrpc_frame.h"
#include "supervisor/loop/event_loop.h"

namespace google::protobuf {
class MessageLite;
}

namespace podvisor::shim {

// gRPC status codes (google.golang.org/grpc/codes); containerd's errdefs
// turns NOT_FOUND, ALREADY_EXISTS, FAILED_PRECONDITION, UNIMPLEMENTED...
// back into its own errors.
enum class RpcCode : int32_t {
  kOk = 0,
  kInvalidArgument = 3,
  kNotFound = 5,
  kAlreadyExists = 6,
  kFailedPrecondition = 9,
  kResourceExhausted = 8,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
};

class Connection;

// The answer to one request; copyable, usable once (later uses are
// ignored), and harmless after its connection closed.
class Reply {
 public:
  Reply(std::weak_ptr<Connection> conn, uint32_t stream_id)
      : conn_(std::move(conn)), stream_id_(stream_id), done_(std::make_shared<bool>(false)) {}
  void Ok(const google::protobuf::MessageLite& message) const;
  void Fail(RpcCode code, const std::string& message) const;

 private:
  void Send(const std::string& response_payload) const;
  std::weak_ptr<Connection> conn_;
  uint32_t stream_id_;
  std::shared_ptr<bool> done_;
};

struct RpcRequest {
  std::string service;  // "containerd.task.v2.Task"
  std::string method;   // "Create"
  std::string payload;  // the method's request message
};

using RpcHandler = std::function<void(const RpcRequest& request, const Reply& reply)>;

class TtrpcServer {
 public:
  TtrpcServer(supervisor::loop::EventLoop& loop, RpcHandler handler)
      : loop_(loop), handler_(std::move(handler)) {}
  ~TtrpcServer();
  TtrpcServer(const TtrpcServer&) = delete;
  TtrpcServer& operator=(const TtrpcServer&) = delete;

  // Serves on `listener`, a listening unix stream socket.
  Status Serve(Fd listener);
  std::size_t connections() const { return connections_.size(); }

  // Called by a Connection that ended.
  void Forget(int fd);

 private:
  void OnAccept();

  supervisor::loop::EventLoop& loop_;
  RpcHandler handler_;
  Fd listener_;
  std::map<int, std::shared_ptr<Connection>> connections_;
};

// One client connection (internal; declared here for Reply).
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(TtrpcServer& server, supervisor::loop::EventLoop& loop, Fd fd,
             const RpcHandler& handler)
      : server_(server), loop_(loop), fd_(std::move(fd)), handler_(handler) {}
  Status Start();
  void Write(const std::string& bytes);
  void Close();
  int fd() const { return fd_.get(); }

 private:
  void OnEvents(uint32_t events);
  void HandleFrame(const Frame& frame);
  void Flush();

  TtrpcServer& server_;
  supervisor::loop::EventLoop& loop_;
  Fd fd_;
  const RpcHandler& handler_;
  FrameReader reader_;
  std::string out_;
  bool closed_ = false;
};

// The Response payload for an error, and for a result.
std::string ErrorResponse(RpcCode code, const std::string& message);
std::string OkResponse(const google::protobuf::MessageLite& message);

}  // namespace podvisor::shim
