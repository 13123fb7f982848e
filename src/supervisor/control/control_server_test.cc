// docs/INTERFACE.md "Control socket": one JSON request, one JSON reply; bad
// requests get {"error": ...}; peers of another uid are refused.
#include "supervisor/control/control_server.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

namespace podvisor::supervisor::control {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

class ControlServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("ctl-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    sock_ = dir_ / "control.sock";
    loop_.emplace(std::move(loop::EventLoop::Create()).value());
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }

  void Serve(ControlServer::Handler handler, ControlServerOptions opts = {}) {
    auto s = ControlServer::Listen(*loop_, sock_, std::move(handler), opts);
    ASSERT_TRUE(s.ok()) << s.error().message();
    server_ = std::move(s).value();
  }

  // Runs the loop until `client` (on another thread) is done.
  template <typename F>
  void WithClient(F client) {
    std::atomic<bool> done{false};
    std::thread t([&] {
      client();
      done = true;
    });
    while (!done) ASSERT_TRUE(loop_->RunOnce(10ms).ok());
    t.join();
  }

  json Request(const json& req) {
    json reply;
    WithClient([&] {
      auto r = ControlRequest(sock_, req, 5s);
      reply = r.ok() ? *r : json{{"client_error", r.error().message()}};
    });
    return reply;
  }

  // Sends raw bytes, half-closes, returns the raw reply.
  std::string RawRequest(const std::string& bytes) {
    std::string reply;
    WithClient([&] {
      int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::strcpy(addr.sun_path, sock_.c_str());
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return;
      std::size_t off = 0;
      while (off < bytes.size()) {
        ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
        if (n <= 0) break;
        off += static_cast<std::size_t>(n);
      }
      shutdown(fd, SHUT_WR);
      char buf[4096];
      ssize_t n;
      while ((n = read(fd, buf, sizeof buf)) > 0) reply.append(buf, static_cast<std::size_t>(n));
      close(fd);
    });
    return reply;
  }

  fs::path dir_, sock_;
  std::optional<loop::EventLoop> loop_;
  std::unique_ptr<ControlServer> server_;
};

ControlServer::Handler Echo() {
  return [](const json& req, ControlServer::Responder respond) { respond(json{{"echo", req}}); };
}

TEST_F(ControlServerTest, AnswersOneRequestPerConnection) {
  Serve(Echo());
  json reply = Request({{"op", "status"}});
  EXPECT_EQ(reply["echo"]["op"], "status");
  EXPECT_EQ(server_->open_connections(), 0u);
}

