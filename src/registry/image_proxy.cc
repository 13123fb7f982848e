#include "registry/image_proxy.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

#include "process/spawn.h"

namespace podvisor::registry {
namespace {

using Json = nlohmann::json;

// skopeo's maxMsgSize: replies bigger than this are not sent as packets.
constexpr std::size_t kMaxPacket = 32 * 1024;
constexpr int kProxySocketFd = 3;
constexpr std::size_t kStderrTail = 2048;
constexpr int kExitWaitMs = 5000;

Result<Fd> MakeMemfd(const char* name) {
  int fd = ::memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return Error::FromErrno("memfd_create");
  return Fd(fd);
}

// The end of what skopeo wrote to its stderr memfd: logrus's
// `msg="..."` when there is one (the rest is timestamps and levels).
std::string StderrTail(int fd) {
  if (fd < 0) return "";
  off_t size = ::lseek(fd, 0, SEEK_END);
  if (size <= 0) return "";
  off_t from = size > static_cast<off_t>(kStderrTail) ? size - static_cast<off_t>(kStderrTail) : 0;
  std::string text(static_cast<std::size_t>(size - from), '\0');
  ssize_t n = ::pread(fd, text.data(), text.size(), from);
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  if (auto msg = text.rfind("msg=\""); msg != std::string::npos) {
    std::string out;
    for (std::size_t i = msg + 5; i < text.size() && text[i] != '\n'; ++i) {
      if (text[i] == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (text[i] == '"') {
        break;
      } else {
        out += text[i];
      }
    }
    return out;
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

// Waits for a child to exit, at most `timeout_ms`, then kills it; its
// exit status (-1 when killed or unknown).
int WaitExit(process::ChildProcess& child, int timeout_ms) {
  if (!child.valid()) return -1;
  pollfd pfd{.fd = child.pidfd(), .events = POLLIN, .revents = 0};
  int ready = ::poll(&pfd, 1, timeout_ms);
  if (ready > 0) {
    siginfo_t info{};
    if (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(child.pidfd()), &info,
                 WEXITED) == 0) {
      child.Release();
      return info.si_code == CLD_EXITED ? info.si_status : -1;
    }
  }
  (void)child.KillAndReap();
  return -1;
}

Result<process::ChildProcess> SpawnSkopeo(const ProxyOptions& options,
                                          std::vector<std::string> args, int stdout_fd,
                                          int stderr_fd, std::vector<int> keep_fds,
                                          std::function<int()> pre_exec = {}) {
  std::vector<std::string> argv = {options.skopeo};
  if (options.registries_conf) {
    argv.emplace_back("--registries-conf");
    argv.emplace_back(options.registries_conf->string());
  }
  argv.insert(argv.end(), args.begin(), args.end());
  if (options.auth_fd >= 0) keep_fds.push_back(options.auth_fd);
  auto child = process::Spawn({.argv = std::move(argv),
                               .stdout_fd = stdout_fd,
                               .stderr_fd = stderr_fd,
                               .keep_fds = std::move(keep_fds),
                               .pre_exec = std::move(pre_exec)});
  if (!child) {
    if (child.error().code() == ENOENT) return Error(std::string(kNeedsSkopeo), ENOENT);
    return child.take_error().Wrap("starting skopeo");
  }
  return child;
}

bool IsSecretKeyword(std::string_view lower_word) {
  for (std::string_view key :
       {"password", "passwd", "token", "auth", "secret", "bearer", "basic"}) {
    if (lower_word.size() >= key.size() &&
        lower_word.substr(lower_word.size() - key.size()) == key) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string ScrubCredentials(std::string_view text, const std::vector<std::string>& secrets) {
  std::string out(text);
  for (const std::string& secret : secrets) {
    if (secret.size() < 3) continue;  // too short to tell from ordinary words
    for (std::size_t at = out.find(secret); at != std::string::npos;
         at = out.find(secret, at + 1)) {
      out.replace(at, secret.size(), "<redacted>");
    }
  }
  // The value after a credential-like word: "Bearer X", "password=X",
  // "token: X", "auth":"X".
  std::string result;
  std::size_t i = 0;
  while (i < out.size()) {
    std::size_t word_end = i;
    while (word_end < out.size() &&
           (std::isalnum(static_cast<unsigned char>(out[word_end])) || out[word_end] == '_')) {
      ++word_end;
    }
    if (word_end == i) {
      result += out[i++];
      continue;
    }
    std::string word = out.substr(i, word_end - i);
    std::string lower = word;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    result += word;
    i = word_end;
    if (!IsSecretKeyword(lower)) continue;
    std::size_t j = i;
    while (j < out.size() && (out[j] == '"' || out[j] == '\'' || out[j] == ' ')) ++j;
    bool separator = j < out.size() && (out[j] == '=' || out[j] == ':');
    if (separator) ++j;
    while (j < out.size() && (out[j] == '"' || out[j] == '\'' || out[j] == ' ')) ++j;
    bool spaced = lower == "bearer" || lower == "basic";
    if (!separator && !spaced) continue;
    std::size_t value_end = j;
    while (value_end < out.size() && !std::isspace(static_cast<unsigned char>(out[value_end])) &&
           out[value_end] != '"' && out[value_end] != '\'' && out[value_end] != ',' &&
           out[value_end] != '}') {
      ++value_end;
    }
    if (value_end == j) continue;
    result += out.substr(i, j - i) + "<redacted>";
    i = value_end;
  }
  return result;
}

std::vector<std::string> SkopeoAuthArgs(const ProxyOptions& options, std::string_view prefix) {
  if (options.auth_fd < 0) return {std::string(prefix) + "no-creds"};
  return {std::string(prefix) + "authfile", "/proc/self/fd/" + std::to_string(options.auth_fd)};
}

struct ImageProxy::Reply {
  bool success = false;
  Json value;
  uint32_t pipe_id = 0;
  std::string error;
  Fd fd;
};

ImageProxy::ImageProxy(ImageProxy&&) noexcept = default;
ImageProxy& ImageProxy::operator=(ImageProxy&&) noexcept = default;

ImageProxy::~ImageProxy() {
  if (socket_) (void)Shutdown();
}

Result<ImageProxy> ImageProxy::Start(const ProxyOptions& options) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    return Error::FromErrno("socketpair");
  }
  Fd ours(pair[0]);
  Fd theirs(pair[1]);
  auto stderr_memfd = MakeMemfd("podvisor-skopeo-stderr");
  if (!stderr_memfd) return stderr_memfd.take_error();
  // The socket goes to fd 3 in the child: a dup2 after Spawn's own
  // redirections (async-signal-safe; the copy has no FD_CLOEXEC).
  const int child_socket = theirs.get();
  auto pre_exec = [child_socket]() -> int {
    if (child_socket == kProxySocketFd) {
      return ::fcntl(kProxySocketFd, F_SETFD, 0) == 0 ? 0 : errno;
    }
    return ::dup2(child_socket, kProxySocketFd) == kProxySocketFd ? 0 : errno;
  };
  std::vector<std::string> args = SkopeoAuthArgs(options, "--");
  args.insert(args.begin(), "experimental-image-proxy");
  args.emplace_back("--sockfd");
  args.emplace_back(std::to_string(kProxySocketFd));
  // The auth memfd must not be fd 3, which the socket takes.
  Fd moved_auth;
  ProxyOptions spawn_options = options;
  if (options.auth_fd == kProxySocketFd) {
    moved_auth = Fd(::fcntl(options.auth_fd, F_DUPFD_CLOEXEC, 10));
    if (!moved_auth) return Error::FromErrno("dup of the auth memfd");
    spawn_options.auth_fd = moved_auth.get();
    args = SkopeoAuthArgs(spawn_options, "--");
    args.insert(args.begin(), "experimental-image-proxy");
    args.emplace_back("--sockfd");
    args.emplace_back(std::to_string(kProxySocketFd));
  }
  auto child = SpawnSkopeo(spawn_options, std::move(args), process::SpawnOptions::kDevNull,
                           stderr_memfd->get(), {}, pre_exec);
  if (!child) return child.take_error();
  ImageProxy proxy;
  proxy.socket_ = std::move(ours);
  proxy.child_ = std::move(*child);
  proxy.stderr_ = std::move(*stderr_memfd);
  proxy.secrets_ = options.secrets;
  theirs.Reset();
  auto reply = proxy.Call("Initialize", "[]");
  if (!reply) return reply.take_error();
  if (!reply->value.is_string()) return Error("skopeo's image proxy: Initialize gave no version");
  proxy.protocol_version_ = reply->value.get<std::string>();
  if (proxy.protocol_version_.rfind("0.2.", 0) != 0) {
    return Error("skopeo's image proxy speaks protocol " + proxy.protocol_version_ +
                 "; podvisor speaks 0.2.x (skopeo 1.9 and later 1.x)");
  }
  return proxy;
}

Result<ImageProxy> ImageProxy::Connect(Fd socket, std::vector<std::string> secrets) {
  ImageProxy proxy;
  proxy.socket_ = std::move(socket);
  proxy.secrets_ = std::move(secrets);
  auto reply = proxy.Call("Initialize", "[]");
  if (!reply) return reply.take_error();
  if (reply->value.is_string()) proxy.protocol_version_ = reply->value.get<std::string>();
  return proxy;
}

Error ImageProxy::ProxyError(std::string_view what, std::string_view message) {
  std::string text = ScrubCredentials(message, secrets_);
  if (text.empty()) {
    std::string tail = ScrubCredentials(StderrTail(stderr_.get()), secrets_);
    text = "skopeo's image proxy ended" + (tail.empty() ? std::string() : ": " + tail);
  }
  return Error(std::string(what) + ": " + text);
}

Result<ImageProxy::Reply> ImageProxy::Call(std::string_view method, const std::string& args_json) {
  std::lock_guard lock(*mutex_);
  if (!socket_) return Error("skopeo's image proxy: already shut down");
  std::string request = R"({"method":")" + std::string(method) + R"(","args":)" + args_json + "}";
  if (::send(socket_.get(), request.data(), request.size(), MSG_NOSIGNAL) < 0) {
    return ProxyError(method, "");
  }
  std::string buffer(kMaxPacket, '\0');
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  iovec iov{.iov_base = buffer.data(), .iov_len = buffer.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(socket_.get(), &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  Reply reply;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t k = 0; k < count; ++k) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof fd);
        if (!reply.fd) {
          reply.fd = Fd(fd);
        } else {
          ::close(fd);
        }
      }
    }
  }
  if (n <= 0) return ProxyError(method, "");
  if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
    return Error(std::string(method) + ": skopeo's image proxy sent a truncated reply");
  }
  Json j = Json::parse(std::string_view(buffer.data(), static_cast<std::size_t>(n)), nullptr,
                       /*allow_exceptions=*/false);
  if (!j.is_object()) return Error(std::string(method) + ": skopeo's image proxy: not JSON");
  reply.success = j.value("success", false);
  if (auto it = j.find("value"); it != j.end()) reply.value = *it;
  if (auto it = j.find("pipeid"); it != j.end() && it->is_number_unsigned()) {
    reply.pipe_id = it->get<uint32_t>();
  }
  reply.error = j.value("error", "");
  if (!reply.success) return ProxyError(method, reply.error.empty() ? "failed" : reply.error);
  return reply;
}

