// DecodePod, and the JSON-value half of its Decoder (decode_internal.h):
// scalars, lists, maps and enumerations, and how a bad value is reported.
// The model types' field tables are in decode_model.cc.
//
// Kubernetes quirks kept on purpose:
//  - null means "absent" for every field, as Go's encoding/json treats it;
//  - an integral float (80.0, what YAML tools sometimes emit) is accepted
//    for integer fields, a fractional one is not;
//  - quantities may be JSON numbers (`cpu: 1`, `memory: 1.5e9`);
//  - "" for pod restartPolicy and terminationMessagePolicy means the
//    default, as the API server's defaulting does.
#include <cmath>
#include <limits>

#include "pod/decode_internal.h"
#include "pod/parse.h"

namespace podvisor::pod {
namespace internal {

// The value part of an error line: strings quoted, numbers as written,
// containers abbreviated.
std::string Decoder::RenderValue(const json& v) {
  if (v.is_string()) return QuoteValue(v.get_ref<const std::string&>());
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "+Inf" : "-Inf";
  }
  std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 64) {
    // Cut at a character boundary: the value may end up in JSON output.
    std::size_t cut = 61;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
    text = text.substr(0, cut) + "...";
  }
  return text;
}

void Decoder::TypeError(const std::string& path, const json& v, std::string detail) {
  errors.push_back({FieldErrorType::kTypeInvalid, path, RenderValue(v), std::move(detail)});
}

void Decoder::Unknown(const std::string& key, const std::string& path,
                      std::span<const IgnoredField> ignored) {
  for (const IgnoredField& f : ignored) {
    if (f.name == key) {
      warnings.push_back({path, std::string(f.reason)});
      return;
    }
  }
  warnings.push_back({path, "unknown field"});
}

// Scalars.

bool Decoder::Decode(const json& v, const std::string& path, std::string& out) {
  if (v.is_null()) return false;
  if (!v.is_string()) {
    TypeError(path, v, "must be a string");
    return false;
  }
  out = v.get<std::string>();
  return true;
}

bool Decoder::Decode(const json& v, const std::string& path, bool& out) {
  if (v.is_null()) return false;
  if (!v.is_boolean()) {
    TypeError(path, v, "must be a boolean");
    return false;
  }
  out = v.get<bool>();
  return true;
}

template <typename Int>
bool Decoder::DecodeInteger(const json& v, const std::string& path, Int& out) {
  using Limits = std::numeric_limits<Int>;
  if (v.is_null()) return false;
  auto out_of_range = [&] {
    TypeError(path, v,
              "must be an integer between " + std::to_string(Limits::min()) + " and " +
                  std::to_string(Limits::max()));
    return false;
  };
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(Limits::max())) return out_of_range();
    out = static_cast<Int>(u);
  } else if (v.is_number_integer()) {
    auto i = v.get<int64_t>();
    if (i < Limits::min() || i > Limits::max()) return out_of_range();
    out = static_cast<Int>(i);
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::trunc(d)) {
      TypeError(path, v, "must be an integer");
      return false;
    }
    // -2^63 and 2^63 are exact doubles; max() is not.
    if (d < static_cast<double>(Limits::min()) || d >= -static_cast<double>(Limits::min())) {
      return out_of_range();
    }
    out = static_cast<Int>(d);
  } else {
    TypeError(path, v, "must be an integer");
    return false;
  }
  return true;
}
bool Decoder::Decode(const json& v, const std::string& path, int32_t& out) {
  return DecodeInteger(v, path, out);
}
bool Decoder::Decode(const json& v, const std::string& path, int64_t& out) {
  return DecodeInteger(v, path, out);
}

bool Decoder::Decode(const json& v, const std::string& path, IntOrString& out) {
  if (v.is_null()) return false;
  if (v.is_string()) {
    out = IntOrString::String(v.get<std::string>());
    return true;
  }
  if (!v.is_number()) {
    TypeError(path, v, "must be an integer or a string");
    return false;
  }
  int32_t port = 0;
  if (!Decode(v, path, port)) return false;
  out = IntOrString::Int(port);
  return true;
}

