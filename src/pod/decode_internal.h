// Shared between the two files of DecodePod: parse.cc reads JSON values into
// C++ values (strings, integers, quantities, lists, maps, enumerations) with
// the Kubernetes quirks listed there; decode_model.cc maps each model type's
// JSON members onto its fields through field tables, and says which
// Kubernetes fields podvisor knowingly ignores and why.
//
// Decoder is the one object a DecodePod call builds. There is one overloaded
// Decode() per model type, so a field reads as
// `Decode(value, path, container.name)` whatever its type. Decode returns
// whether the value was present (not null) and of the right JSON type;
// problems are collected in `errors` and `warnings`, never thrown, and
// decoding goes on with the next field so one run reports everything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "pod/field_error.h"
#include "pod/model.h"

namespace podvisor::pod::internal {

using json = nlohmann::json;

// A Kubernetes field podvisor knows and deliberately does not implement.
// It gets a warning that says why, instead of "unknown field".
struct IgnoredField {
  std::string_view name;
  std::string_view reason;
};

// Field tables for Decoder::Struct(): Field("name", &Container::name) reads
// the JSON member "name" into that model member with Decode().
template <typename T, typename M>
struct MemberField {
  std::string_view name;
  M T::*member;
};
template <typename T, typename M>
MemberField<T, M> Field(std::string_view name, M T::*member) {
  return {name, member};
}

// A member that needs more than Decode(): FN(value, path).
template <typename Fn>
struct CustomField {
  std::string_view name;
  Fn fn;
};
template <typename Fn>
CustomField<Fn> Custom(std::string_view name, Fn fn) {
  return {name, std::move(fn)};
}

// The members of a Handler (exec, httpGet, ...), inlined into T.
template <typename T>
struct HandlerFields {
  Handler T::*member;
};
template <typename T>
HandlerFields<T> Handlers(Handler T::*member) {
  return {member};
}

class Decoder {
 public:
  FieldErrors errors;
  FieldWarnings warnings;

  // decode_model.cc: the top-level Pod object.
  void DecodeRoot(const json& doc, Pod& pod);

 private:
  // S13: the init-container annotations of Kubernetes 1.3–1.5.
  void DecodeInitContainerAnnotations(Pod& pod);

  // Field paths as the API server prints them: spec.containers[0].name,
  // and map keys (resource names, labels) in brackets:
  // resources.limits[memory].
  static std::string Child(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }
  static std::string Index(const std::string& path, std::size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }
  static std::string Key(const std::string& path, std::string_view key) {
    return path + "[" + std::string(key) + "]";
  }

  // --- parse.cc: errors, scalars, containers of values, enumerations -------

  static std::string RenderValue(const json& v);
  void TypeError(const std::string& path, const json& v, std::string detail);
  void Unknown(const std::string& key, const std::string& path,
               std::span<const IgnoredField> ignored);

  // Calls FIELD(key, value, path) for every member of the object V; FIELD
  // returns false for a key it does not know.
  template <typename Fn>
  bool Fields(const json& v, const std::string& path, std::span<const IgnoredField> ignored,
              Fn&& field) {
    if (v.is_null()) return false;
    if (!v.is_object()) {
      TypeError(path, v, "must be an object");
      return false;
    }
    for (const auto& [key, value] : v.items()) {
      std::string child = Child(path, key);
      if (!field(key, value, child)) Unknown(key, child, ignored);
    }
    return true;
  }

  bool Decode(const json& v, const std::string& path, std::string& out);
  bool Decode(const json& v, const std::string& path, bool& out);
  template <typename Int>
  bool DecodeInteger(const json& v, const std::string& path, Int& out);
  bool Decode(const json& v, const std::string& path, int32_t& out);
  bool Decode(const json& v, const std::string& path, int64_t& out);
  bool Decode(const json& v, const std::string& path, IntOrString& out);
  bool Decode(const json& v, const std::string& path, Quantity& out);

  template <typename T>
  bool Decode(const json& v, const std::string& path, std::optional<T>& out) {
    if (v.is_null()) return false;
    // Decoded in place: moving a decoded T into `out` made GCC 12 at -O3
    // report its strings as maybe-uninitialized (a false positive that
    // stopped a packager's `--buildtype=release` build).
    std::optional<T> decoded(std::in_place);
    if (!Decode(v, path, *decoded)) return false;
    out.swap(decoded);
    return true;
  }

  template <typename T>
  bool Decode(const json& v, const std::string& path, std::vector<T>& out) {
    if (v.is_null()) return false;
    if (!v.is_array()) {
      TypeError(path, v, "must be a list");
      return false;
    }
    out.clear();
    for (std::size_t i = 0; i < v.size(); ++i) {
      // A null entry decodes to the zero value, as in Go.
      T item{};
      Decode(v[i], Index(path, i), item);
      out.push_back(std::move(item));
    }
    return true;
  }

  bool Decode(const json& v, const std::string& path, std::map<std::string, std::string>& out);
  bool Decode(const json& v, const std::string& path, ResourceList& out);

  bool DecodeRestartPolicy(const json& v, const std::string& path, RestartPolicy& out,
                           bool empty_is_default, const std::vector<std::string>& supported);
  bool Decode(const json& v, const std::string& path, TerminationMessagePolicy& out);

  // --- Field tables: Struct() maps each JSON member to a Decode() of the
  // named model member.

