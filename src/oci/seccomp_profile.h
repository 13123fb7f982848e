// Seccomp profiles for config.json (linux.seccomp, OCI format).
//
// RuntimeDefault is generated here: a default-deny (EPERM) allow-list
// modelled on Docker's/containerd's default profile, including its
// capability-conditional groups (mount & co. only with CAP_SYS_ADMIN,
// reboot only with CAP_SYS_BOOT, ...), its clone() namespace-flag filter and
// clone3() -> ENOSYS so libc falls back to the filtered clone(). Every name
// is checked with libseccomp for the host's native architecture; names this
// architecture does not have (e.g. "chown32" on x86_64) are skipped, which
// is also what runc does with them.
//
// Localhost loads BUNDLE/seccomp/<localhostProfile> (relative, no "..",
// must stay inside BUNDLE/seccomp). Both the OCI form and Docker's form
// (archMap, includes/excludes by caps and arches, "name" instead of
// "names") are accepted and converted to the OCI form.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace podvisor::oci {

// The architectures RuntimeDefault's filter covers: the native one and the
// compat ABIs this kernel can run, as containerd lists them ("SCMP_ARCH_X86_64",
// "SCMP_ARCH_X86", and "SCMP_ARCH_X32" when KernelRunsX32Syscalls()).
std::vector<std::string> SeccompArchitectures();

// Whether this kernel executes x32 system calls (x86-64 only; false
// elsewhere). Most distributions build their kernels without the x32 ABI or
// leave it off (CONFIG_X86_X32_ABI; Debian's syscall.x32=n): an x32 system
// call then fails with ENOSYS whatever a filter says, and its rules in a
// profile are dead weight that the runtime compiles for every container
// (libseccomp builds a third set of rules, about 5 ms of each runc create
// on the development VM). Asked once, with the x32 getpid; only when no
// seccomp filter applies to podvisor itself, since a filter without x32
// could kill it for asking: then x32 is assumed, and listed.
bool KernelRunsX32Syscalls();

// True when libseccomp knows `name` on the native architecture.
bool SyscallKnownOnHost(std::string_view name);

// The RuntimeDefault profile for a process with `capabilities` ("CAP_...").
nlohmann::json RuntimeDefaultSeccompProfile(const std::vector<std::string>& capabilities);

// Checks and converts a profile document. `source` names it in errors.
Result<nlohmann::json> ConvertSeccompProfile(const nlohmann::json& profile,
                                             const std::vector<std::string>& capabilities,
                                             std::string_view source);

// Reads BUNDLE/seccomp/<relative> and converts it.
Result<nlohmann::json> LoadLocalhostSeccompProfile(const std::filesystem::path& bundle,
                                                   std::string_view relative,
                                                   const std::vector<std::string>& capabilities);

}  // namespace podvisor::oci
