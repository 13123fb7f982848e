#include "common/signal_names.h"

#include <csignal>

#include <array>
#include <cctype>
#include <charconv>
#include <utility>

namespace podvisor {
namespace {

struct NamedSignal {
  std::string_view name;
  int signo;
};

// The standard names; real-time signals are computed from SIGRTMIN/SIGRTMAX
// because glibc reserves the first few for itself.
constexpr std::array<NamedSignal, 35> kSignals{{
    {"SIGABRT", SIGABRT},
    {"SIGALRM", SIGALRM},
    {"SIGBUS", SIGBUS},
    {"SIGCHLD", SIGCHLD},
    {"SIGCLD", SIGCHLD},
    {"SIGCONT", SIGCONT},
    {"SIGFPE", SIGFPE},
    {"SIGHUP", SIGHUP},
    {"SIGILL", SIGILL},
    {"SIGINT", SIGINT},
    {"SIGIO", SIGIO},
    {"SIGIOT", SIGIOT},
    {"SIGKILL", SIGKILL},
    {"SIGPIPE", SIGPIPE},
    {"SIGPOLL", SIGPOLL},
    {"SIGPROF", SIGPROF},
    {"SIGPWR", SIGPWR},
    {"SIGQUIT", SIGQUIT},
    {"SIGSEGV", SIGSEGV},
    {"SIGSTKFLT", SIGSTKFLT},
    {"SIGSTOP", SIGSTOP},
    {"SIGSYS", SIGSYS},
    {"SIGTERM", SIGTERM},
    {"SIGTRAP", SIGTRAP},
    {"SIGTSTP", SIGTSTP},
    {"SIGTTIN", SIGTTIN},
    {"SIGTTOU", SIGTTOU},
    {"SIGURG", SIGURG},
    {"SIGUSR1", SIGUSR1},
    {"SIGUSR2", SIGUSR2},
    {"SIGVTALRM", SIGVTALRM},
    {"SIGWINCH", SIGWINCH},
    {"SIGXCPU", SIGXCPU},
    {"SIGXFSZ", SIGXFSZ},
    {"SIGRTMIN", 0 /* computed */},
}};

std::optional<int> ParseNumber(std::string_view s) {
  int value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

// "SIGRTMIN", "SIGRTMIN+n" (n 1..15), "SIGRTMAX", "SIGRTMAX-n" (n 1..14).
std::optional<int> ParseRealtime(std::string_view name) {
  auto with_offset = [&](std::string_view base, int origin, int sign,
                         int max_offset) -> std::optional<int> {
    if (!name.starts_with(base)) return std::nullopt;
    std::string_view rest = name.substr(base.size());
    if (rest.empty()) return origin;
    if (rest[0] != (sign > 0 ? '+' : '-')) return std::nullopt;
    auto n = ParseNumber(rest.substr(1));
    if (!n || *n < 1 || *n > max_offset) return std::nullopt;
    if (rest.size() > 2 && rest[1] == '0') return std::nullopt;  // no "+01"
    return origin + sign * *n;
  };
  if (auto v = with_offset("SIGRTMIN", SIGRTMIN, +1, 15)) return v;
  if (auto v = with_offset("SIGRTMAX", SIGRTMAX, -1, 14)) return v;
  return std::nullopt;
}

}  // namespace

std::optional<int> ParseKubernetesSignalName(std::string_view name) {
  if (auto rt = ParseRealtime(name)) return rt;
  for (const auto& s : kSignals) {
    if (s.signo != 0 && s.name == name) return s.signo;
  }
  return std::nullopt;
}

std::optional<int> ParseSignal(std::string_view text) {
  if (text.empty()) return std::nullopt;
  if (std::isdigit(static_cast<unsigned char>(text[0]))) {
    auto n = ParseNumber(text);
    if (!n || *n < 1 || *n > SIGRTMAX) return std::nullopt;
    return n;
  }
  std::string upper;
  upper.reserve(text.size() + 3);
  for (char c : text) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (!upper.starts_with("SIG")) upper.insert(0, "SIG");
  return ParseKubernetesSignalName(upper);
}

std::string SignalName(int signo) {
  if (signo >= SIGRTMIN && signo <= SIGRTMAX) {
    int from_min = signo - SIGRTMIN;
    int from_max = SIGRTMAX - signo;
    if (from_min == 0) return "SIGRTMIN";
    if (from_max == 0) return "SIGRTMAX";
    if (from_min <= 15) return "SIGRTMIN+" + std::to_string(from_min);
    return "SIGRTMAX-" + std::to_string(from_max);
  }
  for (const auto& s : kSignals) {
    // SIGCLD, SIGIOT, SIGPOLL are aliases; the canonical name comes first.
    if (s.signo == signo && s.name != "SIGCLD" && s.name != "SIGIOT" && s.name != "SIGPOLL") {
      return std::string(s.name);
    }
  }
  return "SIG" + std::to_string(signo);
}

}  // namespace podvisor
