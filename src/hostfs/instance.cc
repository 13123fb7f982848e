#include "hostfs/instance.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <map>
#include <optional>
#include <system_error>

#include "common/fd.h"
#include "common/mounts.h"
#include "hostfs/idmapped_pod.h"
#include "hostfs/rootfs.h"
#include "hostfs/volumes.h"
#include "image/layer_merge.h"

namespace podvisor::hostfs {

Status PreparePodFiles(const pod::Pod& pod, const PodLayout& layout,
                       const std::string& node_hostname, const HostEtcFiles& host,
                       const std::filesystem::path& user_namespace) {
  std::string hostname = oci::PodHostname(pod, node_hostname);
  if (Status s = WritePodEtcFiles(layout, hostname, pod.spec.host_network, host); !s) {
    return s.error().Wrap("pod " + pod.metadata.name);
  }
  if (Status s = PreparePodVolumes(pod, layout.VolumesDir()); !s)
    return s.error().Wrap("pod " + pod.metadata.name);
  if (!pod.spec.host_ipc) {
    if (Status s = MountPodShm(layout); !s) return s.error().Wrap("pod " + pod.metadata.name);
  }
  if (!user_namespace.empty()) return IdmapPodMounts(pod, layout, user_namespace);
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

}  // namespace

Status PrepareContainerInstance(const pod::Pod& pod, const pod::Container& container,
                                const image::Image& image, const PodLayout& layout,
                                InstanceFacts facts, const HostFacts& host, PreparedInstance& out) {
  const std::filesystem::path& dir = facts.instance_dir;
  out.config_file = dir / "config.json";
  out.root = InstanceRoot(dir, image);
  std::optional<RootIdmap> idmap;
  std::map<std::string, std::filesystem::path> idmapped;
  if (facts.user_namespace) {
    const std::string what = "container " + container.name + ": hostUsers: false";
    if (!facts.own_root) {
      return Error(what + " needs a root of its own to idmap (the namespaces sandbox)", EINVAL);
    }
    if (facts.namespaces.user.empty()) return Error(what + ": no user namespace given", EINVAL);
    idmap = RootIdmap{facts.namespaces.user, *facts.user_namespace};
    idmapped = IdmappedVolumeSources(pod, layout);
  }
  if (Status s = MakeDirs(dir, idmap ? 0711 : 0700); !s) return s;
  if (idmap) {
    if (Status s = AllowPassingThrough(dir, layout.dir()); !s) return s;
  }
  // As the kubelet does, at the container's creation: a subPath an earlier
  // container wrote (an init container's config file) is bound as it is;
  // one that does not exist yet becomes a directory.
  auto sub_paths = BindSubPaths(pod, container, layout.VolumesDir(), SubPathMountDir(dir),
                                facts.pod_ips, idmapped);
  if (!sub_paths) return sub_paths.take_error();
  out.sub_paths_bound = !sub_paths->empty();
  facts.sub_path_sources = std::move(*sub_paths);
  if (facts.own_root) {
    if (Status s = MountWritableRoot(out.root, OverlayMountApi::kAuto, idmap); !s) return s;
    out.root_mounted = true;
  } else if (!image.layers.empty()) {
    // Without privileges to mount an overlay, a layered image's root is
    // its layers merged once into a tree all such instances share, as a
    // plain rootfs is shared.
    auto tree = image::EnsureMergedTree(image.layers, image::MergedTree::kWritableRoot);
    if (!tree) return tree.take_error().Wrap("container " + container.name + ": its root");
  }
  if (Status s = CreateTerminationMessageFile(TerminationMessageFile(dir)); !s) return s;
  oci::ContainerConfigInput input = PlanContainerConfig(pod, container, image, layout, facts, host);
  out.cgroups_path = input.cgroups_path;
  auto config = oci::GenerateConfig(pod, container, image, input);
  if (!config) return config.take_error();
  if (Status s = oci::WriteConfigFile(*config, out.config_file); !s) return s;
  out.config = std::move(*config);
  return Ok();
}

Status AllowPassingThrough(const std::filesystem::path& dir, const std::filesystem::path& top) {
  // Never above `top`: the directories there are the operator's.
  const std::filesystem::path rel =
      dir.lexically_normal().lexically_relative(top.lexically_normal());
  if (rel.empty() || *rel.begin() == "..") {
    return Error(dir.string() + " is not below " + top.string(), EINVAL);
  }
  for (std::filesystem::path p = dir;; p = p.parent_path()) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return Error::FromErrno(p.string());
    if ((st.st_mode & S_IXOTH) == 0 && ::chmod(p.c_str(), (st.st_mode & 07777) | 0011) != 0)
      return Error::FromErrno("letting the pod's root pass through " + p.string());
    if (p.lexically_normal() == top.lexically_normal() || p == p.parent_path()) return Ok();
  }
}

Status RemoveContainerInstance(const std::filesystem::path& dir) {
  if (Status s = UnmountAllUnder(dir); !s) return s;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec) return Error("removing " + dir.string() + ": " + ec.message(), ec.value());
  return Ok();
}

}  // namespace podvisor::hostfs
