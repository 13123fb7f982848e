// podvisor-test-helper: one static multi-call program used as container
// process, hook and probe in test tiers 2-4 (docs/TESTING.md). Static so it runs
// in a busybox rootfs and in a VM initramfs alike.
//
//   podvisor-test-helper [--log NAME] [--log-file FILE] COMMAND ARGS...
//
//   exit N                  exit with status N
//   sleep MS                sleep MS milliseconds, then exit 0
//   ignore-sigterm          ignore SIGTERM and sleep until killed
//   trap-sigterm MS CODE    on SIGTERM wait MS milliseconds, then exit CODE
//   memhog MB               allocate and touch MB MiB, then sleep forever
//   spawn-orphans N         leave N orphaned sleepers (50 ms) behind, exit 0
//   serve-http PORT [STATUS [FILE]]  answer every HTTP request with STATUS
//                           (200), appending each request to FILE; except
//                           /redirect/N: 302 to /redirect/N-1 (N > 0), and
//                           /offhost: 302 to http://localhost:PORT/never
//   serve-grpc PORT [STATUS [SERVICE]]  a gRPC health server over HTTP/2
//                           cleartext answering Health/Check with STATUS
//                           (1 SERVING, 2 NOT_SERVING, ...); with SERVICE,
//                           other service names get grpc-status 5
//   log NAME VERB           append "<RFC3339 ms> NAME VERB" to the log file
//   write FILE TEXT         write TEXT to FILE (e.g. a termination message)
//
// With --log NAME the helper also logs "NAME Started" when it begins and
// "NAME Exiting" when it leaves (by exit or on a trapped SIGTERM), which is
// how ordering tests see container lifetimes. The log file is --log-file,
// else $PODVISOR_TEST_LOG, else /shared/events.log. Each line is written
// with one O_APPEND write(), so concurrent writers never interleave.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

const char* g_log_name = nullptr;
const char* g_log_file = nullptr;

const char* LogFile() {
  if (g_log_file) return g_log_file;
  const char* env = std::getenv("PODVISOR_TEST_LOG");
  return env && *env ? env : "/shared/events.log";
}

// Async-signal-safe: snprintf into a stack buffer is not formally safe, but
// this is only called from the SIGTERM path of a test process that does
// nothing else at that moment.
void AppendLog(const char* name, const char* verb) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t{};
  gmtime_r(&ts.tv_sec, &t);
  char line[512];
  int n = std::snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s\n",
                        t.tm_year + 1900, t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                        ts.tv_nsec / 1000000, name, verb);
  int fd = open(LogFile(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return;
  if (write(fd, line, static_cast<size_t>(n)) < 0) {
    // Nothing sensible to do: the test will see the line missing.
  }
  close(fd);
}

[[noreturn]] void Exit(int code) {
  if (g_log_name) AppendLog(g_log_name, "Exiting");
  _exit(code);
}

void SleepMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

[[noreturn]] void SleepForever() {
  for (;;) pause();
}

long Number(const char* s, const char* what) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s, &end, 10);
  if (errno || !end || *end || end == s) {
    std::fprintf(stderr, "podvisor-test-helper: %s: not a number: %s\n", what, s);
    _exit(125);
  }
  return v;
}

long g_trap_ms = 0;
int g_trap_code = 0;

void OnTrappedSigterm(int) {
  SleepMs(g_trap_ms);
  Exit(g_trap_code);
}

[[noreturn]] void MemHog(long mb) {
  // Touch every page so the memory is charged to the cgroup, in 1 MiB
  // steps so an OOM kill lands while we are still allocating.
  for (long i = 0; i < mb; ++i) {
    void* p = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::perror("mmap");
      Exit(1);
    }
    std::memset(p, 0x5a, 1 << 20);
  }
  std::printf("allocated %ld MiB\n", mb);
  std::fflush(stdout);
  SleepForever();
}

