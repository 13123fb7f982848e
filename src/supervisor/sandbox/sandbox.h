// The pod sandbox: the namespaces every container of the pod joins, held
// open by a small process run from the podvisor binary itself
// (`podvisor sandbox-init`, hidden), the way the kubelet's pause container
// holds them.
//
//   network  own, with loopback up, unless hostNetwork (probes and httpGet
//            hooks run from it, so localhost reaches the containers)
//   ipc      own, unless hostIPC
//   uts      own, hostname = spec.hostname or the pod name
//   pid      own and shared by all containers only with
//            shareProcessNamespace; its PID 1 is a tiny reaper (the holder's
//            child), so orphans inside the pod are reaped there
//
// The holder dies with the supervisor (PR_SET_PDEATHSIG), so a SIGKILLed
// supervisor never leaves a sandbox behind.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "common/fd.h"
#include "common/result.h"
#include "process/child_process.h"

namespace podvisor::supervisor::sandbox {

struct SandboxOptions {
  std::string hostname;
  bool new_network = true;
  bool new_ipc = true;
  bool new_uts = true;
  bool new_pid = false;  // shareProcessNamespace
  std::filesystem::path podvisor_exe = "/proc/self/exe";
};

class Sandbox;

// A holder that was started and has not reported ready yet: its
// namespaces exist (they are made before it execs), its hostname and
// loopback may not. Destroying it kills the holder.
class PendingSandbox {
 public:
  // Waits (bounded) for the holder's ready line.
  Result<Sandbox> WaitReady();

 private:
  friend class Sandbox;
  PendingSandbox(SandboxOptions options, process::ChildProcess holder, Fd ready)
      : options_(std::move(options)), holder_(std::move(holder)), ready_(std::move(ready)) {}
  SandboxOptions options_;
  process::ChildProcess holder_;
  Fd ready_;
};

class Sandbox {
 public:
  // Starts the holder and waits (bounded) for it to report ready. Needs
  // CAP_SYS_ADMIN; the caller decides what to do without it.
  static Result<Sandbox> Create(const SandboxOptions& options);
  // Start without the wait, so that the caller can do other set-up while
  // the holder (a fresh podvisor process) starts: it was a wait of tens
  // of milliseconds before the pod's first container on a loaded host.
  static Result<PendingSandbox> Start(const SandboxOptions& options);

  // Namespace paths for the OCI config; nullopt = the host's.
  std::optional<std::filesystem::path> network_ns() const;
  std::optional<std::filesystem::path> ipc_ns() const;
  std::optional<std::filesystem::path> uts_ns() const;
  std::optional<std::filesystem::path> pid_ns() const;
  pid_t holder_pid() const { return holder_.pid(); }

  // Kills the holder (and with it the pid namespace's reaper) and reaps it.
  void Destroy();

  Sandbox(Sandbox&&) = default;
  Sandbox& operator=(Sandbox&&) = default;
  ~Sandbox() { Destroy(); }

 private:
  friend class PendingSandbox;
  Sandbox(SandboxOptions options, process::ChildProcess holder, pid_t pid_ns_init)
      : options_(std::move(options)), holder_(std::move(holder)), pid_ns_init_(pid_ns_init) {}
  std::filesystem::path NsPath(pid_t pid, const char* ns) const;

  SandboxOptions options_;
  process::ChildProcess holder_;
  pid_t pid_ns_init_ = 0;
};

// `podvisor sandbox-init --hostname H [--loopback] [--pid]`: the holder's
// main, already inside its new namespaces (the spawner unshares them).
int SandboxInitMain(const std::string& hostname, bool loopback, bool new_pid);

}  // namespace podvisor::supervisor::sandbox
