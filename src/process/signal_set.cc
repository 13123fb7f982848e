#include "process/signal_set.h"

#include "common/signal_names.h"

namespace podvisor::process {

SignalSet::SignalSet(std::initializer_list<int> signals) {
  sigemptyset(&set_);
  for (int signo : signals) sigaddset(&set_, signo);
}

SignalSet SignalSet::Full() {
  SignalSet set;
  sigfillset(&set.set_);
  return set;
}

std::vector<int> SignalSet::Members() const {
  std::vector<int> members;
  // _NSIG is one past the highest signal number the kernel knows (65).
  for (int signo = 1; signo < _NSIG; ++signo) {
    if (sigismember(&set_, signo) == 1) members.push_back(signo);
  }
  return members;
}

std::string SignalSet::ToString() const {
  std::string out;
  for (int signo : Members()) {
    if (!out.empty()) out += ' ';
    out += SignalName(signo);
  }
  return out.empty() ? "(none)" : out;
}

}  // namespace podvisor::process
