// The "mounts" list: the runtime's system mounts (runc's default spec),
// then the pod files (/etc/hosts, /etc/hostname, /etc/resolv.conf), the
// termination-message file (S11.3) and the volumes, ordered so that a
// mount never hides one made inside it.
#include <algorithm>
#include <fstream>
#include <sstream>

#include "oci/mount_propagation.h"
#include "oci/spec_internal.h"

namespace podvisor::oci::internal {
namespace {

using nlohmann::json;

json Mount(std::string_view destination, std::string_view type, std::string_view source,
           std::vector<std::string> options) {
  return json{{"destination", destination},
              {"type", type},
              {"source", source},
              {"options", std::move(options)}};
}

// Bind mounts as the kubelet asks for them: recursive, and private unless
// a volumeMount asks for propagation.
json Bind(std::string_view destination, const std::filesystem::path& source, bool read_only,
          std::string_view propagation = "rprivate") {
  return Mount(destination, "bind", source.string(),
               {"rbind", std::string(propagation), read_only ? "ro" : "rw"});
}

Result<std::string> ReadMountInfo(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return Error("cannot read " + path.string() + " to check mountPropagation");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<json> SystemMounts(const SpecContext& ctx) {
  const char* sys_mode = ctx.privileged ? "rw" : "ro";
  std::vector<json> mounts = {
      Mount("/proc", "proc", "proc", {"nosuid", "noexec", "nodev"}),
      Mount("/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}),
      Mount("/dev/pts", "devpts", "devpts",
            {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}),
  };
  if (ctx.pod.spec.host_ipc) {
    mounts.push_back(Bind("/dev/shm", "/dev/shm", false));
  } else if (!ctx.input.pod_shm_dir.empty()) {
    mounts.push_back(Bind("/dev/shm", ctx.input.pod_shm_dir, false));
  } else {
    mounts.push_back(Mount("/dev/shm", "tmpfs", "shm",
                           {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}));
  }
  mounts.push_back(Mount("/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}));
  mounts.push_back(Mount("/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", sys_mode}));
  // "cgroup": runc mounts cgroup2 or the v1 hierarchies, whichever the host has.
  mounts.push_back(Mount("/sys/fs/cgroup", "cgroup", "cgroup",
                         {"nosuid", "noexec", "nodev", "relatime", sys_mode}));
  return mounts;
}

// "/data/./x/" -> "/data/x": one spelling per destination, so duplicates
// are caught and depth ordering is right.
std::string CleanDestination(const std::string& path) {
  std::string clean = std::filesystem::path(path).lexically_normal().string();
  while (clean.size() > 1 && clean.back() == '/') clean.pop_back();
  return clean;
}

// A subPath must stay below the volume (validation checks this too; it is
// re-checked here because the result becomes a host path). Lexical only:
// a created container gets the bound source of S14.2 instead.
Result<std::filesystem::path> JoinSubPath(const std::filesystem::path& base,
                                          const std::string& sub_path, const std::string& field) {
  if (sub_path.empty()) return base;
  std::filesystem::path rel(sub_path);
  if (rel.is_absolute()) return Error(field + ": must be a relative path");
  for (const auto& part : rel) {
    if (part == "..") return Error(field + ": must not contain '..'");
  }
  return (base / rel).lexically_normal();
}

Result<std::vector<json>> VolumeMounts(const SpecContext& ctx) {
  std::vector<json> mounts;
  std::optional<std::string> mountinfo;  // read at the first propagating mount
  const auto& volume_mounts = ctx.container.volume_mounts;
  for (std::size_t i = 0; i < volume_mounts.size(); ++i) {
    const pod::VolumeMount& vm = volume_mounts[i];
    std::string field = ctx.field + ".volumeMounts[" + std::to_string(i) + "]";
    auto volume = std::find_if(ctx.pod.spec.volumes.begin(), ctx.pod.spec.volumes.end(),
                               [&](const pod::Volume& v) { return v.name == vm.name; });
    if (volume == ctx.pod.spec.volumes.end()) {
      return Error(field + ".name: Not found: \"" + vm.name + "\"");
    }
    if (vm.mount_path.empty() || vm.mount_path[0] != '/') {
      return Error(field + ".mountPath: \"" + vm.mount_path + "\" must be an absolute path");
    }
    std::filesystem::path base;
    bool read_only = vm.read_only;
    if (volume->config_map || volume->secret || volume->downward_api || volume->projected) {
      // Written once by projected_volumes.h; always read-only, as the
      // kubelet mounts them.
      base = ctx.input.volumes_dir / volume->name;
      read_only = true;
    } else if (volume->empty_dir) {
      // emptyDir, on disk or tmpfs: one host directory shared by the pod's
      // containers (volumes.h mounts the tmpfs there for medium Memory).
      base = ctx.input.volumes_dir / volume->name;
    } else if (volume->host_path) {
      base = volume->host_path->path;
    } else {
      std::string kinds;
      for (const auto& k : volume->unsupported_sources) kinds += (kinds.empty() ? "" : ", ") + k;
      return Error(field + ": volume \"" + vm.name + "\" is of a kind podvisor cannot provide" +
                   (kinds.empty() ? std::string() : " (" + kinds + ")"));
    }
    std::string sub_path = vm.sub_path;
    std::string sub_field = field + ".subPath";
    if (!vm.sub_path_expr.empty()) {
      auto expanded = pod::ExpandSubPathExpr(vm.sub_path_expr, ctx.own_env);
      if (!expanded) return expanded.error().Wrap(field);
      sub_path = std::move(*expanded);
      sub_field = field + ".subPathExpr";
    }
    auto source = JoinSubPath(base, sub_path, sub_field);
    if (!source) return source.take_error();
    // S14.2: the runtime mounts what was resolved beneath the volume and
    // bound by volumes.h, not the path that names it. Propagation is still
    // checked on the volume's own mount, the one the bind is a peer of.
    // S20.22: a hostUsers: false pod's container binds the volume's
    // idmapped mount (hostfs/idmapped_pod.h) instead of the volume.
    std::filesystem::path mount_source = *source;
    if (auto idmapped = ctx.input.idmapped_volume_sources.find(volume->name);
        idmapped != ctx.input.idmapped_volume_sources.end()) {
      auto view = JoinSubPath(idmapped->second, sub_path, sub_field);
      if (!view) return view.take_error();
      mount_source = *view;
    }
    if (auto bound = ctx.input.sub_path_sources.find(i);
        !sub_path.empty() && bound != ctx.input.sub_path_sources.end()) {
      mount_source = bound->second;
    }
    std::string_view propagation = PropagationOption(vm.mount_propagation);
    if (propagation != "rprivate") {
      if (!mountinfo) {
        auto text = ReadMountInfo(ctx.input.mountinfo);
        if (!text) return text.take_error();
        mountinfo = std::move(*text);
      }
      if (Status s = CheckPropagationSource(*mountinfo, *source, vm.mount_propagation, field); !s) {
        return s.take_error();
      }
    }
    json bind = Bind(CleanDestination(vm.mount_path), mount_source, read_only, propagation);
    if (ctx.input.user_namespace &&
        (volume->config_map || volume->secret || volume->downward_api || volume->projected)) {
      // S20.11: the runtime makes a read-only bind by remounting it with
      // the flags the config names, and inside a user namespace the kernel
      // refuses to clear the flags the source mount has (MNT_LOCK_*):
      // runc 1.1.5 then fails with EPERM. These volumes are
      // projected_volumes.h's tmpfs, nosuid, nodev and noexec.
      for (const char* flag : {"nosuid", "nodev", "noexec"}) bind["options"].push_back(flag);
    }
    mounts.push_back(std::move(bind));
  }
  return mounts;
}

std::size_t Depth(const json& mount) {
  std::filesystem::path p(mount["destination"].get<std::string>());
  std::size_t n = 0;
  for (const auto& part : p) {
    if (part != "/" && !part.empty()) ++n;
  }
  return n;
}

}  // namespace

Result<json> BuildMounts(const SpecContext& ctx) {
  std::vector<json> system = SystemMounts(ctx);
  std::vector<json> added;
  // The pod files follow readOnlyRootFilesystem as containerd does.
  bool etc_ro = ctx.read_only_root;
  added.push_back(Bind("/etc/hosts", ctx.input.etc_hosts, etc_ro));
  added.push_back(Bind("/etc/hostname", ctx.input.etc_hostname, etc_ro));
  added.push_back(Bind("/etc/resolv.conf", ctx.input.etc_resolv_conf, etc_ro));
  const std::string& tm_path = ctx.container.termination_message_path;
  if (!tm_path.empty()) {
    if (tm_path[0] != '/') {
      return Error(ctx.field + ".terminationMessagePath: \"" + tm_path +
                   "\" must be an absolute path");
    }
    added.push_back(Bind(CleanDestination(tm_path), ctx.input.termination_message_file, false));
  }
  auto volumes = VolumeMounts(ctx);
  if (!volumes) return volumes.take_error();
  added.insert(added.end(), volumes->begin(), volumes->end());

  for (std::size_t i = 0; i < added.size(); ++i) {
    for (std::size_t j = i + 1; j < added.size(); ++j) {
      if (added[i]["destination"] == added[j]["destination"]) {
        return Error(ctx.field + ": two mounts at " + added[i]["destination"].dump());
      }
    }
  }
  // A volume mounted where a system mount would be replaces it (e.g. a
  // Memory emptyDir at /dev/shm), as containerd does.
  std::erase_if(system, [&](const json& m) {
    return std::any_of(added.begin(), added.end(),
                       [&](const json& a) { return a["destination"] == m["destination"]; });
  });
  // Parents before children: /data before /data/logs, whatever the
  // manifest order (a stable sort keeps it otherwise).
  std::stable_sort(added.begin(), added.end(),
                   [](const json& a, const json& b) { return Depth(a) < Depth(b); });
  json mounts = json::array();
  for (auto& m : system) mounts.push_back(std::move(m));
  for (auto& m : added) mounts.push_back(std::move(m));
  return mounts;
}

}  // namespace podvisor::oci::internal
