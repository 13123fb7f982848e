// Where podvisor keeps a pod's generated files under the state directory
// (docs/INTERFACE.md: `--state-dir DIR`, per pod `DIR/<pod>/`):
//
//   DIR/<pod>/etc/{hosts,hostname,resolv.conf}   bind-mounted into every container
//   DIR/<pod>/volumes/<volume>/                   emptyDir volumes (tmpfs for medium Memory)
//   DIR/<pod>/shm/                                the pod's /dev/shm when it has its own IPC
//   namespace DIR/<pod>/runtime/                            the OCI runtime's --root
//   DIR/<pod>/ns/{net,ipc,uts,pid}                the pod sandbox's namespaces, pinned by
//                                                 bind mounts (as ip-netns does), joined by path
//   DIR/<pod>/containers/<container>/<instance>/  one runtime bundle per container instance:
//       config.json, termination-log, upper/ work/ (overlay), rootfs/ (its merged root)
//
// The instance is the container's restart count: every (re)start gets a
// fresh writable root and termination-message file, as in Kubernetes.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace podvisor::oci {

struct WritableRootPaths {
  std::filesystem::path lower;   // the image rootfs
  std::filesystem::path upper;   // instance/upper
  std::filesystem::path work;    // instance/work (overlayfs scratch; same filesystem as upper)
  std::filesystem::path merged;  // instance/rootfs: root.path in config.json
};

class PodLayout {
 public:
  PodLayout(const std::filesystem::path& state_dir, std::string_view pod_name)
      : dir_(state_dir / std::string(pod_name)) {}

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path EtcDir() const { return dir_ / "etc"; }
  std::filesystem::path HostsFile() const { return EtcDir() / "hosts"; }
  std::filesystem::path HostnameFile() const { return EtcDir() / "hostname"; }
  std::filesystem::path ResolvConfFile() const { return EtcDir() / "resolv.conf"; }
  std::filesystem::path VolumesDir() const { return dir_ / "volumes"; }
  std::filesystem::path ShmDir() const { return dir_ / "shm"; }
  std::filesystem::path RuntimeRoot() const { return dir_ / "runtime"; }
  std::filesystem::path ContainersDir() const { return dir_ / "containers"; }
  std::filesystem::path NamespaceDir() const { return dir_ / "ns"; }
  // `kind`: "net", "ipc", "uts" or "pid" (the /proc/<pid>/ns/ names).
  std::filesystem::path NamespaceFile(std::string_view kind) const {
    return NamespaceDir() / std::string(kind);
  }

  // The runtime bundle directory (--bundle) of one container instance.
  std::filesystem::path InstanceDir(std::string_view container, int instance) const {
    return ContainersDir() / std::string(container) / std::to_string(instance);
  }
  std::filesystem::path ConfigFile(std::string_view container, int instance) const {
    return InstanceDir(container, instance) / "config.json";
  }
  std::filesystem::path TerminationMessageFile(std::string_view container, int instance) const {
    return InstanceDir(container, instance) / "termination-log";
  }
  WritableRootPaths WritableRoot(std::string_view container, int instance,
                                 const std::filesystem::path& image_rootfs) const {
    std::filesystem::path d = InstanceDir(container, instance);
    return {image_rootfs, d / "upper", d / "work", d / "rootfs"};
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace podvisor::oci
