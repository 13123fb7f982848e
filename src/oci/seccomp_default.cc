// The RuntimeDefault profile's syscall tables (see seccomp.h).
#include <linux/sched.h>

#include <algorithm>
#include <array>
#include <map>
#include <string_view>

#include "oci/seccomp_profile.h"

namespace podvisor::oci {
namespace {

using nlohmann::json;

// Docker's default allow-list (moby profiles/seccomp/default.json), minus
// io_uring_* which moby and containerd dropped in 2023 (a large kernel
// attack surface few programs need).
constexpr std::string_view kAllowed[] = {
    "accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk", "cachestat", "capget",
    "capset", "chdir", "chmod", "chown", "chown32", "clock_adjtime", "clock_adjtime64",
    "clock_getres", "clock_getres_time64", "clock_gettime", "clock_gettime64", "clock_nanosleep",
    "clock_nanosleep_time64", "close", "close_range", "connect", "copy_file_range", "creat", "dup",
    "dup2", "dup3", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_pwait",
    "epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2", "execve", "execveat",
    "exit", "exit_group", "faccessat", "faccessat2", "fadvise64", "fadvise64_64", "fallocate",
    "fanotify_mark", "fchdir", "fchmod", "fchmodat", "fchmodat2", "fchown", "fchown32", "fchownat",
    "fcntl", "fcntl64", "fdatasync", "fgetxattr", "flistxattr", "flock", "fork", "fremovexattr",
    "fsetxattr", "fstat", "fstat64", "fstatat64", "fstatfs", "fstatfs64", "fsync", "ftruncate",
    "ftruncate64", "futex", "futex_requeue", "futex_time64", "futex_wait", "futex_waitv",
    "futex_wake", "futimesat", "get_robust_list", "get_thread_area", "getcpu", "getcwd", "getdents",
    "getdents64", "getegid", "getegid32", "geteuid", "geteuid32", "getgid", "getgid32", "getgroups",
    "getgroups32", "getitimer", "getpeername", "getpgid", "getpgrp", "getpid", "getppid",
    "getpriority", "getrandom", "getresgid", "getresgid32", "getresuid", "getresuid32", "getrlimit",
    "getrusage", "getsid", "getsockname", "getsockopt", "gettid", "gettimeofday", "getuid",
    "getuid32", "getxattr", "inotify_add_watch", "inotify_init", "inotify_init1",
    "inotify_rm_watch", "io_cancel", "io_destroy", "io_getevents", "io_pgetevents",
    "io_pgetevents_time64", "io_setup", "io_submit", "ioctl", "ioprio_get", "ioprio_set", "ipc",
    "kill", "landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self", "lchown",
    "lchown32", "lgetxattr", "link", "linkat", "listen", "listxattr", "llistxattr", "_llseek",
    "lremovexattr", "lseek", "lsetxattr", "lstat", "lstat64", "madvise", "map_shadow_stack",
    "membarrier", "memfd_create", "memfd_secret", "mincore", "mkdir", "mkdirat", "mknod", "mknodat",
    "mlock", "mlock2", "mlockall", "mmap", "mmap2", "mprotect", "mq_getsetattr", "mq_notify",
    "mq_open", "mq_timedreceive", "mq_timedreceive_time64", "mq_timedsend", "mq_timedsend_time64",
    "mq_unlink", "mremap", "msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock", "munlockall",
    "munmap", "name_to_handle_at", "nanosleep", "newfstatat", "_newselect", "open", "openat",
    "openat2", "pause", "pidfd_open", "pidfd_send_signal", "pipe", "pipe2", "pkey_alloc",
    "pkey_free", "pkey_mprotect", "poll", "ppoll", "ppoll_time64", "prctl", "pread64", "preadv",
    "preadv2", "prlimit64", "process_mrelease", "process_vm_readv", "process_vm_writev", "pselect6",
    "pselect6_time64", "ptrace", "pwrite64", "pwritev", "pwritev2", "read", "readahead", "readlink",
    "readlinkat", "readv", "recv", "recvfrom", "recvmmsg", "recvmmsg_time64", "recvmsg",
    "remap_file_pages", "removexattr", "rename", "renameat", "renameat2", "restart_syscall",
    "rmdir", "rseq", "rt_sigaction", "rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo",
    "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "rt_sigtimedwait_time64",
    "rt_tgsigqueueinfo", "sched_get_priority_max", "sched_get_priority_min", "sched_getaffinity",
    "sched_getattr", "sched_getparam", "sched_getscheduler", "sched_rr_get_interval",
    "sched_rr_get_interval_time64", "sched_setaffinity", "sched_setattr", "sched_setparam",
    "sched_setscheduler", "sched_yield", "seccomp", "select", "semctl", "semget", "semop",
    "semtimedop", "semtimedop_time64", "send", "sendfile", "sendfile64", "sendmmsg", "sendmsg",
    "sendto", "set_robust_list", "set_thread_area", "set_tid_address", "setfsgid", "setfsgid32",
    "setfsuid", "setfsuid32", "setgid", "setgid32", "setgroups", "setgroups32", "setitimer",
    "setpgid", "setpriority", "setregid", "setregid32", "setresgid", "setresgid32", "setresuid",
    "setresuid32", "setreuid", "setreuid32", "setrlimit", "setsid", "setsockopt", "setuid",
    "setuid32", "setxattr", "shmat", "shmctl", "shmdt", "shmget", "shutdown", "sigaltstack",
    "signalfd", "signalfd4", "sigprocmask", "sigreturn", "socketcall", "socketpair", "splice",
    "stat", "stat64", "statfs", "statfs64", "statx", "symlink", "symlinkat", "sync",
    "sync_file_range", "syncfs", "sysinfo", "tee", "tgkill", "time", "timer_create", "timer_delete",
    "timer_getoverrun", "timer_gettime", "timer_gettime64", "timer_settime", "timer_settime64",
    "timerfd_create", "timerfd_gettime", "timerfd_gettime64", "timerfd_settime",
    "timerfd_settime64", "times", "tkill", "truncate", "truncate64", "ugetrlimit", "umask", "uname",
    "unlink", "unlinkat", "utime", "utimensat", "utimensat_time64", "utimes", "vfork", "vmsplice",
    "wait4", "waitid", "waitpid", "write", "writev",
    // Architecture-specific ones Docker allows on the arches that have them;
    // elsewhere they do not resolve and are skipped.
    "arch_prctl", "modify_ldt", "arm_fadvise64_64", "arm_sync_file_range", "sync_file_range2",
    "breakpoint", "cacheflush", "set_tls", "riscv_flush_icache", "s390_pci_mmio_read",
    "s390_pci_mmio_write", "s390_runtime_instr"};

struct CapabilityGroup {
  std::string_view capability;
  std::array<std::string_view, 23> syscalls;  // unused slots are empty
};

// Docker's "includes": {"caps": [...]} groups.
constexpr CapabilityGroup kByCapability[] = {
    {"CAP_DAC_READ_SEARCH", {"open_by_handle_at"}},
    {"CAP_SYS_ADMIN",
     {"bpf",           "clone",         "clone3",      "fanotify_init",   "fsconfig",
      "fsmount",       "fsopen",        "fspick",      "lookup_dcookie",  "mount",
      "mount_setattr", "move_mount",    "open_tree",   "perf_event_open", "quotactl",
      "quotactl_fd",   "setdomainname", "sethostname", "setns",           "syslog",
      "umount",        "umount2",       "unshare"}},
    {"CAP_SYS_BOOT", {"reboot"}},
    {"CAP_SYS_CHROOT", {"chroot"}},
    {"CAP_SYS_MODULE", {"delete_module", "init_module", "finit_module"}},
    {"CAP_SYS_PACCT", {"acct"}},
    {"CAP_SYS_PTRACE", {"kcmp", "pidfd_getfd", "process_madvise"}},
    {"CAP_SYS_RAWIO", {"iopl", "ioperm"}},
    {"CAP_SYS_TIME", {"settimeofday", "stime", "clock_settime", "clock_settime64"}},
    {"CAP_SYS_TTY_CONFIG", {"vhangup"}},
    {"CAP_SYS_NICE", {"get_mempolicy", "mbind", "set_mempolicy", "set_mempolicy_home_node"}},
    {"CAP_SYSLOG", {"syslog"}},
    {"CAP_BPF", {"bpf"}},
    {"CAP_PERFMON", {"perf_event_open"}},
};

// personality(2) values Docker allows: PER_LINUX, PER_LINUX32, UNAME26,
// UNAME26|PER_LINUX32, and 0xffffffff (query the current persona).
constexpr uint64_t kPersonalities[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};

constexpr uint64_t kNamespaceCloneFlags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC |
                                          CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET |
                                          CLONE_NEWCGROUP;
constexpr int kAfVsock = 40;
constexpr int kEnosys = 38;
constexpr int kEperm = 1;

bool Has(const std::vector<std::string>& caps, std::string_view cap) {
  return std::find(caps.begin(), caps.end(), cap) != caps.end();
}

json Rule(std::vector<std::string> names, std::string_view action) {
  return json{{"names", std::move(names)}, {"action", action}};
}

json Arg(unsigned index, uint64_t value, std::string_view op) {
  return json{{"index", index}, {"value", value}, {"op", op}};
}

json BuildRuntimeDefaultProfile(const std::vector<std::string>& capabilities) {
  std::vector<std::string> allowed;
  auto allow = [&](std::string_view name) {
    if (!name.empty() && SyscallKnownOnHost(name)) allowed.emplace_back(name);
  };
  for (std::string_view name : kAllowed) allow(name);
  for (const CapabilityGroup& group : kByCapability) {
    if (!Has(capabilities, group.capability)) continue;
    for (std::string_view name : group.syscalls) allow(name);
  }
  std::sort(allowed.begin(), allowed.end());
  allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());

