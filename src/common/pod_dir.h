// The names of a pod's files under the state directory, in one place
// (docs/INTERFACE.md: `--state-dir DIR`, per pod `DIR/<pod>/`):
//
//   DIR/<pod>/status.json        the kept record (`status`, `describe`, `list`)
//   DIR/<pod>/events.jsonl       the pod's events
//   DIR/<pod>/control.sock       the supervisor's control socket
//   DIR/<pod>/network.json       the saved CNI attachment
//   DIR/<pod>/usernet.json       a user-mode network's tool (network/user_mode.h, S22),
//       with slirp4netns.sock, pasta.pid and usernet.log beside it
//   DIR/<pod>/etc/{hosts,hostname,resolv.conf}   bind-mounted into every container
//   DIR/<pod>/volumes/<volume>/  emptyDir volumes (tmpfs for medium Memory)
//   DIR/<pod>/shm/               the pod's /dev/shm when it has its own IPC namespace
//   DIR/<pod>/idmapped/{volumes/<volume>,etc}   hostUsers: false: the volumes and
//                                etc/ idmapped to the pod's user namespace (S20.22)
//   DIR/<pod>/runtime/           the OCI runtime's --root
//   DIR/<pod>/ns/{net,ipc,uts,pid}   the sandbox's namespaces, pinned by bind mounts
//       (ns/net-user: the user namespace a user-mode network's tool joins)
//   DIR/<pod>/containers/<container>/<id>/   one runtime bundle per create attempt:
//       config.json, termination-log, init.pid, runtime.log,
//       upper/ work/ (overlay), rootfs/ (its merged root), subpaths/
//   DIR/<pod>/log-dir            the pod's log directory of its current run (S14.34)
//   DIR/<pod>/cgroup-name        the pod cgroup's claimed name (S14.31)
//   DIR/<pod>/.runs/<uid>/       an earlier run's record, events, log-dir (S14.33)
//   DIR/<pod>.lock               held by the pod's supervisor (common/pod_lock.h)
//   DIR/network.lock             held across the hostPort check and ADD of every pod
//   DIR/.images/                 the layer store (image/layer_store.h), shared by pods
//   DIR/.bundles/                bundle images `run` unpacked
//
// The names beside the pods start with a dot or hold one, so no pod (a DNS
// label) can collide with them.
//
// It is in common/ because the CLI, the shim, recovery and the executor all
// find a pod by these names and none of them should depend on oci/ (the
// runtime spec) for it. It only names paths: no I/O, no creation; oci's
// PodLayout adds what needs an image (the writable root).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

namespace podvisor {

// The files of one container instance's directory, its runtime bundle.
struct InstanceFile {
  static constexpr std::string_view kConfig = "config.json";  // the OCI bundle's name
  static constexpr std::string_view kTerminationLog = "termination-log";
  static constexpr std::string_view kPidFile = "init.pid";        // the runtime's --pid-file
  static constexpr std::string_view kRuntimeLog = "runtime.log";  // the runtime's --log
  static constexpr std::string_view kUpperDir = "upper";
  static constexpr std::string_view kWorkDir = "work";
  static constexpr std::string_view kRootfsDir = "rootfs";
  static constexpr std::string_view kSubPathsDir = "subpaths";  // S14.2's binds
};

// The entries of the state directory beside the pods.
struct StateDirEntry {
  static constexpr std::string_view kNetworkLock = "network.lock";
  static constexpr std::string_view kImageCache = ".images";
  static constexpr std::string_view kBundles = ".bundles";
  // S21.4: without root, the host claims and the default network's files
  // of the user's pods (root keeps them under /run).
  static constexpr std::string_view kRootlessClaims = ".claims";
  static constexpr std::string_view kRootlessCni = ".cni";
};

class PodDir {
 public:
  static constexpr std::string_view kRecordFile = "status.json";
  static constexpr std::string_view kEventsFile = "events.jsonl";
  static constexpr std::string_view kControlSocket = "control.sock";
  static constexpr std::string_view kNetworkFile = "network.json";
  static constexpr std::string_view kContainersDir = "containers";
  // S15.4: the supervisor's handover state, for a supervisor that adopts
  // the pod after a crash, and the socket of the sandbox's holder, which
  // keeps the descriptors the adopting one takes back.
  static constexpr std::string_view kSupervisorStateFile = "supervisor-state.json";
  static constexpr std::string_view kKeeperSocket = "sandbox.sock";
  // The holder's identity, written once it is ready and before it is
  // entrusted with anything (which is when it stops dying with its
  // supervisor): recovery ends a holder that a supervisor killed before
  // its first handover state left behind.
  static constexpr std::string_view kSandboxHolderFile = "sandbox-holder.json";

  PodDir(const std::filesystem::path& state_dir, std::string_view pod)
      : dir_(state_dir / std::string(pod)) {}
  // For code that is given DIR/<pod> itself (the supervisor's own
  // --state-dir is the pod's directory).
  static PodDir At(std::filesystem::path pod_dir) { return PodDir(std::move(pod_dir)); }

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path RecordFile() const { return dir_ / kRecordFile; }
  std::filesystem::path EventsFile() const { return dir_ / kEventsFile; }
  std::filesystem::path ControlSocket() const { return dir_ / kControlSocket; }
  std::filesystem::path NetworkFile() const { return dir_ / kNetworkFile; }
  std::filesystem::path SupervisorStateFile() const { return dir_ / kSupervisorStateFile; }
  std::filesystem::path KeeperSocket() const { return dir_ / kKeeperSocket; }
  std::filesystem::path SandboxHolderFile() const { return dir_ / kSandboxHolderFile; }

  std::filesystem::path EtcDir() const { return dir_ / "etc"; }
  std::filesystem::path HostsFile() const { return EtcDir() / "hosts"; }
  std::filesystem::path HostnameFile() const { return EtcDir() / "hostname"; }
  std::filesystem::path ResolvConfFile() const { return EtcDir() / "resolv.conf"; }
  std::filesystem::path VolumesDir() const { return dir_ / "volumes"; }
  std::filesystem::path ShmDir() const { return dir_ / "shm"; }
  // S20.22: the idmapped mounts of a hostUsers: false pod, bound from by
  // its containers instead of the volumes and etc/ themselves.
  std::filesystem::path IdmappedDir() const { return dir_ / "idmapped"; }
  std::filesystem::path IdmappedVolume(std::string_view volume) const {
    return IdmappedDir() / "volumes" / std::string(volume);
  }
  std::filesystem::path IdmappedEtcDir() const { return IdmappedDir() / "etc"; }
  std::filesystem::path RuntimeRoot() const { return dir_ / "runtime"; }
  std::filesystem::path NamespaceDir() const { return dir_ / "ns"; }
  // `kind`: "net", "ipc", "uts" or "pid" (the /proc/<pid>/ns/ names).
  std::filesystem::path NamespaceFile(std::string_view kind) const {
    return NamespaceDir() / std::string(kind);
  }

  std::filesystem::path ContainersDir() const { return dir_ / kContainersDir; }
  // The runtime bundle directory (--bundle) of one create attempt, named by
  // its runtime container id (the supervisor's: a retried create gets a
  // fresh directory while the runtime may still clean up the failed one).
  std::filesystem::path InstanceDir(std::string_view container, std::string_view id) const {
    return ContainersDir() / std::string(container) / std::string(id);
  }

 private:
  explicit PodDir(std::filesystem::path pod_dir) : dir_(std::move(pod_dir)) {}

  std::filesystem::path dir_;
};

}  // namespace podvisor