bool Decoder::Decode(const json& v, const std::string& path, Quantity& out) {
  if (v.is_null()) return false;
  std::string text;
  if (v.is_string()) {
    text = v.get<std::string>();
  } else if (v.is_number() && (!v.is_number_float() || std::isfinite(v.get<double>()))) {
    // Kubernetes reads `cpu: 1` and `memory: 1.5e9` through the quantity
    // parser too; dump() gives the shortest exact spelling.
    text = v.dump();
  } else {
    TypeError(path, v, "must be a quantity: a string such as \"500m\" or \"128Mi\", or a number");
    return false;
  }
  Result<Quantity> q = Quantity::Parse(text);
  if (!q) {
    errors.push_back(Invalid(path, RenderValue(v), q.error().message()));
    return false;
  }
  out = *q;
  return true;
}

// Maps.

bool Decoder::Decode(const json& v, const std::string& path,
                     std::map<std::string, std::string>& out) {
  if (v.is_null()) return false;
  if (!v.is_object()) {
    TypeError(path, v, "must be an object of strings");
    return false;
  }
  for (const auto& [key, value] : v.items()) {
    std::string text;
    Decode(value, Key(path, key), text);
    out[key] = std::move(text);
  }
  return true;
}

bool Decoder::Decode(const json& v, const std::string& path, ResourceList& out) {
  if (v.is_null()) return false;
  if (!v.is_object()) {
    TypeError(path, v, "must be an object of resource quantities");
    return false;
  }
  for (const auto& [name, value] : v.items()) {
    Quantity q;
    if (!Decode(value, Key(path, name), q)) continue;
    if (name == "cpu") {
      out.cpu = q;
    } else if (name == "memory") {
      out.memory = q;
    } else {
      out.other[name] = q;
    }
  }
  return true;
}

// Enumerations.

bool Decoder::DecodeRestartPolicy(const json& v, const std::string& path, RestartPolicy& out,
                                  bool empty_is_default,
                                  const std::vector<std::string>& supported) {
  std::string name;
  if (!Decode(v, path, name)) return false;
  if (name == "Always" || (empty_is_default && name.empty())) {
    out = RestartPolicy::kAlways;
  } else if (name == "OnFailure") {
    out = RestartPolicy::kOnFailure;
  } else if (name == "Never") {
    out = RestartPolicy::kNever;
  } else {
    errors.push_back(Unsupported(path, QuoteValue(name), supported));
    return false;
  }
  return true;
}

bool Decoder::Decode(const json& v, const std::string& path, TerminationMessagePolicy& out) {
  std::string name;
  if (!Decode(v, path, name)) return false;
  if (name == "File" || name.empty()) {
    out = TerminationMessagePolicy::kFile;
  } else if (name == "FallbackToLogsOnError") {
    out = TerminationMessagePolicy::kFallbackToLogsOnError;
  } else {
    errors.push_back(Unsupported(path, QuoteValue(name), {"File", "FallbackToLogsOnError"}));
    return false;
  }
  return true;
}

}  // namespace internal

ParseOutput DecodePod(const nlohmann::json& doc) {
  ParseOutput out;
  internal::Decoder decoder;
  try {
    decoder.DecodeRoot(doc, out.pod);
  } catch (const std::exception& e) {
    // Only allocation failure can get here (every json access above is
    // type-checked first); report it rather than unwind past the API.
    decoder.errors.push_back(
        {FieldErrorType::kInvalid, "<manifest>", "", std::string("decoding failed: ") + e.what()});
  }
  out.errors = std::move(decoder.errors);
  out.warnings = std::move(decoder.warnings);
  return out;
}

}  // namespace podvisor::pod
