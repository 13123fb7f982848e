// Shared between the validate_*.cc files, one per concern of ValidatePod:
// validate_names.cc (the name rules of k8s.io/apimachinery and the messages
// they produce), validate_container.cc (containers, probes, hooks, env,
// ports, mounts, resources, security contexts), validate.cc (pod-level
// fields, volumes, host ports, and the entry points of validate.h).
//
// Validator is the one object a ValidatePod call builds: every check is a
// member so it can append to the same error list and see what earlier checks
// recorded (volume names for mounts, the grace period for sleep hooks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pod/bundle.h"
#include "pod/field_error.h"
#include "pod/model.h"
#include "pod/validate.h"

namespace podvisor::pod::internal {

// --- Messages shared by more than one file ---------------------------------

inline constexpr int64_t kMaxId = 2147483647;  // IsValidUserID / IsValidGroupID

inline constexpr const char* kCIdentifierMsg =
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for "
    "validation is '[A-Za-z_][A-Za-z0-9_]*')";
inline constexpr const char* kHttpHeaderNameMsg =
    "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', "
    "regex used for validation is '[-A-Za-z0-9]+')";
inline constexpr const char* kHttpTokenMsg =
    "a valid HTTP header name must be an RFC 7230 token: alphanumeric characters or any of "
    "!#$%&'*+-.^_`|~";
inline constexpr const char* kNegativeMsg = "must be greater than or equal to 0";
inline constexpr const char* kPortRangeMsg = "must be between 1 and 65535, inclusive";
inline constexpr const char* kIdRangeMsg = "must be between 0 and 2147483647, inclusive";
inline constexpr const char* kAbsolutePathMsg = "must be an absolute path";

// --- Name rules (validate_names.cc) ----------------------------------------

// The details of one failed rule, each becoming one "Invalid value" error.
// Empty when the value is valid.
using Messages = std::vector<std::string>;

std::string MaxLenMsg(std::size_t n);  // "must be no more than N characters"
Messages Dns1123LabelMessages(std::string_view s);
Messages Dns1123SubdomainMessages(std::string_view s);
Messages QualifiedNameMessages(std::string_view s);  // label keys, annotations
Messages LabelValueMessages(std::string_view s);
Messages PortNameMessages(std::string_view s);
Messages EnvVarNameMessages(std::string_view s);
bool IsHttpHeaderName(std::string_view s);  // httpGet.httpHeaders[].name
bool IsCapabilityName(std::string_view name);

// --- Field paths and error helpers -----------------------------------------

inline std::string Idx(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}
inline std::string Key(const std::string& path, std::string_view key) {
  return path + "[" + std::string(key) + "]";
}
inline std::string Q(std::string_view v) {
  return QuoteValue(v);
}
inline std::string N(int64_t v) {
  return std::to_string(v);
}

// Ports of one container, for resolving named probe and hook ports.
using PortNames = std::set<std::string, std::less<>>;

class Validator {
 public:
  explicit Validator(const Pod& pod);

  FieldErrors Run();

 private:
  enum class Role { kInit, kSidecar, kRegular };
  enum class HandlerUse { kProbe, kPostStart, kPreStop };
  enum class ProbeKind { kLiveness, kReadiness, kStartup };

  void Add(FieldError e) { errs_.push_back(std::move(e)); }
  void AddEach(const std::string& path, const std::string& value, const Messages& msgs) {
    for (const auto& m : msgs) Add(Invalid(path, value, m));
  }

  // validate.cc
  void CheckMetadata();
  void CheckVolumes();
  void CheckContainers(const std::vector<Container>& list, const std::string& path, bool init);
  void CheckHostPorts();
  void CheckDns();

  // validate_container.cc
  void CheckContainer(const Container& c, const std::string& path, Role role);
  void CheckProbesAndHooks(const Container& c, const std::string& path, Role role);
  void CheckNonRootUser(const Container& c, const std::string& path);
  void CheckEnv(const Container& c, const std::string& path);
  void CheckPorts(const Container& c, const std::string& path);
  void CheckMounts(const Container& c, const std::string& path);
  void CheckRecursiveReadOnly(const VolumeMount& m, const std::string& path);
  void CheckMountPropagation(const Container& c, const VolumeMount& m, const std::string& path);
  void CheckLifecycle(const Lifecycle& lc, const PortNames& ports, const std::string& path);
  void CheckProbe(const Probe& p, ProbeKind kind, const PortNames& ports, const std::string& path);
  void CheckHandler(const Handler& h, HandlerUse use, const PortNames& ports,
                    const std::string& path);
  void CheckPortRef(const IntOrString& port, const PortNames& ports, const std::string& path);
  void CheckReasonDelivery(const LifecycleHandler& lh, HandlerUse use, const std::string& path);
  void CheckResourceEntry(const std::string& name, Quantity q, const std::string& path);
  void CheckResources(const ResourceRequirements& r, const std::string& path,
                      bool pod_level = false);
  // validate_pod_resources.cc: spec.resources (S10.5).
  void CheckPodResourceName(const std::string& name, const std::string& path);
  void CheckPodResources();
  void CheckResizePolicy(const Container& c, const std::string& path, Role role);
  void CheckSeccomp(const SeccompProfile& sp, const std::string& path);
  void CheckAppArmor(const AppArmorProfile& ap, const std::string& path);
  void CheckIds(const std::optional<int64_t>& user, const std::optional<int64_t>& group,
                const std::string& path);
  void CheckContainerSecurity(const SecurityContext& sc, const std::string& path);
  void CheckPodSecurity(const PodSecurityContext& sc, const std::string& path);
  void CheckRelativePath(const std::string& value, const std::string& path);

  // validate_config.cc
  void CheckFieldRef(const ObjectFieldSelector& f, bool volume, const std::string& path);
  void CheckResourceFieldRef(const ResourceFieldSelector& r, bool volume, const std::string& path);
  void CheckKeyRef(const KeySelector& k, bool secret, const std::string& path);
  void CheckEnvSource(const EnvVar& e, const std::string& path);
  void CheckEnvFrom(const Container& c, const std::string& path);
  void CheckMode(const std::optional<int32_t>& mode, const std::string& path);
  void CheckVolumeFilePath(const std::string& file, const std::string& path);
  void CheckKeyItems(const std::vector<KeyToPath>& items,
                     const std::map<std::string, std::string>* data, bool optional,
                     const std::string& object, const std::string& path);
  void CheckConfigMapSource(const ConfigMapVolumeSource& s, const std::string& path);
  void CheckSecretSource(const SecretVolumeSource& s, const char* name_field,
                         const std::string& path);
  void CheckDownwardApiSource(const DownwardAPIVolumeSource& s, const std::string& path);
  void CheckConfigVolume(const Volume& v, const std::string& path, int& sources);
  void CheckSysctls(const PodSecurityContext& sc, const std::string& path);
  bool DefinesEnv(const Container& c, const std::string& name) const;

  const Pod& pod_;
  int64_t grace_;
  std::set<std::string, std::less<>> volume_names_;
  std::set<std::string, std::less<>> container_names_;
  FieldErrors errs_;
};

}  // namespace podvisor::pod::internal
