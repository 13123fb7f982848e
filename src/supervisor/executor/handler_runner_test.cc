// The handler runner shared by hooks and probes: exec through a fake
// InstanceExec, sleep on a loop driven by a FakeClock, tcpSocket and
// httpGet against sockets of this process (an empty netns is ours).
#include "supervisor/executor/handler_runner.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace podvisor::supervisor::executor {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// What the runner asked of the exec seam; shared with the test, as the
// run owns the fake.
struct ExecLog {
  std::string name;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::optional<Duration> timeout;
  InstanceExec::Done done;
  std::vector<pid_t> killed;
};

class FakeExec final : public InstanceExec {
 public:
  explicit FakeExec(std::shared_ptr<ExecLog> log) : log_(std::move(log)) {}
  pid_t Start(std::string_view name, const std::vector<std::string>& args,
              const std::vector<std::string>& extra_env, std::optional<Duration> timeout,
              Done done) override {
    log_->name = std::string(name);
    log_->args = args;
    log_->env = extra_env;
    log_->timeout = timeout;
    log_->done = std::move(done);
    return 4242;
  }
  void Kill(pid_t pid) override { log_->killed.push_back(pid); }

 private:
  std::shared_ptr<ExecLog> log_;
};

struct Outcomes {
  std::vector<HandlerOutcome> got;
  HandlerRun::Done Collect() {
    return [this](const HandlerOutcome& o) { got.push_back(o); };
  }
};

class HandlerRunnerTest : public ::testing::Test {
 protected:
  HandlerRunnerTest() : loop_(std::move(loop::EventLoop::Create(clock_)).value()), runner_(loop_) {}

  HandlerCall ExecCall(HandlerUse use, Duration timeout) {
    handler_.exec = pod::ExecAction{{"check", "--now"}};
    HandlerCall call;
    call.use = use;
    call.name = "liveness";
    call.handler = &handler_;
    call.timeout = timeout;
    call.exec = std::make_unique<FakeExec>(exec_);
    return call;
  }
  void Turn() { ASSERT_TRUE(loop_.RunOnce(0ms).ok()); }

  FakeClock clock_;
  loop::EventLoop loop_;
  HandlerRunner runner_;
  pod::Handler handler_;
  std::shared_ptr<ExecLog> exec_ = std::make_shared<ExecLog>();
  Outcomes outcomes_;
};

TEST_F(HandlerRunnerTest, ExecReportsTheExecsSuccessAndOutput) {
  auto run = runner_.Start(ExecCall(HandlerUse::kProbe, 2s), outcomes_.Collect());
  EXPECT_EQ(exec_->name, "liveness");
  EXPECT_THAT(exec_->args, ElementsAre("check", "--now"));
  EXPECT_TRUE(outcomes_.got.empty());  // never from inside Start
  exec_->done(true, "all good");
  ASSERT_EQ(outcomes_.got.size(), 1u);
  EXPECT_TRUE(outcomes_.got[0].success);
  EXPECT_EQ(outcomes_.got[0].message, "all good");
}

TEST_F(HandlerRunnerTest, ExecReportsAFailure) {
  auto run = runner_.Start(ExecCall(HandlerUse::kProbe, 1s), outcomes_.Collect());
  exec_->done(false, "command exited with status 3");
  ASSERT_EQ(outcomes_.got.size(), 1u);
  EXPECT_FALSE(outcomes_.got[0].success);
  EXPECT_EQ(outcomes_.got[0].message, "command exited with status 3");
}

TEST_F(HandlerRunnerTest, ExecGetsTheProbesTimeoutAndNoneForAHook) {
  auto probe = runner_.Start(ExecCall(HandlerUse::kProbe, 3s), outcomes_.Collect());
  EXPECT_EQ(exec_->timeout, std::optional<Duration>(3s));
  HandlerCall hook = ExecCall(HandlerUse::kHook, Duration::zero());
  hook.exec_env = {"KUBE_POD_TERM_REASON=Deleted"};
  auto run = runner_.Start(std::move(hook), outcomes_.Collect());
  EXPECT_EQ(exec_->timeout, std::nullopt);
  EXPECT_THAT(exec_->env, ElementsAre("KUBE_POD_TERM_REASON=Deleted"));
}

