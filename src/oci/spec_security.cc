// process.capabilities, process.noNewPrivileges, process.apparmorProfile
// and linux.seccomp.
#include <algorithm>
#include <fstream>

#include "oci/seccomp_profile.h"
#include "oci/spec_internal.h"

namespace podvisor::oci::internal {

using nlohmann::json;

std::string SecurityField(const SpecContext& ctx, const char* name) {
  return ctx.field + ".securityContext." + name;
}

Result<json> BuildCapabilitiesJson(const SpecContext& ctx) {
  // Bounding, effective and permitted carry the set; inheritable and
  // ambient stay empty as containerd has them since CVE-2022-24769. For a
  // non-root process the kernel clears effective/permitted at execve, which
  // is what Kubernetes users observe (CapEff 0 for runAsUser != 0).
  return json{{"bounding", ctx.capabilities},
              {"effective", ctx.capabilities},
              {"permitted", ctx.capabilities},
              {"inheritable", json::array()},
              {"ambient", json::array()}};
}

Result<bool> NoNewPrivileges(const SpecContext& ctx) {
  const auto& sc = ctx.container.security_context;
  // Two plain bools, not a copied std::optional<bool>: g++ -Os (the static
  // build) reports the copy's flag as maybe uninitialized.
  const bool said_false = sc && sc->allow_privilege_escalation == false;
  const bool said_true = sc && sc->allow_privilege_escalation == true;
  bool sys_admin = std::find(ctx.capabilities.begin(), ctx.capabilities.end(), "CAP_SYS_ADMIN") !=
                   ctx.capabilities.end();
  // The API server's rules: privilege escalation is implied by privileged
  // and by CAP_SYS_ADMIN, and saying false next to them is invalid.
  if (said_false && ctx.privileged) {
    return Error(SecurityField(ctx, "allowPrivilegeEscalation") +
                 ": cannot be false when privileged is true");
  }
  if (said_false && sys_admin) {
    return Error(SecurityField(ctx, "allowPrivilegeEscalation") +
                 ": cannot be false when capabilities include CAP_SYS_ADMIN");
  }
  if (ctx.privileged || sys_admin) return false;
  // podvisor's default is no_new_privs ON: Kubernetes leaves it off unless
  // allowPrivilegeEscalation is false, but nothing in a pod needs setuid
  // escalation unless it says so (and then it sets the field to true).
  return !said_true;
}

// A Localhost AppArmor profile must be loaded, as the kubelet checks
// before it starts a container: the runtime would otherwise fail the
// start, container after container. RuntimeDefault loads nothing here
// (podvisor ships no profile, so it is Unconfined, as on a host without
// AppArmor); Unconfined is what it says.
Result<std::string> AppArmorProfileName(const SpecContext& ctx) {
  const pod::AppArmorProfile* profile = nullptr;
  std::string field;
  if (ctx.container.security_context && ctx.container.security_context->app_armor_profile) {
    profile = &*ctx.container.security_context->app_armor_profile;
    field = SecurityField(ctx, "appArmorProfile");
  } else if (ctx.pod.spec.security_context && ctx.pod.spec.security_context->app_armor_profile) {
    profile = &*ctx.pod.spec.security_context->app_armor_profile;
    field = "spec.securityContext.appArmorProfile";
  }
  if (!profile || profile->type != "Localhost" || !profile->localhost_profile) return std::string();
  const std::string& name = *profile->localhost_profile;
  std::ifstream enabled(ctx.input.apparmor_enabled);
  std::string flag;
  if (!enabled || !std::getline(enabled, flag) || flag != "Y") {
    return Error(field + ": Localhost profile \"" + name +
                 "\": AppArmor is not enabled on this host (" +
                 ctx.input.apparmor_enabled.string() + ")");
  }
  std::ifstream profiles(ctx.input.apparmor_profiles);
  for (std::string line; std::getline(profiles, line);) {
    // "name (enforce)"; a name may itself contain spaces.
    std::size_t mode = line.rfind(" (");
    if (line.substr(0, mode) == name) return name;
  }
  return Error(field + ": Localhost profile \"" + name +
               "\" is not loaded (load it with apparmor_parser)");
}

Result<json> BuildSeccomp(const SpecContext& ctx) {
  // containerd applies no seccomp filter to privileged containers.
  if (ctx.privileged) return json();
  const pod::SeccompProfile* profile = nullptr;
  std::string field;
  if (ctx.container.security_context && ctx.container.security_context->seccomp_profile) {
    profile = &*ctx.container.security_context->seccomp_profile;
    field = SecurityField(ctx, "seccompProfile");
  } else if (ctx.pod.spec.security_context && ctx.pod.spec.security_context->seccomp_profile) {
    profile = &*ctx.pod.spec.security_context->seccomp_profile;
    field = "spec.securityContext.seccompProfile";
  }
  // Unset means RuntimeDefault: what the kubelet does with SeccompDefault
  // on (GA since 1.27 and what a security-minded operator enables).
  if (!profile || profile->type == "RuntimeDefault") {
    return RuntimeDefaultSeccompProfile(ctx.capabilities);
  }
  if (profile->type == "Unconfined") return json();
  if (profile->type == "Localhost") {
    if (!profile->localhost_profile || profile->localhost_profile->empty()) {
      return Error(field + ".localhostProfile: Required value: needed for type Localhost");
    }
    auto loaded = LoadLocalhostSeccompProfile(ctx.input.bundle, *profile->localhost_profile,
                                              ctx.capabilities);
    if (!loaded) return loaded.error().Wrap(field);
    return std::move(*loaded);
  }
  return Error(field + ".type: Unsupported value: \"" + profile->type +
               "\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"");
}

}  // namespace podvisor::oci::internal
