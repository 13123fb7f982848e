#include "shim/task_cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cgroups/pod_cgroup.h"
#include "cgroups/self_parent.h"

namespace podvisor::shim {

namespace {

namespace fs = std::filesystem;

// "/a/b" without empty, "." or ".." parts; "" when it has any.
std::string Normalize(const std::string& path) {
  fs::path rel = fs::path(path).relative_path().lexically_normal();
  if (rel.empty() || rel == ".") return "";
  for (const auto& part : rel) {
    if (part == ".." || part == ".") return "";
  }
  std::string out = "/" + rel.string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace

CgroupChoice ChooseCgroup(const std::string& cgroups_path, bool unified,
                          const std::string& annotation, const std::string& ns,
                          const std::string& id) {
  const std::string own = "/podvisor/containerd/" + ns + "/" + id;
  if (!annotation.empty()) {
    return {.task_cgroup = "", .cgroup_parent = annotation, .note = ""};
  }
  auto fallback = [&](const std::string& why) {
    return CgroupChoice{.task_cgroup = "",
                        .cgroup_parent = own,
                        .note = why + "; the pod's cgroups are under " + own};
  };
  if (!unified) {
    return fallback(
        "the host's cgroups are not v2 only, so the task has no one cgroup to nest the pod in");
  }
  if (cgroups_path.empty()) return fallback("the task's OCI spec has no linux.cgroupsPath");
  if (cgroups_path.front() != '/' && cgroups_path.find(':') != std::string::npos) {
    return fallback("linux.cgroupsPath " + cgroups_path +
                    " is systemd's slice:prefix:name form, which only systemd creates (podvisor "
                    "has no systemd cgroup driver)");
  }
  std::string task = Normalize(cgroups_path);
  if (task.empty()) return fallback("linux.cgroupsPath " + cgroups_path + " is not a cgroup path");
  return {.task_cgroup = task, .cgroup_parent = cgroups::kSelfCgroupParent, .note = ""};
}

std::string ReadCgroupsPath(const fs::path& config) {
  std::ifstream in(config);
  if (!in) return "";
  auto json = nlohmann::json::parse(in, nullptr, false);
  if (json.is_discarded() || !json.is_object()) return "";
  auto linux = json.find("linux");
  if (linux == json.end() || !linux->is_object()) return "";
  auto path = linux->find("cgroupsPath");
  return path != linux->end() && path->is_string() ? path->get<std::string>() : "";
}

Result<Fd> CreateTaskCgroup(const fs::path& mount, const std::string& task_cgroup) {
  std::string task = Normalize(task_cgroup);
  if (task.empty()) return Error("task cgroup " + task_cgroup + ": not a cgroup path", EINVAL);
  const std::vector<std::string> offered = cgroups::ReadCgroupWords(mount / "cgroup.controllers");
  fs::path dir = mount;
  for (const auto& part : fs::path(task).relative_path()) {
    if (auto s = cgroups::DelegateControllers(dir, offered); !s) {
      return s.take_error().Wrap("handing the controllers down to the task cgroup");
    }
    dir /= part;
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return Error::FromErrno("creating the task cgroup " + dir.string());
    }
  }
  if (cgroups::IsPopulated(dir)) {
    return Error("the task cgroup " + dir.string() + " already holds processes", EBUSY);
  }
  int fd = ::open((dir / "cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Error::FromErrno("opening " + (dir / "cgroup.procs").string());
  return Fd(fd);
}

Status RemoveTaskCgroup(const fs::path& mount, const std::string& task_cgroup) {
  std::string task = Normalize(task_cgroup);
  if (task.empty()) return Ok();
  fs::path dir = mount / fs::path(task).relative_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Ok();
  if (auto s = cgroups::KillCgroup(dir, 10000); !s) return s;
  return cgroups::RemoveCgroupTree(dir);
}

}  // namespace podvisor::shim
