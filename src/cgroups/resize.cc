#include "cgroups/resize.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "common/file_io.h"

#include "cgroups/pod_cgroup.h"
#include "pod/resources.h"

namespace podvisor::cgroups {
namespace fs = std::filesystem;
namespace {

constexpr int64_t kMinShares = 2;
constexpr int64_t kMaxShares = 262144;
constexpr int64_t kMinQuotaUs = 1000;
// cgroup v1 reads an unlimited memory limit back as PAGE_COUNTER_MAX
// pages (9223372036854771712 with 4 KiB pages); anything this large is
// "no limit".
constexpr int64_t kV1Unlimited = int64_t{1} << 62;

int64_t SharesFromMilli(int64_t milli) {
  if (milli <= 0) return kMinShares;
  return std::clamp(milli * 1024 / 1000, kMinShares, kMaxShares);
}

std::optional<int64_t> QuotaFromMilli(const std::optional<pod::Quantity>& limit) {
  if (!limit) return std::nullopt;
  return std::max(limit->milli() * kCpuPeriodUs / 1000, kMinQuotaUs);
}

// How a resource's value moves: by the limit, and for cpu by the shares
// when the quota stays (nullopt, no limit, is the largest).
int Compare(ResizeResource r, const CgroupResources& a, const CgroupResources& b) {
  auto cmp = [](const std::optional<int64_t>& x, const std::optional<int64_t>& y) {
    if (x == y) return 0;
    if (!x) return 1;
    if (!y) return -1;
    return *x < *y ? -1 : 1;
  };
  if (r == ResizeResource::kMemory) return cmp(a.memory_limit, b.memory_limit);
  int by_quota = cmp(a.cpu_quota_us, b.cpu_quota_us);
  if (by_quota != 0) return by_quota;
  return a.cpu_shares == b.cpu_shares ? 0 : (a.cpu_shares < b.cpu_shares ? -1 : 1);
}

Result<int64_t> ParseInt(std::string_view text, const fs::path& file) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Error("reading " + file.string() + ": not a number: \"" + std::string(text) + "\"");
  }
  return v;
}

Result<std::string> ReadTrimmed(const fs::path& file) {
  auto text = ReadFileBounded(file, 4096);
  if (!text) return text.take_error();
  while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) text->pop_back();
  return std::move(*text);
}

// One file's write with its previous contents kept for the undo.
struct FileWrite {
  fs::path dir;
  std::string file;
  std::string value;
};

// Writes `files` in order; on the first failure, writes back what the
// ones before it held and returns the failure.
Status WriteAll(const std::vector<FileWrite>& files) {
  std::vector<std::pair<FileWrite, std::string>> done;
  auto undo = [&done] {
    for (auto it = done.rbegin(); it != done.rend(); ++it) {
      (void)WriteCgroupFile(it->first.dir, it->first.file, it->second);
    }
  };
  for (const FileWrite& f : files) {
    auto old = ReadTrimmed(f.dir / f.file);
    if (!old) {
      undo();
      return old.take_error();
    }
    if (auto s = WriteCgroupFile(f.dir, f.file, f.value); !s) {
      undo();
      return s;
    }
    done.emplace_back(f, std::move(*old));
  }
  return Ok();
}

std::vector<FileWrite> V2Files(const fs::path& dir, ResizeResource r, const CgroupResources& to) {
  if (r == ResizeResource::kMemory) {
    return {{dir, "memory.max", to.memory_limit ? std::to_string(*to.memory_limit) : "max"}};
  }
  std::string quota = to.cpu_quota_us ? std::to_string(*to.cpu_quota_us) : "max";
  return {{dir, "cpu.max", quota + " " + std::to_string(kCpuPeriodUs)},
          {dir, "cpu.weight", std::to_string(CpuWeightFromShares(to.cpu_shares))}};
}