TEST_F(ControlServerTest, SocketIsMode0600) {
  Serve(Echo());
  struct stat st {};
  ASSERT_EQ(stat(sock_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(ControlServerTest, MalformedRequestsGetAnErrorAndTheServerLives) {
  Serve(Echo());
  EXPECT_EQ(json::parse(RawRequest("{not json")),
            (json{{"error", "malformed JSON request"}, {"code", "InvalidArgument"}}));
  EXPECT_EQ(json::parse(RawRequest("[1,2]\n")),
            (json{{"error", "request must be a JSON object"}, {"code", "InvalidArgument"}}));
  EXPECT_EQ(json::parse(RawRequest("")),
            (json{{"error", "malformed JSON request"}, {"code", "InvalidArgument"}}));
  EXPECT_EQ(json::parse(RawRequest(std::string("\xff\xfe\0", 3))),
            (json{{"error", "malformed JSON request"}, {"code", "InvalidArgument"}}));
  EXPECT_EQ(Request({{"op", "x"}})["echo"]["op"], "x");
}

TEST_F(ControlServerTest, OversizedRequestsAreCutShort) {
  ControlServerOptions opts;
  opts.max_request_bytes = 1024;
  Serve(Echo(), opts);
  std::string reply = RawRequest(std::string(1 << 20, 'a'));
  ASSERT_FALSE(reply.empty());
  EXPECT_EQ(json::parse(reply)["error"], "request larger than 1024 bytes");
  EXPECT_EQ(json::parse(reply)["code"], "InvalidArgument");
  EXPECT_EQ(server_->open_connections(), 0u);
}

TEST_F(ControlServerTest, SilentClientsAreDroppedAfterTheTimeout) {
  ControlServerOptions opts;
  opts.request_timeout = 50ms;
  Serve(Echo(), opts);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, sock_.c_str());
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  for (int i = 0; i < 10 && server_->open_connections() == 0; ++i)
    ASSERT_TRUE(loop_->RunOnce(10ms).ok());
  EXPECT_EQ(server_->open_connections(), 1u);
  auto until = std::chrono::steady_clock::now() + 2s;
  while (server_->open_connections() > 0 && std::chrono::steady_clock::now() < until) {
    ASSERT_TRUE(loop_->RunOnce(20ms).ok());
  }
  EXPECT_EQ(server_->open_connections(), 0u);
  // Answered, then closed by the server.
  std::string reply;
  char buf[256];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;)
    reply.append(buf, static_cast<std::size_t>(n));
  EXPECT_EQ(json::parse(reply),
            (json{{"error", "no request within 50 ms"}, {"code", "InvalidArgument"}}));
  close(fd);
}

TEST_F(ControlServerTest, ConnectionsOverTheLimitAreUnavailable) {
  ControlServerOptions opts;
  opts.max_connections = 1;
  Serve(Echo(), opts);
  // One connection that holds its place, sending nothing.
  int held = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, sock_.c_str());
  ASSERT_EQ(connect(held, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  for (int i = 0; i < 10 && server_->open_connections() == 0; ++i)
    ASSERT_TRUE(loop_->RunOnce(10ms).ok());
  ASSERT_EQ(server_->open_connections(), 1u);
  EXPECT_EQ(json::parse(RawRequest("{\"op\":\"status\"}\n")),
            (json{{"error", "too many connections"}, {"code", "Unavailable"}}));
  close(held);
}

TEST_F(ControlServerTest, TruncatedRequestsGetAnErrorAfterTheTimeout) {
  ControlServerOptions opts;
  opts.request_timeout = 50ms;
  Serve(Echo(), opts);
  std::string reply;
  WithClient([&] {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, sock_.c_str());
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return;
    // Half a request, no newline, and the client keeps the connection open.
    if (send(fd, "{\"op\":\"sta", 10, MSG_NOSIGNAL) != 10) return;
    char buf[256];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;)
      reply.append(buf, static_cast<std::size_t>(n));
    close(fd);
  });
  EXPECT_EQ(json::parse(reply),
            (json{{"error", "incomplete request: no newline or end of input within 50 ms"},
                  {"code", "InvalidArgument"}}));
  EXPECT_EQ(server_->open_connections(), 0u);
}

TEST_F(ControlServerTest, DeferredRepliesArriveWhenReady) {
  ControlServer::Responder pending;
  Serve([&](const json&, ControlServer::Responder respond) { pending = std::move(respond); });
  json reply;
  std::atomic<bool> done{false};
  std::thread t([&] {
    reply = *ControlRequest(sock_, {{"op", "stop"}}, 0s);
    done = true;
  });
  auto until = std::chrono::steady_clock::now() + 2s;
  while (!pending && std::chrono::steady_clock::now() < until)
    ASSERT_TRUE(loop_->RunOnce(10ms).ok());
  ASSERT_TRUE(pending);
  // The client half-closed after its request; it must still be connected.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(loop_->RunOnce(10ms).ok());
  EXPECT_EQ(server_->open_connections(), 1u);
  pending(json{{"phase", "Succeeded"}});
  while (!done) ASSERT_TRUE(loop_->RunOnce(10ms).ok());
  t.join();
  EXPECT_EQ(reply["phase"], "Succeeded");
}

