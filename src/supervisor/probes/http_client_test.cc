// HttpClient and the httpGet verdicts (S7.2, S8.2): real requests through
// our client driven by the EventLoop, against a tiny HTTP/1.1 server on a
// test thread.
#include "supervisor/probes/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "supervisor/probes/http_get.h"

namespace podvisor::supervisor::probes {
namespace {

using ::testing::HasSubstr;

// Answers each connection with Handler(request line + headers); records
// every request. Stops when destroyed.
class TestServer {
 public:
  using Handler = std::function<std::string(const std::string& path)>;
  explicit TestServer(Handler handler) : handler_(std::move(handler)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~TestServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void Serve() {
    while (!stop_) {
      int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) return;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::read(conn, buf, sizeof buf);
        if (n <= 0) break;
        req.append(buf, static_cast<std::size_t>(n));
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(req);
      }
      std::size_t sp = req.find(' ');
      std::string path =
          sp == std::string::npos ? "" : req.substr(sp + 1, req.find(' ', sp + 1) - sp - 1);
      std::string answer = handler_(path);
      if (!answer.empty() && ::write(conn, answer.data(), answer.size()) < 0) {
        // the client gave up; serve the next one
      }
      ::close(conn);
    }
  }

  Handler handler_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

std::string Reply(int status, const std::string& extra = "", const std::string& body = "ok") {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\n" + extra +
         "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

// /hop/N redirects to /hop/N-1; /hop/0 answers 200; /away redirects to
// another host name; /slow never answers.
std::string Routes(const std::string& path) {
  if (path.rfind("/hop/", 0) == 0) {
    int n = std::stoi(path.substr(5));
    return n > 0 ? Reply(302, "Location: /hop/" + std::to_string(n - 1) + "\r\n") : Reply(200);
  }
  if (path == "/away") return Reply(301, "Location: http://localhost:1/elsewhere\r\n", "moved");
  if (path == "/status/500") return Reply(500);
  return Reply(200, "", "hello");
}

class HttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loop = loop::EventLoop::Create();
    ASSERT_TRUE(loop);
    loop_.emplace(std::move(*loop));
    auto client = HttpClient::Create(*loop_);
    ASSERT_TRUE(client) << client.error().message();
    client_ = std::move(*client);
  }

  // Runs one request to completion on the loop.
  HttpResponse Fetch(HttpRequest req) {
    std::optional<HttpResponse> got;
    auto transfer = client_->Start(std::move(req), [&](const HttpResponse& r) { got = r; });
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!got && std::chrono::steady_clock::now() < until) {
      EXPECT_TRUE(loop_->RunOnce(std::chrono::milliseconds(200)));
    }
    EXPECT_TRUE(got) << "no answer within 10 s";
    return got.value_or(HttpResponse{});
  }

  HttpRequest Get(int port, const std::string& path) {
    pod::HttpGetAction action;
    action.path = path;
    return HttpGetRequest(action, port, kProbeUserAgent, std::chrono::seconds(5), "");
  }

  std::optional<loop::EventLoop> loop_;
  std::unique_ptr<HttpClient> client_;
};

TEST_F(HttpClientTest, S7_2_GetSendsTheKubeletsDefaultHeadersAndReadsStatusAndBody) {
  TestServer server(Routes);
  HttpRequest req = Get(server.port(), "/healthz");
  req.headers.insert(req.headers.begin(), {"X-Custom", "yes"});
  HttpResponse r = Fetch(req);
  ASSERT_TRUE(r.received) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello");
  ASSERT_EQ(server.requests().size(), 1u);
  std::string sent = server.requests()[0];
  EXPECT_THAT(sent, HasSubstr("GET /healthz HTTP/1.1\r\n"));
  EXPECT_THAT(sent, HasSubstr("User-Agent: kube-probe/1.33\r\n"));
  EXPECT_THAT(sent, HasSubstr("Accept: */*\r\n"));
  EXPECT_THAT(sent, HasSubstr("X-Custom: yes\r\n"));
  EXPECT_TRUE(JudgeHttpProbe(req, r).success);
}

TEST_F(HttpClientTest, S7_2_ProbeHeadersReplaceDefaultsAndHost) {
  TestServer server(Routes);
  pod::HttpGetAction action;
  action.http_headers = {{"Host", "app.example"}, {"User-Agent", "mine"}, {"Accept", "text/plain"}};
  HttpRequest req =
      HttpGetRequest(action, server.port(), kProbeUserAgent, std::chrono::seconds(5), "");
  ASSERT_TRUE(Fetch(req).received);
  std::string sent = server.requests().at(0);
  EXPECT_THAT(sent, HasSubstr("Host: app.example\r\n"));
  EXPECT_THAT(sent, HasSubstr("User-Agent: mine\r\n"));
  EXPECT_THAT(sent, HasSubstr("Accept: text/plain\r\n"));
  EXPECT_THAT(sent, ::testing::Not(HasSubstr("kube-probe")));
  EXPECT_THAT(sent, ::testing::Not(HasSubstr("*/*")));
}

