// The entry point of the podvisor binary (meson.build: -Wl,-e) and the
// early road's one exchange with a supervisor (early_client.h). Runs
// before the C library: see early_support.h.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstddef>
#include <ctime>

#include "cli/early_client.h"
#include "cli/early_support.h"

// The kernel starts the program here with the stack pointer at argc (then
// argv, envp, auxv) and, from a dynamic loader, %rdx holding the function
// the program must register with atexit. The stub hands the stack to the
// early road; if that returns, it restores %rdx (kept in %r12, which a
// call preserves) and goes on to the C library's _start with the stack as
// the kernel left it. At entry %rsp is 16-byte aligned, as a call needs.
asm(R"(
  .text
  .globl podvisor_early_entry
  .type podvisor_early_entry, @function
podvisor_early_entry:
  endbr64
  xor %ebp, %ebp
  mov %rdx, %r12
  mov %rsp, %rdi
  call podvisor_early_client
  mov %r12, %rdx
  jmp _start
  .size podvisor_early_entry, . - podvisor_early_entry
)");

namespace podvisor::cli::early {
namespace {

// As AskSupervisor's bound on a reply (cli/client.cc).
constexpr long kReplyTimeoutMs = 10000;

// The reply and its decoded text: static, so only the pages a reply
// touches are ever faulted in. A longer status is main's to print.
constexpr std::size_t kReplyCap = 256 * 1024;
char g_reply[kReplyCap];
char g_text[kReplyCap];

void WriteAll(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const long w = Syscall(SYS_write, fd, reinterpret_cast<long>(data), static_cast<long>(n));
    if (w == -EINTR) continue;
    if (w <= 0) return;
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

// One message line on stderr, as the other roads' Fail prints it
// ("podvisor: MESSAGE"), and exit 1.
[[noreturn]] void Fail(const char* a, const char* b = "", const char* c = "", const char* d = "",
                       const char* e = "", const char* f = "") {
  char line[1024];
  Text t{line, sizeof line};
  t.Add("podvisor: ").Add(a).Add(b).Add(c).Add(d).Add(e).Add(f);
  if (!t.ok) t.len = sizeof line - 2;  // cut, but still a line
  line[t.len++] = '\n';
  WriteAll(2, line, t.len);
  Exit(1);
}

long NowMs() {
  timespec ts;
  Syscall(SYS_clock_gettime, CLOCK_MONOTONIC, reinterpret_cast<long>(&ts));
  return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// kNotSent: main may make the request itself. Otherwise it was sent, and
// the reply is in g_reply, whole (kAnswered) or as far as it came.
enum class Exchange { kNotSent, kAnswered, kBroken, kTimedOut };

Exchange Ask(const Plan& plan, std::size_t& reply_len, long& error) {
  reply_len = 0;
  error = 0;
  const long fd = Syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Exchange::kNotSent;
  sockaddr_un addr;
  addr.sun_family = AF_UNIX;
  const std::size_t path_len = Length(plan.socket_path);
  for (std::size_t i = 0; i <= path_len; ++i) addr.sun_path[i] = plan.socket_path[i];
  const long addr_len = static_cast<long>(offsetof(sockaddr_un, sun_path) + path_len + 1);
  // No socket, or nobody listening: main says which, from the pod's record.
  if (Syscall(SYS_connect, fd, reinterpret_cast<long>(&addr), addr_len) != 0 ||
      Syscall(SYS_sendto, fd, reinterpret_cast<long>(plan.request),
              static_cast<long>(plan.request_len), MSG_NOSIGNAL, 0,
              0) != static_cast<long>(plan.request_len)) {
    Syscall(SYS_close, fd);
    return Exchange::kNotSent;
  }
  Syscall(SYS_shutdown, fd, SHUT_WR);
  const long deadline = NowMs() + kReplyTimeoutMs;
  Exchange result = Exchange::kAnswered;
  for (;;) {
    const long left = deadline - NowMs();
    if (left <= 0) {
      result = Exchange::kTimedOut;
      break;
    }
    pollfd p;
    p.fd = static_cast<int>(fd);
    p.events = POLLIN;
    p.revents = 0;
    const long ready = Syscall(SYS_poll, reinterpret_cast<long>(&p), 1, left);
    if (ready == -EINTR || ready == 0) continue;
    if (ready < 0) {
      error = -ready;
      result = Exchange::kBroken;
      break;
    }
    if (reply_len == kReplyCap) {
      result = Exchange::kBroken;  // longer than any kill or stop reply
      break;
    }
    const long n = Syscall(SYS_read, fd, reinterpret_cast<long>(g_reply + reply_len),
                           static_cast<long>(kReplyCap - reply_len));
    if (n == -EINTR) continue;
    // A server that answered without reading all of the request closes
    // with unread data: ECONNRESET after the reply (as ControlRequest).
    if (n == -ECONNRESET && reply_len > 0) break;
    if (n < 0) {
      error = -n;
      result = Exchange::kBroken;
      break;
    }
    if (n == 0) break;
    reply_len += static_cast<std::size_t>(n);
  }
  Syscall(SYS_close, fd);
  return result;
}

}  // namespace
}  // namespace podvisor::cli::early

extern "C" void podvisor_early_client(long* initial_stack) {
  using namespace podvisor::cli::early;  // NOLINT(google-build-using-namespace)
  // PID 1 is init mode (cli/init_mode.h), never a client.
  if (Syscall(SYS_getpid) == 1) return;
  const int argc = static_cast<int>(initial_stack[0]);
  char* const* argv = reinterpret_cast<char* const*>(initial_stack + 1);
  Plan plan;
  if (!PlanRequest(argc, argv, plan)) return;
  std::size_t reply_len = 0;
  long error = 0;
  const Exchange exchange = Ask(plan, reply_len, error);
  if (exchange == Exchange::kNotSent) return;
  if (plan.command == Command::kStatus) {
    // A status request can be made again: anything but the text is main's.
    if (exchange != Exchange::kAnswered) return;
    const long n = TopLevelString(g_reply, reply_len, "text", g_text, kReplyCap);
    if (n < 0) return;
    WriteAll(1, g_text, static_cast<std::size_t>(n));
    Exit(0);
  }
  // kill and stop were sent: whatever came back is answered here, in the
  // words of cli/control_cmds.cc and cli/client.cc.
  const char* pod = plan.pod;
  if (exchange == Exchange::kTimedOut) Fail("pod ", pod, ": no reply from ", plan.socket_path);
  if (exchange == Exchange::kBroken) {
    char number[24];
    std::size_t at = sizeof number - 1;
    number[at] = '\0';
    do {
      number[--at] = static_cast<char>('0' + error % 10);
      error /= 10;
    } while (error > 0 && at > 0);
    Fail("pod ", pod, ": reading reply from ", plan.socket_path, ": errno ", number + at);
  }
  if (reply_len == 0) {
    Fail("pod ", pod, ": malformed reply from ", plan.socket_path,
         " (connection closed without a reply)");
  }
  const long error_len = TopLevelString(g_reply, reply_len, "error", g_text, kReplyCap);
  if (error_len == -2) Fail("pod ", pod, ": malformed reply from ", plan.socket_path);
  if (error_len >= 0) Fail("pod ", pod, ": ", g_text);
  char signal[64];
  if (plan.command == Command::kKill &&
      TopLevelString(g_reply, reply_len, "signal", signal, sizeof signal) < 0) {
    Fail("pod ", pod, ": malformed reply from ", plan.socket_path);
  }
  char line[512];
  Text out{line, sizeof line};
  if (plan.command == Command::kKill) {
    out.Add(signal).Add(" delivered to ").Add(pod).Add("/").Add(plan.container).Add("\n");
  } else {
    out.Add("pod/").Add(pod).Add(" stopping\n");
  }
  WriteAll(1, line, out.len);
  Exit(0);
}