// v1 wants memory.memsw.limit_in_bytes >= memory.limit_in_bytes at every
// moment: raise memsw first, lower it last (as runc update does).
std::vector<FileWrite> V1Files(const CgroupLocation& at, ResizeResource r,
                               const CgroupResources& from, const CgroupResources& to) {
  if (r == ResizeResource::kMemory) {
    std::string v = to.memory_limit ? std::to_string(*to.memory_limit) : "-1";
    FileWrite limit{at.v1_memory, "memory.limit_in_bytes", v};
    std::vector<FileWrite> out;
    bool has_memsw = fs::exists(at.v1_memory / "memory.memsw.limit_in_bytes");
    FileWrite memsw{at.v1_memory, "memory.memsw.limit_in_bytes", v};
    bool raising = Compare(r, to, from) > 0;
    if (has_memsw && raising) out.push_back(memsw);
    out.push_back(limit);
    if (has_memsw && !raising) out.push_back(memsw);
    return out;
  }
  return {
      {at.v1_cpu, "cpu.cfs_period_us", std::to_string(kCpuPeriodUs)},
      {at.v1_cpu, "cpu.cfs_quota_us", to.cpu_quota_us ? std::to_string(*to.cpu_quota_us) : "-1"},
      {at.v1_cpu, "cpu.shares", std::to_string(to.cpu_shares)}};
}

// The kernel keeps memory limits in pages.
bool SameMemory(std::optional<int64_t> wanted, std::optional<int64_t> read) {
  if (!wanted || !read) return wanted == read;
  static const int64_t page = ::sysconf(_SC_PAGESIZE);
  return *read == *wanted / page * page || *read == *wanted;
}

std::string Show(const std::optional<int64_t>& v) {
  return v ? std::to_string(*v) : "unlimited";
}

// The read-back check of S17.8: what the kernel holds now is what was asked.
Status Verify(const CgroupLocation& at, ResizeResource r, const CgroupResources& to) {
  auto now = ReadCgroupResources(at);
  if (!now) return now.take_error();
  if (r == ResizeResource::kMemory) {
    if (!SameMemory(to.memory_limit, now->memory_limit)) {
      return Error("memory limit reads back as " + Show(now->memory_limit) + ", not " +
                   Show(to.memory_limit));
    }
    return Ok();
  }
  bool v2 = !at.v2.empty();
  bool shares_ok = v2 ? CpuWeightFromShares(now->cpu_shares) == CpuWeightFromShares(to.cpu_shares)
                      : now->cpu_shares == to.cpu_shares;
  if (now->cpu_quota_us != to.cpu_quota_us || !shares_ok) {
    return Error("cpu reads back as quota " + Show(now->cpu_quota_us) + ", shares " +
                 std::to_string(now->cpu_shares) + ", not quota " + Show(to.cpu_quota_us) +
                 ", shares " + std::to_string(to.cpu_shares));
  }
  return Ok();
}

}  // namespace

std::string_view ResizeResourceName(ResizeResource r) {
  return r == ResizeResource::kMemory ? "memory" : "cpu";
}

std::string_view ResizePhaseName(ResizePhase p) {
  switch (p) {
    case ResizePhase::kRaisePod:
      return "RaisePod";
    case ResizePhase::kLowerContainer:
      return "LowerContainer";
    case ResizePhase::kLowerPod:
      return "LowerPod";
    case ResizePhase::kRaiseContainer:
      return "RaiseContainer";
  }
  return "RaisePod";
}

int64_t CpuWeightFromShares(int64_t shares) {
  shares = std::clamp(shares, kMinShares, kMaxShares);
  return 1 + (shares - kMinShares) * 9999 / (kMaxShares - kMinShares);
}

CgroupResources ContainerCgroupResources(const pod::Container& c) {
  const pod::ResourceRequirements& r = c.resources;
  CgroupResources out;
  if (r.limits.memory) out.memory_limit = r.limits.memory->value();
  out.cpu_quota_us = QuotaFromMilli(r.limits.cpu);
  out.cpu_shares = SharesFromMilli(r.requests.cpu ? r.requests.cpu->milli() : 0);
  return out;
}

