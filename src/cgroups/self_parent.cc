#include "cgroups/self_parent.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <utility>

#include "cgroups/pod_cgroup.h"

namespace podvisor::cgroups {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> ReadWords(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

}  // namespace

Result<std::string> ReadSelfCgroup(const fs::path& self_cgroup_file) {
  std::ifstream in(self_cgroup_file);
  if (!in) return Error::FromErrno("reading " + self_cgroup_file.string());
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("0::", 0) != 0) continue;
    std::string path = line.substr(3);
    // A cgroup outside the reader's cgroup namespace shows as "/../x";
    // a removed one ends in " (deleted)". Neither can be nested under.
    if (path.empty() || path[0] != '/' || path.find("/..") != std::string::npos ||
        path.find(" (deleted)") != std::string::npos) {
      return Error(self_cgroup_file.string() + ": cgroup \"" + path +
                       "\" is not one podvisor can nest the pod under",
                   EINVAL);
    }
    return path;
  }
  return Error(self_cgroup_file.string() + " has no cgroup v2 line (0::PATH)", ENOENT);
}

std::string ResolveAutoCgroupParent(const CgroupInfo& cg, bool root, std::string& why_not_self) {
  if (cg.mode != CgroupMode::kUnified) {
    why_not_self = "cgroups are " + DescribeCgroups(cg);
  } else if (!root) {
    why_not_self = "not root";
  } else {
    why_not_self.clear();
  }
  return why_not_self.empty() ? kSelfCgroupParent : kDefaultCgroupParent;
}

std::string SelfCgroupNotDelegated(const CgroupInfo& cg, const fs::path& self_cgroup_file) {
  if (cg.mode != CgroupMode::kUnified) return "cgroups are " + DescribeCgroups(cg);
  auto self = ReadSelfCgroup(self_cgroup_file);
  if (!self) return self.error().message();
  const fs::path dir = cg.v2_mount / fs::path(*self).relative_path();
  // access(2) judges by the real ids, which in podvisor's user namespace
  // are the user's on the host: exactly whom the delegation is for.
  for (const fs::path& p : {dir, dir / "cgroup.procs", dir / "cgroup.subtree_control"}) {
    if (::access(p.c_str(), W_OK) != 0) {
      return "its cgroup " + dir.string() + " is not delegated to it (" + p.filename().string() +
             " is not writable)";
    }
  }
  return "";
}

Result<SupervisorLeaf> SupervisorLeaf::Enter(const fs::path& mount,
                                             const fs::path& self_cgroup_file, pid_t pid) {
  auto self = ReadSelfCgroup(self_cgroup_file);
  if (!self) return self.take_error().Wrap("--cgroup-parent=self");
  SupervisorLeaf leaf;
  std::string parent = *self;
  // Already in a leaf of ours: this supervisor re-executed itself in place
  // (`podvisor upgrade`, S15.2) and keeps the leaf it entered before; its
  // pod cgroup is beside it.
  const fs::path self_path(*self);
  if (self_path.filename() == kSupervisorLeaf && self_path.has_parent_path()) {
    parent = self_path.parent_path().string();
  }
  leaf.parent_ = parent;
  leaf.self_dir_ = (mount / fs::path(parent).relative_path()).lexically_normal();
  leaf.leaf_ = leaf.self_dir_ / kSupervisorLeaf;
  leaf.pid_ = pid;
  leaf.controllers_before_ = ReadWords(leaf.self_dir_ / "cgroup.subtree_control");
  // A leaf left by a supervisor that was SIGKILLed here is empty (its
  // process is gone) and reused.
  if (::mkdir(leaf.leaf_.c_str(), 0755) != 0 && errno != EEXIST) {
    return Error::FromErrno("--cgroup-parent=self: creating " + leaf.leaf_.string());
  }
  if (auto s = WriteCgroupFile(leaf.leaf_, "cgroup.procs", std::to_string(pid)); !s) {
    ::rmdir(leaf.leaf_.c_str());
    return s.take_error().Wrap("--cgroup-parent=self: moving podvisor into " + leaf.leaf_.string());
  }
  leaf.entered_ = true;
  return leaf;
}

std::vector<std::string> SupervisorLeaf::DelegatedControllers() const {
  return ReadWords(self_dir_ / "cgroup.controllers");
}

SupervisorLeaf::SupervisorLeaf(SupervisorLeaf&& other) noexcept
    : self_dir_(std::move(other.self_dir_)),
      leaf_(std::move(other.leaf_)),
      parent_(std::move(other.parent_)),
      controllers_before_(std::move(other.controllers_before_)),
      pid_(other.pid_),
      entered_(std::exchange(other.entered_, false)) {}

SupervisorLeaf::~SupervisorLeaf() {
  (void)Leave();
}

Status SupervisorLeaf::Leave() {
  if (!entered_) return Ok();
  entered_ = false;
  // A process may not join a cgroup that delegates controllers: what the
  // pod cgroup enabled in <self> goes first, what was there before stays.
  std::string disable;
  for (const auto& c : ReadWords(self_dir_ / "cgroup.subtree_control")) {
    if (std::find(controllers_before_.begin(), controllers_before_.end(), c) ==
        controllers_before_.end()) {
      disable += (disable.empty() ? "-" : " -") + c;
    }
  }
  if (!disable.empty()) {
    if (auto s = WriteCgroupFile(self_dir_, "cgroup.subtree_control", disable); !s) return s;
  }
  if (auto s = WriteCgroupFile(self_dir_, "cgroup.procs", std::to_string(pid_)); !s) return s;
  // cgroupfs removes its interface files with the directory; a plain
  // directory imitating one (the unit tests) has them as real files.
  if (::rmdir(leaf_.c_str()) != 0 && errno == ENOTEMPTY) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(leaf_, ec)) fs::remove(e.path(), ec);
    ::rmdir(leaf_.c_str());
  }
  if (::access(leaf_.c_str(), F_OK) == 0) {
    return Error::FromErrno("--cgroup-parent=self: removing " + leaf_.string());
  }
  return Ok();
}

}  // namespace podvisor::cgroups
