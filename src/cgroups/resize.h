// The cgroup side of an in-place resize (SEMANTICS S17.7–S17.10): what each
// cgroup's cpu and memory values become, the order of the writes (the
// kubelet's: raise the pod cgroup, lower containers, lower the pod cgroup,
// raise containers, one resource at a time, memory first), the failure
// rules of KEP-1287, and the writer that puts the values in cgroup v2 or
// v1 files and reads them back. It does not decide whether a resize is
// allowed (pod/resize.h) nor which cgroup belongs to which container (the
// supervisor hands the writer a map of names to directories).
//
// Values are written to the files directly rather than through `runc
// update` (the kubelet's route, CRI UpdateContainerResources): podvisor
// made these cgroups through the config.json it wrote and is the only one
// changing them, a write is one syscall where `runc update` is a fork,
// exec and a JSON round trip on the event loop (S17.8).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "pod/model.h"

namespace podvisor::cgroups {

enum class ResizeResource { kMemory, kCpu };
std::string_view ResizeResourceName(ResizeResource r);  // "memory", "cpu"

// One cgroup's values in the kubelet's (and the OCI config's) units.
struct CgroupResources {
  std::optional<int64_t> memory_limit;  // bytes; nullopt: unlimited
  std::optional<int64_t> cpu_quota_us;  // per kCpuPeriodUs; nullopt: unlimited
  int64_t cpu_shares = 2;               // v1 cpu.shares; v2 cpu.weight is made from it
  friend bool operator==(const CgroupResources&, const CgroupResources&) = default;
};

// What config.json gives a container (oci/spec_linux.cc BuildResources):
// memory limit, cfs quota from the cpu limit (at least 1 ms), shares from
// the cpu request (MilliCPUToShares).
CgroupResources ContainerCgroupResources(const pod::Container& c);
// The pod cgroup's values of S10.4 (ComputePodCgroupLimits) with shares
// from the pod's effective cpu request.
CgroupResources PodCgroupResources(const pod::PodSpec& spec);
// The kubelet's CpuSharesToCpuWeight, for cgroup v2.
int64_t CpuWeightFromShares(int64_t shares);

enum class ResizePhase { kRaisePod, kLowerContainer, kLowerPod, kRaiseContainer };
std::string_view ResizePhaseName(ResizePhase p);

// One write: one resource of one cgroup.
struct ResizeWrite {
  ResizePhase phase = ResizePhase::kRaisePod;
  ResizeResource resource = ResizeResource::kMemory;
  std::string container;  // empty: the pod cgroup
  CgroupResources from, to;
};

struct ResizeTargets {
  struct Values {
    CgroupResources before, after;
  };
  std::optional<Values> pod;  // nullopt: no pod cgroup (a v1 host, S10.4)
  std::vector<std::pair<std::string, Values>> containers;
};

// S17.7: the writes in the kubelet's order; a cgroup whose value of a
// resource does not change gets no write for it.
std::vector<ResizeWrite> PlanResizeWrites(const ResizeTargets& targets);

class ResizeWriter {
 public:
  virtual ~ResizeWriter() = default;
  // Writes `w.to` for `w.resource`; on failure the cgroup keeps `w.from`.
  virtual Status Write(const ResizeWrite& w) = 0;
};

struct ResizeOutcome {
  std::vector<ResizeWrite> applied;
  std::vector<std::pair<ResizeWrite, std::string>> failed;  // with the reason
  std::vector<ResizeWrite> skipped;                         // after a failure (S17.9)
  bool ok() const { return failed.empty() && skipped.empty(); }
};

// S17.9, KEP-1287's failure handling: a failed container decrease still
// lets the other decreases run, but not that resource's pod decrease nor
// its container increases (the containers' sum must never exceed the pod
// cgroup); a failed increase lets the other increases run; a failed pod
// write ends that resource. The other resource is planned on its own.
ResizeOutcome ApplyResizeWrites(const std::vector<ResizeWrite>& writes, ResizeWriter& writer);

// Where one cgroup lives: a v2 directory, or the v1 memory and cpu
// controllers' directories (runc's, from the config's cgroupsPath).
struct CgroupLocation {
  std::filesystem::path v2;
  std::filesystem::path v1_memory;
  std::filesystem::path v1_cpu;
};

// The real writer (S17.8): cgroup v2 memory.max, cpu.max, cpu.weight;
// cgroup v1 memory.limit_in_bytes (and memory.memsw.limit_in_bytes, kept
// equal as config.json asks: no swap), cpu.cfs_period_us, cpu.cfs_quota_us,
// cpu.shares. Every value is read back; a write the kernel refuses (v1:
// EBUSY for a memory limit below usage) or a read-back that differs puts
// back the files already written and fails with the reason.
class CgroupFileWriter : public ResizeWriter {
 public:
  using Locate = std::function<std::optional<CgroupLocation>(const std::string& container)>;
  explicit CgroupFileWriter(Locate locate) : locate_(std::move(locate)) {}
  Status Write(const ResizeWrite& w) override;

 private:
  Locate locate_;
};

// Where a container's cgroup is: its OCI cgroupsPath ("/podvisor/web/<id>")
// under the cgroup mounts (CgroupMounts()): the cgroup2 mount when it has
// the memory controller there, else the v1 memory and cpu hierarchies
// runc made it in; nullopt when none has it.
std::optional<CgroupLocation> LocateCgroup(const std::string& cgroups_path,
                                           const std::vector<std::filesystem::path>& mounts);

// S17.6: the resources a container runs with, as the kubelet reports
// status.containerStatuses[].resources from the runtime: cpu limit from
// the quota, cpu request from the shares, memory limit; each is the
// allocated quantity when the cgroup holds what that quantity gives (the
// shares of 100m read back as 99m otherwise), the memory request always.
pod::ResourceRequirements ActualResources(const pod::Container& allocated,
                                          const CgroupResources& read);

// The values a cgroup holds now (the actuated resources, S17.6).
Result<CgroupResources> ReadCgroupResources(const CgroupLocation& where);
// Its memory usage in bytes (memory.current, memory.usage_in_bytes).
Result<int64_t> ReadMemoryUsage(const CgroupLocation& where);

}  // namespace podvisor::cgroups
