// The control socket (docs/INTERFACE.md "Control socket"): DIR/<pod>/control.sock,
// a Unix stream socket of mode 0600 that accepts only peers with the
// supervisor's uid or root (SO_PEERCRED). One JSON request per connection,
// one JSON reply, then the server closes.
//
// Everything is non-blocking inside the event loop: a client that connects
// and sends nothing, sends garbage, sends 1 GiB, or never reads its reply
// costs one descriptor for at most `request_timeout` and never delays a
// container transition. Bad requests are answered with {"error": ...,
// "code": "InvalidArgument"} (control_error.h):
// malformed JSON, a non-object, more than `max_request_bytes` (64 KiB;
// the largest real request, a stop with a 256-byte reason, is ~300 bytes),
// and a truncated request that neither ends in a newline nor half-closes
// within `request_timeout`. Replies may be deferred (`stop` answers when the
// pod has ended): the handler gets a Responder it may call later; if the
// client has gone by then, the reply is dropped.
//
// A reply is written at once when the client's socket takes it (a reply of
// a few hundred bytes always fits); only what does not fit waits for the
// loop. Flush writes whatever waits, blocking, for a supervisor about to
// re-execute (S15.2); Adopt serves the listening socket such a supervisor
// handed to its new binary across execve, which never stopped listening,
// so a client that connects during the handover waits in its backlog
// rather than being refused.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "common/result.h"
#include "supervisor/control/control_error.h"
#include "supervisor/loop/event_loop.h"

namespace podvisor::supervisor::control {

struct ControlServerOptions {
  std::size_t max_request_bytes = 64 * 1024;
  std::size_t max_connections = 4096;
  Duration request_timeout = std::chrono::seconds(5);
};

// One reply, serialized once: a JSON document, or text already serialized
// and shared between many replies (the supervisor's cached status, so that
// a flood of status requests costs a copy each, not a serialization).
class ControlReply {
 public:
  ControlReply(const nlohmann::json& doc);  // NOLINT: implicit, replies are JSON
  // `json_text` is one serialized JSON document.
  static ControlReply FromText(std::string json_text);
  const std::string& line() const { return *line_; }  // the text and a newline

 private:
  ControlReply() = default;
  std::shared_ptr<const std::string> line_;
};

class ControlServer {
 public:
  using Responder = std::function<void(const ControlReply& reply)>;
  // Called with a parsed JSON object; must eventually call respond (or
  // not, if the server is being torn down).
  using Handler = std::function<void(const nlohmann::json& request, Responder respond)>;

  // Binds `socket_path` (replacing a stale socket file), mode 0600.
  static Result<std::unique_ptr<ControlServer>> Listen(loop::EventLoop& loop,
                                                       const std::filesystem::path& socket_path,
                                                       Handler handler,
                                                       ControlServerOptions options = {});
  // S15.2: serves `listen_fd`, a Unix stream socket already bound to
  // `socket_path` and listening (inherited across execve from the
  // supervisor this one replaces): no bind, and the socket file is left as
  // it is. Connections queued in its backlog are answered. The descriptor
  // is made non-blocking and close-on-exec again. An error when it is no
  // listening socket.
  static Result<std::unique_ptr<ControlServer>> Adopt(loop::EventLoop& loop,
                                                      const std::filesystem::path& socket_path,
                                                      Fd listen_fd, Handler handler,
                                                      ControlServerOptions options = {});
  ~ControlServer();  // closes every connection and unlinks the socket
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  std::size_t open_connections() const { return connections_.size(); }
  // The listening socket, for a supervisor that hands it to its next
  // binary across execve (S15.2); still owned by this server.
  int listen_fd() const { return listen_fd_.get(); }
  // Writes every reply still waiting for room in its client's socket,
  // blocking (poll) for at most `bound`, and closes those connections:
  // what a supervisor calls before execve, so that the reply it just gave
  // is on the wire. True when nothing is left waiting; a client that does
  // not read within `bound` loses its reply.
  bool Flush(Duration bound);
  uint64_t refused_peers() const { return refused_peers_; }

 private:
  struct Connection;
  ControlServer(loop::EventLoop& loop, std::filesystem::path path, Fd listen_fd, Handler handler,
                ControlServerOptions options);
  static Result<std::unique_ptr<ControlServer>> Serve(loop::EventLoop& loop,
                                                      const std::filesystem::path& path, Fd fd,
                                                      Handler handler,
                                                      ControlServerOptions options);
  void OnAcceptable();
  void OnEvent(int fd, uint32_t events);
  void OnReadable(int fd);
  void OnRequestTimeout(int fd);
  void OnWritable(int fd);
  void Dispatch(int fd);
  void Respond(int fd, uint64_t serial, const ControlReply& reply);
  void Close(int fd);

  loop::EventLoop& loop_;
  std::filesystem::path path_;
  Fd listen_fd_;
  Handler handler_;
  ControlServerOptions options_;
  std::unordered_map<int, std::unique_ptr<Connection>> connections_;
  uint64_t next_serial_ = 1;
  uint64_t refused_peers_ = 0;
  loop::EventLoop::TimerId accept_pause_ = 0;  // accepting paused after EMFILE
  // Responders hold a weak reference, so a reply after destruction is a no-op.
  std::shared_ptr<ControlServer*> self_;
};

// The client side, for the CLI: connects, sends `request`, reads the reply.
// Blocking, with an overall timeout (none when zero, for `stop` which
// waits for the pod to end).
Result<nlohmann::json> ControlRequest(const std::filesystem::path& socket_path,
                                      const nlohmann::json& request,
                                      Duration timeout = std::chrono::seconds(10));

}  // namespace podvisor::supervisor::control
