// ImageProxy against a fake proxy: the other end of a SOCK_SEQPACKET
// socketpair in a thread, answering as skopeo 1.9's proxy does (pipes by
// SCM_RIGHTS, closed only at FinishPipe).
#include "registry/image_proxy.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace podvisor::registry {
namespace {

using Json = nlohmann::json;

class FakeProxy {
 public:
  FakeProxy() {
    int pair[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
    client_ = Fd(pair[0]);
    server_ = Fd(pair[1]);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeProxy() {
    // Closing a descriptor does not wake a thread blocked on it; shutdown does.
    ::shutdown(server_.get(), SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
  }
  Fd TakeClient() { return std::move(client_); }
  std::map<std::string, std::string> blobs;  // digest -> data
  std::string blob_error;                    // FinishPipe's error for blobs
  std::vector<std::string> methods;

 private:
  void Reply(const Json& reply, int fd = -1) {
    std::string text = reply.dump();
    iovec iov{.iov_base = text.data(), .iov_len = text.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    if (fd >= 0) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    ::sendmsg(server_.get(), &msg, MSG_NOSIGNAL);
  }
  // A pipe whose writer sends `data` and closes only at FinishPipe.
  void ReplyWithPipe(const Json& value, const std::string& data, std::string error) {
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    uint32_t id = next_pipe_++;
    writers_[id] = {
        Fd(p[1]), std::thread([fd = p[1], data] { (void)!::write(fd, data.data(), data.size()); }),
        std::move(error)};
    Reply({{"success", true}, {"value", value}, {"pipeid", id}, {"error", ""}}, p[0]);
    ::close(p[0]);
  }
  void Serve() {
    char buf[32768];
    while (true) {
      ssize_t n = ::recv(server_.get(), buf, sizeof buf, 0);
      if (n <= 0) return;
      Json req = Json::parse(std::string(buf, n));
      std::string method = req["method"];
      methods.push_back(method);
      const Json& args = req["args"];
      if (method == "Initialize") {
        Reply({{"success", true}, {"value", "0.2.3"}, {"pipeid", 0}, {"error", ""}});
      } else if (method == "OpenImage") {
        if (args[0] == "docker://missing") {
          Reply({{"success", false},
                 {"value", nullptr},
                 {"pipeid", 0},
                 {"error", "reading manifest x: manifest unknown; password=hunter2"}});
        } else {
          Reply({{"success", true}, {"value", 1}, {"pipeid", 0}, {"error", ""}});
        }
      } else if (method == "GetManifest") {
        ReplyWithPipe("sha256:m", R"({"schemaVersion":2})", "");
      } else if (method == "GetBlob") {
        auto it = blobs.find(args[1]);
        if (it == blobs.end()) {
          Reply({{"success", false}, {"value", nullptr}, {"pipeid", 0}, {"error", "blob unknown"}});
        } else {
          ReplyWithPipe(it->second.size(), it->second, blob_error);
        }
      } else if (method == "FinishPipe") {
        auto it = writers_.find(args[0].get<uint32_t>());
        it->second.thread.join();
        it->second.write_end.Reset();
        std::string error = it->second.error;
        writers_.erase(it);
        Reply({{"success", error.empty()}, {"value", nullptr}, {"pipeid", 0}, {"error", error}});
      } else if (method == "Shutdown") {
        return;
      } else {
        Reply({{"success", true}, {"value", nullptr}, {"pipeid", 0}, {"error", ""}});
      }
    }
  }
  struct Writer {
    Fd write_end;
    std::thread thread;
    std::string error;
  };
  Fd client_, server_;
  std::thread thread_;
  uint32_t next_pipe_ = 7;
  std::map<uint32_t, Writer> writers_;
};

std::string ReadAll(int fd) {
  std::string data;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) data.append(buf, n);
  return data;
}

TEST(ImageProxy, ManifestAndBlobOverPipes) {
  FakeProxy fake;
  fake.blobs["sha256:b"] = std::string(200000, 'x');  // more than a pipe buffer
  auto proxy = ImageProxy::Connect(fake.TakeClient());
  ASSERT_TRUE(proxy) << proxy.error().message();
  EXPECT_EQ(proxy->protocol_version(), "0.2.3");
  auto image = proxy->OpenImage("docker://r.example.com/app@sha256:m");
  ASSERT_TRUE(image) << image.error().message();
  auto manifest = proxy->GetManifest(*image);
  ASSERT_TRUE(manifest) << manifest.error().message();
  EXPECT_EQ(manifest->digest, "sha256:m");
  EXPECT_EQ(manifest->manifest, R"({"schemaVersion":2})");
  auto blob = proxy->GetBlob(*image, "sha256:b", 200000);
  ASSERT_TRUE(blob) << blob.error().message();
  EXPECT_EQ(blob->size, 200000);
  std::string data;
  std::thread reader([&] { data = ReadAll(blob->fd.get()); });
  EXPECT_TRUE(proxy->FinishPipe(blob->pipe_id));
  reader.join();
  EXPECT_EQ(data.size(), 200000u);
  EXPECT_TRUE(proxy->Shutdown());
}

TEST(ImageProxy, ErrorsAreTheProxysWordsScrubbed) {
  FakeProxy fake;
  fake.blobs["sha256:b"] = "abc";
  fake.blob_error = "corrupted blob, expecting sha256:b";
  auto proxy = ImageProxy::Connect(fake.TakeClient());
  ASSERT_TRUE(proxy);
  auto missing = proxy->OpenImage("docker://missing");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("OpenImage: reading manifest x: manifest unknown"),
            std::string::npos);
  EXPECT_EQ(missing.error().message().find("hunter2"), std::string::npos);
  auto blob = proxy->GetBlob(1, "sha256:b", 3);
  ASSERT_TRUE(blob);
  std::thread reader([&] { ReadAll(blob->fd.get()); });
  Status finished = proxy->FinishPipe(blob->pipe_id);
  reader.join();
  ASSERT_FALSE(finished);
  EXPECT_NE(finished.error().message().find("corrupted blob"), std::string::npos);
  EXPECT_FALSE(proxy->GetBlob(1, "sha256:nope", 1));
}

TEST(ImageProxy, AProxyThatDiesIsAnError) {
  auto fake = std::make_unique<FakeProxy>();
  auto proxy = ImageProxy::Connect(fake->TakeClient());
  ASSERT_TRUE(proxy);
  fake.reset();  // the server end closes
  auto image = proxy->OpenImage("docker://r.example.com/app:1");
  ASSERT_FALSE(image);
  EXPECT_NE(image.error().message().find("image proxy ended"), std::string::npos);
}

TEST(ImageProxy, MissingSkopeoSaysWhatToInstall) {
  auto proxy = ImageProxy::Start({.skopeo = "podvisor-no-such-skopeo"});
  ASSERT_FALSE(proxy);
  EXPECT_EQ(proxy.error().message(), std::string(kNeedsSkopeo));
}

TEST(ScrubCredentials, RemovesSecretsAndCredentialLikeValues) {
  EXPECT_EQ(ScrubCredentials("login as bob with s3cr3t failed", {"s3cr3t"}),
            "login as bob with <redacted> failed");
  EXPECT_EQ(ScrubCredentials("Authorization: Bearer abc.def", {}),
            "Authorization: Bearer <redacted>");
  EXPECT_EQ(ScrubCredentials(R"({"auth":"dXNlcjpwdw==","x":1})", {}),
            R"({"auth":"<redacted>","x":1})");
  EXPECT_EQ(ScrubCredentials("password=hunter2 token: t0k", {}),
            "password=<redacted> token: <redacted>");
  EXPECT_EQ(ScrubCredentials("unauthorized: authentication required", {}),
            "unauthorized: authentication required");
}

TEST(SkopeoArgs, AuthIsAFdPathNeverAValue) {
  EXPECT_EQ(SkopeoAuthArgs({.auth_fd = 9}, "--"),
            (std::vector<std::string>{"--authfile", "/proc/self/fd/9"}));
  EXPECT_EQ(SkopeoAuthArgs({}, "--src-"), (std::vector<std::string>{"--src-no-creds"}));
}

}  // namespace
}  // namespace podvisor::registry
