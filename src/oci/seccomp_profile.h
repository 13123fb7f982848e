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

// "SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32" on x86_64, etc.
std::vector<std::string> SeccompArchitectures();

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
