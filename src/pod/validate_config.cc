// Validation of what reads the pod's config objects and the downward API:
// env valueFrom and envFrom, configMap/secret/downwardAPI/projected
// volumes, and the pod's sysctls. The API server's rules and messages,
// plus the kubelet's checks at container start that podvisor can make up
// front because the ConfigMaps and Secrets are in the bundle: a missing
// object or key that is not optional is an error here, not a container
// that never starts.
#include <algorithm>
#include <array>

#include "pod/config_objects.h"
#include "pod/sysctls.h"
#include "pod/validate_internal.h"

namespace podvisor::pod::internal {
namespace {

// Function-local statics, built on first use: nothing of podvisor's own
// runs before main (the client commands start in well under a millisecond).
const std::vector<std::string>& EnvFieldPaths() {
  static const std::vector<std::string> paths = {"metadata.name",
                                                 "metadata.namespace",
                                                 "metadata.uid",
                                                 "spec.nodeName",
                                                 "spec.serviceAccountName",
                                                 "status.hostIP",
                                                 "status.hostIPs",
                                                 "status.podIP",
                                                 "status.podIPs"};
  return paths;
}
const std::vector<std::string>& VolumeFieldPaths() {
  static const std::vector<std::string> paths = {"metadata.name", "metadata.namespace",
                                                 "metadata.labels", "metadata.annotations",
                                                 "metadata.uid"};
  return paths;
}
const std::vector<std::string>& Resources() {
  static const std::vector<std::string> names = {
      "limits.cpu",   "limits.memory",   "limits.ephemeral-storage",
      "requests.cpu", "requests.memory", "requests.ephemeral-storage"};
  return names;
}

std::string Optional(const std::optional<bool>& optional) {
  return optional.value_or(false) ? "" : " (or mark the reference optional: true)";
}

}  // namespace

void Validator::CheckFieldRef(const ObjectFieldSelector& f, bool volume, const std::string& path) {
  if (f.api_version != "v1") Add(Unsupported(path + ".apiVersion", Q(f.api_version), {"v1"}));
  const std::string fp = path + ".fieldPath";
  if (f.field_path.empty()) {
    Add(Required(fp));
    return;
  }
  // metadata.labels['key'] and metadata.annotations['key']: the key must be
  // a qualified name (the API server's subscript rule).
  for (const char* prefix : {"metadata.labels['", "metadata.annotations['"}) {
    std::string_view p = prefix;
    if (f.field_path.starts_with(p) && f.field_path.ends_with("']")) {
      std::string key = f.field_path.substr(p.size(), f.field_path.size() - p.size() - 2);
      AddEach(fp, Q(f.field_path), QualifiedNameMessages(key));
      return;
    }
  }
  const auto& supported = volume ? VolumeFieldPaths() : EnvFieldPaths();
  if (std::find(supported.begin(), supported.end(), f.field_path) == supported.end()) {
    Add(Unsupported(fp, Q(f.field_path), supported));
  }
}

void Validator::CheckResourceFieldRef(const ResourceFieldSelector& r, bool volume,
                                      const std::string& path) {
  if (r.container_name.empty()) {
    if (volume) Add(Required(path + ".containerName"));
  } else if (std::none_of(pod_.spec.containers.begin(), pod_.spec.containers.end(),
                          [&](const Container& c) { return c.name == r.container_name; }) &&
             std::none_of(pod_.spec.init_containers.begin(), pod_.spec.init_containers.end(),
                          [&](const Container& c) { return c.name == r.container_name; })) {
    Add(Invalid(path + ".containerName", Q(r.container_name), "must name a container of the pod"));
  }
  if (r.resource.empty()) {
    Add(Required(path + ".resource"));
  } else if (const auto& resources = Resources();
             std::find(resources.begin(), resources.end(), r.resource) == resources.end()) {
    Add(Unsupported(path + ".resource", Q(r.resource), resources));
  } else if (r.divisor) {
    // The API server's lists of divisors that give whole numbers.
    bool cpu = r.resource.ends_with(".cpu");
    std::vector<std::string> allowed =
        cpu ? std::vector<std::string>{"1m", "1"}
            : std::vector<std::string>{"1",   "1k",  "1M",  "1G",  "1T",  "1P", "1E",
                                       "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"};
    // 1E and 1Ei do not fit a Quantity's milli-units; no divisor that
    // parsed can equal them.
    bool ok = std::any_of(allowed.begin(), allowed.end(), [&](const std::string& a) {
      auto q = Quantity::Parse(a);
      return q && *q == *r.divisor;
    });
    if (!ok) {
      std::string list;
      for (std::size_t i = 0; i < allowed.size(); ++i) list += (i ? ", " : "") + allowed[i];
      Add(Invalid(path + ".divisor", Q(r.divisor->ToString()),
                  "only divisor's values " + list + " are supported with the " +
                      (cpu ? "cpu" : r.resource.substr(r.resource.find('.') + 1)) + " resource"));
    }
  }
}

void Validator::CheckKeyRef(const KeySelector& k, bool secret, const std::string& path) {
  const char* kind = secret ? "secret" : "configmap";
  if (k.name.empty()) Add(Required(path + ".name"));
  if (k.key.empty()) {
    Add(Required(path + ".key"));
    return;
  }
  if (k.name.empty()) return;
  bool exists = secret ? FindSecret(pod_.config, k.name) != nullptr
                       : FindConfigMap(pod_.config, k.name) != nullptr;
  if (!exists) {
    if (!k.optional.value_or(false)) {
      Add(Invalid(
          path + ".name", Q(k.name),
          std::string("no ") + kind + " of this name in the bundle" + Optional(k.optional)));
    }
    return;
  }
  bool has_key = secret ? FindSecret(pod_.config, k.name)->data.contains(k.key)
                        : ConfigMapValue(*FindConfigMap(pod_.config, k.name), k.key).has_value();
  if (!has_key && !k.optional.value_or(false)) {
    Add(Invalid(path + ".key", Q(k.key),
                std::string("no such key in ") + kind + "/" + k.name + Optional(k.optional)));
  }
}

void Validator::CheckEnvSource(const EnvVar& e, const std::string& path) {
  const EnvVarSource& s = *e.value_from;
  const std::string vpath = path + ".valueFrom";
  int sources = 0;
  if (s.field_ref) {
    ++sources;
    CheckFieldRef(*s.field_ref, false, vpath + ".fieldRef");
  }
  if (s.resource_field_ref) {
    if (sources++ == 0)
      CheckResourceFieldRef(*s.resource_field_ref, false, vpath + ".resourceFieldRef");
  }
  if (s.config_map_key_ref) {
    if (sources++ == 0) CheckKeyRef(*s.config_map_key_ref, false, vpath + ".configMapKeyRef");
  }
  if (s.secret_key_ref) {
    if (sources++ == 0) CheckKeyRef(*s.secret_key_ref, true, vpath + ".secretKeyRef");
  }
  if (sources == 0) {
    Add(Invalid(vpath, "",
                "must specify one of: `fieldRef`, `resourceFieldRef`, "
                "`configMapKeyRef` or `secretKeyRef`"));
  } else if (sources > 1) {
    Add(Invalid(vpath, "", "may not have more than one field specified at a time"));
  }
  if (!e.value.empty()) {
    Add(Invalid(vpath, "", "may not be specified when `value` is not empty"));
  }
}

void Validator::CheckEnvFrom(const Container& c, const std::string& path) {
  for (std::size_t i = 0; i < c.env_from.size(); ++i) {
    const EnvFromSource& e = c.env_from[i];
    const std::string epath = Idx(path + ".envFrom", i);
    if (!e.prefix.empty()) AddEach(epath + ".prefix", Q(e.prefix), EnvVarNameMessages(e.prefix));
    int sources = (e.config_map_ref ? 1 : 0) + (e.secret_ref ? 1 : 0);
    if (sources == 0) {
      Add(Invalid(epath, "", "must specify one of: `configMapRef` or `secretRef`"));
      continue;
    }
    if (sources > 1) {
      Add(Invalid(epath, "", "may not have more than one field specified at a time"));
      continue;
    }
    bool secret = e.secret_ref.has_value();
    const ObjectReference& ref = secret ? *e.secret_ref : *e.config_map_ref;
    const std::string rpath = epath + (secret ? ".secretRef" : ".configMapRef");
    if (ref.name.empty()) {
      Add(Required(rpath + ".name"));
      continue;
    }
    AddEach(rpath + ".name", Q(ref.name), Dns1123SubdomainMessages(ref.name));
    bool exists = secret ? FindSecret(pod_.config, ref.name) != nullptr
                         : FindConfigMap(pod_.config, ref.name) != nullptr;
    if (!exists && !ref.optional.value_or(false)) {
      Add(Invalid(rpath + ".name", Q(ref.name),
                  std::string("no ") + (secret ? "secret" : "configmap") +
                      " of this name in the bundle" + Optional(ref.optional)));
    }
  }
}

void Validator::CheckMode(const std::optional<int32_t>& mode, const std::string& path) {
  if (mode && (*mode < 0 || *mode > 0777)) {
    Add(Invalid(path, N(*mode), "must be a number between 0 and 0777 (octal), both inclusive"));
  }
}

void Validator::CheckKeyItems(const std::vector<KeyToPath>& items,
                              const std::map<std::string, std::string>* data, bool optional,
                              const std::string& object, const std::string& path) {
  for (std::size_t i = 0; i < items.size(); ++i) {
    const KeyToPath& item = items[i];
    const std::string ipath = Idx(path + ".items", i);
    if (item.key.empty()) {
      Add(Required(ipath + ".key"));
    } else if (data && !data->contains(item.key) && !optional) {
      // The kubelet fails the volume (and so the pod) on such a key.
      Add(Invalid(ipath + ".key", Q(item.key),
                  "no such key in " + object + " (or mark the volume optional: true)"));
    }
    CheckVolumeFilePath(item.path, ipath + ".path");
    CheckMode(item.mode, ipath + ".mode");
  }
}

void Validator::CheckVolumeFilePath(const std::string& file, const std::string& path) {
  if (file.empty()) {
    Add(Required(path));
    return;
  }
  CheckRelativePath(file, path);
  if (file.starts_with("..")) Add(Invalid(path, Q(file), "must not start with '..'"));
}

void Validator::CheckConfigMapSource(const ConfigMapVolumeSource& s, const std::string& path) {
  CheckMode(s.default_mode, path + ".defaultMode");
  if (s.name.empty()) {
    Add(Required(path + ".name"));
    return;
  }
  const ConfigMap* cm = FindConfigMap(pod_.config, s.name);
  if (!cm && !s.optional.value_or(false)) {
    Add(Invalid(path + ".name", Q(s.name),
                "no configmap of this name in the bundle" + Optional(s.optional)));
  }
  std::map<std::string, std::string> entries;
  if (cm) entries = ConfigMapEntries(*cm);
  CheckKeyItems(s.items, cm ? &entries : nullptr, s.optional.value_or(false), "configmap/" + s.name,
                path);
}

void Validator::CheckSecretSource(const SecretVolumeSource& s, const char* name_field,
                                  const std::string& path) {
  CheckMode(s.default_mode, path + ".defaultMode");
  if (s.secret_name.empty()) {
    Add(Required(path + "." + name_field));
    return;
  }
  const Secret* secret = FindSecret(pod_.config, s.secret_name);
  if (!secret && !s.optional.value_or(false)) {
    Add(Invalid(path + "." + name_field, Q(s.secret_name),
                "no secret of this name in the bundle" + Optional(s.optional)));
  }
  CheckKeyItems(s.items, secret ? &secret->data : nullptr, s.optional.value_or(false),
                "secret/" + s.secret_name, path);
}

void Validator::CheckDownwardApiSource(const DownwardAPIVolumeSource& s, const std::string& path) {
  CheckMode(s.default_mode, path + ".defaultMode");
  for (std::size_t i = 0; i < s.items.size(); ++i) {
    const DownwardAPIVolumeFile& f = s.items[i];
    const std::string ipath = Idx(path + ".items", i);
    CheckVolumeFilePath(f.path, ipath + ".path");
    CheckMode(f.mode, ipath + ".mode");
    int sources = (f.field_ref ? 1 : 0) + (f.resource_field_ref ? 1 : 0);
    if (sources != 1) {
      Add(Invalid(ipath, "", "fieldRef and resourceFieldRef can not be specified simultaneously"));
      if (sources == 0)
        errs_.back().detail = "must specify one of: `fieldRef` or `resourceFieldRef`";
      continue;
    }
    if (f.field_ref) CheckFieldRef(*f.field_ref, true, ipath + ".fieldRef");
    if (f.resource_field_ref) {
      CheckResourceFieldRef(*f.resource_field_ref, true, ipath + ".resourceFieldRef");
    }
  }
}

void Validator::CheckConfigVolume(const Volume& v, const std::string& path, int& sources) {
  auto another = [&](const char* kind) {
    if (sources++ == 0) return false;
    Add(Forbidden(path + "." + kind, "may not specify more than 1 volume type"));
    return true;
  };
  if (v.config_map && !another("configMap"))
    CheckConfigMapSource(*v.config_map, path + ".configMap");
  if (v.secret && !another("secret")) CheckSecretSource(*v.secret, "secretName", path + ".secret");
  if (v.downward_api && !another("downwardAPI")) {
    CheckDownwardApiSource(*v.downward_api, path + ".downwardAPI");
  }
  if (v.projected && !another("projected")) {
    const std::string ppath = path + ".projected";
    CheckMode(v.projected->default_mode, ppath + ".defaultMode");
    std::set<std::string, std::less<>> files;
    for (std::size_t i = 0; i < v.projected->sources.size(); ++i) {
      const VolumeProjection& p = v.projected->sources[i];
      const std::string spath = Idx(ppath + ".sources", i);
      int kinds = (p.config_map ? 1 : 0) + (p.secret ? 1 : 0) + (p.downward_api ? 1 : 0) +
                  (p.service_account_token ? 1 : 0);
      if (kinds > 1) {
        Add(Forbidden(spath, "may not specify more than 1 volume projection"));
        continue;
      }
      if (p.config_map) {
        if (p.config_map->default_mode) {
          Add(Forbidden(spath + ".configMap.defaultMode",
                        "not allowed in a projection; set "
                        "projected.defaultMode"));
        }
        ConfigMapVolumeSource source = *p.config_map;
        if (IsClusterCaOfTokenVolume(*v.projected, source)) source.optional = true;
        CheckConfigMapSource(source, spath + ".configMap");
      }
      if (p.secret) {
        if (p.secret->default_mode) {
          Add(Forbidden(spath + ".secret.defaultMode",
                        "not allowed in a projection; set "
                        "projected.defaultMode"));
        }
        CheckSecretSource(*p.secret, "name", spath + ".secret");
      }
      if (p.downward_api) {
        if (p.downward_api->default_mode) {
          Add(Forbidden(spath + ".downwardAPI.defaultMode",
                        "not allowed in a projection; set "
                        "projected.defaultMode"));
        }
        CheckDownwardApiSource(*p.downward_api, spath + ".downwardAPI");
      }
    }
  }
}

void Validator::CheckSysctls(const PodSecurityContext& sc, const std::string& path) {
  std::set<std::string, std::less<>> names;
  for (std::size_t i = 0; i < sc.sysctls.size(); ++i) {
    const Sysctl& s = sc.sysctls[i];
    const std::string spath = Idx(path + ".sysctls", i);
    if (s.name.empty()) {
      Add(Required(spath + ".name"));
      continue;
    }
    if (!IsValidSysctlName(s.name)) {
      Add(Invalid(spath + ".name", Q(s.name),
                  "must have at most 253 characters and match regex "
                  "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$"));
      continue;
    }
    if (!names.insert(NormalizeSysctlName(s.name)).second) {
      Add(Duplicate(spath + ".name", Q(s.name)));
      continue;
    }
    SysctlNamespace ns = SysctlNamespaceOf(s.name);
    if (ns == SysctlNamespace::kUts) {
      Add(Forbidden(spath + ".name", "sysctl " + Q(s.name) + " is set from spec.hostname"));
    } else if (ns == SysctlNamespace::kNone) {
      Add(Forbidden(
          spath + ".name",
          "sysctl " + Q(s.name) + " is not namespaced: setting it would change the whole host"));
    } else if (ns == SysctlNamespace::kNetwork && pod_.spec.host_network) {
      Add(Forbidden(spath + ".name", "sysctl " + Q(s.name) + " not allowed with hostNetwork"));
    } else if (ns == SysctlNamespace::kIpc && pod_.spec.host_ipc) {
      Add(Forbidden(spath + ".name", "sysctl " + Q(s.name) + " not allowed with hostIPC"));
    }
  }
}

}  // namespace podvisor::pod::internal
