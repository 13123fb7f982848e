// PodControl: what the control socket (docs/INTERFACE.md "Control socket")
// may ask of a running pod, and nothing more. The socket's requests are
// parsed and checked by ControlApi (control_api.h); what reaches the pod
// is a request already known to be well-formed, for a container the pod
// has. The Executor answers through a small adapter (executor/control.cc);
// tests answer with a fake.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/result.h"
#include "pod/resize.h"
#include "supervisor/control/control_server.h"

namespace podvisor::supervisor::control {

// Where a container stands for `kill` and `exec`.
enum class ContainerRun {
  kUnknown,     // the pod has no container of that name
  kNotRunning,  // no process of its current instance is left to reach
  kStarting,    // its process runs, but it has not started yet (postStart,
                // startup probe): it can be signalled, not exec'd into
  kRunning,
};

// S6.1: a stop request's reason and grace, both optional.
struct StopOrder {
  std::optional<std::string> reason;
  std::optional<Duration> grace;
};

// `exec`'s request once checked (the fields of docs/INTERFACE.md).
struct ExecOrder {
  std::string container;
  std::vector<std::string> args;  // never empty
  bool tty = false;
  std::string console_socket;  // set when tty
  // The client's window size, when it gave a usable one (tty only).
  std::optional<std::pair<int, int>> console_size;  // height, width
};

// `upgrade`'s request once checked (docs/INTERFACE.md, S15.2): re-execute
// in place into `binary` (an absolute path), or into the binary at the
// path this supervisor was started from when it is absent; `timeout`
// bounds the wait for runtime calls and hooks to end before the handover.
struct UpgradeOrder {
  std::optional<std::string> binary;
  Duration timeout;
};

// What the client runs for `exec`: the runtime's command line and the
// process file it reads.
struct ExecPlan {
  std::vector<std::string> argv;
  std::string process_file;
  // S21.11: the supervisor runs in a user namespace of its own; the
  // client joins its user and mount namespaces (by this pid) before it
  // runs argv, which only works there. 0: it does not.
  int join_namespaces_of = 0;
};

class PodControl {
 public:
  virtual ~PodControl() = default;

  // `status`: the v1 Pod (status JSON), serialized once per state change.
  virtual ControlReply StatusReply() = 0;
  // `status` with an output: the text `podvisor status` (-o wide) prints;
  // nullopt when this supervisor renders no text.
  virtual std::optional<std::string> StatusText(bool wide) = 0;
  // `summary`: the columns of `status` and `list`.
  virtual nlohmann::json Summary() = 0;
  // The final v1 Pod once the pod has ended and everything is cleaned up;
  // nullopt before.
  virtual std::optional<nlohmann::json> FinalStatus() = 0;
  // Stops the pod (S5, S6.1). `on_end`, when set, gets the final v1 Pod
  // when the pod has ended.
  virtual void RequestStop(StopOrder order, ControlServer::Responder on_end) = 0;
  virtual ContainerRun RunOf(const std::string& container) = 0;
  // Signals the container's init through its pidfd (S5.9); only for a
  // container RunOf says is starting or running.
  virtual Status SignalContainer(const std::string& container, int signo) = 0;
  // Writes the process file of `order` and returns the command line that
  // runs it; only for a container RunOf says is running.
  virtual Result<ExecPlan> PrepareExec(const ExecOrder& order) = 0;
  // The pod's network namespace file; "" for the host's.
  virtual std::string NetnsPath() = 0;
  // S15.2: hands the pod over to the binary of `order`. `respond` gets
  // either the error reply (nothing changed: this supervisor carries on)
  // or, immediately before the re-execution, the success reply
  // {"upgrading": true, "from", "to", "binary", "pid"}; the caller flushes
  // it (ControlServer::Flush) before execve.
  virtual void RequestUpgrade(UpgradeOrder order, ControlServer::Responder respond) = 0;
  // S17: `resize`, a merge of container resources already parsed (each
  // entry names a container of the pod). Answers the pod's v1 JSON once
  // the request is taken (accepted, or pending as Infeasible), or the
  // error reply: InvalidArgument with the API server's message when it
  // would refuse the request.
  virtual ControlReply Resize(const std::vector<pod::ContainerResizePatch>& patch) = 0;
};

}  // namespace podvisor::supervisor::control
