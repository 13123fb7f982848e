#include "process/user_namespace_entry.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <memory>

#include "common/fd.h"
#include "common/file_io.h"

namespace podvisor::process {
namespace {

// The capability numbers of linux/capability.h, read from CapEff.
constexpr int kCapSetgid = 6;
constexpr int kCapSetuid = 7;
constexpr int kCapSysAdmin = 21;

std::optional<uint32_t> ParseU32(std::string_view word) {
  uint32_t value = 0;
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc() || end != word.data() + word.size() || word.empty()) return std::nullopt;
  return value;
}

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t end = text.find(sep, start);
    out.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    i = line.find_first_not_of(" \t", i);
    if (i == std::string_view::npos) break;
    size_t end = line.find_first_of(" \t", i);
    out.push_back(line.substr(i, end == std::string_view::npos ? end : end - i));
    i = end == std::string_view::npos ? line.size() : end;
  }
  return out;
}

std::filesystem::path FindProgram(const char* name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr && *path != '\0' ? path : "";
  // newuidmap is in /usr/bin on Debian; a PATH without it (sudo's
  // secure_path, env -i) still finds it there.
  dirs += ":/usr/bin:/usr/sbin:/bin:/sbin";
  for (std::string_view dir : Split(dirs, ':')) {
    if (dir.empty()) continue;
    std::filesystem::path candidate = std::filesystem::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

bool HasCapability(uint64_t mask, int cap) {
  return ((mask >> cap) & 1U) != 0;
}

// The ids of the parent namespace the new one maps, given a map that
// maps 0 to `own` and then every subordinate range in turn.
std::vector<IdMapping> SubordinateMap(uint32_t own, const std::vector<IdRange>& ranges) {
  std::vector<IdMapping> map{{0, own, 1}};
  uint64_t next = 1;
  for (const IdRange& r : ranges) {
    // The kernel takes at most 340 lines, and the inside ids must fit.
    if (map.size() >= 340 || next + r.count > UINT32_MAX) break;
    if (r.count == 0) continue;
    map.push_back({static_cast<uint32_t>(next), r.start, r.count});
    next += r.count;
  }
  return map;
}

// kOwnIds: every id this namespace has, mapped to itself in the new one.
std::vector<IdMapping> OwnIdsMap(const std::vector<IdMapping>& own) {
  std::vector<IdMapping> map;
  map.reserve(own.size());
  for (const IdMapping& line : own) map.push_back({line.inside, line.inside, line.count});
  return map;
}

// What one writer child does once the parent has unshared: exec
// newuidmap/newgidmap, or write the map files itself. Everything is
// prepared before fork, so that the child allocates nothing.
struct MapWriter {
  std::vector<std::string> args;  // exec these, or...
  std::string setgroups_file;     // ...write "deny" here first (kSingleId's gid map)
  std::string map_file;           // ...and write map_text here
  std::string map_text;
  const char* what = "";
};

[[noreturn]] void RunWriter(const MapWriter& w, int go_fd) {
  char byte = 0;
  if (::read(go_fd, &byte, 1) != 1) ::_exit(3);  // the parent could not unshare
  if (!w.args.empty()) {
    std::array<char*, 1024> argv{};
    size_t n = 0;
    for (const std::string& a : w.args) {
      if (n + 1 >= argv.size()) break;
      argv[n++] = const_cast<char*>(a.c_str());
    }
    argv[n] = nullptr;
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  auto write_file = [](const char* file, const char* text, size_t size) {
    const int fd = ::open(file, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = ::write(fd, text, size) == static_cast<ssize_t>(size);
    ::close(fd);
    return ok;
  };
  if (!w.setgroups_file.empty() && !write_file(w.setgroups_file.c_str(), "deny", 4)) ::_exit(1);
  ::_exit(write_file(w.map_file.c_str(), w.map_text.data(), w.map_text.size()) ? 0 : 1);
}

std::string ExitText(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

std::vector<MapWriter> WritersFor(const UserNamespacePlan& plan, pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid) + "/";
  MapWriter uid;
  MapWriter gid;
  uid.what = "the uid map";
  gid.what = "the gid map";
  if (plan.mode == UserNamespaceMode::kSubordinateIds) {
    uid.what = "newuidmap";
    gid.what = "newgidmap";
    uid.args = {plan.newuidmap.string(), std::to_string(pid)};
    gid.args = {plan.newgidmap.string(), std::to_string(pid)};
    for (auto [writer, map] : {std::pair{&uid, &plan.uid_map}, std::pair{&gid, &plan.gid_map}}) {
      for (const IdMapping& m : *map) {
        writer->args.insert(
            writer->args.end(),
            {std::to_string(m.inside), std::to_string(m.outside), std::to_string(m.count)});
      }
    }
  } else {
    uid.map_file = proc + "uid_map";
    uid.map_text = FormatIdMap(plan.uid_map);
    gid.map_file = proc + "gid_map";
    gid.map_text = FormatIdMap(plan.gid_map);
    // Without CAP_SETGID in the parent namespace the kernel takes a gid
    // map only once setgroups(2) is denied in the new namespace.
    if (plan.mode == UserNamespaceMode::kSingleId) gid.setgroups_file = proc + "setgroups";
  }
  return {uid, gid};
}

}  // namespace

std::optional<PasswdEntry> PasswdEntryOf(std::string_view passwd_text, uint32_t uid) {
  for (std::string_view line : Split(passwd_text, '\n')) {
    std::vector<std::string_view> fields = Split(line, ':');
    if (fields.size() < 7 || fields[0].empty() || fields[0].front() == '#') continue;
    if (ParseU32(fields[2]) != uid) continue;
    return PasswdEntry{std::string(fields[0]), std::string(fields[5])};
  }
  return std::nullopt;
}

Result<std::vector<IdRange>> ParseSubordinateIds(std::string_view text, std::string_view user,
                                                 uint32_t id) {
  std::vector<IdRange> out;
  const std::string id_text = std::to_string(id);
  int number = 0;
  for (std::string_view line : Split(text, '\n')) {
    ++number;
    if (line.empty() || line.front() == '#') continue;
    std::vector<std::string_view> fields = Split(line, ':');
    if (fields.empty() || !((!user.empty() && fields[0] == user) || fields[0] == id_text)) {
      continue;
    }
    auto start = fields.size() == 3 ? ParseU32(fields[1]) : std::nullopt;
    auto count = fields.size() == 3 ? ParseU32(fields[2]) : std::nullopt;
    if (!start || !count) {
      return Error(
          "line " + std::to_string(number) + " \"" + std::string(line) + "\": not NAME:START:COUNT",
          EINVAL);
    }
    if (*count == 0) continue;
    if (uint64_t{*start} + *count > UINT32_MAX) {
      return Error("line " + std::to_string(number) + ": the range passes 4294967295", EINVAL);
    }
    out.push_back({*start, *count});
  }
  return out;
}

Result<std::vector<IdMapping>> ParseIdMap(std::string_view text) {
  std::vector<IdMapping> out;
  for (std::string_view line : Split(text, '\n')) {
    std::vector<std::string_view> words = Words(line);
    if (words.empty()) continue;
    auto inside = words.size() == 3 ? ParseU32(words[0]) : std::nullopt;
    auto outside = words.size() == 3 ? ParseU32(words[1]) : std::nullopt;
    auto count = words.size() == 3 ? ParseU32(words[2]) : std::nullopt;
    if (!inside || !outside || !count) {
      return Error("an id map line \"" + std::string(line) + "\" is not three numbers", EINVAL);
    }
    out.push_back({*inside, *outside, *count});
  }
  return out;
}

std::string FormatIdMap(const std::vector<IdMapping>& map) {
  std::string text;
  for (const IdMapping& m : map) {
    text += std::to_string(m.inside) + " " + std::to_string(m.outside) + " " +
            std::to_string(m.count) + "\n";
  }
  return text;
}

bool IsInitialUserNamespace(const std::vector<IdMapping>& own_map) {
  return own_map.size() == 1 && own_map[0] == IdMapping{0, 0, UINT32_MAX};
}

const char* UserNamespaceModeName(UserNamespaceMode mode) {
  switch (mode) {
    case UserNamespaceMode::kNone:
      return "none";
    case UserNamespaceMode::kOwnIds:
      return "own-ids";
    case UserNamespaceMode::kSubordinateIds:
      return "subordinate-ids";
    case UserNamespaceMode::kSingleId:
      return "single-id";
  }
  return "?";
}

Result<UserNamespaceFacts> ReadUserNamespaceFacts() {
  UserNamespaceFacts f;
  f.uid = ::geteuid();
  f.gid = ::getegid();
  if (auto passwd = ReadFileBounded("/etc/passwd", 16 * 1024 * 1024)) {
    if (auto entry = PasswdEntryOf(*passwd, f.uid)) f.user = entry->name;
  }
  for (auto [file, map] : {std::pair{"/proc/self/uid_map", &f.own_uid_map},
                           std::pair{"/proc/self/gid_map", &f.own_gid_map}}) {
    auto text = ReadFileBounded(file);
    if (!text) return text.take_error();
    auto parsed = ParseIdMap(*text);
    if (!parsed) return parsed.take_error().Wrap(file);
    *map = std::move(*parsed);
  }
  auto status = ReadFlatKeyed("/proc/self/status");
  if (!status) return status.take_error();
  uint64_t cap_eff = 0;
  if (auto hex = status->Find("CapEff")) {
    auto [end, ec] = std::from_chars(hex->data(), hex->data() + hex->size(), cap_eff, 16);
    (void)end;
    if (ec != std::errc()) cap_eff = 0;
  }
  f.cap_sys_admin = HasCapability(cap_eff, kCapSysAdmin);
  f.cap_setuid = HasCapability(cap_eff, kCapSetuid);
  f.cap_setgid = HasCapability(cap_eff, kCapSetgid);
  if (auto text = ReadFileBounded("/etc/subuid", 1024 * 1024)) f.subuid = std::move(*text);
  if (auto text = ReadFileBounded("/etc/subgid", 1024 * 1024)) f.subgid = std::move(*text);
  f.newuidmap = FindProgram("newuidmap");
  f.newgidmap = FindProgram("newgidmap");
  return f;
}

Result<UserNamespacePlan> PlanUserNamespace(const UserNamespaceFacts& f) {
  UserNamespacePlan plan;
  // Host root keeps its namespaces also without CAP_SYS_ADMIN (a container
  // that dropped capabilities without a user namespace): what it lacks is
  // the privileged recipe's to name (host checks), not a user namespace's.
  if (IsInitialUserNamespace(f.own_uid_map) && (f.cap_sys_admin || f.uid == 0)) return plan;
  if (f.uid == 0 && f.cap_setuid && f.cap_setgid) {
    plan.mode = UserNamespaceMode::kOwnIds;
    plan.uid_map = OwnIdsMap(f.own_uid_map);
    plan.gid_map = OwnIdsMap(f.own_gid_map);
    return plan;
  }
  const std::string who = (f.user.empty() ? "uid " : f.user + " (uid ") + std::to_string(f.uid) +
                          (f.user.empty() ? "" : ")");
  auto subuid = ParseSubordinateIds(f.subuid, f.user, f.uid);
  if (!subuid) return subuid.take_error().Wrap("/etc/subuid");
  // /etc/subgid is looked up as newgidmap does: by the user's name or uid.
  auto subgid = ParseSubordinateIds(f.subgid, f.user, f.uid);
  if (!subgid) return subgid.take_error().Wrap("/etc/subgid");
  std::string missing;
  if (subuid->empty())
    missing = "no /etc/subuid entry for " + who;
  else if (subgid->empty())
    missing = "no /etc/subgid entry for " + who;
  else if (f.newuidmap.empty() || f.newgidmap.empty()) {
    missing = "newuidmap/newgidmap not found (Debian's package uidmap)";
  }
  if (missing.empty()) {
    plan.mode = UserNamespaceMode::kSubordinateIds;
    plan.uid_map = SubordinateMap(f.uid, *subuid);
    plan.gid_map = SubordinateMap(f.gid, *subgid);
    plan.newuidmap = f.newuidmap;
    plan.newgidmap = f.newgidmap;
    return plan;
  }
  plan.mode = UserNamespaceMode::kSingleId;
  plan.uid_map = {{0, f.uid, 1}};
  plan.gid_map = {{0, f.gid, 1}};
  plan.warning = missing + ": the pod's user namespace maps only uid " + std::to_string(f.uid) +
                 " and gid " + std::to_string(f.gid) +
                 " (as 0); a container running as another user, or an image with files of "
                 "other owners, fails (S21.2)";
  return plan;
}

Status EnterUserNamespace(const UserNamespacePlan& plan) {
  if (plan.mode == UserNamespaceMode::kNone) return Ok();
  const pid_t self = ::getpid();
  std::vector<MapWriter> writers = WritersFor(plan, self);
  int go[2];
  if (::pipe2(go, O_CLOEXEC) != 0) return Error::FromErrno("pipe2");
  Fd go_read(go[0]);
  Fd go_write(go[1]);
  std::vector<pid_t> pids;
  auto wait_all = [&pids] {
    std::vector<int> statuses;
    for (pid_t pid : pids) {
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      statuses.push_back(status);
    }
    return statuses;
  };
  for (const MapWriter& w : writers) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      const int err = errno;
      go_write.Reset();
      wait_all();
      return Error::FromErrno("fork", err);
    }
    if (pid == 0) {
      ::close(go[1]);
      RunWriter(w, go[0]);
    }
    pids.push_back(pid);
  }
  go_read.Reset();
  if (::unshare(CLONE_NEWUSER) != 0) {
    const int err = errno;
    go_write.Reset();  // the writers read EOF and end
    wait_all();
    return Error::FromErrno(err == EINVAL ? "unshare(CLONE_NEWUSER) (is the process threaded?)"
                                          : "unshare(CLONE_NEWUSER)",
                            err);
  }
  const char go_bytes[2] = {'g', 'g'};
  const bool sent = ::write(go_write.get(), go_bytes, sizeof go_bytes) == sizeof go_bytes;
  go_write.Reset();
  std::vector<int> statuses = wait_all();
  for (size_t i = 0; i < statuses.size(); ++i) {
    if (!sent || !WIFEXITED(statuses[i]) || WEXITSTATUS(statuses[i]) != 0) {
      std::string map = FormatIdMap(i == 0 ? plan.uid_map : plan.gid_map);
      for (char& c : map) {
        if (c == '\n') c = ',';
      }
      return Error(std::string("writing the user namespace's ") + (i == 0 ? "uid" : "gid") +
                       " map (" + writers[i].what + ") failed (" + ExitText(statuses[i]) +
                       "): " + map,
                   EPERM);
    }
  }
  // Root of the new namespace now. The supplementary groups of the user
  // are not mapped (they show as 65534); none is needed, and a runtime
  // that calls setgroups for the container must not meet them.
  if (plan.mode != UserNamespaceMode::kSingleId) (void)::setgroups(0, nullptr);
  if (::unshare(CLONE_NEWNS) != 0) return Error::FromErrno("unshare(CLONE_NEWNS)");
  // Private: the pod's overlay, tmpfs and bind mounts stay in this
  // namespace, and nothing the host mounts later reaches into it.
  if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Error::FromErrno("making / private in the new mount namespace");
  }
  return Ok();
}

