// The "linux" object: namespaces, resources, cgroupsPath, devices, masked
// and read-only paths, seccomp.
#include <algorithm>
#include <iterator>
#include <string_view>

#include "oci/spec_internal.h"
#include "pod/sysctls.h"

namespace podvisor::oci::internal {
namespace {

using nlohmann::json;

// runc's default spec (`runc spec`), in its order.
constexpr std::string_view kMaskedPaths[] = {
    "/proc/acpi",          "/proc/asound",     "/proc/kcore",       "/proc/keys",
    "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
    "/sys/firmware",       "/proc/scsi"};
constexpr std::string_view kReadonlyPaths[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                               "/proc/sysrq-trigger"};

constexpr int64_t kCpuPeriodUs = 100000;  // the kubelet's quota period
constexpr int64_t kMinShares = 2;
constexpr int64_t kMaxShares = 262144;
constexpr int64_t kMinQuotaUs = 1000;

json Namespace(std::string_view type, const std::string& path) {
  json ns{{"type", type}};
  if (!path.empty()) ns["path"] = path;
  return ns;
}

Result<json> BuildNamespaces(const SpecContext& ctx) {
  const pod::PodSpec& spec = ctx.pod.spec;
  const NamespacePaths& paths = ctx.input.namespaces;
  json namespaces = json::array();
  // S20.8: the pod's user namespace, which owns the others; joined first
  // by the runtime. Without a path (validate, oci-config: no sandbox) the
  // runtime makes one with the mappings.
  if (ctx.input.user_namespace) namespaces.push_back(Namespace("user", paths.user));
  if (!spec.host_pid) {
    if (spec.share_process_namespace.value_or(false)) {
      if (paths.pid.empty()) {
        return Error("spec.shareProcessNamespace: the pod's pid namespace path was not given");
      }
      namespaces.push_back(Namespace("pid", paths.pid));
    } else {
      namespaces.push_back(Namespace("pid", ""));
    }
  }
  // hostNetwork also means the host's UTS namespace (the kubelet shares
  // both), which is why such pods see the node's hostname.
  if (!spec.host_network) namespaces.push_back(Namespace("network", paths.network));
  if (!spec.host_ipc) namespaces.push_back(Namespace("ipc", paths.ipc));
  if (!spec.host_network) namespaces.push_back(Namespace("uts", paths.uts));
  namespaces.push_back(Namespace("mount", ""));
  return namespaces;
}

// Kubernetes' MilliCPUToShares.
int64_t CpuShares(int64_t milli) {
  if (milli <= 0) return kMinShares;
  int64_t shares = milli * 1024 / 1000;
  return std::clamp(shares, kMinShares, kMaxShares);
}

// "hugepages-2Mi" -> "2MB", the page size spelling of the OCI spec (and of
// the kernel's hugetlb.<size>.limit_in_bytes files).
std::optional<std::string> HugePageSize(std::string_view resource) {
  std::string_view size = resource.substr(std::string_view("hugepages-").size());
  for (auto [suffix, unit] :
       {std::pair{"Ki", "KB"}, std::pair{"Mi", "MB"}, std::pair{"Gi", "GB"}}) {
    if (size.size() > 2 && size.substr(size.size() - 2) == suffix) {
      return std::string(size.substr(0, size.size() - 2)) + unit;
    }
  }
  return std::nullopt;
}

Result<json> BuildResources(const SpecContext& ctx) {
  const pod::ResourceRequirements& r = ctx.container.resources;
  const std::string field = ctx.field + ".resources";
  json resources = json::object();
  resources["devices"] = json::array({json{{"allow", ctx.privileged}, {"access", "rwm"}}});

  if (r.limits.memory) {
    int64_t bytes = r.limits.memory->value();
    // memory.swap is memory+swap in the OCI spec: equal to the limit means
    // no swap, as the kubelet configures containers by default.
    resources["memory"] = json{{"limit", bytes}, {"swap", bytes}};
  }
  json cpu{{"shares", CpuShares(r.requests.cpu ? r.requests.cpu->milli() : 0)}};
  if (r.limits.cpu) {
    int64_t quota = r.limits.cpu->milli() * kCpuPeriodUs / 1000;
    cpu["quota"] = std::max(quota, kMinQuotaUs);
    cpu["period"] = kCpuPeriodUs;
  }
  resources["cpu"] = cpu;
  if (ctx.input.pids_limit) resources["pids"] = json{{"limit", *ctx.input.pids_limit}};
  // S10.4: an OOM kill takes the whole container, not one of its
  // processes, so the instance ends and is reported OOMKilled. A cgroup v2
  // file, so only set when the runtime creates a v2 cgroup.
  if (ctx.input.memory_oom_group) resources["unified"] = json{{"memory.oom.group", "1"}};

  json hugepages = json::array();
  for (const auto& [list, list_name] :
       {std::pair{&r.limits, "limits"}, std::pair{&r.requests, "requests"}}) {
    for (const auto& [name, q] : list->other) {
      std::string where = field;
      where.append(".").append(list_name).append("[").append(name) += ']';
      if (name.rfind("hugepages-", 0) == 0) {
        auto size = HugePageSize(name);
        if (!size) return Error(where + ": unsupported huge page size");
        // The API requires hugepage requests == limits; the limit is enforced.
        if (std::string_view(list_name) == "limits") {
          hugepages.push_back(json{{"pageSize", *size}, {"limit", q.value()}});
        }
        continue;
      }
      // Requests alone are scheduling hints, meaningless on a single node;
      // limits must be enforced or refused.
      if (name == "ephemeral-storage" && std::string_view(list_name) == "requests") continue;
      if (name == "ephemeral-storage") {
        return Error(where +
                     ": podvisor cannot enforce ephemeral-storage limits (the kubelet does "
                     "it by eviction)");
      }
      return Error(where + ": extended resources need a device plugin; podvisor has none");
    }
  }
  if (!hugepages.empty()) resources["hugepageLimits"] = hugepages;
  return resources;
}

json BuildDevices(const SpecContext& ctx) {
  json devices = json::array();
  if (!ctx.privileged) return devices;
  for (const HostDevice& d : ctx.input.host_devices) {
    devices.push_back(json{{"path", d.path},
                           {"type", std::string(1, d.type)},
                           {"major", d.major},
                           {"minor", d.minor},
                           {"fileMode", d.file_mode},
                           {"uid", d.uid},
                           {"gid", d.gid}});
  }
  return devices;
}

}  // namespace

Result<json> BuildLinux(const SpecContext& ctx) {
  auto namespaces = BuildNamespaces(ctx);
  if (!namespaces) return namespaces.take_error();
  auto resources = BuildResources(ctx);
  if (!resources) return resources.take_error();
  auto seccomp = BuildSeccomp(ctx);
  if (!seccomp) return seccomp.take_error();

  json linux{{"namespaces", std::move(*namespaces)}, {"resources", std::move(*resources)}};
  if (!ctx.input.cgroups_path.empty()) linux["cgroupsPath"] = ctx.input.cgroups_path;
  json devices = BuildDevices(ctx);
  if (!devices.empty()) linux["devices"] = std::move(devices);
  if (const auto& ids = ctx.input.user_namespace) {
    // S20.8: container id 0 is the block's first host id, for uids and
    // gids alike. Given also when the namespace is joined by path: runc
    // 1.1 reads the container's root's host ids from them (its /dev and
    // the cgroup's owner), and crun checks them against the namespace.
    const json mapping =
        json::array({json{{"containerID", 0}, {"hostID", ids->host_uid}, {"size", ids->size}}});
    const json gid_mapping =
        json::array({json{{"containerID", 0}, {"hostID", ids->host_gid}, {"size", ids->size}}});
    linux["uidMappings"] = mapping;
    linux["gidMappings"] = gid_mapping;
  }
  // S20.9: procMount Unmasked (allowed only with hostUsers: false) is a
  // /proc without masked or read-only paths, as containerd's CRI makes it.
  const bool unmasked_proc =
      ctx.container.security_context && ctx.container.security_context->proc_mount == "Unmasked";
  if (!ctx.privileged && !unmasked_proc) {
    linux["maskedPaths"] =
        std::vector<std::string>(std::begin(kMaskedPaths), std::end(kMaskedPaths));
    linux["readonlyPaths"] =
        std::vector<std::string>(std::begin(kReadonlyPaths), std::end(kReadonlyPaths));
  }
  if (!seccomp->is_null()) linux["seccomp"] = std::move(*seccomp);
  // A propagating bind needs the container's root to propagate too (runc
  // otherwise makes it rprivate and stops the events at it), as
  // containerd's CRI sets it: rshared for Bidirectional, else rslave.
  const auto& mounts = ctx.container.volume_mounts;
  auto uses = [&](std::string_view p) {
    return std::any_of(mounts.begin(), mounts.end(),
                       [&](const pod::VolumeMount& m) { return m.mount_propagation == p; });
  };
  if (uses("Bidirectional")) {
    linux["rootfsPropagation"] = "rshared";
  } else if (uses("HostToContainer")) {
    linux["rootfsPropagation"] = "rslave";
  }
  // securityContext.sysctls: validation admits only those of the pod's
  // own IPC and network namespaces (pod/sysctls.h), so every container
  // writing them sets the same values in the same namespaces.
  if (const auto& psc = ctx.pod.spec.security_context; psc && !psc->sysctls.empty()) {
    json sysctl = json::object();
    for (const auto& s : psc->sysctls) sysctl[pod::NormalizeSysctlName(s.name)] = s.value;
    linux["sysctl"] = std::move(sysctl);
  }
  return linux;
}

}  // namespace podvisor::oci::internal