  template <typename T, typename... Specs>
  bool Struct(const json& v, const std::string& path, T& obj, std::span<const IgnoredField> ignored,
              const Specs&... specs) {
    return Fields(v, path, ignored,
                  [&](const std::string& key, const json& value, const std::string& child) {
                    return (Apply(specs, key, value, child, obj) || ...);
                  });
  }

  template <typename T, typename M>
  bool Apply(const MemberField<T, M>& f, const std::string& key, const json& value,
             const std::string& path, T& obj) {
    if (key != f.name) return false;
    Decode(value, path, obj.*f.member);
    return true;
  }

  template <typename Fn, typename T>
  bool Apply(const CustomField<Fn>& f, const std::string& key, const json& value,
             const std::string& path, T&) {
    if (key != f.name) return false;
    f.fn(value, path);
    return true;
  }

  // Probes and hooks carry their handler's members inline. All five kinds
  // are read everywhere; validation says which kind is not allowed where.
  template <typename T>
  bool Apply(const HandlerFields<T>& f, const std::string& key, const json& value,
             const std::string& path, T& obj) {
    Handler& h = obj.*f.member;
    return Apply(Field("exec", &Handler::exec), key, value, path, h) ||
           Apply(Field("httpGet", &Handler::http_get), key, value, path, h) ||
           Apply(Field("tcpSocket", &Handler::tcp_socket), key, value, path, h) ||
           Apply(Field("grpc", &Handler::grpc), key, value, path, h) ||
           Apply(Field("sleep", &Handler::sleep), key, value, path, h);
  }

  // --- decode_model.cc: one field table per model type ---------------------

  // The pod and its spec.
  bool Decode(const json& v, const std::string& path, ObjectMeta& meta);
  bool Decode(const json& v, const std::string& path, PodSpec& spec);
  bool Decode(const json& v, const std::string& path, PodReadinessGate& gate);
  bool Decode(const json& v, const std::string& path, PodOS& os);
  bool Decode(const json& v, const std::string& path, PodDNSConfig& dns);
  bool Decode(const json& v, const std::string& path, PodDNSConfigOption& option);
  bool Decode(const json& v, const std::string& path, HostAlias& alias);
  bool Decode(const json& v, const std::string& path, LocalObjectReference& ref);
  bool Decode(const json& v, const std::string& path, Volume& volume);
  bool Decode(const json& v, const std::string& path, EmptyDirVolumeSource& dir);
  bool Decode(const json& v, const std::string& path, HostPathVolumeSource& host);
  bool Decode(const json& v, const std::string& path, KeyToPath& item);
  bool Decode(const json& v, const std::string& path, ConfigMapVolumeSource& source);
  bool Decode(const json& v, const std::string& path, SecretVolumeSource& source);
  bool Decode(const json& v, const std::string& path, DownwardAPIVolumeFile& file);
  bool Decode(const json& v, const std::string& path, DownwardAPIVolumeSource& source);
  bool Decode(const json& v, const std::string& path, VolumeProjection& projection);
  bool Decode(const json& v, const std::string& path, ProjectedVolumeSource& source);
  bool Decode(const json& v, const std::string& path, Sysctl& sysctl);
  bool Decode(const json& v, const std::string& path, PodSecurityContext& sc);
  bool Decode(const json& v, const std::string& path, SeccompProfile& profile);
  bool Decode(const json& v, const std::string& path, AppArmorProfile& profile);

  // Containers, their probes and lifecycle hooks.
  bool Decode(const json& v, const std::string& path, Container& c);
  bool Decode(const json& v, const std::string& path, EnvVar& env);
  bool Decode(const json& v, const std::string& path, EnvVarSource& source);
  bool Decode(const json& v, const std::string& path, ObjectFieldSelector& selector);
  bool Decode(const json& v, const std::string& path, ResourceFieldSelector& selector);
  bool Decode(const json& v, const std::string& path, KeySelector& selector);
  bool Decode(const json& v, const std::string& path, EnvFromSource& source);
  bool Decode(const json& v, const std::string& path, ObjectReference& ref);
  bool Decode(const json& v, const std::string& path, ContainerPort& port);
  bool Decode(const json& v, const std::string& path, ContainerResizePolicy& policy);
  bool Decode(const json& v, const std::string& path, ResourceRequirements& r);
  bool Decode(const json& v, const std::string& path, VolumeMount& mount);
  bool Decode(const json& v, const std::string& path, ExecAction& exec);
  bool Decode(const json& v, const std::string& path, HttpHeader& header);
  bool Decode(const json& v, const std::string& path, HttpGetAction& get);
  bool Decode(const json& v, const std::string& path, TcpSocketAction& tcp);
  bool Decode(const json& v, const std::string& path, GrpcAction& grpc);
  bool Decode(const json& v, const std::string& path, SleepAction& sleep);
  bool Decode(const json& v, const std::string& path, ReasonDelivery& delivery);
  bool Decode(const json& v, const std::string& path, LifecycleHandler& hook);
  bool Decode(const json& v, const std::string& path, Lifecycle& lifecycle);
  bool Decode(const json& v, const std::string& path, Probe& probe);
  bool Decode(const json& v, const std::string& path, Capabilities& caps);
  bool Decode(const json& v, const std::string& path, SecurityContext& sc);
};

}  // namespace podvisor::pod::internal
