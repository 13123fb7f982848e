#include "cgroups/pod_cgroup.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "common/fd.h"
#include "common/file_io.h"
#include "pod/resources.h"

namespace podvisor::cgroups {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMinShares = 2;
constexpr int64_t kMaxShares = 262144;
constexpr int64_t kMinQuotaUs = 1000;
// The controllers the pod's limits need, in the order they are enabled.
constexpr const char* kWantedControllers[] = {"cpu", "memory", "pids"};

bool Has(const std::vector<std::string>& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// The supervisor's cgroup v2 path ("0::/a/b" -> "/a/b"), "" when unknown.
std::string SelfCgroup(const fs::path& self_cgroup_file) {
  std::ifstream in(self_cgroup_file);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return "";
}

// rmdir of a cgroup. cgroupfs never answers ENOTEMPTY (interface files go
// with the directory; a cgroup in use answers EBUSY), so ENOTEMPTY means a
// plain directory tree imitating one, as in the unit tests: its regular
// files are removed and the rmdir retried.
int RemoveCgroupDir(const fs::path& dir) {
  if (::rmdir(dir.c_str()) == 0) return 0;
  if (errno != ENOTEMPTY) return errno;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file(ec)) fs::remove(entry.path(), ec);
  }
  return ::rmdir(dir.c_str()) == 0 ? 0 : errno;
}

// Removes the cgroups below `dir`, deepest first.
Status RemoveChildren(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> children;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_directory(ec) && !entry.is_symlink(ec)) children.push_back(entry.path());
  }
  for (const auto& child : children) {
    if (auto s = RemoveChildren(child); !s) return s;
    if (int err = RemoveCgroupDir(child); err != 0 && err != ENOENT) {
      return Error::FromErrno("removing cgroup " + child.string(), err);
    }
  }
  return Ok();
}

}  // namespace

Status RemoveCgroupTree(const fs::path& dir) {
  if (auto s = RemoveChildren(dir); !s) return s;
  if (int err = RemoveCgroupDir(dir); err != 0 && err != ENOENT) {
    return Error::FromErrno("removing cgroup " + dir.string(), err);
  }
  return Ok();
}

std::string PodLevelResourcesUnenforceable(const CgroupInfo& info, bool root) {
  if (info.mode != CgroupMode::kUnified) {
    return "cgroup v2 (as in Kubernetes); this host's cgroups are " + DescribeCgroups(info);
  }
  std::string missing;
  for (const char* c : {"cpu", "memory"}) {
    if (!Has(info.controllers, c)) missing += std::string(missing.empty() ? "" : " and ") + c;
  }
  if (!missing.empty()) {
    return "the " + missing + " controller(s) of cgroup v2; this host's cgroups are " +
           DescribeCgroups(info);
  }
  if (!root) return "root: podvisor makes the pod cgroup that enforces them";
  return "";
}

int64_t CpuWeightFromMilli(int64_t milli_cpu) {
  int64_t shares =
      milli_cpu <= 0 ? kMinShares : std::clamp(milli_cpu * 1024 / 1000, kMinShares, kMaxShares);
  return 1 + (shares - kMinShares) * 9999 / (kMaxShares - kMinShares);
}

PodCgroupLimits ComputePodCgroupLimits(const pod::PodSpec& spec,
                                       std::optional<int64_t> pids_limit) {
  pod::EffectiveResources eff = pod::ComputeEffectiveResources(spec);
  PodCgroupLimits limits;
  // S10.4: a pod limit only when every container has one; otherwise a
  // container without a limit could use all of it anyway, and the kubelet
  // leaves the pod unbounded too. S10.8: or when spec.resources sets it,
  // which then is the value (ComputeEffectiveResources), as the kubelet's
  // ResourceConfigForPod does; cpu.weight follows the pod-level request.
  if (eff.memory_limit_declared && eff.memory_limit) {
    limits.memory_max = eff.memory_limit->value();
  }
  if (eff.cpu_limit_declared && eff.cpu_limit) {
    limits.cpu_quota_us = std::max(eff.cpu_limit->milli() * kCpuPeriodUs / 1000, kMinQuotaUs);
  }
  limits.cpu_weight = CpuWeightFromMilli(eff.cpu_request ? eff.cpu_request->milli() : 0);
  limits.pids_max = pids_limit;
  return limits;
}