  json syscalls = json::array();
  syscalls.push_back(Rule(allowed, "SCMP_ACT_ALLOW"));
  // Several args in one rule are ANDed, so one rule per permitted value.
  for (uint64_t persona : kPersonalities) {
    json rule = Rule({"personality"}, "SCMP_ACT_ALLOW");
    rule["args"] = json::array({Arg(0, persona, "SCMP_CMP_EQ")});
    syscalls.push_back(rule);
  }
  json socket = Rule({"socket"}, "SCMP_ACT_ALLOW");
  socket["args"] = json::array({Arg(0, kAfVsock, "SCMP_CMP_NE")});
  syscalls.push_back(socket);
  if (!Has(capabilities, "CAP_SYS_ADMIN")) {
    // clone() without namespace flags: MASKED_EQ takes the mask in "value"
    // and the expected masked result in "valueTwo".
    json clone = Rule({"clone"}, "SCMP_ACT_ALLOW");
    json arg = Arg(0, kNamespaceCloneFlags, "SCMP_CMP_MASKED_EQ");
    arg["valueTwo"] = 0;
    clone["args"] = json::array({arg});
    syscalls.push_back(clone);
    // clone3 passes its flags in memory seccomp cannot inspect: ENOSYS makes
    // glibc fall back to clone(), which is filtered above.
    if (SyscallKnownOnHost("clone3")) {
      json clone3 = Rule({"clone3"}, "SCMP_ACT_ERRNO");
      clone3["errnoRet"] = kEnosys;
      syscalls.push_back(clone3);
    }
  }
  return json{{"defaultAction", "SCMP_ACT_ERRNO"},
              {"defaultErrnoRet", kEperm},
              {"architectures", SeccompArchitectures()},
              {"syscalls", syscalls}};
}

}  // namespace

json RuntimeDefaultSeccompProfile(const std::vector<std::string>& capabilities) {
  // The containers of a pod mostly share one set of capabilities, and the
  // profile asks libseccomp about each of some 300 names: built once per
  // set, in the process (the supervisor creates every container, and each
  // restart, from it). The supervisor is single-threaded.
  static std::map<std::vector<std::string>, json> built;
  std::vector<std::string> key = capabilities;
  std::sort(key.begin(), key.end());
  auto it = built.find(key);
  if (it == built.end()) it = built.emplace(key, BuildRuntimeDefaultProfile(capabilities)).first;
  return it->second;
}

}  // namespace podvisor::oci