TEST_F(HttpClientTest, S7_2_SameHostRedirectsAreFollowedUpToTen) {
  TestServer server(Routes);
  HttpRequest ten = Get(server.port(), "/hop/10");
  HttpResponse r = Fetch(ten);
  ASSERT_TRUE(r.received) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.redirects_followed, 10);
  EXPECT_TRUE(JudgeHttpProbe(ten, r).success);

  HttpRequest eleven = Get(server.port(), "/hop/11");
  r = Fetch(eleven);
  EXPECT_FALSE(r.received);
  EXPECT_EQ(r.error, "stopped after 10 redirects");
  HttpGetVerdict v = JudgeHttpProbe(eleven, r);
  EXPECT_FALSE(v.success);
  EXPECT_THAT(v.message, HasSubstr("stopped after 10 redirects"));
}

TEST_F(HttpClientTest, S7_2_RedirectToAnotherHostIsNotFollowedAndCountsByItsStatus) {
  TestServer server(Routes);
  HttpRequest req = Get(server.port(), "/away");
  HttpResponse r = Fetch(req);
  ASSERT_TRUE(r.received) << r.error;
  EXPECT_EQ(r.status, 301);
  EXPECT_TRUE(r.redirect_not_followed);
  EXPECT_EQ(server.requests().size(), 1u);
  HttpGetVerdict v = JudgeHttpProbe(req, r);
  EXPECT_TRUE(v.success);
  EXPECT_TRUE(v.warning);
  EXPECT_EQ(v.message, "Probe terminated redirects, Response body: moved");
}

TEST_F(HttpClientTest, S7_2_StatusOutsideTheSuccessRangeFailsProbesButNotHooks) {
  TestServer server(Routes);
  HttpRequest req = Get(server.port(), "/status/500");
  HttpResponse r = Fetch(req);
  ASSERT_TRUE(r.received);
  HttpGetVerdict probe = JudgeHttpProbe(req, r);
  EXPECT_FALSE(probe.success);
  EXPECT_EQ(probe.message, "HTTP probe failed with statuscode: 500");
  EXPECT_TRUE(JudgeHttpHook(req, r).success);  // S8.2: the status is ignored
}

TEST_F(HttpClientTest, S8_2_TransportErrorsFailProbesAndHooks) {
  int port;
  {
    TestServer closed(Routes);
    port = closed.port();
  }
  HttpRequest req = Get(port, "/");
  HttpResponse r = Fetch(req);
  EXPECT_FALSE(r.received);
  EXPECT_FALSE(JudgeHttpProbe(req, r).success);
  HttpGetVerdict hook = JudgeHttpHook(req, r);
  EXPECT_FALSE(hook.success);
  EXPECT_THAT(hook.message, HasSubstr("Get \"http://127.0.0.1:" + std::to_string(port) + "/\": "));
}

TEST_F(HttpClientTest, S7_2_TimeoutEndsTheRequest) {
  // A listening socket nobody accepts from: the connect succeeds, no answer.
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  HttpRequest req = Get(ntohs(addr.sin_port), "/");
  req.timeout = std::chrono::milliseconds(300);
  auto start = std::chrono::steady_clock::now();
  HttpResponse r = Fetch(req);
  auto took = std::chrono::steady_clock::now() - start;
  ::close(fd);
  EXPECT_FALSE(r.received);
  EXPECT_GE(took, std::chrono::milliseconds(250));
  EXPECT_LT(took, std::chrono::seconds(5));
}

TEST_F(HttpClientTest, HostNamesAreRefusedWithoutBlockingOnDns) {
  HttpRequest req = Get(80, "/");
  req.host = "example.com";
  HttpResponse r = Fetch(req);
  EXPECT_FALSE(r.received);
  EXPECT_EQ(r.error, "host example.com is not an IP address");
}

TEST_F(HttpClientTest, DestroyingATransferCancelsIt) {
  TestServer server(Routes);
  bool called = false;
  // /slow never answers: the transfer is surely in flight when it is
  // destroyed (a fast answer could complete within the first RunOnce).
  auto transfer =
      client_->Start(Get(server.port(), "/slow"), [&](const HttpResponse&) { called = true; });
  EXPECT_TRUE(loop_->RunOnce(std::chrono::milliseconds(50)));
  transfer.reset();
  EXPECT_EQ(client_->active_transfers(), 0u);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(loop_->RunOnce(std::chrono::milliseconds(20)));
  EXPECT_FALSE(called);
}

TEST_F(HttpClientTest, SocketsAreMadeInTheGivenNetworkNamespace) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (setns)";
  TestServer server(Routes);
  HttpRequest req = Get(server.port(), "/");
  req.netns = "/proc/self/ns/net";  // our own, entered through setns
  HttpResponse r = Fetch(req);
  ASSERT_TRUE(r.received) << r.error;
  req.netns = "/nonexistent/ns/net";
  r = Fetch(req);
  EXPECT_FALSE(r.received);
  EXPECT_THAT(r.error, HasSubstr("/nonexistent/ns/net"));
}

}  // namespace
}  // namespace podvisor::supervisor::probes