CgroupResources PodCgroupResources(const pod::PodSpec& spec) {
  PodCgroupLimits limits = ComputePodCgroupLimits(spec, std::nullopt);
  pod::EffectiveResources eff = pod::ComputeEffectiveResources(spec);
  CgroupResources out;
  out.memory_limit = limits.memory_max;
  out.cpu_quota_us = limits.cpu_quota_us;
  out.cpu_shares = SharesFromMilli(eff.cpu_request ? eff.cpu_request->milli() : 0);
  return out;
}

std::vector<ResizeWrite> PlanResizeWrites(const ResizeTargets& targets) {
  std::vector<ResizeWrite> out;
  for (ResizeResource r : {ResizeResource::kMemory, ResizeResource::kCpu}) {
    int pod_move = targets.pod ? Compare(r, targets.pod->after, targets.pod->before) : 0;
    auto pod_write = [&](ResizePhase phase) {
      out.push_back({phase, r, "", targets.pod->before, targets.pod->after});
    };
    if (pod_move > 0) pod_write(ResizePhase::kRaisePod);
    for (const auto& [name, v] : targets.containers) {
      if (Compare(r, v.after, v.before) < 0) {
        out.push_back({ResizePhase::kLowerContainer, r, name, v.before, v.after});
      }
    }
    if (pod_move < 0) pod_write(ResizePhase::kLowerPod);
    for (const auto& [name, v] : targets.containers) {
      if (Compare(r, v.after, v.before) > 0) {
        out.push_back({ResizePhase::kRaiseContainer, r, name, v.before, v.after});
      }
    }
  }
  return out;
}

ResizeOutcome ApplyResizeWrites(const std::vector<ResizeWrite>& writes, ResizeWriter& writer) {
  ResizeOutcome out;
  std::array<bool, 2> lower_failed{};  // by resource
  std::array<bool, 2> pod_failed{};
  for (const ResizeWrite& w : writes) {
    auto r = static_cast<std::size_t>(w.resource);
    bool skip = pod_failed[r] || (lower_failed[r] && (w.phase == ResizePhase::kLowerPod ||
                                                      w.phase == ResizePhase::kRaiseContainer));
    if (skip) {
      out.skipped.push_back(w);
      continue;
    }
    Status s = writer.Write(w);
    if (s) {
      out.applied.push_back(w);
      continue;
    }
    out.failed.emplace_back(w, s.error().message());
    if (w.phase == ResizePhase::kLowerContainer) lower_failed[r] = true;
    if (w.phase == ResizePhase::kRaisePod || w.phase == ResizePhase::kLowerPod) {
      pod_failed[r] = true;
    }
  }
  return out;
}

Status CgroupFileWriter::Write(const ResizeWrite& w) {
  std::optional<CgroupLocation> at = locate_(w.container);
  const std::string what = w.container.empty() ? "pod cgroup" : "container " + w.container;
  if (!at) return Error(what + ": no cgroup to resize");
  std::vector<FileWrite> files =
      !at->v2.empty() ? V2Files(at->v2, w.resource, w.to) : V1Files(*at, w.resource, w.from, w.to);
  if (auto s = WriteAll(files); !s) return s.take_error().Wrap(what);
  if (auto s = Verify(*at, w.resource, w.to); !s) {
    // Put the old values back rather than leave something nobody asked for.
    (void)WriteAll(!at->v2.empty() ? V2Files(at->v2, w.resource, w.from)
                                   : V1Files(*at, w.resource, w.to, w.from));
    return s.take_error().Wrap(what);
  }
  return Ok();
}