std::vector<std::pair<std::string, std::string>> LimitFiles(
    const PodCgroupLimits& limits, const std::vector<std::string>& controllers) {
  std::vector<std::pair<std::string, std::string>> files;
  if (Has(controllers, "memory") && limits.memory_max) {
    files.emplace_back("memory.max", std::to_string(*limits.memory_max));
  }
  if (Has(controllers, "cpu")) {
    if (limits.cpu_quota_us) {
      files.emplace_back("cpu.max",
                         std::to_string(*limits.cpu_quota_us) + " " + std::to_string(kCpuPeriodUs));
    }
    files.emplace_back("cpu.weight", std::to_string(limits.cpu_weight));
  }
  if (Has(controllers, "pids") && limits.pids_max) {
    files.emplace_back("pids.max", std::to_string(*limits.pids_max));
  }
  return files;
}

Status WriteCgroupFile(const fs::path& dir, const std::string& file, const std::string& value) {
  fs::path p = dir / file;
  // O_CREAT only matters for a plain directory tree; cgroupfs files exist.
  Fd fd(::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) return Error::FromErrno("opening " + p.string());
  if (::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size())) {
    return Error::FromErrno("writing \"" + value + "\" to " + p.string());
  }
  return Ok();
}

bool IsPopulated(const fs::path& dir) {
  auto events = ReadFlatKeyed(dir / "cgroup.events");
  return events && events->Find("populated") == "1";
}

