// The Task service's answers to requests that come before, beside or
// instead of a pod: never a crash, always containerd's status code. The
// calls that run a pod are tier 3 (tests/containerd/).
#include "shim/task_service.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>

#include "task_shim.pb.h"
#include "ttrpc.pb.h"

namespace podvisor::shim {
namespace {

class TaskServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pv-task-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto loop = supervisor::loop::EventLoop::Create();
    ASSERT_TRUE(loop);
    loop_.emplace(std::move(*loop));
    ShimArgs args;
    args.ns = "default";
    args.id = "t1";
    args.publish_binary = "/bin/false";  // nothing is published by these tests
    service_ = std::make_unique<TaskService>(*loop_, args, dir_, [this] { shutdown_ = true; });
    server_ = std::make_unique<TtrpcServer>(
        *loop_, [this](const RpcRequest& r, const Reply& reply) { service_->Handle(r, reply); });
    std::string path = (dir_ / "s.sock").string();
    Fd l(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    ASSERT_EQ(bind(l.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(listen(l.get(), 8), 0);
    ASSERT_TRUE(server_->Serve(std::move(l)));
    client_ = Fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_EQ(connect(client_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  }
  void TearDown() override {
    server_.reset();
    service_.reset();
    std::filesystem::remove_all(dir_);
  }
  // One call: its Response.
  podvisor::ttrpc::Response Call(const std::string& method, const std::string& payload,
                                 const std::string& service = "containerd.task.v2.Task") {
    podvisor::ttrpc::Request r;
    r.set_service(service);
    r.set_method(method);
    r.set_payload(payload);
    stream_ += 2;
    std::string frame = EncodeFrame(stream_, FrameType::kRequest, r.SerializeAsString());
    EXPECT_EQ(write(client_.get(), frame.data(), frame.size()), static_cast<ssize_t>(frame.size()));
    FrameReader reader;
    std::vector<Frame> frames;
    for (int i = 0; i < 200 && frames.empty(); ++i) {
      EXPECT_TRUE(loop_->RunOnce(std::chrono::milliseconds(10)));
      char buf[4096];
      ssize_t n = recv(client_.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) reader.Feed(std::string_view(buf, static_cast<std::size_t>(n)), frames);
    }
    podvisor::ttrpc::Response response;
    EXPECT_EQ(frames.size(), 1u) << method;
    if (!frames.empty()) {
      EXPECT_EQ(frames[0].header.stream_id, stream_);
      EXPECT_TRUE(response.ParseFromString(frames[0].payload));
    }
    return response;
  }

  std::filesystem::path dir_;
  std::optional<supervisor::loop::EventLoop> loop_;
  std::unique_ptr<TaskService> service_;
  std::unique_ptr<TtrpcServer> server_;
  Fd client_;
  uint32_t stream_ = 1;
  bool shutdown_ = false;
};

TEST_F(TaskServiceTest, CallsBeforeCreateFindNoTask) {
  containerd::task::v2::StateRequest state;
  state.set_id("t1");
  for (const char* method : {"State", "Start", "Wait", "Kill", "Delete", "Pids", "Stats"}) {
    auto r = Call(method, state.SerializeAsString());
    EXPECT_EQ(r.status().code(), static_cast<int>(RpcCode::kNotFound)) << method;
  }
}

TEST_F(TaskServiceTest, GarbagePayloadsAreInvalidArguments) {
  for (const char* method : {"Create", "Start", "State", "Wait", "Kill", "Delete", "Exec", "Pids",
                             "Stats", "Connect", "Shutdown"}) {
    auto r = Call(method, "\xff\xff\xff\xff");
    EXPECT_EQ(r.status().code(), static_cast<int>(RpcCode::kInvalidArgument)) << method;
  }
  EXPECT_FALSE(shutdown_);
}

TEST_F(TaskServiceTest, WhatHasNoMeaningIsUnimplementedWithItsReason) {
  auto pause = Call("Pause", "");
  EXPECT_EQ(pause.status().code(), static_cast<int>(RpcCode::kUnimplemented));
  EXPECT_NE(pause.status().message().find("a pod cannot be paused"), std::string::npos);
  EXPECT_EQ(Call("Update", "").status().code(), static_cast<int>(RpcCode::kUnimplemented));
  EXPECT_EQ(Call("ResizePty", "").status().code(), static_cast<int>(RpcCode::kUnimplemented));
  EXPECT_EQ(Call("Checkpoint", "").status().code(), static_cast<int>(RpcCode::kUnimplemented));
  EXPECT_EQ(Call("Bogus", "").status().code(), static_cast<int>(RpcCode::kUnimplemented));
  EXPECT_EQ(Call("State", "", "other.Service").status().code(),
            static_cast<int>(RpcCode::kUnimplemented));
  EXPECT_FALSE(Call("CloseIO", "").has_status());
}

TEST_F(TaskServiceTest, CreateRefusesATerminalAndAnImageWithoutAPod) {
  containerd::task::v2::CreateTaskRequest create;
  create.set_id("t1");
  create.set_terminal(true);
  EXPECT_EQ(Call("Create", create.SerializeAsString()).status().code(),
            static_cast<int>(RpcCode::kUnimplemented));
  // No rootfs mounts: BUNDLE/rootfs as it is, here an empty directory.
  create.set_terminal(false);
  auto r = Call("Create", create.SerializeAsString());
  EXPECT_EQ(r.status().code(), static_cast<int>(RpcCode::kInvalidArgument));
  EXPECT_NE(r.status().message().find("not a podvisor bundle"), std::string::npos);
  // Still no task.
  containerd::task::v2::StateRequest state;
  state.set_id("t1");
  EXPECT_EQ(Call("State", state.SerializeAsString()).status().code(),
            static_cast<int>(RpcCode::kNotFound));
}

TEST_F(TaskServiceTest, ConnectAndShutdownWithoutATask) {
  containerd::task::v2::ConnectResponse connect;
  auto r = Call("Connect", "");
  ASSERT_FALSE(r.has_status());
  ASSERT_TRUE(connect.ParseFromString(r.payload()));
  EXPECT_EQ(connect.shim_pid(), static_cast<uint32_t>(getpid()));
  EXPECT_EQ(connect.task_pid(), 0u);
  EXPECT_EQ(connect.version().rfind("podvisor ", 0), 0u);
  EXPECT_FALSE(Call("Shutdown", "").has_status());
  EXPECT_TRUE(shutdown_);  // no task: the shim may go
}

// The supervisor's refusals (supervisor/control/control_error.h) reach
// containerd as the ttrpc status of the same name; what containerd has no
// word for, or an older supervisor's reply without a code, stays
// FailedPrecondition.
TEST(RpcCodeOf, ControlCodesMapToTtrpcStatuses) {
  using supervisor::control::ControlCode;
  EXPECT_EQ(RpcCodeOf(ControlCode::kInvalidArgument), RpcCode::kInvalidArgument);
  EXPECT_EQ(RpcCodeOf(ControlCode::kNotFound), RpcCode::kNotFound);
  EXPECT_EQ(RpcCodeOf(ControlCode::kFailedPrecondition), RpcCode::kFailedPrecondition);
  EXPECT_EQ(RpcCodeOf(ControlCode::kUnavailable), RpcCode::kUnavailable);
  EXPECT_EQ(RpcCodeOf(ControlCode::kUnimplemented), RpcCode::kUnimplemented);
  EXPECT_EQ(RpcCodeOf(ControlCode::kInternal), RpcCode::kInternal);
  EXPECT_EQ(RpcCodeOf(ControlCode::kPermissionDenied), RpcCode::kFailedPrecondition);
  EXPECT_EQ(RpcCodeOf(ControlCode::kUnknown), RpcCode::kFailedPrecondition);
}

}  // namespace
}  // namespace podvisor::shim
