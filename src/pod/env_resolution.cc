#include "pod/env_resolution.h"

#include <algorithm>
#include <cmath>

#include "pod/config_objects.h"
#include "pod/resources.h"
#include "pod/validate.h"

namespace podvisor::pod {
namespace {

__extension__ typedef __int128 i128;  // bytes x 1000 overflows int64 past 8 PiB

void Set(EnvPairs& env, const std::string& name, std::string value) {
  auto it = std::find_if(env.begin(), env.end(), [&](const auto& kv) { return kv.first == name; });
  if (it != env.end()) {
    it->second = std::move(value);
  } else {
    env.emplace_back(name, std::move(value));
  }
}

std::string Join(const std::vector<std::string>& list) {
  std::string out;
  for (const auto& s : list) out += (out.empty() ? "" : ",") + s;
  return out;
}

// The kubelet's fieldpath.FormatMap: `key="value"` lines, sorted by key.
std::string FormatMap(const std::map<std::string, std::string>& m) {
  std::string out;
  for (const auto& [k, v] : m) {
    if (!out.empty()) out += "\n";
    out += k + "=" + QuoteValue(v);
  }
  return out;
}

// Division rounded up, as the kubelet's convertResource*ToString.
int64_t CeilDiv(i128 a, i128 b) {
  if (b <= 0) return 0;
  i128 q = a / b;
  if (a % b != 0 && a > 0) ++q;
  return static_cast<int64_t>(q);
}

const Container* FindContainer(const Pod& pod, const std::string& name) {
  for (const auto* list : {&pod.spec.containers, &pod.spec.init_containers}) {
    for (const Container& c : *list) {
      if (c.name == name) return &c;
    }
  }
  return nullptr;
}

// `key` of a map selected as metadata.labels['key'].
std::optional<std::string> Subscript(std::string_view path, std::string_view prefix) {
  std::string p = std::string(prefix) + "['";
  if (!path.starts_with(p) || !path.ends_with("']")) return std::nullopt;
  return std::string(path.substr(p.size(), path.size() - p.size() - 2));
}

std::string Lookup(const std::map<std::string, std::string>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? std::string() : it->second;
}

}  // namespace

Result<std::string> ResolveFieldRef(const Pod& pod, const ObjectFieldSelector& field,
                                    const DownwardApiNode& node) {
  const std::string& f = field.field_path;
  if (auto key = Subscript(f, "metadata.labels")) return Lookup(pod.metadata.labels, *key);
  if (auto key = Subscript(f, "metadata.annotations")) {
    return Lookup(pod.metadata.annotations, *key);
  }
  if (f == "metadata.name") return pod.metadata.name;
  if (f == "metadata.namespace") return pod.metadata.namespace_name;
  if (f == "metadata.uid") return pod.metadata.uid;
  if (f == "metadata.labels") return FormatMap(pod.metadata.labels);
  if (f == "metadata.annotations") return FormatMap(pod.metadata.annotations);
  if (f == "spec.nodeName") return node.node_name;
  // The API server's admission sets "default" when a pod names none.
  if (f == "spec.serviceAccountName") {
    return pod.spec.service_account_name.empty() ? std::string("default")
                                                 : pod.spec.service_account_name;
  }
  if (f == "status.hostIP") return node.host_ips.empty() ? std::string() : node.host_ips.front();
  if (f == "status.hostIPs") return Join(node.host_ips);
  if (f == "status.podIP") return node.pod_ips.empty() ? std::string() : node.pod_ips.front();
  if (f == "status.podIPs") return Join(node.pod_ips);
  return Error("unsupported fieldPath \"" + f + "\"");
}

Result<std::string> ResolveResourceFieldRef(const Pod& pod, const Container* self,
                                            const ResourceFieldSelector& field,
                                            const DownwardApiNode& node) {
  const Container* c =
      field.container_name.empty() ? self : FindContainer(pod, field.container_name);
  if (!c) return Error("no container \"" + field.container_name + "\" in the pod");
  std::string_view resource = field.resource;
  bool limits = resource.starts_with("limits.");
  std::string_view name = resource.substr(resource.find('.') + 1);
  const ResourceList& list = limits ? c->resources.limits : c->resources.requests;
  std::optional<Quantity> q;
  int64_t node_default_milli = 0;
  if (name == "cpu") {
    q = list.cpu;
    node_default_milli = node.cpu_milli;
  } else if (name == "memory") {
    q = list.memory;
    node_default_milli = node.memory_bytes * 1000;
  } else if (name == "ephemeral-storage") {
    if (auto it = list.other.find("ephemeral-storage"); it != list.other.end()) q = it->second;
    node_default_milli = node.ephemeral_storage_bytes * 1000;
  } else {
    return Error("unsupported resource \"" + field.resource + "\"");
  }
  // An unset limit is the pod-level limit when spec.resources sets one
  // (S10.10), else the node's allocatable (the kubelet's
  // defaultPodLimitsForDownwardAPI); an unset request is 0.
  if (limits && !q && HasPodLevelLimits(pod.spec)) {
    const ResourceList& pod_limits = pod.spec.resources.limits;
    std::optional<Quantity> pod_limit = name == "cpu"      ? pod_limits.cpu
                                        : name == "memory" ? pod_limits.memory
                                                           : std::nullopt;
    if (pod_limit && pod_limit->milli() != 0) node_default_milli = pod_limit->milli();
  }
  i128 milli = q ? q->milli() : limits ? node_default_milli : 0;
  Quantity divisor = field.divisor.value_or(Quantity::FromValue(1));
  if (name == "cpu") return std::to_string(CeilDiv(milli, divisor.milli()));
  // Memory and storage divide whole bytes (Quantity.Value() rounds up).
  i128 bytes = CeilDiv(milli, 1000);
  return std::to_string(CeilDiv(bytes, divisor.value()));
}

std::string ExpandRefs(std::string_view input,
                       const std::function<std::optional<std::string>(std::string_view)>& lookup) {
  // Kubernetes' third_party/forked/golang/expansion: after '$', '$' is an
  // escaped '$', '(' starts a reference to the next ')', anything else is
  // copied with the '$'; an unterminated "$(" stays as written.
  std::string out;
  out.reserve(input.size());
  std::size_t checkpoint = 0;
  for (std::size_t cursor = 0; cursor < input.size(); ++cursor) {
    if (input[cursor] != '$' || cursor + 1 >= input.size()) continue;
    out.append(input.substr(checkpoint, cursor - checkpoint));
    std::string_view rest = input.substr(cursor + 1);
    std::size_t advance = 1;
    if (rest[0] == '$') {
      out.push_back('$');
    } else if (rest[0] == '(') {
      std::size_t close = rest.find(')', 1);
      if (close == std::string_view::npos) {
        out.append("$(");
      } else {
        std::string_view name = rest.substr(1, close - 1);
        std::optional<std::string> value = lookup(name);
        if (value) {
          out.append(*value);
        } else {
          out.append("$(").append(name).append(")");
        }
        advance = close + 1;
      }
    } else {
      out.push_back('$');
      out.push_back(rest[0]);
    }
    cursor += advance;
    checkpoint = cursor + 1;
  }
  if (checkpoint < input.size()) out.append(input.substr(checkpoint));
  return out;
}

std::string ExpandEnvRefs(std::string_view input, const EnvPairs& env) {
  return ExpandRefs(input, [&env](std::string_view name) -> std::optional<std::string> {
    auto it =
        std::find_if(env.begin(), env.end(), [&](const auto& kv) { return kv.first == name; });
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}

Result<EnvPairs> ResolveContainerEnv(const Pod& pod, const Container& container,
                                     const DownwardApiNode& node) {
  EnvPairs env;
  for (std::size_t i = 0; i < container.env_from.size(); ++i) {
    const EnvFromSource& from = container.env_from[i];
    std::string where = "envFrom[" + std::to_string(i) + "]";
    const std::map<std::string, std::string>* data = nullptr;
    if (from.config_map_ref) {
      const ConfigMap* cm = FindConfigMap(pod.config, from.config_map_ref->name);
      if (!cm) {
        if (from.config_map_ref->optional.value_or(false)) continue;
        return Error(where + ": configmap \"" + from.config_map_ref->name + "\" not found");
      }
      data = &cm->data;
    } else if (from.secret_ref) {
      const Secret* s = FindSecret(pod.config, from.secret_ref->name);
      if (!s) {
        if (from.secret_ref->optional.value_or(false)) continue;
        return Error(where + ": secret \"" + from.secret_ref->name + "\" not found");
      }
      data = &s->data;
    } else {
      continue;
    }
    for (const auto& [key, value] : *data) {
      std::string name = from.prefix + key;
      if (!IsEnvVarName(name)) continue;
      Set(env, name, value);
    }
  }
  for (std::size_t i = 0; i < container.env.size(); ++i) {
    const EnvVar& var = container.env[i];
    std::string where = "env[" + std::to_string(i) + "] (" + var.name + ")";
    if (!var.value.empty() || !var.value_from) {
      Set(env, var.name, ExpandEnvRefs(var.value, env));
      continue;
    }
    const EnvVarSource& src = *var.value_from;
    Result<std::string> value = Error("");
    if (src.field_ref) {
      value = ResolveFieldRef(pod, *src.field_ref, node);
    } else if (src.resource_field_ref) {
      value = ResolveResourceFieldRef(pod, &container, *src.resource_field_ref, node);
    } else if (src.config_map_key_ref) {
      const KeySelector& ref = *src.config_map_key_ref;
      const ConfigMap* cm = FindConfigMap(pod.config, ref.name);
      std::optional<std::string> v = cm ? ConfigMapValue(*cm, ref.key) : std::nullopt;
      if (!v) {
        if (ref.optional.value_or(false)) continue;
        return Error(where + ": key \"" + ref.key + "\" of configmap \"" + ref.name +
                     "\" not found");
      }
      value = std::move(*v);
    } else if (src.secret_key_ref) {
      const KeySelector& ref = *src.secret_key_ref;
      const Secret* s = FindSecret(pod.config, ref.name);
      auto it = s ? s->data.find(ref.key) : decltype(s->data.end()){};
      if (!s || it == s->data.end()) {
        if (ref.optional.value_or(false)) continue;
        return Error(where + ": key \"" + ref.key + "\" of secret \"" + ref.name + "\" not found");
      }
      value = it->second;
    } else {
      continue;
    }
    if (!value) return value.error().Wrap(where);
    Set(env, var.name, std::move(*value));
  }
  return env;
}

std::vector<std::string> EnvReferences(std::string_view text) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] != '$') continue;
    if (text[i + 1] == '$') {
      ++i;  // an escaped '$'
      continue;
    }
    if (text[i + 1] != '(') continue;
    std::size_t close = text.find(')', i + 2);
    if (close == std::string_view::npos) break;
    out.emplace_back(text.substr(i + 2, close - i - 2));
    i = close;
  }
  return out;
}