TEST_F(ControlServerTest, ARepliesAfterTheServerIsGoneAreDropped) {
  ControlServer::Responder pending;
  Serve([&](const json&, ControlServer::Responder respond) { pending = std::move(respond); });
  std::thread t([&] { (void)ControlRequest(sock_, {{"op", "stop"}}, 2s); });
  auto until = std::chrono::steady_clock::now() + 2s;
  while (!pending && std::chrono::steady_clock::now() < until)
    ASSERT_TRUE(loop_->RunOnce(10ms).ok());
  server_.reset();  // closes the connection: the client sees EOF
  t.join();
  ASSERT_TRUE(pending);
  pending(json{{"late", true}});  // must not crash
  EXPECT_FALSE(fs::exists(sock_));
}

// A request read at accept time is handled at once; a handler that ends
// the pod destroys the server inside its own accept (a stop of a pod with
// nothing running): the server must not touch itself afterwards (an ASan
// run saw a use after free).
TEST_F(ControlServerTest, AHandlerMayDestroyTheServerWhileItAccepts) {
  bool handled = false;
  Serve([&](const json&, ControlServer::Responder respond) {
    handled = true;
    respond(json{{"stopping", true}});
    server_.reset();
  });
  // Connected and written before the loop runs, so the request is read in
  // the accept itself.
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, sock_.c_str());
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string request = "{\"op\":\"stop\"}\n";
  ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  for (int i = 0; i < 100 && !handled; ++i) ASSERT_TRUE(loop_->RunOnce(10ms).ok());
  EXPECT_TRUE(handled);
  EXPECT_EQ(server_, nullptr);
  EXPECT_FALSE(fs::exists(sock_));
  close(fd);
}

TEST_F(ControlServerTest, ReplacesAStaleSocketButNotALiveOne) {
  Serve(Echo());
  auto second = ControlServer::Listen(*loop_, sock_, Echo());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code(), EADDRINUSE);
  server_.reset();
  // A socket file without a listener (a SIGKILLed supervisor's) is replaced.
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, sock_.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  close(fd);
  Serve(Echo());
  EXPECT_EQ(Request({{"op", "status"}})["echo"]["op"], "status");
}

// A listening socket bound to `path`, as a supervisor hands it to its next
// binary across execve: blocking and without close-on-exec, as an
// inherited descriptor may be.
Fd ListeningSocket(const fs::path& path) {
  Fd fd(socket(AF_UNIX, SOCK_STREAM, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  EXPECT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(listen(fd.get(), 16), 0);
  return fd;
}

// A client connected to `path` whose request is sent and half-closed.
int ConnectAndSend(const fs::path& path, const std::string& request) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << strerror(errno);
  EXPECT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  shutdown(fd, SHUT_WR);
  return fd;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<std::size_t>(n));
  return out;
}

TEST_F(ControlServerTest, S15_2_ListenFdIsTheListeningSocket) {
  Serve(Echo());
  int listening = 0;
  socklen_t len = sizeof listening;
  ASSERT_EQ(getsockopt(server_->listen_fd(), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len), 0);
  EXPECT_EQ(listening, 1);
}

// S15.2: the socket a new binary inherits never stopped listening: a client
// that connected while nobody accepted (the execve) is answered by the
// adopted server, and so is the next one; the socket file stays.
TEST_F(ControlServerTest, S15_2_AdoptServesAnInheritedSocketAndItsBacklog) {
  Fd inherited = ListeningSocket(sock_);
  struct stat before {};
  ASSERT_EQ(stat(sock_.c_str(), &before), 0);
  int early = ConnectAndSend(sock_, R"({"op":"summary"})");
  auto adopted = ControlServer::Adopt(*loop_, sock_, std::move(inherited), Echo());
  ASSERT_TRUE(adopted.ok()) << adopted.error().message();
  server_ = std::move(adopted).value();
  int fd_flags = fcntl(server_->listen_fd(), F_GETFD);
  int fl_flags = fcntl(server_->listen_fd(), F_GETFL);
  EXPECT_TRUE(fd_flags & FD_CLOEXEC);
  EXPECT_TRUE(fl_flags & O_NONBLOCK);
  std::string early_reply;
  WithClient([&] { early_reply = ReadAll(early); });
  close(early);
  EXPECT_EQ(json::parse(early_reply)["echo"]["op"], "summary");
  EXPECT_EQ(Request({{"op", "status"}})["echo"]["op"], "status");
  struct stat st {};
  ASSERT_EQ(stat(sock_.c_str(), &st), 0);
  EXPECT_EQ(st.st_ino, before.st_ino) << "no bind, no unlink";
}

