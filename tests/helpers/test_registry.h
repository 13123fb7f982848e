// A real container registry for the pull tests (docs/TESTING.md "Tier 3:
// pulling from a registry"): Debian's `docker-registry serve` (the CNCF
// distribution registry, v2 API) on a free 127.0.0.1 port, its storage,
// config, htpasswd file and test CA in a temporary directory of its own,
// started and stopped by the test, by pid. Optional TLS with a CA made at
// run time by `openssl` (the server certificate names 127.0.0.1 as an IP
// SAN) and htpasswd basic auth (`htpasswd -Bbn`). With TLS the CA goes to
// /etc/containers/certs.d/127.0.0.1:PORT/ca.crt, where containers/image
// (skopeo, podman, podvisor's puller) looks for it; that directory names
// only this registry's port and is removed at Stop.
//
// Also here: the test images (OCI layouts built once per test binary from
// the busybox rootfs with scripts/make-oci-layout.sh: two images sharing a
// base layer, a big one, a multi-platform index), pushing them with
// `skopeo copy`, corrupting a stored blob, and a loopback TCP proxy that
// slows a pull down or cuts it after a given number of bytes: a registry
// that dies mid-pull, deterministically.
//
// Not here: anything about podvisor; these helpers drive only the registry
// and skopeo, so they are tested on their own (test_registry_test.cc).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../cli/run_command.h"

namespace podvisor::e2e {

namespace fs = std::filesystem;

struct RegistryOptions {
  bool tls = true;
  bool auth = true;
  std::string user = "pvtest";
  // Empty: a random password of 24 characters, unique per registry, so a
  // test can grep any output for it.
  std::string password;
};

class TestRegistry {
 public:
  // Starts the registry and waits until it accepts connections. nullptr
  // with `*error` set when it cannot (the tools missing, no root for TLS's
  // certs.d, the registry exiting at once).
  static std::unique_ptr<TestRegistry> Start(const RegistryOptions& options, std::string* error);
  // Why registries cannot run here ("docker-registry not installed"), or "".
  static std::string Missing(bool tls);

  ~TestRegistry();  // Stop()
  TestRegistry(const TestRegistry&) = delete;
  TestRegistry& operator=(const TestRegistry&) = delete;

  uint16_t port() const { return port_; }
  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }
  // host()/REPO:TAG or host()/REPO@DIGEST.
  std::string Ref(const std::string& repo_and_tag) const { return host() + "/" + repo_and_tag; }
  const RegistryOptions& options() const { return options_; }
  const std::string& user() const { return options_.user; }
  const std::string& password() const { return options_.password; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  const fs::path& dir() const { return dir_; }
  fs::path storage() const { return dir_ / "storage"; }
  fs::path ca_cert() const { return dir_ / "ca.crt"; }  // TLS only

  // `skopeo copy oci:LAYOUT:TAG docker://host()/REPO_TAG` (with --all for a
  // multi-platform layout), trusting this registry's CA and with its
  // credentials from an auth file (never on a command line).
  testing::CommandResult Push(const fs::path& layout, const std::string& repo_tag, bool all = false,
                              const std::string& layout_tag = "latest");
  // `skopeo inspect [--raw] docker://REF` with this registry's CA; with
  // the given credentials ("" for none; `user:password`).
  testing::CommandResult Inspect(const std::string& ref, bool raw, const std::string& creds,
                                 const std::vector<std::string>& extra = {});

  // The registry's access log (its stderr): "GET /v2/REPO/blobs/sha256:…".
  std::string Log() const;
  // A mark for Count(): the log's length now.
  std::size_t LogMark() const { return Log().size(); }
  // How many access-log lines after `mark` contain every one of `needles`.
  int CountRequests(const std::vector<std::string>& needles, std::size_t mark = 0) const;

  // The stored blob `sha256:HEX` made corrupt in place: same size, bytes
  // in its middle flipped, so its digest no longer matches. False when
  // the blob is not stored.
  bool CorruptBlob(const std::string& digest);
  fs::path BlobPath(const std::string& digest) const;

  // {"auths":{"127.0.0.1:PORT":{"auth":base64(user:password)}}}, for
  // `host` when given (a proxy in front of this registry).
  std::string DockerConfigJson(const std::string& user, const std::string& password,
                               const std::string& host = "") const;
  std::string DockerConfigJson() const { return DockerConfigJson(user(), password()); }
  // One more host:port (a proxy in front of this registry) trusted with
  // this registry's CA: /etc/containers/certs.d/127.0.0.1:PORT, removed at
  // Stop.
  bool TrustPort(uint16_t port);

  // SIGKILL by pid and reap: the registry dies. Storage and certs stay.
  void Kill();
  // Starts it again on the same port and storage after Kill or Pause.
  bool Restart(std::string* error);
  // SIGTERM (then SIGKILL after 5 s), reap, remove certs.d entries and dir.
  void Stop();

 private:
  TestRegistry() = default;
  bool Spawn(std::string* error);
  bool WaitListening(std::string* error);

  RegistryOptions options_;
  fs::path dir_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
  std::vector<fs::path> certs_d_entries_;  // ours to remove
  bool made_certs_d_ = false;              // /etc/containers/certs.d itself was ours
};

// A free TCP port on 127.0.0.1 (bound and released: another process may
// take it before us, which callers handle by retrying).
uint16_t FreeLoopbackPort();
// Whether something accepts connections on 127.0.0.1:port.
bool PortAcceptsConnections(uint16_t port);

// A TCP proxy on 127.0.0.1 in front of a registry, run by a thread of the
// test: bytes pass unchanged both ways (TLS stays end to end: the server
// certificate names 127.0.0.1, whatever the port). It can limit the
// registry-to-client rate (a slow pull) and cut: after `bytes` more bytes
// to clients every connection is closed and new ones are closed at once
// (a registry that died mid-pull) until Heal().
class LoopbackProxy {
 public:
  static std::unique_ptr<LoopbackProxy> Start(uint16_t upstream_port, std::string* error);
  ~LoopbackProxy();
  LoopbackProxy(const LoopbackProxy&) = delete;
  LoopbackProxy& operator=(const LoopbackProxy&) = delete;