Status KillCgroup(const fs::path& dir, int timeout_ms) {
  if (!IsPopulated(dir)) return Ok();
  // Watch before killing, so the last change cannot slip between the two.
  Fd inotify(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  if (!inotify) return Error::FromErrno("inotify_init1");
  if (::inotify_add_watch(inotify.get(), (dir / "cgroup.events").c_str(), IN_MODIFY) < 0) {
    return Error::FromErrno("watching " + (dir / "cgroup.events").string());
  }
  if (auto s = WriteCgroupFile(dir, "cgroup.kill", "1"); !s) {
    // Before Linux 5.14: signal each process listed; a process forking
    // meanwhile may survive, which the wait below then reports.
    std::ifstream procs(dir / "cgroup.procs");
    for (pid_t pid; procs >> pid;) ::kill(pid, SIGKILL);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (IsPopulated(dir)) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return Error("processes in " + dir.string() + " survived cgroup.kill", EBUSY);
    pollfd p{inotify.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR) {
      return Error::FromErrno("waiting for " + dir.string() + " to empty");
    }
    char buf[4096];
    while (::read(inotify.get(), buf, sizeof buf) > 0) {
    }
  }
  return Ok();
}

Result<PodCgroup> PodCgroup::Create(Options options) {
  fs::path rel = fs::path(options.parent).relative_path().lexically_normal();
  if (rel == ".") rel.clear();
  for (const auto& part : rel) {
    if (part == "..")
      return Error("--cgroup-parent " + options.parent + ": must not contain ..", EINVAL);
  }
  if (options.pod.empty() || options.pod.find('/') != std::string::npos) {
    return Error("pod cgroup: bad pod name \"" + options.pod + "\"", EINVAL);
  }
  rel /= options.pod;

  PodCgroup cg;
  cg.options_ = std::move(options);
  cg.path_ = cg.options_.mount / rel;
  cg.relative_ = "/" + rel.string();
  cg.destroyed_ = false;

  auto fail = [&cg](const Error& e) -> Result<PodCgroup> {
    (void)cg.Destroy();
    return e.Wrap("setting up the pod cgroup " + cg.path_.string());
  };

  fs::path dir = cg.options_.mount;
  for (const auto& part : rel) {
    // Each level hands the controllers down to the next.
    if (auto s = cg.EnableControllers(dir); !s) return fail(s.take_error());
    dir /= part;
    if (::mkdir(dir.c_str(), 0755) == 0) {
      cg.created_.push_back(dir);
    } else if (errno != EEXIST) {
      return fail(Error::FromErrno("creating " + dir.string()));
    } else if (dir == cg.path_) {
      // Left by a supervisor that died (SIGKILL, power loss): reuse it if
      // it is empty; a running pod of that name owns it otherwise.
      if (IsPopulated(dir) && !cg.options_.handed_over) {
        return fail(Error(
            dir.string() + " is in use (is pod " + cg.options_.pod + " already running?)", EBUSY));
      }
      cg.created_.push_back(dir);
    }
  }
  // The containers' cgroups below the pod get the controllers too.
  if (auto s = cg.EnableControllers(cg.path_); !s) return fail(s.take_error());
  for (const auto& [file, value] : LimitFiles(cg.options_.limits, cg.options_.controllers)) {
    if (auto s = WriteCgroupFile(cg.path_, file, value); !s) return fail(s.take_error());
  }
  return cg;
}

std::vector<std::string> ReadCgroupWords(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

Status DelegateControllers(const fs::path& dir, const std::vector<std::string>& offered) {
  std::string enable;
  for (const char* c : kWantedControllers) {
    if (Has(offered, c)) enable += (enable.empty() ? "+" : " +") + std::string(c);
  }
  if (enable.empty()) return Ok();
  // Already enabled (the usual case above the pod): no write, so no EBUSY
  // for a level that holds processes but already delegates.
  std::vector<std::string> have = ReadCgroupWords(dir / "cgroup.subtree_control");
  bool missing = false;
  for (const char* c : kWantedControllers) missing |= Has(offered, c) && !Has(have, c);
  if (!missing) return Ok();
  return WriteCgroupFile(dir, "cgroup.subtree_control", enable);
}

Status PodCgroup::EnableControllers(const fs::path& dir) {
  auto s = DelegateControllers(dir, options_.controllers);
  if (s || s.error().code() != EBUSY) return s;
  // The no-internal-process rule: only our own presence is ours to fix.
  std::string self = SelfCgroup(options_.self_cgroup_file);
  if (self.empty() || (options_.mount / fs::path(self).relative_path()).lexically_normal() !=
                          dir.lexically_normal()) {
    return s.take_error().Wrap("other processes live in " + dir.string());
  }
  if (auto moved = MoveSelfIntoLeaf(dir); !moved) return moved;
  return DelegateControllers(dir, options_.controllers);
}

Status PodCgroup::MoveSelfIntoLeaf(const fs::path& dir) {
  fs::path leaf = dir / ("_supervisor-" + std::to_string(::getpid()));
  if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) {
    return Error::FromErrno("creating " + leaf.string());
  }
  if (auto s = WriteCgroupFile(leaf, "cgroup.procs", std::to_string(::getpid())); !s) {
    ::rmdir(leaf.c_str());
    return s.take_error().Wrap("moving the supervisor into a leaf cgroup");
  }
  supervisor_leaf_ = leaf;
  return Ok();
}

PodCgroup::PodCgroup(PodCgroup&& other) noexcept
    : options_(std::move(other.options_)),
      path_(std::move(other.path_)),
      relative_(std::move(other.relative_)),
      created_(std::move(other.created_)),
      supervisor_leaf_(std::move(other.supervisor_leaf_)),
      destroyed_(std::exchange(other.destroyed_, true)) {}

PodCgroup::~PodCgroup() {
  (void)Destroy();
}

Status PodCgroup::Destroy() {
  if (destroyed_) return Ok();
  destroyed_ = true;
  Status result = Ok();
  std::error_code ec;
  // Only a pod cgroup we made or claimed is ours to empty: a running pod of
  // the same name keeps its own.
  bool owned = std::find(created_.begin(), created_.end(), path_) != created_.end();
  if (owned && fs::is_directory(path_, ec)) {
    // Containers the runtime deleted took their cgroups with them; what is
    // still populated are stragglers.
    if (auto s = KillCgroup(path_, 5000); !s) result = s.take_error();
    if (auto s = RemoveChildren(path_); !s && result) result = s.take_error();
  }
  // Deepest first; a parent still holding another pod stays.
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    int err = RemoveCgroupDir(*it);
    if (err == 0 || err == ENOENT) continue;
    if (*it == path_ && result) result = Error::FromErrno("removing " + it->string(), err);
    break;
  }
  created_.clear();
  return result;
}

}  // namespace podvisor::cgroups
