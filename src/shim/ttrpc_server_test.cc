#include "shim/ttrpc_server.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>

#include "ttrpc.pb.h"

namespace podvisor::shim {
namespace {

class TtrpcServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pv-ttrpc-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/s.sock";
    auto loop = supervisor::loop::EventLoop::Create();
    ASSERT_TRUE(loop);
    loop_.emplace(std::move(*loop));
    server_ =
        std::make_unique<TtrpcServer>(*loop_, [this](const RpcRequest& r, const Reply& reply) {
          last_ = r;
          if (r.method == "Later") {
            later_.push_back(reply);
            return;
          }
          podvisor::ttrpc::KeyValue echo;
          echo.set_key(r.method);
          echo.set_value(r.payload);
          reply.Ok(echo);
        });
    Fd l(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    ASSERT_EQ(bind(l.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(listen(l.get(), 8), 0);
    ASSERT_TRUE(server_->Serve(std::move(l)));
    client_ = Dial();
  }
  void TearDown() override {
    server_.reset();
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  Fd Dial() {
    Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    EXPECT_EQ(connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    return fd;
  }
  void Send(const Fd& fd, const std::string& bytes) {
    ASSERT_EQ(write(fd.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  static std::string Request(const std::string& method, const std::string& payload) {
    podvisor::ttrpc::Request r;
    r.set_service("containerd.task.v2.Task");
    r.set_method(method);
    r.set_payload(payload);
    return r.SerializeAsString();
  }
  // Runs the loop until one response frame arrived on `fd`.
  Frame Receive(const Fd& fd) {
    FrameReader reader;
    std::vector<Frame> frames;
    for (int i = 0; i < 200 && frames.empty(); ++i) {
      EXPECT_TRUE(loop_->RunOnce(std::chrono::milliseconds(10)));
      char buf[4096];
      ssize_t n = recv(fd.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) reader.Feed(std::string_view(buf, static_cast<std::size_t>(n)), frames);
    }
    EXPECT_EQ(frames.size(), 1u);
    return frames.empty() ? Frame{} : frames[0];
  }

  std::string dir_, path_;
  std::optional<supervisor::loop::EventLoop> loop_;
  std::unique_ptr<TtrpcServer> server_;
  Fd client_;
  RpcRequest last_;
  std::vector<Reply> later_;
};

TEST_F(TtrpcServerTest, AnswersARequestOnItsStream) {
  Send(client_, EncodeFrame(5, FrameType::kRequest, Request("State", "abc")));
  Frame f = Receive(client_);
  EXPECT_EQ(f.header.stream_id, 5u);
  EXPECT_EQ(f.header.type, static_cast<uint8_t>(FrameType::kResponse));
  podvisor::ttrpc::Response response;
  ASSERT_TRUE(response.ParseFromString(f.payload));
  EXPECT_FALSE(response.has_status());
  podvisor::ttrpc::KeyValue echo;
  ASSERT_TRUE(echo.ParseFromString(response.payload()));
  EXPECT_EQ(echo.key(), "State");
  EXPECT_EQ(echo.value(), "abc");
  EXPECT_EQ(last_.service, "containerd.task.v2.Task");
}

TEST_F(TtrpcServerTest, RefusesEvenStreamIdsAndGarbage) {
  Send(client_, EncodeFrame(2, FrameType::kRequest, Request("State", "")));
  podvisor::ttrpc::Response response;
  ASSERT_TRUE(response.ParseFromString(Receive(client_).payload));
  EXPECT_EQ(response.status().code(), static_cast<int>(RpcCode::kInvalidArgument));
  Send(client_, EncodeFrame(7, FrameType::kRequest, "\xff\xff\xff"));
  Frame f = Receive(client_);
  EXPECT_EQ(f.header.stream_id, 7u);
  ASSERT_TRUE(response.ParseFromString(f.payload));
  EXPECT_EQ(response.status().code(), static_cast<int>(RpcCode::kInvalidArgument));
}

TEST_F(TtrpcServerTest, OversizedRequestGetsResourceExhaustedAndTheConnectionGoesOn) {
  std::string big(kMaxMessageLength + 1, 'x');
  uint8_t header[kFrameHeaderSize];
  EncodeFrameHeader({static_cast<uint32_t>(big.size()), 9, 1, 0}, header);
  Send(client_, std::string(reinterpret_cast<char*>(header), kFrameHeaderSize));
  podvisor::ttrpc::Response response;
  Frame f = Receive(client_);
  EXPECT_EQ(f.header.stream_id, 9u);
  ASSERT_TRUE(response.ParseFromString(f.payload));
  EXPECT_EQ(response.status().code(), static_cast<int>(RpcCode::kResourceExhausted));
  // The payload follows and is skipped, in pieces, as the loop reads it.
  std::size_t sent = 0;
  while (sent < big.size()) {
    ssize_t n = send(client_.get(), big.data() + sent, big.size() - sent, MSG_DONTWAIT);
    if (n > 0) sent += static_cast<std::size_t>(n);
    ASSERT_TRUE(loop_->RunOnce(std::chrono::milliseconds(10)));
  }
  Send(client_, EncodeFrame(11, FrameType::kRequest, Request("Pids", "")));
  f = Receive(client_);
  EXPECT_EQ(f.header.stream_id, 11u);
  EXPECT_EQ(last_.method, "Pids");
}

TEST_F(TtrpcServerTest, LaterReplyAfterTheClientLeftIsDropped) {
  Send(client_, EncodeFrame(1, FrameType::kRequest, Request("Later", "")));
  for (int i = 0; i < 50 && later_.empty(); ++i) {
    ASSERT_TRUE(loop_->RunOnce(std::chrono::milliseconds(10)));
  }
  ASSERT_EQ(later_.size(), 1u);
  client_.Reset();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(loop_->RunOnce(std::chrono::milliseconds(10)));
  EXPECT_EQ(server_->connections(), 0u);
  later_[0].Ok(podvisor::ttrpc::KeyValue());  // must not crash or write anywhere
}

TEST_F(TtrpcServerTest, LaterReplyReachesAStillConnectedClient) {
  Fd second = Dial();
  Send(second, EncodeFrame(3, FrameType::kRequest, Request("Later", "")));
  for (int i = 0; i < 50 && later_.empty(); ++i) {
    ASSERT_TRUE(loop_->RunOnce(std::chrono::milliseconds(10)));
  }
  ASSERT_EQ(later_.size(), 1u);
  later_[0].Fail(RpcCode::kNotFound, "gone");
  later_[0].Fail(RpcCode::kInternal, "a second answer is ignored");
  podvisor::ttrpc::Response response;
  Frame f = Receive(second);
  ASSERT_TRUE(response.ParseFromString(f.payload));
  EXPECT_EQ(response.status().code(), static_cast<int>(RpcCode::kNotFound));
  EXPECT_EQ(response.status().message(), "gone");
}

}  // namespace
}  // namespace podvisor::shim