TEST_F(HandlerRunnerTest, ADestroyedRunDropsALateOutcomeAndLeavesTheExecRunning) {
  auto run = runner_.Start(ExecCall(HandlerUse::kProbe, 1s), outcomes_.Collect());
  run.reset();
  exec_->done(true, "late");
  EXPECT_TRUE(outcomes_.got.empty());
  EXPECT_TRUE(exec_->killed.empty());
}

TEST_F(HandlerRunnerTest, AbortKillsTheExecAndDropsItsOutcome) {
  auto run = runner_.Start(ExecCall(HandlerUse::kHook, Duration::zero()), outcomes_.Collect());
  run->Abort();
  EXPECT_THAT(exec_->killed, ElementsAre(4242));
  exec_->done(false, "killed");
  EXPECT_TRUE(outcomes_.got.empty());
}

TEST_F(HandlerRunnerTest, TheCallbackMayDestroyItsRun) {
  std::unique_ptr<HandlerRun> run;
  bool called = false;
  run = runner_.Start(ExecCall(HandlerUse::kProbe, 1s), [&](const HandlerOutcome&) {
    called = true;
    run.reset();
  });
  exec_->done(true, "");
  EXPECT_TRUE(called);
  EXPECT_EQ(run, nullptr);
}

TEST_F(HandlerRunnerTest, SleepSucceedsWhenItsSecondsHavePassed) {
  handler_.sleep = pod::SleepAction{5};
  HandlerCall call;
  call.use = HandlerUse::kHook;
  call.handler = &handler_;
  auto run = runner_.Start(std::move(call), outcomes_.Collect());
  Turn();
  clock_.Advance(4s + 999ms);
  Turn();
  EXPECT_TRUE(outcomes_.got.empty());
  clock_.Advance(1ms);
  Turn();
  ASSERT_EQ(outcomes_.got.size(), 1u);
  EXPECT_TRUE(outcomes_.got[0].success);
}

TEST_F(HandlerRunnerTest, AbortEndsASleepWithoutAnOutcome) {
  handler_.sleep = pod::SleepAction{1};
  HandlerCall call;
  call.handler = &handler_;
  auto run = runner_.Start(std::move(call), outcomes_.Collect());
  run->Abort();
  clock_.Advance(2s);
  Turn();
  EXPECT_TRUE(outcomes_.got.empty());
}

TEST_F(HandlerRunnerTest, AHandlerWithoutAnActionFailsFromTheLoop) {
  HandlerCall call;
  call.handler = &handler_;
  auto run = runner_.Start(std::move(call), outcomes_.Collect());
  EXPECT_TRUE(outcomes_.got.empty());
  Turn();
  ASSERT_EQ(outcomes_.got.size(), 1u);
  EXPECT_FALSE(outcomes_.got[0].success);
}

// A listening socket on 127.0.0.1 that answers one request per connection
// from a thread, recording what it was sent.
class OneShotServer {
 public:
  explicit OneShotServer(std::string answer) : answer_(std::move(answer)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(::listen(fd_, 4), 0);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~OneShotServer() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  std::string request() {
    std::lock_guard<std::mutex> lock(mu_);
    return request_;
  }

 private:
  void Serve() {
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
      request_ = req;
    }
    if (!answer_.empty() && ::write(conn, answer_.data(), answer_.size()) < 0) {
      // the client gave up
    }
    ::close(conn);
  }

  std::string answer_;
  int fd_ = -1;
  int port_ = 0;
  std::mutex mu_;
  std::string request_;
  std::thread thread_;
};

// A port nothing listens on: bound, then closed.
int ClosedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Sockets need the real clock: their timeouts are timers of the loop.
class HandlerRunnerNetTest : public ::testing::Test {
 protected:
  HandlerRunnerNetTest() : loop_(std::move(loop::EventLoop::Create()).value()), runner_(loop_) {}

