#include "test_registry.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

extern char** environ;

namespace podvisor::e2e {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr const char* kRegistry = "/usr/bin/docker-registry";
const fs::path kCertsD = "/etc/containers/certs.d";

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Executable(const std::string& path) {
  return ::access(path.c_str(), X_OK) == 0;
}

std::string Which(const std::string& program) {
  for (const char* dir : {"/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin"}) {
    std::string p = std::string(dir) + "/" + program;
    if (Executable(p)) return p;
  }
  return "";
}

std::string RandomAlnum(std::size_t n) {
  static const char kChars[] = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  std::string out;
  while (out.size() < n) {
    unsigned char c = static_cast<unsigned char>(urandom.get());
    out.push_back(kChars[c % (sizeof kChars - 1)]);
  }
  return out;
}

std::string Base64(const std::string& in) {
  static const char kTable[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kTable[(v >> s) & 63]);
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += {kTable[(v >> 18) & 63], kTable[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {kTable[(v >> 18) & 63], kTable[(v >> 12) & 63], kTable[(v >> 6) & 63], '='};
  }
  return out;
}

std::string Join(const testing::CommandResult& r) {
  return r.out + r.err;
}

bool Run(const std::vector<std::string>& argv, std::string* error) {
  auto r = testing::RunCommand(argv);
  if (r.exit_code == 0) return true;
  if (error) *error = argv[0] + " exited " + std::to_string(r.exit_code) + ": " + Join(r);
  return false;
}

}  // namespace

// ------------------------------------------------------------------ ports

uint16_t FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

bool PortAcceptsConnections(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

std::string Sha256File(const fs::path& file) {
  auto r = testing::RunCommand({"/usr/bin/sha256sum", file.string()});
  if (r.exit_code != 0 || r.out.size() < 64) return "";
  return "sha256:" + r.out.substr(0, 64);
}

// ------------------------------------------------------------------ registry

std::string TestRegistry::Missing(bool tls) {
  if (!Executable(kRegistry)) return "docker-registry not installed (scripts/install-deps.sh)";
  if (Which("skopeo").empty()) return "skopeo not installed";
  if (Which("htpasswd").empty()) return "htpasswd not installed (apache2-utils)";
  if (tls && Which("openssl").empty()) return "openssl not installed";
  if (tls && ::geteuid() != 0) return "needs root (writes /etc/containers/certs.d/127.0.0.1:PORT)";
  return "";
}

std::unique_ptr<TestRegistry> TestRegistry::Start(const RegistryOptions& options,
                                                  std::string* error) {
  std::string why = Missing(options.tls);
  if (!why.empty()) {
    *error = why;
    return nullptr;
  }
  std::unique_ptr<TestRegistry> r(new TestRegistry());
  r->options_ = options;
  if (r->options_.password.empty()) r->options_.password = RandomAlnum(24);
  static int serial = 0;
  r->dir_ = fs::temp_directory_path() /
            ("podvisor-registry-" + std::to_string(::getpid()) + "-" + std::to_string(++serial));
  fs::remove_all(r->dir_);
  fs::create_directories(r->dir_ / "storage");
  const fs::path& d = r->dir_;

  if (options.auth) {
    // -B: bcrypt, the only scheme distribution's htpasswd accepts. The
    // password is on htpasswd's command line for the moment it runs:
    // the test's own process, before any podvisor runs.
    auto h =
        testing::RunCommand({Which("htpasswd"), "-Bbn", r->options_.user, r->options_.password});
    if (h.exit_code != 0) {
      *error = "htpasswd: " + Join(h);
      return nullptr;
    }
    std::ofstream(d / "htpasswd") << h.out;
  }
  if (options.tls) {
    const std::string openssl = Which("openssl");
    std::ofstream(d / "server.ext") << "subjectAltName=IP:127.0.0.1\n"
                                       "basicConstraints=CA:FALSE\n"
                                       "keyUsage=digitalSignature,keyEncipherment\n"
                                       "extendedKeyUsage=serverAuth\n";
    if (!Run({openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
              "/CN=podvisor test CA " + std::to_string(::getpid()), "-keyout",
              (d / "ca.key").string(), "-out", (d / "ca.crt").string()},
             error) ||
        !Run({openssl, "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout",
              (d / "server.key").string(), "-out", (d / "server.csr").string()},
             error) ||
        !Run({openssl, "x509", "-req", "-days", "2", "-in", (d / "server.csr").string(), "-CA",
              (d / "ca.crt").string(), "-CAkey", (d / "ca.key").string(), "-CAcreateserial",
              "-extfile", (d / "server.ext").string(), "-out", (d / "server.crt").string()},
             error)) {
      return nullptr;
    }
    // skopeo's --cert-dir for pushes: the CA alone.
    fs::create_directories(d / "certs");
    fs::copy_file(d / "ca.crt", d / "certs" / "ca.crt");
  }
  // Another process may take the port between FreeLoopbackPort and the
  // registry's bind: try a few.
  for (int attempt = 0; attempt < 5; ++attempt) {
    r->port_ = FreeLoopbackPort();
    if (r->Spawn(error) && r->WaitListening(error)) {
      if (options.tls && !r->TrustPort(r->port_)) {
        *error = "cannot write " + (kCertsD / r->host()).string();
        return nullptr;
      }
      std::ofstream(d / "auth.json") << r->DockerConfigJson();
      return r;
    }
    r->Kill();
  }
  return nullptr;
}

bool TestRegistry::Spawn(std::string* error) {
  std::ostringstream config;
  config << "version: 0.1\n"
            "log:\n  level: info\n  accesslog:\n    disabled: false\n"
            "storage:\n  filesystem:\n    rootdirectory: "
         << storage().string()
         << "\n  delete:\n    enabled: true\n"
            "  maintenance:\n    uploadpurging:\n      enabled: false\n"
            "http:\n  addr: 127.0.0.1:"
         << port_ << "\n  secret: " << RandomAlnum(32) << "\n";
  if (options_.tls) {
    config << "  tls:\n    certificate: " << (dir_ / "server.crt").string()
           << "\n    key: " << (dir_ / "server.key").string() << "\n";
  }
  if (options_.auth) {
    config << "auth:\n  htpasswd:\n    realm: podvisor-test\n    path: "
           << (dir_ / "htpasswd").string() << "\n";
  }
  std::ofstream(dir_ / "config.yml") << config.str();

  std::vector<std::string> argv = {kRegistry, "serve", (dir_ / "config.yml").string()};
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string log = (dir_ / "registry.log").string();
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  int rc = posix_spawn(&pid_, kRegistry, &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    pid_ = -1;
    *error = std::string("cannot spawn docker-registry: ") + std::strerror(rc);
    return false;
  }
  return true;
}

bool TestRegistry::WaitListening(std::string* error) {
  // The registry needs about 50 ms; a loaded 2-core host, much more.
  auto deadline = steady_clock::now() + std::chrono::seconds(20);
  while (steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      *error = "docker-registry exited at once: " + ReadAll(dir_ / "registry.log");
      return false;
    }
    if (PortAcceptsConnections(port_)) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  *error = "docker-registry did not listen on " + host() + " within 20 s";
  return false;
}

bool TestRegistry::TrustPort(uint16_t port) {
  std::error_code ec;
  if (!fs::exists(kCertsD, ec)) {
    fs::create_directories(kCertsD, ec);
    if (ec) return false;
    made_certs_d_ = true;
  }
  fs::path entry = kCertsD / ("127.0.0.1:" + std::to_string(port));
  if (fs::exists(entry, ec)) return false;  // someone else's: never overwrite
  fs::create_directory(entry, ec);
  if (ec) return false;
  certs_d_entries_.push_back(entry);
  fs::copy_file(ca_cert(), entry / "ca.crt", ec);
  return !ec;
}

std::string TestRegistry::DockerConfigJson(const std::string& user, const std::string& password,
                                           const std::string& host) const {
  nlohmann::json j = {
      {"auths", {{host.empty() ? this->host() : host, {{"auth", Base64(user + ":" + password)}}}}}};
  return j.dump();
}

testing::CommandResult TestRegistry::Push(const fs::path& layout, const std::string& repo_tag,
                                          bool all, const std::string& layout_tag) {
  std::vector<std::string> argv = {Which("skopeo"), "--insecure-policy", "copy", "--retry-times",
                                   "2"};
  if (all) argv.push_back("--all");
  if (options_.tls) {
    argv.push_back("--dest-cert-dir=" + (dir_ / "certs").string());
  } else {
    argv.push_back("--dest-tls-verify=false");
  }
  if (options_.auth) argv.push_back("--dest-authfile=" + (dir_ / "auth.json").string());
  argv.push_back("oci:" + layout.string() + ":" + layout_tag);
  argv.push_back("docker://" + Ref(repo_tag));
  return testing::RunCommand(argv);
}

testing::CommandResult TestRegistry::Inspect(const std::string& ref, bool raw,
                                             const std::string& creds,
                                             const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {Which("skopeo"), "--insecure-policy"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("inspect");
  if (raw) argv.push_back("--raw");
  // No --cert-dir: with TLS the CA must come from certs.d, as for podvisor.
  if (!options_.tls) argv.push_back("--tls-verify=false");
  // An empty auth file, so the host's own credentials never count.
  std::ofstream(dir_ / "no-auth.json") << "{}";
  argv.push_back("--authfile=" + (dir_ / "no-auth.json").string());
  if (!creds.empty()) argv.push_back("--creds=" + creds);
  argv.push_back("docker://" + ref);
  return testing::RunCommand(argv);
}

std::string TestRegistry::Log() const {
  return ReadAll(dir_ / "registry.log");
}

int TestRegistry::CountRequests(const std::vector<std::string>& needles, std::size_t mark) const {
  std::string log = Log();
  std::istringstream in(mark < log.size() ? log.substr(mark) : "");
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    // Access-log lines only: `127.0.0.1 - - [date] "GET /v2/… HTTP/1.1" 200 …`.
    if (line.rfind("127.0.0.1 - ", 0) != 0) continue;
    bool all = true;
    for (const auto& needle : needles) all = all && line.find(needle) != std::string::npos;
    n += all ? 1 : 0;
  }
  return n;
}

fs::path TestRegistry::BlobPath(const std::string& digest) const {
  std::string hex = digest.substr(digest.find(':') + 1);
  return storage() / "docker" / "registry" / "v2" / "blobs" / "sha256" / hex.substr(0, 2) / hex /
         "data";
}

bool TestRegistry::CorruptBlob(const std::string& digest) {
  fs::path p = BlobPath(digest);
  std::error_code ec;
  auto size = fs::file_size(p, ec);
  if (ec || size == 0) return false;
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  // 16 bytes from the middle, each flipped: the size stays, the digest not.
  const auto start = static_cast<std::streamoff>(size / 2);
  for (std::streamoff i = 0; i < 16 && start + i < static_cast<std::streamoff>(size); ++i) {
    f.seekg(start + i);
    char c = 0;
    f.get(c);
    f.seekp(start + i);
    f.put(static_cast<char>(~c));
  }
  f.flush();
  return f.good() && Sha256File(p) != digest;
}

void TestRegistry::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

bool TestRegistry::Restart(std::string* error) {
  if (pid_ > 0) return true;
  return Spawn(error) && WaitListening(error);
}

void TestRegistry::Stop() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    auto deadline = steady_clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) != pid_) {
      if (steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    pid_ = -1;
  }
  std::error_code ec;
  for (const auto& entry : certs_d_entries_) fs::remove_all(entry, ec);
  certs_d_entries_.clear();
  if (made_certs_d_) {
    fs::remove(kCertsD, ec);  // only if empty: another test's entry stays
    made_certs_d_ = false;
  }
  if (!dir_.empty()) fs::remove_all(dir_, ec);
  dir_.clear();
}

