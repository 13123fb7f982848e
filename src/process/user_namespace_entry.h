// podvisor without root (docs/SEMANTICS.md S21): `run` enters a user
// namespace of its own before it makes anything, as podman and
// rootlesskit do, and then runs as root of that namespace: it can mount
// overlay (Linux 5.11), tmpfs and bind mounts, make the sandbox's
// namespaces and run the runtime, while every file it writes is owned by
// the user on the host.
//
// Which map the namespace gets (S21.1, PlanUserNamespace):
//  - podvisor is privileged (CAP_SYS_ADMIN in the initial user namespace),
//    or uid 0 of the initial user namespace at all: none, it runs as
//    before (a root without capabilities is refused by the host checks);
//  - it is uid 0 with CAP_SETUID and CAP_SETGID in a user namespace it was
//    given (PID 1 of an unprivileged container): the ids it has, each to
//    itself, written by podvisor itself;
//  - an ordinary user with /etc/subuid and /etc/subgid entries: container
//    id 0 to the user's own id and 1..N to the subordinate ranges, written
//    by newuidmap/newgidmap (the setuid helpers of Debian's uidmap);
//  - neither: one id, the user's own, with a warning (S21.2).
//
// The map is written from outside (the kernel lets only a process of the
// parent namespace write a map of more than one id), so EnterUserNamespace
// forks its writers first, unshares, and lets them go: the supervisor
// keeps its pid, and with it its signals and its exit status.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace podvisor::process {

// The name and home of `uid` in `passwd_text` (an /etc/passwd), read by
// hand: the static podvisor has no NSS (getpwuid_r would need glibc's
// shared libraries at run time), and newuidmap reads the file too.
struct PasswdEntry {
  std::string name;
  std::string home;
};
std::optional<PasswdEntry> PasswdEntryOf(std::string_view passwd_text, uint32_t uid);

// One "name:start:count" line of /etc/subuid or /etc/subgid.
struct IdRange {
  uint32_t start = 0;
  uint32_t count = 0;
  bool operator==(const IdRange&) const = default;
};

// The ranges `text` (an /etc/subuid or /etc/subgid file) gives the user
// named `user` or numbered `id` (shadow's newuidmap accepts either), in
// file order. Comments (#) and blank lines are skipped; a malformed line
// of this user is an error naming its line number, others are ignored
// (the file is shared by every user, as shadow's own reader does).
Result<std::vector<IdRange>> ParseSubordinateIds(std::string_view text, std::string_view user,
                                                 uint32_t id);

// One line of /proc/PID/uid_map: `count` ids from `inside` map to
// `outside` in the parent namespace.
struct IdMapping {
  uint32_t inside = 0;
  uint32_t outside = 0;
  uint32_t count = 0;
  bool operator==(const IdMapping&) const = default;
};

// The lines of a uid_map or gid_map file.
Result<std::vector<IdMapping>> ParseIdMap(std::string_view text);
// "0 1000 1\n1 100000 65536\n": what a map file is written with.
std::string FormatIdMap(const std::vector<IdMapping>& map);
// The whole 32-bit range mapped to itself: the initial user namespace.
bool IsInitialUserNamespace(const std::vector<IdMapping>& own_map);

enum class UserNamespaceMode {
  kNone,            // privileged: no user namespace of its own
  kOwnIds,          // uid 0 with CAP_SETUID/SETGID: its ids, written by itself
  kSubordinateIds,  // newuidmap/newgidmap with /etc/subuid and /etc/subgid
  kSingleId,        // only the user's own id
};
const char* UserNamespaceModeName(UserNamespaceMode mode);

// What the choice depends on, read by ReadUserNamespaceFacts (or set by a
// test).
struct UserNamespaceFacts {
  uint32_t uid = 0;  // effective ids
  uint32_t gid = 0;
  std::string user;                    // the passwd name of uid; "" when it has none
  std::vector<IdMapping> own_uid_map;  // /proc/self/uid_map
  std::vector<IdMapping> own_gid_map;
  bool cap_sys_admin = false;  // effective capabilities
  bool cap_setuid = false;
  bool cap_setgid = false;
  std::string subuid;  // the texts of /etc/subuid and /etc/subgid ("" when absent)
  std::string subgid;
  std::filesystem::path newuidmap;  // found in PATH, else empty
  std::filesystem::path newgidmap;
};

Result<UserNamespaceFacts> ReadUserNamespaceFacts();

struct UserNamespacePlan {
  UserNamespaceMode mode = UserNamespaceMode::kNone;
  std::vector<IdMapping> uid_map;
  std::vector<IdMapping> gid_map;
  std::filesystem::path newuidmap;  // kSubordinateIds
  std::filesystem::path newgidmap;
  // kSingleId: why not more (the user sees it once, S21.2).
  std::string warning;
};

// S21.1: pure; an Error only for a malformed /etc/subuid or /etc/subgid
// line of this user.
Result<UserNamespacePlan> PlanUserNamespace(const UserNamespaceFacts& facts);

// S21.3: forks the map writers, unshares the user namespace, lets them
// write `plan`'s maps, then unshares a mount namespace with private
// propagation (podvisor's mounts never reach the host's). The process must
// be single-threaded (the kernel refuses CLONE_NEWUSER otherwise).
Status EnterUserNamespace(const UserNamespacePlan& plan);

// S21.9: a later supervisor of the same pod (after a SIGKILLed one) joins
// the mount namespace of the sandbox holder `holder_pid` left behind, and
// the user namespace that owns it (the owner of a user namespace may, without privileges), so that
// the pod's mounts, namespaces and files are the ones it recovers.
Status JoinUserNamespaceOf(pid_t holder_pid);

// Whether this process is in a user namespace other than the initial one.
bool InNonInitialUserNamespace();

}  // namespace podvisor::process
