#include "oci/instance.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <system_error>

#include "common/fd.h"
#include "oci/mounts.h"
#include "oci/rootfs.h"
#include "oci/volumes.h"

namespace podvisor::oci {

ContainerConfigInput PodInputFromLayout(const PodLayout& layout, const pod::Pod& pod) {
  ContainerConfigInput in;
  in.volumes_dir = layout.VolumesDir();
  in.etc_hosts = layout.HostsFile();
  in.etc_hostname = layout.HostnameFile();
  in.etc_resolv_conf = layout.ResolvConfFile();
  if (!pod.spec.host_ipc) in.pod_shm_dir = layout.ShmDir();
  return in;
}

Status PreparePodFiles(const pod::Pod& pod, const PodLayout& layout,
                       const std::string& node_hostname, const HostEtcFiles& host) {
  std::string hostname = PodHostname(pod, node_hostname);
  if (Status s = WritePodEtcFiles(layout, hostname, pod.spec.host_network, host); !s) {
    return s.error().Wrap("pod " + pod.metadata.name);
  }
  if (Status s = PreparePodVolumes(pod, layout.VolumesDir()); !s)
    return s.error().Wrap("pod " + pod.metadata.name);
  if (!pod.spec.host_ipc) {
    if (Status s = MountPodShm(layout); !s) return s.error().Wrap("pod " + pod.metadata.name);
  }
  return Ok();
}

namespace {

Status CreateTerminationMessageFile(const std::filesystem::path& file) {
  Fd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666));
  if (!fd) return Error::FromErrno("creating " + file.string());
  // Not umask-filtered: the container may run as any uid.
  if (::fchmod(fd.get(), 0666) != 0) return Error::FromErrno("chmod " + file.string());
  return Ok();
}

Result<PreparedInstance> Prepare(const pod::Pod& pod, const pod::Container& container,
                                 const Image& image, const PodLayout& layout, int instance,
                                 ContainerConfigInput& input) {
  PreparedInstance out;
  out.bundle_dir = layout.InstanceDir(container.name, instance);
  out.config_file = layout.ConfigFile(container.name, instance);
  out.termination_message_file = layout.TerminationMessageFile(container.name, instance);
  out.root = layout.WritableRoot(container.name, instance, image.rootfs);
  if (Status s = MakeDirs(out.bundle_dir, 0700); !s) return s.take_error();
  if (Status s = MountWritableRoot(out.root); !s) return s.take_error();
  auto sub_paths = BindSubPaths(pod, container, input.volumes_dir, SubPathMountDir(out.bundle_dir));
  if (!sub_paths) return sub_paths.take_error();
  input.sub_path_sources = std::move(*sub_paths);
  if (Status s = CreateTerminationMessageFile(out.termination_message_file); !s)
    return s.take_error();
  input.root_path = out.root.merged;
  input.termination_message_file = out.termination_message_file;
  auto config = GenerateConfig(pod, container, image, input);
  if (!config) return config.take_error();
  if (Status s = WriteConfigFile(*config, out.config_file); !s) return s.take_error();
  out.config = std::move(*config);
  return out;
}

}  // namespace

Result<PreparedInstance> PrepareContainerInstance(const pod::Pod& pod,
                                                  const pod::Container& container,
                                                  const Image& image, const PodLayout& layout,
                                                  int instance, ContainerConfigInput input) {
  auto prepared = Prepare(pod, container, image, layout, instance, input);
  if (!prepared) {
    // Best effort: the error that matters is the one being returned.
    (void)RemoveContainerInstance(layout, container.name, instance);
    return prepared.error().Wrap("preparing container " + container.name + " instance " +
                                 std::to_string(instance));
  }
  return prepared;
}

Status RemoveContainerInstance(const PodLayout& layout, std::string_view container, int instance) {
  std::filesystem::path dir = layout.InstanceDir(container, instance);
  if (Status s = UnmountAllUnder(dir); !s) return s;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec) return Error("removing " + dir.string() + ": " + ec.message(), ec.value());
  return Ok();
}

}  // namespace podvisor::oci
