// SignalSet: a sigset_t with value semantics and a readable rendering.
//
// The supervisor blocks the signals it handles (SIGCHLD, SIGTERM, SIGINT,
// SIGHUP, ...) and reads them from a signalfd; this is the set it passes
// around and prints in logs ("SIGCHLD SIGINT SIGTERM").
#pragma once

#include <csignal>

#include <initializer_list>
#include <string>
#include <vector>

namespace podvisor::process {

class SignalSet {
 public:
  SignalSet() { sigemptyset(&set_); }
  SignalSet(std::initializer_list<int> signals);  // NOLINT(google-explicit-constructor)

  // Every signal, including the two that cannot be blocked or caught
  // (the kernel silently leaves SIGKILL and SIGSTOP out of any mask).
  static SignalSet Full();

  void Add(int signo) { sigaddset(&set_, signo); }
  void Remove(int signo) { sigdelset(&set_, signo); }
  bool Contains(int signo) const { return sigismember(&set_, signo) == 1; }
  bool empty() const { return sigisemptyset(&set_) == 1; }

  // Members in ascending number order.
  std::vector<int> Members() const;

  const sigset_t& native() const { return set_; }
  sigset_t& native() { return set_; }

  // "SIGINT SIGTERM", or "(none)".
  std::string ToString() const;

  friend bool operator==(const SignalSet& a, const SignalSet& b) {
    return a.Members() == b.Members();
  }

 private:
  sigset_t set_;
};

}  // namespace podvisor::process