  uint16_t port() const { return port_; }
  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }
  void CutAfter(uint64_t bytes);
  void Heal();
  bool has_cut() const { return dead_.load(); }
  void SetRate(uint64_t bytes_per_second);  // 0: unlimited
  uint64_t bytes_down() const { return bytes_down_.load(); }
  int connections() const { return connections_.load(); }

 private:
  LoopbackProxy() = default;
  void Loop();

  uint16_t port_ = 0;
  uint16_t upstream_ = 0;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> dead_{false};
  std::atomic<uint64_t> cut_at_{0};  // bytes_down_ value to cut at; 0: never
  std::atomic<uint64_t> rate_{0};
  std::atomic<uint64_t> bytes_down_{0};
  std::atomic<int> connections_{0};
};

// One image of an OCI layout: what the tests compare the store with.
struct LayoutImage {
  fs::path layout;
  std::string manifest_digest;             // sha256:…
  std::vector<std::string> layer_digests;  // the blobs, bottom first
  std::vector<std::string> diff_ids;       // the config's rootfs.diff_ids
  std::vector<uint64_t> layer_sizes;
};
// Reads index.json's first manifest (an image, not an index).
LayoutImage ReadLayoutImage(const fs::path& layout);

// The test images, built once per test binary (the same directories give
// the same digests: make-oci-layout.sh tars in name order, gzip -n):
//   app_a, app_b  the busybox rootfs with the test helper as the base
//                 layer, plus one small layer of their own (/app-name)
//   big           the base plus 24 MiB of random data (incompressible)
//   index         a multi-platform index: linux/<this host> is app_a,
//                 linux/arm64 (or amd64 on an arm64 host) and linux/s390x
//                 are tiny images of one file /platform
//   other_arch    the manifest digests of the index's foreign entries
class TestImages {
 public:
  // `busybox_rootfs`: a rootfs with /podvisor-test-helper (the e2e
  // harness's image); used on the first call only. nullptr and `*error`
  // when building fails.
  static const TestImages* Get(const fs::path& busybox_rootfs, std::string* error);

  LayoutImage app_a, app_b, big;
  fs::path index;                            // the layout; tag "latest"
  std::string index_digest;                  // the image index's digest
  std::vector<std::string> foreign_digests;  // the other platforms' manifests
  std::string host_arch;                     // "amd64"
  fs::path dir;
};

// `sha256:HEX` of a file, "" if unreadable.
std::string Sha256File(const fs::path& file);

}  // namespace podvisor::e2e
