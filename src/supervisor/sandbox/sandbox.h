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
// With a keeper socket the holder also keeps descriptors for its
// supervisor (keeper_wire.h: the containers' log pipes and init pidfds),
// and from the first one kept it outlives the supervisor, so a later one
// (after a crash or a re-exec) re-attaches to it (Reattach) and fetches
// them back. Until then, and always without a keeper socket, it dies with
// the supervisor that started it (PR_SET_PDEATHSIG): a holder nobody
// recorded must not live on. Destroy ends it in every case.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/fd.h"
#include "common/result.h"
#include "process/child_process.h"
#include "supervisor/sandbox/keeper_wire.h"

namespace podvisor::supervisor::sandbox {

// hostUsers: false (S20.5): the pod's block of host ids; container id 0
// is host_uid (host_gid), for `size` ids.
struct UserNamespaceIds {
  uint32_t host_uid = 0;
  uint32_t host_gid = 0;
  uint32_t size = 0;
  bool operator==(const UserNamespaceIds&) const = default;
};

struct SandboxOptions {
  std::string hostname;
  bool new_network = true;
  bool new_ipc = true;
  bool new_uts = true;
  bool new_pid = false;  // shareProcessNamespace
  std::filesystem::path podvisor_exe = "/proc/self/exe";
  // Where the holder listens for keep/drop/fetch (mode 0600); empty: it
  // keeps nothing and dies with its supervisor.
  std::filesystem::path keeper_socket;
  // hostUsers: false (S20.5): the holder makes the pod's user namespace
  // first and the network, IPC, UTS and pid namespaces inside it, so that
  // they are owned by it (the runtime mounts /sys, sets sysctls of the
  // pod's network namespace); all three of network, IPC and UTS must be
  // new. The supervisor writes the mappings (Start, before the holder
  // reports ready). nullopt: no user namespace.
  std::optional<UserNamespaceIds> user_namespace;
  // A descriptor (>= 3) the holder inherits and holds as long as it lives:
  // the lock of the pod's id block (common/pod_id_blocks.h), so that the
  // block stays taken while the namespace that uses it exists. -1: none.
  int inherited_lock_fd = -1;
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
  // The holder another supervisor started (or this process before it
  // re-executed), by what that one recorded: pinned by a pidfd, checked
  // to be the same process (its start time, and `sandbox-init` in its
  // command line) and, with new_pid, that `pid_ns_init` is its child;
  // then connected to options.keeper_socket, whose listener must be the
  // holder (SO_PEERCRED). `options` must be the ones it was started with.
  static Result<Sandbox> Reattach(const SandboxOptions& options, pid_t holder_pid,
                                  uint64_t holder_start_time, pid_t pid_ns_init);

  // Namespace paths for the OCI config; nullopt = the host's.
  std::optional<std::filesystem::path> network_ns() const;
  std::optional<std::filesystem::path> ipc_ns() const;
  std::optional<std::filesystem::path> uts_ns() const;
  std::optional<std::filesystem::path> pid_ns() const;
  std::optional<std::filesystem::path> user_ns() const;
  // What a later supervisor needs to Reattach: with the pid, the start
  // time names the holder even after the pid was reused.
  pid_t holder_pid() const { return holder_.pid(); }
  uint64_t holder_start_time() const { return holder_start_time_; }
  pid_t pid_ns_init() const { return pid_ns_init_; }
  // Whether this process is the holder's parent (it started it, or
  // re-executed since): then Destroy reaps it, else it only waits for it.
  bool holder_is_child() const { return holder_is_child_; }

  // The keeper (keeper_wire.h), over one connection made at the start and
  // made again when the holder has served a newer one or gone quiet. Each
  // call waits (bounded: 1 s to send, 2 s for the answer) until the
  // holder has answered, so after Keep returns Ok the descriptors are in
  // the holder, and the holder outlives this process.
  //
  // Keeps 1 to 8 descriptors (duplicates; the caller's stay open) under
  // `key` (1 to 255 printable bytes, no spaces), closing what was kept
  // under it before.
  Status Keep(std::string_view key, std::span<const int> fds);
  // Closes what is kept under `key`; nothing kept under it is no error.
  Status Drop(std::string_view key);
  // Duplicates of everything kept, by key, close-on-exec; the holder
  // keeps its own.
  Result<std::map<std::string, std::vector<Fd>>> FetchKept();

  // Kills the holder (and with it the pid namespace's reaper, and every
  // descriptor kept), and removes the keeper socket. Our child is reaped;
  // a holder that is not (re-attached after a crash) is waited for through
  // its pidfd, at most 2 s.
  void Destroy();

  Sandbox(Sandbox&&) noexcept = default;
  Sandbox& operator=(Sandbox&& other) noexcept;
  ~Sandbox() { Destroy(); }

 private:
  friend class PendingSandbox;
  Sandbox(SandboxOptions options, process::ChildProcess holder, bool holder_is_child,
          uint64_t holder_start_time, pid_t pid_ns_init)
      : options_(std::move(options)),
        holder_(std::move(holder)),
        holder_is_child_(holder_is_child),
        holder_start_time_(holder_start_time),
        pid_ns_init_(pid_ns_init) {}
  std::filesystem::path NsPath(pid_t pid, const char* ns) const;
  // keeper_client.cc
  Status ConnectKeeper();
  Result<std::vector<keeper::Message>> Ask(std::string_view request, std::span<const int> fds,
                                           bool until_end);

  SandboxOptions options_;
  process::ChildProcess holder_;
  bool holder_is_child_ = true;
  uint64_t holder_start_time_ = 0;
  pid_t pid_ns_init_ = 0;
  Fd keeper_;
};

// The pod's block as a holder's /proc/<pid>/uid_map says it (adoption,
// S20.6): nullopt when the holder has no user namespace of its own.
Result<std::optional<UserNamespaceIds>> ReadHolderIds(pid_t holder_pid);

// A pidfd of the holder a supervisor recorded by its pid and start time,
// once it is checked to be that process and a `sandbox-init`; for
// Reattach, and for ending a holder whose pod is not adopted (S15.4).
Result<Fd> PinHolder(pid_t holder_pid, uint64_t holder_start_time);

// `podvisor sandbox-init --hostname H [--loopback] [--pid] [--keeper PATH]
// [--userns]`: the holder's main, already inside its new namespaces (the
// spawner unshares them); with --userns it makes them itself, the user
// namespace first (S20.5).
int SandboxInitMain(const std::string& hostname, bool loopback, bool new_pid,
                    const std::string& keeper_socket, bool userns = false);

}  // namespace podvisor::supervisor::sandbox
