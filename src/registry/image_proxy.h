// The client of skopeo's image proxy (`skopeo experimental-image-proxy`):
// containers/image, what podman and CRI-O pull with, driven over its
// JSON + descriptor-passing protocol, so podvisor gets registries.conf
// (mirrors, insecure, blocked), certs.d, token and basic auth, redirects
// and Docker/OCI media types without a registry client of its own.
//
// The protocol (skopeo 1.9's, version 0.2.3; any 0.2.x is accepted): a
// SOCK_SEQPACKET socketpair, skopeo's end at its fd 3 (--sockfd 3); one
// JSON request a packet, {"method":M,"args":[...]}, one reply a packet,
// {"success":B,"value":V,"pipeid":N,"error":"..."}. Failures are only the
// `error` text (no codes in this version). GetManifest and GetBlob answer
// with the read end of a pipe (SCM_RIGHTS) that skopeo fills from a
// goroutine; the write end is closed only when the client calls
// FinishPipe(pipeid), which waits for the goroutine and returns its error
// (a blob whose digest or size is wrong, a connection that died). skopeo
// handles one request at a time, and FinishPipe holds it until the pipe's
// data is written: call it only once the data has been read (puller.h
// does, so that three blobs stream at once on one proxy).
//
// GetManifest resolves an index to this host's platform by itself and
// returns the *instance's* digest, converted to OCI; the digest of what a
// tag names (the repo digest) therefore comes from TopManifest, which
// runs `skopeo inspect --raw` with the same configuration.
//
// Blocking calls: it runs in a pull worker process, never on a loop.
// Credentials reach skopeo only as --authfile /proc/self/fd/N of a memfd
// (credentials.h), never in argv or a file; skopeo's stderr is kept in a
// memfd and scrubbed of them before it becomes part of an error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/fd.h"
#include "common/result.h"
#include "process/child_process.h"

namespace podvisor::registry {

struct ProxyOptions {
  std::string skopeo = "skopeo";  // looked up in PATH
  // Given as --registries-conf: skopeo 1.9 ignores
  // $CONTAINERS_REGISTRIES_CONF (short_names.h).
  std::optional<std::filesystem::path> registries_conf{};
  // A memfd holding a one-entry auth.json (credentials.h); -1 means
  // anonymous (--no-creds).
  int auth_fd = -1;
  // Texts that must never reach a message (the credential's password,
  // token, auth), removed from skopeo's errors besides the usual patterns.
  std::vector<std::string> secrets{};
};

// The message for a missing skopeo.
constexpr std::string_view kNeedsSkopeo = "pulling needs skopeo (Debian package skopeo) on PATH";

// Removes what looks like a credential: every text of `secrets`, and the
// value after "Bearer ", "Basic ", "password", "token", "auth", "secret"
// (with ':' or '=').
std::string ScrubCredentials(std::string_view text, const std::vector<std::string>& secrets);

struct ProxyPipe {
  Fd fd{};  // the read end
  uint32_t pipe_id = 0;
  int64_t size = -1;  // GetBlob: the size skopeo reports, -1 unknown
};

struct ProxyManifest {
  std::string digest{};    // the platform manifest's original digest
  std::string manifest{};  // as OCI
};

class ImageProxy {
 public:
  // Spawns skopeo and calls Initialize.
  static Result<ImageProxy> Start(const ProxyOptions& options);
  // A proxy already at the other end of `socket` (tests).
  static Result<ImageProxy> Connect(Fd socket, std::vector<std::string> secrets = {});

  ImageProxy(ImageProxy&&) noexcept;
  ImageProxy& operator=(ImageProxy&&) noexcept;
  ~ImageProxy();

  const std::string& protocol_version() const { return protocol_version_; }

  // "docker://host/repo:tag"; the image's handle.
  Result<uint64_t> OpenImage(std::string_view reference);
  Status CloseImage(uint64_t image);
  Result<ProxyManifest> GetManifest(uint64_t image);
  // The pipe of a blob; read it, then FinishPipe. Thread-safe, as are all
  // calls: requests go out one at a time.
  Result<ProxyPipe> GetBlob(uint64_t image, std::string_view digest, uint64_t size);
  Status FinishPipe(uint32_t pipe_id);
  // Ends skopeo (and waits for it, at most 5 s, then kills it).
  Status Shutdown();

 private:
  struct Reply;
  ImageProxy() = default;
  Result<Reply> Call(std::string_view method, const std::string& args_json);
  // An error in the proxy's words (scrubbed), with skopeo's stderr when it died.
  Error ProxyError(std::string_view what, std::string_view message);
  Result<std::string> ReadPipe(ProxyPipe pipe, std::size_t max_size);

  Fd socket_{};
  process::ChildProcess child_;
  Fd stderr_{};  // memfd, skopeo's stderr
  std::vector<std::string> secrets_{};
  std::string protocol_version_{};
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();
};

// Runs `skopeo [--registries-conf F] ARGS...` to its end with the auth
// memfd of `options` passed through; stdout (at most `max_output` bytes)
// on success, else an error with its scrubbed message.
Result<std::string> RunSkopeo(const ProxyOptions& options, const std::vector<std::string>& args,
                              std::size_t max_output);

// The manifest a reference names as the registry has it (an index for a
// multi-platform image): `skopeo inspect --raw docker://REF`.
Result<std::string> FetchTopManifest(const ProxyOptions& options, std::string_view reference);

// The authfile arguments of `options` for a skopeo command: "--authfile
// /proc/self/fd/N" or "--no-creds"; `prefix` is "" or "--src-" (copy).
std::vector<std::string> SkopeoAuthArgs(const ProxyOptions& options, std::string_view prefix);

}  // namespace podvisor::registry