  // Runs the loop until an outcome came (or 5 s passed).
  HandlerOutcome Await(HandlerCall call) {
    std::optional<HandlerOutcome> got;
    auto run = runner_.Start(std::move(call), [&](const HandlerOutcome& o) { got = o; });
    MonoTime give_up = loop_.Now() + 5s;
    while (!got && loop_.Now() < give_up) EXPECT_TRUE(loop_.RunOnce(100ms).ok());
    EXPECT_TRUE(got.has_value());
    return got.value_or(HandlerOutcome{});
  }

  loop::EventLoop loop_;
  HandlerRunner runner_;
  pod::Handler handler_;
  pod::Container container_;
};

TEST_F(HandlerRunnerNetTest, TcpSocketSucceedsOnConnectToANamedPort) {
  OneShotServer server("");
  container_.ports.push_back(pod::ContainerPort{});
  container_.ports.back().name = "web";
  container_.ports.back().container_port = server.port();
  pod::TcpSocketAction tcp;
  tcp.port.is_string = true;
  tcp.port.string_value = "web";
  handler_.tcp_socket = tcp;
  HandlerCall call;
  call.handler = &handler_;
  call.container = &container_;
  call.timeout = 1s;
  EXPECT_TRUE(Await(std::move(call)).success);
}

TEST_F(HandlerRunnerNetTest, TcpSocketFailsWhenNothingListens) {
  pod::TcpSocketAction tcp;
  tcp.port.int_value = ClosedPort();
  handler_.tcp_socket = tcp;
  HandlerCall call;
  call.handler = &handler_;
  call.container = &container_;
  call.timeout = 1s;
  HandlerOutcome o = Await(std::move(call));
  EXPECT_FALSE(o.success);
  EXPECT_FALSE(o.message.empty());
}

HandlerCall HttpGetCall(pod::Handler& handler, int port, HandlerUse use) {
  pod::HttpGetAction get;
  get.path = "/healthz";
  get.port.int_value = port;
  handler.http_get = get;
  HandlerCall call;
  call.use = use;
  call.handler = &handler;
  call.timeout = use == HandlerUse::kProbe ? Duration(2s) : Duration::zero();
  return call;
}

const char* kServerError =
    "HTTP/1.1 500 Oops\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbad!";

TEST_F(HandlerRunnerNetTest, HttpGetProbeFailsOnAnErrorStatus) {
  OneShotServer server(kServerError);
  HandlerOutcome o = Await(HttpGetCall(handler_, server.port(), HandlerUse::kProbe));
  EXPECT_FALSE(o.success);
  EXPECT_THAT(o.message, HasSubstr("500"));
  EXPECT_THAT(server.request(), HasSubstr("User-Agent: kube-probe/1.33"));
}

TEST_F(HandlerRunnerNetTest, HttpGetHookSucceedsOnAnyAnswerAndSendsItsHeaders) {
  OneShotServer server(kServerError);
  HandlerCall call = HttpGetCall(handler_, server.port(), HandlerUse::kHook);
  call.http_headers.emplace_back("KUBE-POD-TERM-REASON", "Deleted");
  HandlerOutcome o = Await(std::move(call));
  EXPECT_TRUE(o.success);  // S8.2: the status is ignored
  EXPECT_THAT(server.request(), HasSubstr("GET /healthz HTTP/1.1"));
  EXPECT_THAT(server.request(), HasSubstr("User-Agent: kube-lifecycle/1.33"));
  EXPECT_THAT(server.request(), HasSubstr("KUBE-POD-TERM-REASON: Deleted"));
}

TEST_F(HandlerRunnerNetTest, HttpGetHookFailsWhenNothingAnswers) {
  HandlerOutcome o = Await(HttpGetCall(handler_, ClosedPort(), HandlerUse::kHook));
  EXPECT_FALSE(o.success);
  EXPECT_FALSE(o.message.empty());
}

TEST(TruncateMessage, KeepsAtMostTheBound) {
  EXPECT_EQ(TruncateMessage(std::string(2000, 'x')).size(), kHandlerMessageMax);
  EXPECT_EQ(TruncateMessage("short"), "short");
  EXPECT_EQ(TruncateMessage("abcdef", 3), "abc");
}

}  // namespace
}  // namespace podvisor::supervisor::executor