TEST_F(ControlServerTest, S15_2_AdoptRefusesASocketThatDoesNotListen) {
  Fd plain(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  auto adopted = ControlServer::Adopt(*loop_, sock_, std::move(plain), Echo());
  ASSERT_FALSE(adopted.ok());
  EXPECT_EQ(adopted.error().code(), EINVAL);
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  close(pipe_fds[1]);
  EXPECT_FALSE(ControlServer::Adopt(*loop_, sock_, Fd(pipe_fds[0]), Echo()).ok());
}

// A small reply is on the wire when the responder returns, with no turn of
// the loop: a supervisor may execve right after it (S15.2).
TEST_F(ControlServerTest, S15_2_ASmallReplyIsWrittenBeforeTheResponderReturns) {
  ControlServer::Responder pending;
  Serve([&](const json&, ControlServer::Responder respond) { pending = std::move(respond); });
  int fd = ConnectAndSend(sock_, R"({"op":"upgrade"})");
  auto until = std::chrono::steady_clock::now() + 2s;
  while (!pending && std::chrono::steady_clock::now() < until)
    ASSERT_TRUE(loop_->RunOnce(10ms).ok());
  ASSERT_TRUE(pending);
  pending(json{{"upgrading", true}});
  EXPECT_EQ(server_->open_connections(), 0u);
  EXPECT_TRUE(server_->Flush(0ms)) << "nothing is left waiting";
  EXPECT_EQ(json::parse(ReadAll(fd))["upgrading"], true);
  close(fd);
}

// A reply larger than the socket takes waits for the loop; Flush writes it
// without one, for a client that reads, and gives up on one that does not.
TEST_F(ControlServerTest, S15_2_FlushWritesAWaitingReplyWithinItsBound) {
  const std::string big(8 << 20, 'x');
  std::vector<ControlServer::Responder> responders;
  Serve([&](const json&, ControlServer::Responder respond) {
    responders.push_back(std::move(respond));
  });
  int reader = ConnectAndSend(sock_, R"({"op":"status"})");
  int idle = ConnectAndSend(sock_, R"({"op":"status"})");
  auto until = std::chrono::steady_clock::now() + 2s;
  while (responders.size() < 2 && std::chrono::steady_clock::now() < until) {
    ASSERT_TRUE(loop_->RunOnce(10ms).ok());
  }
  ASSERT_EQ(responders.size(), 2u);
  for (auto& respond : responders) respond(json{{"text", big}});
  EXPECT_EQ(server_->open_connections(), 2u) << "8 MiB does not fit a socket";
  EXPECT_FALSE(server_->Flush(50ms)) << "no client reads yet";
  // Which connection got which responder does not matter: read one.
  std::string got;
  std::thread t([&] { got = ReadAll(reader); });
  // The idle client never reads: Flush gives up on it at its bound, after
  // the reader's reply is all written.
  EXPECT_FALSE(server_->Flush(2s));
  EXPECT_EQ(server_->open_connections(), 1u);
  shutdown(idle, SHUT_RDWR);
  EXPECT_TRUE(server_->Flush(2s)) << "a client that is gone is dropped";
  t.join();
  EXPECT_EQ(json::parse(got)["text"].get<std::string>().size(), big.size());
  EXPECT_EQ(server_->open_connections(), 0u);
  close(reader);
  close(idle);
}

TEST_F(ControlServerTest, PeersOfAnotherUidAreRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to connect as another uid";
  Serve(Echo());
  // Open the file mode so only SO_PEERCRED stands between uid 65534 and us.
  ASSERT_EQ(chmod(sock_.c_str(), 0666), 0);
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t child = fork();
  if (child == 0) {
    close(pipefd[0]);
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    auto r = ControlRequest(sock_, {{"op", "status"}}, 5s);
    std::string out = r.ok() ? r->dump() : "client error";
    if (write(pipefd[1], out.data(), out.size()) < 0) _exit(4);
    _exit(0);
  }
  close(pipefd[1]);
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) ASSERT_TRUE(loop_->RunOnce(10ms).ok());
  char buf[256] = {};
  ssize_t n = read(pipefd[0], buf, sizeof buf - 1);
  close(pipefd[0]);
  ASSERT_GT(n, 0);
  EXPECT_EQ(json::parse(std::string(buf, static_cast<std::size_t>(n))),
            (json{{"error", "permission denied"}, {"code", "PermissionDenied"}}));
  EXPECT_EQ(server_->refused_peers(), 1u);
}

