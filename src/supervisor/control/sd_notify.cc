#include "supervisor/control/sd_notify.h"

#include <cstdlib>
#include <cstring>

#include "common/log.h"

namespace podvisor::supervisor::control {

Result<SdNotifier> SdNotifier::FromEnvironment() {
  const char* env = std::getenv("NOTIFY_SOCKET");
  if (env == nullptr || *env == '\0') return SdNotifier();
  std::string address = env;
  // Unset before anything is spawned (see the header): runtimes and hooks
  // must not see systemd's socket.
  ::unsetenv("NOTIFY_SOCKET");
  return ForAddress(address);
}

Result<SdNotifier> SdNotifier::ForAddress(std::string_view address) {
  SdNotifier n;
  n.address_ = std::string(address);
  n.addr_.sun_family = AF_UNIX;
  if (address.size() < 2 || (address[0] != '/' && address[0] != '@')) {
    // systemd 254 also knows "vsock:CID:PORT", for VMs it supervises from
    // the host; podvisor as a VM's init talks to its console instead.
    return Error("NOTIFY_SOCKET \"" + n.address_ +
                 "\" is neither an absolute path nor an abstract address (@name)");
  }
  if (address.size() > sizeof n.addr_.sun_path) {
    return Error("NOTIFY_SOCKET \"" + n.address_ + "\" is longer than a socket address can be");
  }
  std::memcpy(n.addr_.sun_path, address.data(), address.size());
  // An abstract address starts with a NUL byte and has exactly the given
  // length: no terminator counts, so the length must be passed exactly.
  if (address[0] == '@') n.addr_.sun_path[0] = '\0';
  n.addr_len_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size());
  n.fd_.Reset(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!n.fd_) return Error::FromErrno("socket for NOTIFY_SOCKET");
  return n;
}

Status SdNotifier::Send(std::string_view message) const {
  if (!enabled()) return Ok();
  ssize_t sent = ::sendto(fd_.get(), message.data(), message.size(), MSG_NOSIGNAL,
                          reinterpret_cast<const sockaddr*>(&addr_), addr_len_);
  if (sent < 0) return Error::FromErrno("notifying systemd at " + address_);
  return Ok();
}

std::vector<std::string> SystemdReporter::Update(const pod::PodStatus& status, bool terminating) {
  std::vector<std::string> out;
  const bool phase_changed = !phase_ || *phase_ != status.phase;
  phase_ = status.phase;
  const std::string phase_message =
      "STATUS=pod " + pod_name_ + ": phase " + std::string(pod::PodPhaseName(status.phase));
  // The final phase comes last: a pod that completes begins and ends its
  // termination in one batch, and systemd should read STOPPING=1 first.
  const bool terminal = pod::IsTerminalPhase(status.phase);
  if (phase_changed && !terminal) out.push_back(phase_message);
  const pod::PodCondition* ready = status.FindCondition(pod::kConditionReady);
  if (!ready_sent_ && !terminal && ready && ready->status == pod::ConditionStatus::kTrue) {
    ready_sent_ = true;
    out.emplace_back("READY=1");
  }
  if (!stopping_sent_ && (terminating || terminal)) {
    stopping_sent_ = true;
    // One datagram: systemd shows the reason as the unit's status line
    // while it waits for the pod to end.
    std::string why = status.stop_reason ? " (reason " + *status.stop_reason + ")" : "";
    out.push_back("STOPPING=1\nSTATUS=pod " + pod_name_ + ": stopping" + why);
  }
  if (phase_changed && terminal) out.push_back(phase_message);
  return out;
}

SystemdLink SystemdLink::FromEnvironment(std::string pod_name) {
  auto notifier = SdNotifier::FromEnvironment();
  if (!notifier) {
    log::Warn("{}: not notifying systemd", notifier.error().message());
    return SystemdLink();
  }
  return To(std::move(*notifier), std::move(pod_name));
}

SystemdLink SystemdLink::To(SdNotifier notifier, std::string pod_name) {
  SystemdLink link;
  if (!notifier.enabled()) return link;
  link.notifier_ = std::move(notifier);
  link.reporter_.emplace(std::move(pod_name));
  return link;
}

void SystemdLink::Update(const pod::PodStatus& status, bool terminating) {
  if (!reporter_) return;
  for (const std::string& message : reporter_->Update(status, terminating)) {
    if (auto s = notifier_.Send(message); !s) log::Warn("{}", s.error().message());
  }
}

}  // namespace podvisor::supervisor::control