void SpawnOrphans(long n) {
  for (long i = 0; i < n; ++i) {
    pid_t child = fork();
    if (child < 0) {
      std::perror("fork");
      Exit(1);
    }
    if (child == 0) {
      // The grandchild outlives its parent, so it is reparented to the
      // nearest subreaper (podvisor) or to PID 1 of the pid namespace.
      if (fork() == 0) {
        SleepMs(50);
        _exit(0);
      }
      _exit(0);
    }
    while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

[[noreturn]] void ServeHttp(long port, long status, const char* record) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 64) != 0) {
    std::perror("serve-http: bind/listen");
    Exit(1);
  }
  std::printf("serving HTTP %ld on port %ld\n", status, port);
  std::fflush(stdout);
  for (;;) {
    int conn = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    char request[4096];
    ssize_t got = read(conn, request, sizeof request - 1);
    if (got > 0) {
      request[got] = '\0';
      if (record) {
        int rfd = open(record, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
        if (rfd >= 0) {
          if (write(rfd, request, static_cast<size_t>(got)) < 0) {
            // The test will see the request missing.
          }
          close(rfd);
        }
      }
      // Echo the request headers in the body: tests check what a probe or
      // an httpGet hook sent (User-Agent, the termination reason header).
      char head[512];
      int body_len = static_cast<int>(got);
      long answer = status;
      char location[128] = "";
      const char* path = std::strchr(request, ' ');
      if (path && std::strncmp(path, " /redirect/", 11) == 0) {
        long hops = std::strtol(path + 11, nullptr, 10);
        if (hops > 0) {
          answer = 302;
          std::snprintf(location, sizeof location, "Location: /redirect/%ld\r\n", hops - 1);
        }
      } else if (path && std::strncmp(path, " /offhost ", 10) == 0) {
        answer = 302;
        std::snprintf(location, sizeof location, "Location: http://localhost:%ld/never\r\n", port);
      }
      int n = std::snprintf(head, sizeof head,
                            "HTTP/1.1 %ld Status\r\n%sContent-Type: text/plain\r\n"
                            "Content-Length: %d\r\nConnection: close\r\n\r\n",
                            answer, location, body_len);
      if (write(conn, head, static_cast<size_t>(n)) < 0 ||
          write(conn, request, static_cast<size_t>(body_len)) < 0) {
        // The client went away; serve the next one.
      }
    }
    close(conn);
  }
}

bool ReadFull(int fd, void* buf, size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t got = read(fd, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool WriteFull(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// One HTTP/2 frame: 24-bit length, type, flags, 31-bit stream id, payload.
bool SendFrame(int fd, uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  std::string f;
  size_t len = payload.size();
  f.push_back(static_cast<char>((len >> 16) & 0xff));
  f.push_back(static_cast<char>((len >> 8) & 0xff));
  f.push_back(static_cast<char>(len & 0xff));
  f.push_back(static_cast<char>(type));
  f.push_back(static_cast<char>(flags));
  for (int shift = 24; shift >= 0; shift -= 8)
    f.push_back(static_cast<char>((stream >> shift) & 0xff));
  return WriteFull(fd, f + payload);
}

// HPACK "literal header field without indexing", new name, no Huffman
// (RFC 7541 6.2.2); names and values here are shorter than 127 bytes.
std::string HpackLiteral(const std::string& name, const std::string& value) {
  std::string out(1, '\0');
  out.push_back(static_cast<char>(name.size()));
  out += name;
  out.push_back(static_cast<char>(value.size()));
  return out + value;
}

// ":status: 200" (static table entry 8) and "content-type: application/grpc"
// (static name 31, literal value).
std::string GrpcResponseHeaders() {
  return std::string("\x88\x0f\x10\x10", 4) + "application/grpc";
}

// A minimal gRPC server side of HTTP/2 (RFC 9113) for one connection:
// enough for one unary Health/Check call from our prober or grpc clients.
void ServeGrpcConnection(int conn, long status, const char* only_service) {
  timeval tv{5, 0};
  setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char preface[24];
  if (!ReadFull(conn, preface, sizeof preface) ||
      std::memcmp(preface, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", sizeof preface) != 0) {
    return;
  }
  if (!SendFrame(conn, 0x4, 0, 0, "")) return;  // our SETTINGS: all defaults
  std::string body;
  for (;;) {
    unsigned char h[9];
    if (!ReadFull(conn, h, sizeof h)) return;
    uint32_t len = (uint32_t{h[0]} << 16) | (uint32_t{h[1]} << 8) | h[2];
    uint8_t type = h[3], flags = h[4];
    uint32_t stream =
        ((uint32_t{h[5]} & 0x7f) << 24) | (uint32_t{h[6]} << 16) | (uint32_t{h[7]} << 8) | h[8];
    std::string payload(len, '\0');
    if (len > 0 && !ReadFull(conn, payload.data(), len)) return;
    bool end_stream = (flags & 0x1) != 0;
    if (type == 0x4 && !(flags & 0x1)) {  // SETTINGS: acknowledge
      if (!SendFrame(conn, 0x4, 0x1, 0, "")) return;
    } else if (type == 0x6 && !(flags & 0x1)) {  // PING: answer
      if (!SendFrame(conn, 0x6, 0x1, 0, payload)) return;
    } else if (type == 0x7) {  // GOAWAY
      return;
    } else if (type == 0x0) {  // DATA, maybe padded
      size_t start = 0, pad = 0;
      if ((flags & 0x8) && !payload.empty()) {
        pad = static_cast<unsigned char>(payload[0]);
        start = 1;
      }
      if (start + pad <= payload.size())
        body += payload.substr(start, payload.size() - start - pad);
    }
    if ((type != 0x0 && type != 0x1) || !end_stream) continue;
    // The request is complete: HealthCheckRequest{string service = 1}
    // after the 5-byte gRPC prefix.
    std::string service;
    if (body.size() > 7 && body[5] == 0x0a)
      service = body.substr(7, static_cast<unsigned char>(body[6]));
    if (only_service && service != only_service) {
      // A trailers-only answer: grpc-status in the one HEADERS frame.
      SendFrame(conn, 0x1, 0x5, stream,
                GrpcResponseHeaders() + HpackLiteral("grpc-status", "5") +
                    HpackLiteral("grpc-message", "unknown service"));
    } else {
      std::string data("\0\0\0\0\x02\x08", 6);
      data.push_back(static_cast<char>(status));
      SendFrame(conn, 0x1, 0x4, stream, GrpcResponseHeaders());
      SendFrame(conn, 0x0, 0x0, stream, data);
      SendFrame(conn, 0x1, 0x5, stream, HpackLiteral("grpc-status", "0"));
    }
    body.clear();
  }
}

[[noreturn]] void ServeGrpc(long port, long status, const char* only_service) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 64) != 0) {
    std::perror("serve-grpc: bind/listen");
    Exit(1);
  }
  std::printf("serving gRPC health %ld on port %ld\n", status, port);
  std::fflush(stdout);
  for (;;) {
    int conn = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    ServeGrpcConnection(conn, status, only_service);
    close(conn);
  }
}

int Usage() {
  std::fputs(
      "usage: podvisor-test-helper [--log NAME] [--log-file FILE] COMMAND ARGS...\n"
      "commands: exit N | sleep MS | ignore-sigterm | trap-sigterm MS CODE | memhog MB |\n"
      "          spawn-orphans N | serve-http PORT [STATUS [FILE]] |\n"
      "          serve-grpc PORT [STATUS [SERVICE]] | log NAME VERB | write FILE TEXT\n",
      stderr);
  return 125;
}

}  // namespace