TEST_F(ControlServerTest, ManyConcurrentClients) {
  constexpr int kClients = 100;
  Serve(Echo());
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  std::atomic<int> finished{0};
  std::mutex mu;
  std::string first_error;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      auto r = ControlRequest(sock_, {{"op", "status"}, {"n", i}}, 60s);
      if (r.ok() && (*r)["echo"]["n"] == i) {
        ++ok;
      } else {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.empty()) first_error = r.ok() ? r->dump() : r.error().message();
      }
      ++finished;
    });
  }
  while (finished < kClients) ASSERT_TRUE(loop_->RunOnce(10ms).ok());
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok, kClients) << first_error;
}

}  // namespace
}  // namespace podvisor::supervisor::control

namespace podvisor::supervisor::control {
namespace {

// The control protocol's error codes (control_error.h): each code's word
// in a reply and back, and what a client reads of a reply.
TEST(ControlError, EveryCodeReadsBackFromItsWord) {
  for (ControlCode code :
       {ControlCode::kInvalidArgument, ControlCode::kNotFound, ControlCode::kFailedPrecondition,
        ControlCode::kPermissionDenied, ControlCode::kUnavailable, ControlCode::kUnimplemented,
        ControlCode::kInternal, ControlCode::kUnknown}) {
    EXPECT_EQ(ParseControlCode(ControlCodeName(code)), code) << ControlCodeName(code);
  }
  EXPECT_EQ(ControlCodeName(ControlCode::kNotFound), "NotFound");
  EXPECT_EQ(ParseControlCode("Teapot"), ControlCode::kUnknown);
}

TEST(ControlError, ReplyKeepsTheTextForOldClientsAndAddsTheCode) {
  EXPECT_EQ(ControlErrorReply(ControlCode::kNotFound, "no container named x"),
            (nlohmann::json{{"error", "no container named x"}, {"code", "NotFound"}}));
}

TEST(ControlError, ClientsReadCodeAndText) {
  auto e =
      ControlErrorOf({{"error", "container app is not running"}, {"code", "FailedPrecondition"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, ControlCode::kFailedPrecondition);
  EXPECT_EQ(e->message, "container app is not running");
  // An older supervisor's reply, without a code; an unknown code.
  e = ControlErrorOf({{"error", "no container named x"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, ControlCode::kUnknown);
  e = ControlErrorOf({{"error", "x"}, {"code", "Teapot"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, ControlCode::kUnknown);
  // No error: an answer, or no object at all.
  EXPECT_FALSE(ControlErrorOf({{"container", "app"}, {"signal", "SIGKILL"}}));
  EXPECT_FALSE(ControlErrorOf(nlohmann::json::array()));
}

}  // namespace
}  // namespace podvisor::supervisor::control
