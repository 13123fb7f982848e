// Validation of securityContext, the container's and the pod's: ids,
// seccomp and AppArmor profiles, capabilities, privilege escalation,
// procMount, fsGroup, sysctls and the group policies.
#include <optional>
#include <string>

#include "pod/validate_internal.h"

namespace podvisor::pod::internal {

void Validator::CheckSeccomp(const SeccompProfile& sp, const std::string& path) {
  if (sp.type.empty()) {
    Add(Required(path + ".type", "type is required when seccompProfile is set"));
  } else if (sp.type != "Localhost" && sp.type != "RuntimeDefault" && sp.type != "Unconfined") {
    Add(Unsupported(path + ".type", Q(sp.type), {"Localhost", "RuntimeDefault", "Unconfined"}));
  }
  const std::string lpath = path + ".localhostProfile";
  if (sp.type == "Localhost") {
    if (!sp.localhost_profile || sp.localhost_profile->empty()) {
      Add(Required(lpath, "must be set when seccomp type is Localhost"));
    } else {
      CheckRelativePath(*sp.localhost_profile, lpath);
    }
  } else if (sp.localhost_profile) {
    Add(Invalid(lpath, Q(*sp.localhost_profile), "can only be set when seccomp type is Localhost"));
  }
}

// The API server's rules for appArmorProfile, word for word.
void Validator::CheckAppArmor(const AppArmorProfile& ap, const std::string& path) {
  if (ap.type.empty()) {
    Add(Required(path + ".type"));
  } else if (ap.type != "Localhost" && ap.type != "RuntimeDefault" && ap.type != "Unconfined") {
    Add(Unsupported(path + ".type", Q(ap.type), {"Localhost", "RuntimeDefault", "Unconfined"}));
  }
  const std::string lpath = path + ".localhostProfile";
  if (ap.type == "Localhost") {
    if (!ap.localhost_profile || ap.localhost_profile->empty()) {
      Add(Required(lpath, "must be set when AppArmor type is Localhost"));
    } else if (ap.localhost_profile->size() > 4095) {
      Add(TooLong(lpath, 4095));
    }
  } else if (ap.localhost_profile) {
    Add(Invalid(lpath, Q(*ap.localhost_profile),
                "can only be set when AppArmor type is Localhost"));
  }
}

void Validator::CheckIds(const std::optional<int64_t>& user, const std::optional<int64_t>& group,
                         const std::string& path) {
  if (user && (*user < 0 || *user > kMaxId)) {
    Add(Invalid(path + ".runAsUser", N(*user), kIdRangeMsg));
  }
  if (group && (*group < 0 || *group > kMaxId)) {
    Add(Invalid(path + ".runAsGroup", N(*group), kIdRangeMsg));
  }
}

void Validator::CheckContainerSecurity(const SecurityContext& sc, const std::string& path) {
  CheckIds(sc.run_as_user, sc.run_as_group, path);
  if (sc.seccomp_profile) CheckSeccomp(*sc.seccomp_profile, path + ".seccompProfile");
  if (sc.app_armor_profile) CheckAppArmor(*sc.app_armor_profile, path + ".appArmorProfile");
  if (sc.capabilities) {
    for (const auto& [list, name] : {std::pair{&sc.capabilities->add, ".capabilities.add"},
                                     std::pair{&sc.capabilities->drop, ".capabilities.drop"}}) {
      for (std::size_t i = 0; i < list->size(); ++i) {
        if (!IsCapabilityName((*list)[i])) {
          Add(Invalid(Idx(path + name, i), Q((*list)[i]),
                      "must be a Linux capability name such as 'NET_ADMIN' or 'CAP_NET_ADMIN', "
                      "or 'ALL'"));
        }
      }
    }
  }
  if (sc.proc_mount == "Unmasked") {
    // S20.2: the API server's rule. In the pod's own user namespace an
    // unmasked /proc exposes only what that namespace may change.
    if (pod_.spec.host_users != false) {
      Add(Invalid(path + ".procMount", Q(sc.proc_mount),
                  "`hostUsers` must be false to use `Unmasked`"));
    }
  } else if (!sc.proc_mount.empty() && sc.proc_mount != "Default") {
    Add(Unsupported(path + ".procMount", Q(sc.proc_mount), {"Default", "Unmasked"}));
  }
  // no_new_privs cannot coexist with a privileged container, and with
  // CAP_SYS_ADMIN the container could lift it again.
  if (sc.allow_privilege_escalation == false) {
    if (sc.privileged == true) {
      Add(Invalid(path, {},
                  "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"));
    }
    if (sc.capabilities) {
      for (const auto& cap : sc.capabilities->add) {
        if (cap == "CAP_SYS_ADMIN" || cap == "SYS_ADMIN") {
          Add(Invalid(path, {},
                      "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` "
                      "CAP_SYS_ADMIN"));
        }
      }
    }
  }
}

void Validator::CheckPodSecurity(const PodSecurityContext& sc, const std::string& path) {
  CheckIds(sc.run_as_user, sc.run_as_group, path);
  for (std::size_t i = 0; i < sc.supplemental_groups.size(); ++i) {
    int64_t gid = sc.supplemental_groups[i];
    if (gid < 0 || gid > kMaxId) {
      Add(Invalid(Idx(path + ".supplementalGroups", i), N(gid), kIdRangeMsg));
    }
  }
  if (sc.seccomp_profile) CheckSeccomp(*sc.seccomp_profile, path + ".seccompProfile");
  if (sc.app_armor_profile) CheckAppArmor(*sc.app_armor_profile, path + ".appArmorProfile");
  if (sc.fs_group && (*sc.fs_group < 0 || *sc.fs_group > kMaxId)) {
    Add(Invalid(path + ".fsGroup", N(*sc.fs_group), kIdRangeMsg));
  }
  CheckSysctls(sc, path);
  if (!sc.fs_group_change_policy.empty() && sc.fs_group_change_policy != "Always" &&
      sc.fs_group_change_policy != "OnRootMismatch") {
    Add(Unsupported(path + ".fsGroupChangePolicy", Q(sc.fs_group_change_policy),
                    {"OnRootMismatch", "Always"}));
  }
  if (!sc.supplemental_groups_policy.empty() && sc.supplemental_groups_policy != "Merge" &&
      sc.supplemental_groups_policy != "Strict") {
    Add(Unsupported(path + ".supplementalGroupsPolicy", Q(sc.supplemental_groups_policy),
                    {"Merge", "Strict"}));
  }
  if (sc.run_as_non_root == true && sc.run_as_user == 0) {
    Add(Invalid(path + ".runAsUser", "0", "must not be 0 when runAsNonRoot is true"));
  }
}

}  // namespace podvisor::pod::internal
