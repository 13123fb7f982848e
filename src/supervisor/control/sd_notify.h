// systemd's readiness protocol (sd_notify(3)), spoken without libsystemd:
// one datagram of newline-separated VAR=VALUE assignments to the
// AF_UNIX socket named by $NOTIFY_SOCKET.
//
// SdNotifier is the transport: it takes $NOTIFY_SOCKET (a path, or an
// abstract address written with a leading '@') and removes it from the
// environment, because every process podvisor spawns inherits it and OCI
// runtimes act on it: `runc start` with NOTIFY_SOCKET set proxies the
// socket into the container and waits for the container's own READY=1.
//
// SystemdReporter is the policy of docs/INTERFACE.md "systemd": given the pod's
// status after each batch of events it says which messages are due —
// STATUS= on each phase change, READY=1 when the Ready condition first
// becomes true, STOPPING=1 when termination begins — each at most once
// per cause. It is pure so its order is unit-tested.
//
// SystemdLink is the two together, as the executor uses them after each
// batch.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/fd.h"
#include "common/result.h"
#include "pod/status.h"

namespace podvisor::supervisor::control {

class SdNotifier {
 public:
  // Reads and unsets $NOTIFY_SOCKET. Without it (not under a Type=notify
  // unit) the notifier is disabled and Send does nothing. An address it
  // cannot use (too long, not a path or '@name') is an error; the variable
  // is unset all the same.
  static Result<SdNotifier> FromEnvironment();
  // The same for an explicit address, for tests.
  static Result<SdNotifier> ForAddress(std::string_view address);

  SdNotifier() = default;
  bool enabled() const { return fd_.valid(); }
  const std::string& address() const { return address_; }

  // Sends one datagram ("READY=1", "STOPPING=1\nSTATUS=..."). Never blocks:
  // systemd's socket is a datagram socket it drains at once, and a full
  // queue is an error the caller logs, not a reason to wait.
  Status Send(std::string_view message) const;

 private:
  Fd fd_;
  sockaddr_un addr_{};
  socklen_t addr_len_ = 0;
  std::string address_;
};

class SystemdReporter {
 public:
  explicit SystemdReporter(std::string pod_name) : pod_name_(std::move(pod_name)) {}

  // The messages due since the last call, in the order to send them: a
  // phase change, READY=1, STOPPING=1 (with the S6 stop reason of
  // `status`, if any), and a final phase (Succeeded, Failed) last.
  // `terminating` is Lifecycle::Terminating().
  std::vector<std::string> Update(const pod::PodStatus& status, bool terminating);

 private:
  std::string pod_name_;
  std::optional<pod::PodPhase> phase_;
  bool ready_sent_ = false;
  bool stopping_sent_ = false;
};

// The pod's side of its systemd unit: what the reporter says after each
// batch, sent through the notifier. Disabled (Update does nothing) outside
// a Type=notify unit, or when NOTIFY_SOCKET is unusable (logged once).
class SystemdLink {
 public:
  SystemdLink() = default;
  // Reads and unsets NOTIFY_SOCKET: call before anything is spawned.
  static SystemdLink FromEnvironment(std::string pod_name);
  static SystemdLink To(SdNotifier notifier, std::string pod_name);
  bool enabled() const { return reporter_.has_value(); }
  // Sends what is due since the last call; a failed send is logged.
  void Update(const pod::PodStatus& status, bool terminating);

 private:
  SdNotifier notifier_;
  std::optional<SystemdReporter> reporter_;
};

}  // namespace podvisor::supervisor::control