Result<std::string> ImageProxy::ReadPipe(ProxyPipe pipe, std::size_t max_size) {
  // skopeo writes from a goroutine and closes only at FinishPipe: read
  // in a thread while FinishPipe waits.
  std::string data;
  bool too_big = false;
  std::thread reader([&] {
    char chunk[16384];
    while (true) {
      ssize_t n = ::read(pipe.fd.get(), chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (data.size() + static_cast<std::size_t>(n) > max_size) {
        too_big = true;
        break;  // closing our end makes skopeo's write fail, so FinishPipe returns
      }
      data.append(chunk, static_cast<std::size_t>(n));
    }
    pipe.fd.Reset();
  });
  Status finished = FinishPipe(pipe.pipe_id);
  reader.join();
  if (too_big) return Error("larger than " + std::to_string(max_size) + " bytes");
  if (!finished) return finished.take_error();
  return data;
}

Result<uint64_t> ImageProxy::OpenImage(std::string_view reference) {
  auto reply = Call("OpenImage", Json::array({reference}).dump());
  if (!reply) return reply.take_error();
  if (!reply->value.is_number_unsigned() || reply->value.get<uint64_t>() == 0) {
    return Error("OpenImage: skopeo's image proxy gave no image handle");
  }
  return reply->value.get<uint64_t>();
}

Status ImageProxy::CloseImage(uint64_t image) {
  auto reply = Call("CloseImage", Json::array({image}).dump());
  if (!reply) return reply.take_error();
  return Ok();
}

Result<ProxyManifest> ImageProxy::GetManifest(uint64_t image) {
  auto reply = Call("GetManifest", Json::array({image}).dump());
  if (!reply) return reply.take_error();
  if (!reply->fd || !reply->value.is_string()) {
    return Error("GetManifest: skopeo's image proxy sent no manifest");
  }
  ProxyManifest manifest{.digest = reply->value.get<std::string>(), .manifest = {}};
  constexpr std::size_t kMaxManifest = 4 << 20;  // distribution's limit for a manifest
  auto bytes = ReadPipe({.fd = std::move(reply->fd), .pipe_id = reply->pipe_id}, kMaxManifest);
  if (!bytes) return bytes.take_error().Wrap("reading the manifest");
  manifest.manifest = std::move(*bytes);
  return manifest;
}

Result<ProxyPipe> ImageProxy::GetBlob(uint64_t image, std::string_view digest, uint64_t size) {
  auto reply = Call("GetBlob", Json::array({image, digest, size}).dump());
  if (!reply) return reply.take_error();
  if (!reply->fd) return Error("GetBlob: skopeo's image proxy sent no pipe");
  ProxyPipe pipe{.fd = std::move(reply->fd), .pipe_id = reply->pipe_id, .size = -1};
  if (reply->value.is_number_integer()) pipe.size = reply->value.get<int64_t>();
  return pipe;
}

Status ImageProxy::FinishPipe(uint32_t pipe_id) {
  auto reply = Call("FinishPipe", Json::array({pipe_id}).dump());
  if (reply) return Ok();
  // "FinishPipe" is the protocol's word; the error is the transfer's.
  std::string message = reply.error().message();
  constexpr std::string_view kMethod = "FinishPipe: ";
  if (message.rfind(kMethod, 0) == 0) message = message.substr(kMethod.size());
  return Error("transferring: " + message);
}

Status ImageProxy::Shutdown() {
  if (!socket_) return Ok();
  {
    std::lock_guard lock(*mutex_);
    std::string request = R"({"method":"Shutdown","args":[]})";
    (void)::send(socket_.get(), request.data(), request.size(), MSG_NOSIGNAL);
    socket_.Reset();
  }
  WaitExit(child_, kExitWaitMs);
  return Ok();
}

Result<std::string> RunSkopeo(const ProxyOptions& options, const std::vector<std::string>& args,
                              std::size_t max_output) {
  auto out = MakeMemfd("podvisor-skopeo-stdout");
  if (!out) return out.take_error();
  auto err = MakeMemfd("podvisor-skopeo-stderr");
  if (!err) return err.take_error();
  auto child = SpawnSkopeo(options, args, out->get(), err->get(), {});
  if (!child) return child.take_error();
  // No timeout of our own: containers/image bounds its connections, and
  // the supervisor bounds the worker.
  int status = WaitExit(*child, -1);
  if (status != 0) {
    std::string message = ScrubCredentials(StderrTail(err->get()), options.secrets);
    return Error(message.empty() ? "skopeo " + (args.empty() ? std::string() : args[0]) +
                                       " failed with status " + std::to_string(status)
                                 : message);
  }
  off_t size = ::lseek(out->get(), 0, SEEK_END);
  if (size < 0) return Error::FromErrno("reading skopeo's output");
  if (static_cast<std::size_t>(size) > max_output) {
    return Error("skopeo's output is larger than " + std::to_string(max_output) + " bytes");
  }
  std::string text(static_cast<std::size_t>(size), '\0');
  if (size > 0 && ::pread(out->get(), text.data(), text.size(), 0) != size) {
    return Error::FromErrno("reading skopeo's output");
  }
  return text;
}

Result<std::string> FetchTopManifest(const ProxyOptions& options, std::string_view reference) {
  std::vector<std::string> args = {"inspect", "--raw"};
  for (std::string& a : SkopeoAuthArgs(options, "--")) args.push_back(std::move(a));
  args.push_back("docker://" + std::string(reference));
  constexpr std::size_t kMaxManifest = 4 << 20;
  auto manifest = RunSkopeo(options, args, kMaxManifest);
  if (manifest) return manifest;
  // skopeo's `Error parsing image name "docker://…": ` says nothing the
  // caller does not know; the registry's answer follows it.
  std::string message = manifest.error().message();
  constexpr std::string_view kPrefix = "Error parsing image name \"";
  if (message.rfind(kPrefix, 0) == 0) {
    if (auto end = message.find("\": ", kPrefix.size()); end != std::string::npos) {
      message = message.substr(end + 3);
    }
  }
  return Error(message);
}

}  // namespace podvisor::registry
