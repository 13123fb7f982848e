#include "hostfs/idmapped_pod.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <optional>
#include <set>

#include "common/fd.h"
#include "common/mounts.h"
#include "hostfs/idmap.h"
#include "hostfs/projected_volumes.h"

namespace podvisor::hostfs {
namespace {

namespace fs = std::filesystem;

// The volumes a container or init container mounts, of a kind podvisor
// provides (spec_mounts.cc refuses the others), in the pod's order.
std::vector<const pod::Volume*> MountedVolumes(const pod::Pod& pod) {
  std::set<std::string> used;
  for (const auto* list : {&pod.spec.init_containers, &pod.spec.containers}) {
    for (const pod::Container& c : *list) {
      for (const pod::VolumeMount& vm : c.volume_mounts) used.insert(vm.name);
    }
  }
  std::vector<const pod::Volume*> out;
  for (const pod::Volume& v : pod.spec.volumes) {
    if (!used.contains(v.name)) continue;
    if (v.host_path || v.empty_dir || IsProjectedKind(v)) out.push_back(&v);
  }
  return out;
}

fs::path SourceOf(const pod::Volume& v, const PodLayout& layout) {
  return v.host_path ? fs::path(v.host_path->path) : layout.VolumesDir() / v.name;
}

std::string Describe(const pod::Volume& v) {
  std::string what = "volume \"" + v.name + "\"";
  if (v.host_path) what += ": hostPath " + v.host_path->path;
  return what;
}

// A mount point like the source: a directory, or a file (a hostPath of
// type File, Socket, CharDevice, ...) that a bind of it can cover.
Status MakeMountPoint(const fs::path& source, const fs::path& target) {
  struct stat st {};
  if (::stat(source.c_str(), &st) != 0) return Error::FromErrno(source.string());
  if (Status s = MakeDirs(target.parent_path(), 0711); !s) return s;
  if (S_ISDIR(st.st_mode)) {
    if (::mkdir(target.c_str(), 0755) != 0 && errno != EEXIST)
      return Error::FromErrno("creating " + target.string());
    return Ok();
  }
  Fd file(::open(target.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!file) return Error::FromErrno("creating " + target.string());
  return Ok();
}

Status IdmapAt(const fs::path& source, const fs::path& target, const Fd& userns) {
  // Idempotent: an adopting or retrying supervisor keeps what is there.
  if (IsMountPoint(target)) return Ok();
  if (Status s = MakeMountPoint(source, target); !s) return s;
  // Recursive, as the container's rbind of the volume would be.
  auto tree = OpenIdmappedTree(source, userns.get(), /*recursive=*/true);
  if (!tree) return tree.take_error();
  return AttachTree(*tree, target);
}

}  // namespace

std::map<std::string, fs::path> IdmappedVolumeSources(const pod::Pod& pod,
                                                      const PodLayout& layout) {
  std::map<std::string, fs::path> sources;
  for (const pod::Volume* v : MountedVolumes(pod))
    sources[v->name] = layout.IdmappedVolume(v->name);
  return sources;
}

Status IdmapPodMounts(const pod::Pod& pod, const PodLayout& layout,
                      const fs::path& user_namespace) {
  const std::string pod_what = "pod " + pod.metadata.name + ": idmapped mounts";
  if (user_namespace.empty()) return Error(pod_what + ": no user namespace given", EINVAL);
  auto userns = OpenUserNamespace(user_namespace);
  if (!userns) return userns.take_error().Wrap(pod_what);
  if (Status s = MakeDirs(layout.IdmappedDir(), 0711); !s) return s.error().Wrap(pod_what);
  for (const pod::Volume* v : MountedVolumes(pod)) {
    if (Status s = IdmapAt(SourceOf(*v, layout), layout.IdmappedVolume(v->name), *userns); !s)
      return s.error().Wrap(Describe(*v));
  }
  if (Status s = IdmapAt(layout.EtcDir(), layout.IdmappedEtcDir(), *userns); !s)
    return s.error().Wrap(pod_what + ": the pod's /etc files");
  return Ok();
}

Status CheckPodIdmappable(const pod::Pod& pod, const PodLayout& layout,
                          const std::vector<fs::path>& image_dirs) {
  auto scratch =
      ScratchUserNamespace::Create({.host_uid = 0x7fff0000, .host_gid = 0x7fff0000, .size = 1});
  if (!scratch) return scratch.take_error().Wrap("checking that idmapped mounts can be made");
  for (const pod::Volume* v : MountedVolumes(pod)) {
    if (!v->host_path) continue;  // the others live in the state directory
    if (Status s = CheckIdmappable(v->host_path->path, Describe(*v), scratch->fd()); !s) return s;
  }
  if (Status s = CheckIdmappable(layout.dir(), "the state directory", scratch->fd()); !s) return s;
  for (const fs::path& dir : image_dirs) {
    if (Status s = CheckIdmappable(dir, "the image at " + dir.string(), scratch->fd()); !s)
      return s;
  }
  return Ok();
}

}  // namespace podvisor::hostfs