Result<CgroupResources> ReadCgroupResources(const CgroupLocation& at) {
  CgroupResources out;
  if (!at.v2.empty()) {
    auto memory = ReadTrimmed(at.v2 / "memory.max");
    if (!memory) return memory.take_error();
    if (*memory != "max") {
      auto v = ParseInt(*memory, at.v2 / "memory.max");
      if (!v) return v.take_error();
      out.memory_limit = *v;
    }
    auto cpu = ReadTrimmed(at.v2 / "cpu.max");
    if (!cpu) return cpu.take_error();
    std::string_view quota = std::string_view(*cpu).substr(0, cpu->find(' '));
    if (quota != "max") {
      auto v = ParseInt(quota, at.v2 / "cpu.max");
      if (!v) return v.take_error();
      out.cpu_quota_us = *v;
    }
    auto weight = ReadTrimmed(at.v2 / "cpu.weight");
    if (!weight) return weight.take_error();
    auto w = ParseInt(*weight, at.v2 / "cpu.weight");
    if (!w) return w.take_error();
    // Back to shares, the inverse of CpuWeightFromShares (rounded up, so
    // the weight made from it is the same).
    out.cpu_shares = kMinShares + ((*w - 1) * (kMaxShares - kMinShares) + 9998) / 9999;
    return out;
  }
  auto read = [](const fs::path& file) -> Result<int64_t> {
    auto text = ReadTrimmed(file);
    if (!text) return text.take_error();
    return ParseInt(*text, file);
  };
  auto limit = read(at.v1_memory / "memory.limit_in_bytes");
  if (!limit) return limit.take_error();
  if (*limit < kV1Unlimited) out.memory_limit = *limit;
  auto quota = read(at.v1_cpu / "cpu.cfs_quota_us");
  if (!quota) return quota.take_error();
  if (*quota > 0) out.cpu_quota_us = *quota;
  auto shares = read(at.v1_cpu / "cpu.shares");
  if (!shares) return shares.take_error();
  out.cpu_shares = *shares;
  return out;
}

std::optional<CgroupLocation> LocateCgroup(const std::string& cgroups_path,
                                           const std::vector<fs::path>& mounts) {
  fs::path rel = fs::path(cgroups_path).relative_path().lexically_normal();
  if (rel.empty() || rel.string().find("..") != std::string::npos) return std::nullopt;
  CgroupLocation at;
  std::error_code ec;
  for (const fs::path& mount : mounts) {
    const fs::path dir = mount / rel;
    if (fs::exists(dir / "memory.max", ec) && fs::exists(dir / "cpu.max", ec)) {
      CgroupLocation v2;
      v2.v2 = dir;
      return v2;
    }
    if (fs::exists(dir / "memory.limit_in_bytes", ec)) at.v1_memory = dir;
    if (fs::exists(dir / "cpu.shares", ec)) at.v1_cpu = dir;
  }
  if (at.v1_memory.empty() || at.v1_cpu.empty()) return std::nullopt;
  return at;
}

pod::ResourceRequirements ActualResources(const pod::Container& allocated,
                                          const CgroupResources& read) {
  const CgroupResources want = ContainerCgroupResources(allocated);
  pod::ResourceRequirements out;
  const pod::ResourceRequirements& a = allocated.resources;
  out.requests.memory = a.requests.memory;
  if (SameMemory(want.memory_limit, read.memory_limit) || !read.memory_limit) {
    out.limits.memory = read.memory_limit ? a.limits.memory : std::nullopt;
  } else {
    out.limits.memory =
        pod::Quantity::FromValue(*read.memory_limit, pod::Quantity::Format::kBinarySI);
  }
  if (read.cpu_quota_us == want.cpu_quota_us || !read.cpu_quota_us) {
    out.limits.cpu = read.cpu_quota_us ? a.limits.cpu : std::nullopt;
  } else {
    out.limits.cpu = pod::Quantity::FromMilli(*read.cpu_quota_us * 1000 / kCpuPeriodUs);
  }
  if (read.cpu_shares == want.cpu_shares) {
    out.requests.cpu = a.requests.cpu;
  } else if (read.cpu_shares > kMinShares || a.requests.cpu) {
    out.requests.cpu = pod::Quantity::FromMilli(read.cpu_shares * 1000 / 1024);
  }
  return out;
}

Result<int64_t> ReadMemoryUsage(const CgroupLocation& at) {
  fs::path file =
      !at.v2.empty() ? at.v2 / "memory.current" : at.v1_memory / "memory.usage_in_bytes";
  auto text = ReadTrimmed(file);
  if (!text) return text.take_error();
  return ParseInt(*text, file);
}

}  // namespace podvisor::cgroups