TestRegistry::~TestRegistry() {
  Stop();
}

// ------------------------------------------------------------------ proxy

std::unique_ptr<LoopbackProxy> LoopbackProxy::Start(uint16_t upstream_port, std::string* error) {
  std::unique_ptr<LoopbackProxy> p(new LoopbackProxy());
  p->upstream_ = upstream_port;
  p->listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (p->listen_fd_ < 0 || ::bind(p->listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(p->listen_fd_, 64) != 0 ||
      ::getsockname(p->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      ::pipe2(p->wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    *error = std::string("proxy socket: ") + std::strerror(errno);
    return nullptr;  // the destructor closes what was opened
  }
  p->port_ = ntohs(addr.sin_port);
  p->thread_ = std::thread([raw = p.get()] { raw->Loop(); });
  return p;
}

LoopbackProxy::~LoopbackProxy() {
  stop_ = true;
  if (wake_[1] >= 0) {
    char c = 1;
    [[maybe_unused]] auto n = ::write(wake_[1], &c, 1);
  }
  if (thread_.joinable()) thread_.join();
  for (int fd : {listen_fd_, wake_[0], wake_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

void LoopbackProxy::CutAfter(uint64_t bytes) {
  cut_at_ = bytes_down_.load() + bytes;
}
void LoopbackProxy::Heal() {
  cut_at_ = 0;
  dead_ = false;
}
void LoopbackProxy::SetRate(uint64_t bytes_per_second) {
  rate_ = bytes_per_second;
}

void LoopbackProxy::Loop() {
  struct Pair {
    int client;
    int upstream;
  };
  std::vector<Pair> pairs;
  auto close_pair = [](Pair& p) {
    ::close(p.client);
    ::close(p.upstream);
    p.client = p.upstream = -1;
  };
  // The rate limit: bytes allowed so far since the rate was set.
  auto window_start = steady_clock::now();
  uint64_t window_bytes = 0, window_rate = 0;
  char buf[16384];
  while (!stop_) {
    std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    const uint64_t rate = rate_.load();
    if (rate != window_rate) {
      window_rate = rate;
      window_start = steady_clock::now();
      window_bytes = 0;
    }
    std::size_t down_budget = sizeof buf;
    if (rate > 0) {
      double elapsed = std::chrono::duration<double>(steady_clock::now() - window_start).count();
      double allowed = elapsed * static_cast<double>(rate) - static_cast<double>(window_bytes);
      down_budget = allowed < 1 ? 0 : std::min<std::size_t>(sizeof buf, std::size_t(allowed));
    }
    for (const auto& p : pairs) {
      fds.push_back({p.client, POLLIN, 0});
      fds.push_back({p.upstream, static_cast<short>(down_budget > 0 ? POLLIN : 0), 0});
    }
    if (::poll(fds.data(), fds.size(), down_budget > 0 ? 200 : 5) < 0 && errno != EINTR) break;
    if (fds[1].revents) {
      char c;
      while (::read(wake_[0], &c, 1) > 0) {
      }
    }
    if (fds[0].revents & POLLIN) {
      int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0 && dead_) {
        ::close(client);  // the registry is "dead": connection reset
      } else if (client >= 0) {
        int up = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(upstream_);
        if (up >= 0 && ::connect(up, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
          pairs.push_back({client, up});
          ++connections_;
        } else {
          if (up >= 0) ::close(up);
          ::close(client);
        }
      }
    }
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      Pair& p = pairs[i];
      const pollfd& cfd = fds[2 + 2 * i];
      const pollfd& ufd = fds[3 + 2 * i];
      if (p.client < 0) continue;
      // Client to registry: requests, uploads; never cut or slowed.
      if (cfd.revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = ::read(p.client, buf, sizeof buf);
        if (n <= 0 || ::send(p.upstream, buf, std::size_t(n), MSG_NOSIGNAL) != n) {
          close_pair(p);
          continue;
        }
      }
      if ((ufd.revents & (POLLIN | POLLHUP | POLLERR)) && down_budget > 0) {
        ssize_t n = ::read(p.upstream, buf, std::min(down_budget, sizeof buf));
        if (n <= 0) {
          close_pair(p);
          continue;
        }
        const uint64_t cut = cut_at_.load();
        uint64_t allowed = uint64_t(n);
        if (cut > 0 && bytes_down_ + allowed >= cut) allowed = cut - bytes_down_;
        // Blocking send: the peers are HTTP clients that read their answer.
        if (allowed > 0 &&
            ::send(p.client, buf, std::size_t(allowed), MSG_NOSIGNAL) != ssize_t(allowed)) {
          close_pair(p);
          continue;
        }
        bytes_down_ += allowed;
        window_bytes += allowed;
        down_budget -= std::min<std::size_t>(down_budget, std::size_t(allowed));
        if (cut > 0 && bytes_down_ >= cut) {
          // The registry dies: every connection now, and new ones refused.
          dead_ = true;
          cut_at_ = 0;
          for (auto& q : pairs) {
            if (q.client >= 0) close_pair(q);
          }
          break;
        }
      }
    }
    pairs.erase(
        std::remove_if(pairs.begin(), pairs.end(), [](const Pair& p) { return p.client < 0; }),
        pairs.end());
    if (dead_) {
      for (auto& q : pairs) close_pair(q);
      pairs.clear();
    }
  }
  for (auto& q : pairs) {
    if (q.client >= 0) close_pair(q);
  }
}

// ------------------------------------------------------------------ images

LayoutImage ReadLayoutImage(const fs::path& layout) {
  LayoutImage img;
  img.layout = layout;
  auto blob = [&](const std::string& digest) {
    return nlohmann::json::parse(ReadAll(layout / "blobs" / "sha256" / digest.substr(7)));
  };
  auto index = nlohmann::json::parse(ReadAll(layout / "index.json"));
  img.manifest_digest = index["manifests"][0]["digest"].get<std::string>();
  auto manifest = blob(img.manifest_digest);
  for (const auto& l : manifest["layers"]) {
    img.layer_digests.push_back(l["digest"].get<std::string>());
    img.layer_sizes.push_back(l["size"].get<uint64_t>());
  }
  auto config = blob(manifest["config"]["digest"].get<std::string>());
  for (const auto& d : config["rootfs"]["diff_ids"]) img.diff_ids.push_back(d.get<std::string>());
  return img;
}

namespace {

std::string HostArch() {
  utsname u{};
  ::uname(&u);
  std::string m = u.machine;
  if (m == "x86_64") return "amd64";
  if (m == "aarch64") return "arm64";
  return m;
}

// make-oci-layout.sh LAYOUT CONFIG DIRS... (with OCI_ARCH when `arch` is set).
bool MakeLayout(const fs::path& layout, const std::string& config,
                const std::vector<fs::path>& dirs, const std::string& arch, std::string* error) {
  const char* root = std::getenv("PODVISOR_SOURCE_ROOT");
  if (!root) {
    *error = "PODVISOR_SOURCE_ROOT is not set (run the test through meson)";
    return false;
  }
  std::vector<std::string> argv = {"/usr/bin/env"};
  if (!arch.empty()) argv.push_back("OCI_ARCH=" + arch);
  argv.insert(argv.end(), {"/bin/bash", std::string(root) + "/scripts/make-oci-layout.sh",
                           layout.string(), config});
  for (const auto& d : dirs) argv.push_back(d.string());
  return Run(argv, error);
}

class ImagesHolder {
 public:
  ~ImagesHolder() {
    std::error_code ec;
    if (images_ && !images_->dir.empty()) fs::remove_all(images_->dir, ec);
  }
  std::unique_ptr<TestImages> images_;
  std::string error_;
  bool tried_ = false;
};
ImagesHolder g_images;

bool Build(TestImages& t, const fs::path& rootfs, std::string* error) {
  const fs::path d = t.dir;
  // The base: a copy of the rootfs, so that the three images' base layer
  // is one tar (the same files, modes and times).
  fs::path base = d / "src" / "base";
  fs::create_directories(base.parent_path());
  if (!Run({"/bin/cp", "-a", rootfs.string(), base.string()}, error)) return false;
  for (const char* name : {"a", "b"}) {
    fs::path extra = d / "src" / (std::string("extra-") + name);
    fs::create_directories(extra);
    std::ofstream(extra / "app-name") << "app-" << name << "\n";
  }
  const std::string config = R"({"Cmd":["/bin/sh","-c","cat /app-name"],"Env":["PATH=/bin"]})";
  if (!MakeLayout(d / "app-a", config, {base, d / "src" / "extra-a"}, "", error) ||
      !MakeLayout(d / "app-b", config, {base, d / "src" / "extra-b"}, "", error)) {
    return false;
  }
  fs::path random = d / "src" / "random";
  fs::create_directories(random);
  if (!Run({"/bin/dd", "if=/dev/urandom", "of=" + (random / "noise").string(), "bs=1M", "count=24",
            "status=none"},
           error) ||
      !MakeLayout(d / "big", config, {base, random}, "", error)) {
    return false;
  }
  t.app_a = ReadLayoutImage(d / "app-a");
  t.app_b = ReadLayoutImage(d / "app-b");
  t.big = ReadLayoutImage(d / "big");

  // The multi-platform index: this host's entry is app-a; the others are
  // tiny images of their own architecture.
  t.host_arch = HostArch();
  fs::path index = d / "index";
  fs::create_directories(index / "blobs" / "sha256");
  nlohmann::json manifests = nlohmann::json::array();
  auto add = [&](const fs::path& layout, const std::string& arch) {
    for (const auto& e : fs::directory_iterator(layout / "blobs" / "sha256")) {
      fs::copy_file(e.path(), index / "blobs" / "sha256" / e.path().filename(),
                    fs::copy_options::skip_existing);
    }
    LayoutImage img = ReadLayoutImage(layout);
    manifests.push_back(
        {{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
         {"digest", img.manifest_digest},
         {"size", fs::file_size(layout / "blobs" / "sha256" / img.manifest_digest.substr(7))},
         {"platform", {{"architecture", arch}, {"os", "linux"}}}});
    return img.manifest_digest;
  };
  add(d / "app-a", t.host_arch);
  for (const std::string arch : {t.host_arch == "arm64" ? "amd64" : "arm64", "s390x"}) {
    fs::path src = d / "src" / ("platform-" + arch);
    fs::create_directories(src);
    std::ofstream(src / "platform") << arch << "\n";
    if (!MakeLayout(d / ("only-" + arch), R"({"Cmd":["/bin/true"]})", {src}, arch, error)) {
      return false;
    }
    t.foreign_digests.push_back(add(d / ("only-" + arch), arch));
  }
  nlohmann::json image_index = {{"schemaVersion", 2},
                                {"mediaType", "application/vnd.oci.image.index.v1+json"},
                                {"manifests", manifests}};
  fs::path tmp = index / "index-blob.json";
  std::ofstream(tmp) << image_index.dump();
  t.index_digest = Sha256File(tmp);
  const auto index_size = fs::file_size(tmp);
  fs::rename(tmp, index / "blobs" / "sha256" / t.index_digest.substr(7));
  nlohmann::json entry = {{"mediaType", "application/vnd.oci.image.index.v1+json"},
                          {"digest", t.index_digest},
                          {"size", index_size},
                          {"annotations", {{"org.opencontainers.image.ref.name", "latest"}}}};
  nlohmann::json top = {{"schemaVersion", 2}, {"manifests", nlohmann::json::array({entry})}};
  std::ofstream(index / "index.json") << top.dump();
  std::ofstream(index / "oci-layout") << R"({"imageLayoutVersion":"1.0.0"})";
  t.index = index;
  return true;
}

}  // namespace

const TestImages* TestImages::Get(const fs::path& busybox_rootfs, std::string* error) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  if (!g_images.tried_) {
    g_images.tried_ = true;
    auto t = std::make_unique<TestImages>();
    t->dir = fs::temp_directory_path() / ("podvisor-test-images-" + std::to_string(::getpid()));
    fs::remove_all(t->dir);
    fs::create_directories(t->dir);
    if (Build(*t, busybox_rootfs, &g_images.error_)) {
      g_images.images_ = std::move(t);
    } else {
      std::error_code ec;
      fs::remove_all(t->dir, ec);
    }
  }
  if (!g_images.images_) *error = "building the test images: " + g_images.error_;
  return g_images.images_.get();
}

}  // namespace podvisor::e2e