Status JoinUserNamespaceOf(pid_t holder_pid) {
  const std::string proc = "/proc/" + std::to_string(holder_pid) + "/ns/";
  Fd mnt(::open((proc + "mnt").c_str(), O_RDONLY | O_CLOEXEC));
  if (!mnt) return Error::FromErrno("opening " + proc + "mnt");
  // The user namespace that owns the mount namespace: podvisor's own, even
  // when the holder itself went on into a pod's (hostUsers: false).
  Fd user(::ioctl(mnt.get(), NS_GET_USERNS));
  if (!user) return Error::FromErrno("NS_GET_USERNS of " + proc + "mnt");
  // setns(CLONE_NEWNS) moves the root and working directories to the
  // namespace's root; the working directory is taken along by path (the
  // namespace is a copy of the one it was made in).
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  if (::setns(user.get(), CLONE_NEWUSER) != 0) {
    return Error::FromErrno("joining the user namespace of pid " + std::to_string(holder_pid));
  }
  if (::setns(mnt.get(), CLONE_NEWNS) != 0) {
    return Error::FromErrno("joining the mount namespace of pid " + std::to_string(holder_pid));
  }
  if (!ec) std::filesystem::current_path(cwd, ec);
  (void)::setgroups(0, nullptr);
  return Ok();
}

bool InNonInitialUserNamespace() {
  auto text = ReadFileBounded("/proc/self/uid_map");
  if (!text) return false;
  auto map = ParseIdMap(*text);
  return map && !IsInitialUserNamespace(*map);
}

}  // namespace podvisor::process