int main(int argc, char** argv) {
  int i = 1;
  for (; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--log") == 0) {
      g_log_name = argv[i + 1];
    } else if (std::strcmp(argv[i], "--log-file") == 0) {
      g_log_file = argv[i + 1];
    } else {
      break;
    }
  }
  if (i >= argc) return Usage();
  std::string cmd = argv[i];
  char** args = argv + i + 1;
  int nargs = argc - i - 1;
  // A container that traps or ignores SIGTERM logs "Started" only once its
  // handler is in place: a test that waits for the line may then signal it.
  bool sets_handler = cmd == "ignore-sigterm" || cmd == "trap-sigterm";
  if (g_log_name && !sets_handler) AppendLog(g_log_name, "Started");

  if (cmd == "exit" && nargs == 1) Exit(static_cast<int>(Number(args[0], "exit code")));
  if (cmd == "sleep" && nargs == 1) {
    SleepMs(Number(args[0], "milliseconds"));
    Exit(0);
  }
  if (cmd == "ignore-sigterm" && nargs == 0) {
    signal(SIGTERM, SIG_IGN);
    if (g_log_name) AppendLog(g_log_name, "Started");
    std::puts("ignoring SIGTERM");
    std::fflush(stdout);
    SleepForever();
  }
  if (cmd == "trap-sigterm" && nargs == 2) {
    g_trap_ms = Number(args[0], "milliseconds");
    g_trap_code = static_cast<int>(Number(args[1], "exit code"));
    struct sigaction sa {};
    sa.sa_handler = OnTrappedSigterm;
    sigaction(SIGTERM, &sa, nullptr);
    if (g_log_name) AppendLog(g_log_name, "Started");
    std::puts("trapping SIGTERM");
    std::fflush(stdout);
    SleepForever();
  }
  if (cmd == "memhog" && nargs == 1) MemHog(Number(args[0], "MiB"));
  if (cmd == "spawn-orphans" && nargs == 1) {
    SpawnOrphans(Number(args[0], "count"));
    Exit(0);
  }
  if (cmd == "serve-http" && nargs >= 1 && nargs <= 3) {
    ServeHttp(Number(args[0], "port"), nargs >= 2 ? Number(args[1], "status") : 200,
              nargs == 3 ? args[2] : nullptr);
  }
  if (cmd == "serve-grpc" && nargs >= 1 && nargs <= 3) {
    ServeGrpc(Number(args[0], "port"), nargs >= 2 ? Number(args[1], "status") : 1,
              nargs == 3 ? args[2] : nullptr);
  }
  if (cmd == "log" && nargs == 2) {
    AppendLog(args[0], args[1]);
    Exit(0);
  }
  if (cmd == "write" && nargs == 2) {
    int fd = open(args[0], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, args[1], std::strlen(args[1])) < 0) {
      std::perror(args[0]);
      Exit(1);
    }
    close(fd);
    Exit(0);
  }
  return Usage();
}
