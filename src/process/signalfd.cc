#include "process/signalfd.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>

namespace podvisor::process {

Result<SignalSet> BlockSignals(const SignalSet& signals) {
  SignalSet previous;
  // The supervisor is single-threaded, so the process mask and the thread
  // mask are the same; pthread_sigmask states the intent (and is what
  // sigprocmask does in glibc anyway).
  int err = pthread_sigmask(SIG_BLOCK, &signals.native(), &previous.native());
  if (err != 0) return Error::FromErrno("blocking " + signals.ToString(), err);
  return previous;
}

Status SetSignalMask(const SignalSet& mask) {
  int err = pthread_sigmask(SIG_SETMASK, &mask.native(), nullptr);
  if (err != 0) return Error::FromErrno("setting signal mask to " + mask.ToString(), err);
  return Ok();
}

SignalSet CurrentSignalMask() {
  SignalSet current;
  pthread_sigmask(SIG_SETMASK, nullptr, &current.native());
  return current;
}

void ResetSignalsForChild() noexcept {
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  // SIGKILL and SIGSTOP fail with EINVAL, as do the two real-time signals
  // glibc reserves for itself; both are harmless.
  for (int signo = 1; signo < _NSIG; ++signo) sigaction(signo, &default_action, nullptr);
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
}

Result<SignalFd> SignalFd::Create(const SignalSet& signals) {
  if (auto blocked = BlockSignals(signals); !blocked) return blocked.take_error();
  int fd = signalfd(-1, &signals.native(), SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) return Error::FromErrno("signalfd for " + signals.ToString());
  return SignalFd(Fd(fd), signals);
}

Result<std::vector<signalfd_siginfo>> SignalFd::Read() {
  std::vector<signalfd_siginfo> records;
  std::array<signalfd_siginfo, 16> buffer;
  for (;;) {
    ssize_t n = ::read(fd_.get(), buffer.data(), sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      return Error::FromErrno("reading signalfd");
    }
    // The kernel only ever returns whole records; 0 cannot happen on a
    // signalfd, but it would mean "nothing more" if it did.
    if (n == 0) break;
    size_t count = static_cast<size_t>(n) / sizeof(signalfd_siginfo);
    records.insert(records.end(), buffer.begin(),
                   buffer.begin() + static_cast<std::ptrdiff_t>(count));
  }
  return records;
}

}  // namespace podvisor::process