Result<std::string> ExpandSubPathExpr(std::string_view expr, const EnvPairs& env) {
  std::string missing;
  for (const std::string& name : EnvReferences(expr)) {
    auto it =
        std::find_if(env.begin(), env.end(), [&](const auto& kv) { return kv.first == name; });
    if (it == env.end() || it->second.empty()) missing += (missing.empty() ? "" : ", ") + name;
  }
  if (!missing.empty()) return Error("subPathExpr: missing value for " + missing);
  return ExpandEnvRefs(expr, env);
}

FieldWarnings EnvFromWarnings(const Pod& pod) {
  FieldWarnings out;
  auto check = [&](const std::vector<Container>& list, const char* list_name) {
    for (std::size_t c = 0; c < list.size(); ++c) {
      for (std::size_t i = 0; i < list[c].env_from.size(); ++i) {
        const EnvFromSource& from = list[c].env_from[i];
        const std::map<std::string, std::string>* data = nullptr;
        std::string object;
        if (from.config_map_ref) {
          if (const ConfigMap* cm = FindConfigMap(pod.config, from.config_map_ref->name)) {
            data = &cm->data;
          }
          object = "configmap/" + from.config_map_ref->name;
        } else if (from.secret_ref) {
          if (const Secret* s = FindSecret(pod.config, from.secret_ref->name)) data = &s->data;
          object = "secret/" + from.secret_ref->name;
        }
        if (!data) continue;
        std::string skipped;
        for (const auto& [key, value] : *data) {
          if (!IsEnvVarName(from.prefix + key)) {
            skipped += (skipped.empty() ? "" : ", ") + from.prefix + key;
          }
        }
        if (skipped.empty()) continue;
        std::string field = std::string("spec.") + list_name;
        field.append("[").append(std::to_string(c)).append("].envFrom[");
        field.append(std::to_string(i)).append("]");
        std::string message = "keys [" + skipped + "] from ";
        message.append(object).append(
            " are skipped: they are not valid environment variable names");
        out.push_back({std::move(field), std::move(message)});
      }
    }
  };
  check(pod.spec.init_containers, "initContainers");
  check(pod.spec.containers, "containers");
  return out;
}

}  // namespace podvisor::pod
