#include "pod/config_objects.h"

#include <algorithm>
#include <array>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "pod/parse.h"
#include "pod/validate_internal.h"

namespace podvisor::pod {
namespace {

using nlohmann::json;

// The API server's limit on a ConfigMap's or Secret's data (etcd values).
constexpr std::size_t kMaxConfigBytes = 1024 * 1024;

// validation.IsConfigMapKey, which Secrets share.
std::vector<std::string> ConfigKeyMessages(std::string_view key) {
  std::vector<std::string> out;
  if (key.size() > 253) out.emplace_back("must be no more than 253 characters");
  bool chars_ok = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
  if (!chars_ok) {
    out.emplace_back(
        "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
        "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
        "'[-._a-zA-Z0-9]+')");
  }
  if (key == ".") {
    out.emplace_back("must not be '.'");
  } else if (key == "..") {
    out.emplace_back("must not be '..'");
  } else if (key.starts_with("..")) {
    out.emplace_back("must not start with '..'");
  }
  return out;
}

class ObjectDecoder {
 public:
  ObjectDecoder(const json& doc, const std::string& source, FieldErrors& errors,
                FieldWarnings& warnings)
      : doc_(doc), source_(source), errors_(errors), warnings_(warnings) {}

  void Decode(ConfigObjects& objects) {
    kind_ = doc_.value("kind", "");
    is_secret_ = kind_ == "Secret";
    const json* meta = Member("metadata");
    std::string name;
    if (meta && meta->is_object()) {
      if (auto it = meta->find("name"); it != meta->end() && it->is_string()) name = *it;
    }
    // kubectl's resource/name, lower case: "secret/db-password".
    std::string lower = is_secret_ ? "secret" : "configmap";
    prefix_ = lower + "/" + (name.empty() ? "<unnamed> in " + source_ : name) + ": ";
    if (name.empty()) {
      Add(Required("metadata.name"));
    } else {
      AddEach("metadata.name", QuoteValue(name), internal::Dns1123SubdomainMessages(name));
    }
    if (std::string v = doc_.value("apiVersion", ""); v != "v1") {
      Add(Unsupported("apiVersion", QuoteValue(v), {"v1"}));
    }
    for (const auto& [key, value] : doc_.items()) {
      static constexpr std::array<std::string_view, 5> kCommon = {"apiVersion", "kind", "metadata",
                                                                  "data", "immutable"};
      bool known = std::find(kCommon.begin(), kCommon.end(), key) != kCommon.end() ||
                   (is_secret_ ? key == "stringData" || key == "type" : key == "binaryData");
      if (!known) warnings_.push_back({prefix_ + key, "unknown field"});
    }

    bool immutable = false;
    if (const json* v = Member("immutable")) {
      if (v->is_boolean()) {
        immutable = *v;
      } else {
        Add({FieldErrorType::kTypeInvalid, "immutable", "", "must be a boolean"});
      }
    }
    std::map<std::string, std::string> data, binary;
    Strings("data", /*base64=*/is_secret_, data);
    if (is_secret_) {
      // stringData is write-only in the API: merged over data, key by key.
      std::map<std::string, std::string> string_data;
      Strings("stringData", false, string_data);
      for (auto& [k, v] : string_data) data[k] = std::move(v);
    } else {
      Strings("binaryData", true, binary);
      for (const auto& [k, v] : binary) {
        if (data.contains(k)) {
          Add(Invalid("data[" + k + "]", QuoteValue(k), "duplicate of key present in binaryData"));
        }
      }
    }
    std::size_t total = 0;
    for (const auto* m : {&data, &binary}) {
      for (const auto& [k, v] : *m) total += k.size() + v.size();
    }
    if (total > kMaxConfigBytes) {
      Add(TooLong(is_secret_ ? "data" : "[data, binaryData]", kMaxConfigBytes));
    }

    if (is_secret_) {
      Secret secret;
      secret.name = name;
      secret.data = std::move(data);
      secret.immutable = immutable;
      if (const json* t = Member("type")) {
        if (t->is_string()) {
          if (!t->get_ref<const std::string&>().empty()) secret.type = *t;
        } else {
          Add({FieldErrorType::kTypeInvalid, "type", "", "must be a string"});
        }
      }
      Insert(objects.secrets, std::move(secret), name);
    } else {
      ConfigMap cm;
      cm.name = name;
      cm.data = std::move(data);
      cm.binary_data = std::move(binary);
      cm.immutable = immutable;
      Insert(objects.config_maps, std::move(cm), name);
    }
  }

 private:
  const json* Member(std::string_view key) const {
    auto it = doc_.find(key);
    if (it == doc_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  void Add(FieldError e) {
    e.field = prefix_ + e.field;
    errors_.push_back(std::move(e));
  }
  void AddEach(const std::string& field, const std::string& value,
               const std::vector<std::string>& msgs) {
    for (const std::string& m : msgs) Add(Invalid(field, value, m));
  }

  // A map of strings; base64-decoded when `base64`. A Secret's values are
  // never quoted in an error.
  void Strings(const std::string& field, bool base64, std::map<std::string, std::string>& out) {
    const json* v = Member(field);
    if (!v) return;
    if (!v->is_object()) {
      Add({FieldErrorType::kTypeInvalid, field, "", "must be a mapping of keys to strings"});
      return;
    }
    for (const auto& [key, value] : v->items()) {
      std::string path = field;
      path.append("[").append(key).append("]");
      AddEach(path, QuoteValue(key), ConfigKeyMessages(key));
      if (value.is_null()) {
        out[key] = "";
        continue;
      }
      if (!value.is_string()) {
        Add({FieldErrorType::kTypeInvalid, path, is_secret_ ? "" : value.dump(),
             "must be a string (quote numbers and booleans in YAML)"});
        continue;
      }
      const std::string& text = value.get_ref<const std::string&>();
      if (!base64) {
        out[key] = text;
        continue;
      }
      std::optional<std::string> bytes = DecodeBase64(text);
      if (!bytes) {
        Add(Invalid(path, is_secret_ ? "<secret value>" : QuoteValue(text),
                    "not valid base64" +
                        std::string(is_secret_ ? " (put plain text in stringData instead)" : "")));
        continue;
      }
      out[key] = std::move(*bytes);
    }
  }

  template <typename T>
  void Insert(std::map<std::string, T>& into, T object, const std::string& name) {
    if (name.empty()) return;
    auto [it, inserted] = into.emplace(name, std::move(object));
    if (!inserted) {
      Add(Duplicate("metadata.name", QuoteValue(name)));
      errors_.back().detail =
          "a " + kind_ + " of this name is already defined (again in " + source_ + ")";
    }
  }

  const json& doc_;
  const std::string& source_;
  FieldErrors& errors_;
  FieldWarnings& warnings_;
  std::string kind_;
  bool is_secret_ = false;
  std::string prefix_;
};

}  // namespace

bool IsConfigObjectKind(std::string_view kind) {
  return kind == "ConfigMap" || kind == "Secret";
}

void DecodeConfigObject(const json& doc, const std::string& source, ConfigObjects& objects,
                        FieldErrors& errors, FieldWarnings& warnings) {
  ObjectDecoder(doc, source, errors, warnings).Decode(objects);
}

Status ReadConfigFile(const std::filesystem::path& file, std::optional<std::string_view> only_kind,
                      ConfigObjects& objects, FieldErrors& errors, FieldWarnings& warnings) {
  auto documents = ReadManifestDocuments(file);
  if (!documents) return documents.take_error();
  if (documents->empty()) return Error(file.string() + ": no ConfigMap or Secret in the file");
  for (std::size_t i = 0; i < documents->size(); ++i) {
    const json& doc = (*documents)[i];
    std::string kind = doc.is_object() ? doc.value("kind", "") : "";
    bool wanted = only_kind ? kind == *only_kind : IsConfigObjectKind(kind);
    if (!wanted) {
      std::string expected =
          only_kind ? "a " + std::string(*only_kind) : std::string("a ConfigMap or a Secret");
      std::string message = file.string();
      message.append(": document ").append(std::to_string(i + 1)).append(" is ");
      message.append(kind.empty() ? std::string("not a Kubernetes object") : "a " + kind);
      message.append("; expected ").append(expected);
      return Error(message);
    }
    DecodeConfigObject(doc, file.string(), objects, errors, warnings);
  }
  return Ok();
}

Status ReadBundleConfigDir(const std::filesystem::path& bundle, ConfigObjects& objects,
                           FieldErrors& errors, FieldWarnings& warnings) {
  std::filesystem::path dir = bundle / "config";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return Ok();
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string ext = entry.path().extension().string();
    if (ext == ".yaml" || ext == ".yml" || ext == ".json") files.push_back(entry.path());
  }
  if (ec) return Error("reading " + dir.string() + ": " + ec.message(), ec.value());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    if (Status s = ReadConfigFile(f, std::nullopt, objects, errors, warnings); !s) return s;
  }
  return Ok();
}

std::optional<std::string> DecodeBase64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  // Go's StdEncoding skips '\r' and '\n' (YAML folded values carry them).
  std::string clean;
  clean.reserve(text.size());
  for (char c : text) {
    if (c != '\n' && c != '\r') clean.push_back(c);
  }
  if (clean.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(clean.size() / 4 * 3);
  for (std::size_t i = 0; i < clean.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      char c = clean[i + j];
      if (c == '=') {
        // Padding only at the very end, in the last two positions.
        if (i + 4 != clean.size() || j < 2) return std::nullopt;
        ++pad;
        v[j] = 0;
      } else {
        if (pad > 0) return std::nullopt;
        v[j] = value(c);
        if (v[j] < 0) return std::nullopt;
      }
    }
    uint32_t n =
        (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    out.push_back(static_cast<char>(n >> 16));
    if (pad < 2) out.push_back(static_cast<char>((n >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(n & 0xff));
  }
  return out;
}

std::string EncodeBase64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = uint32_t(static_cast<unsigned char>(bytes[i])) << 16;
    if (i + 1 < bytes.size()) n |= uint32_t(static_cast<unsigned char>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) n |= uint32_t(static_cast<unsigned char>(bytes[i + 2]));
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back(i + 2 < bytes.size() ? kAlphabet[n & 63] : '=');
  }
  return out;
}

bool IsClusterCaOfTokenVolume(const ProjectedVolumeSource& projected,
                              const ConfigMapVolumeSource& source) {
  return source.name == "kube-root-ca.crt" &&
         std::any_of(projected.sources.begin(), projected.sources.end(),
                     [](const VolumeProjection& p) { return p.service_account_token; });
}

const ConfigMap* FindConfigMap(const ConfigObjects& objects, const std::string& name) {
  auto it = objects.config_maps.find(name);
  return it == objects.config_maps.end() ? nullptr : &it->second;
}

const Secret* FindSecret(const ConfigObjects& objects, const std::string& name) {
  auto it = objects.secrets.find(name);
  return it == objects.secrets.end() ? nullptr : &it->second;
}

std::optional<std::string> ConfigMapValue(const ConfigMap& cm, const std::string& key) {
  if (auto it = cm.data.find(key); it != cm.data.end()) return it->second;
  if (auto it = cm.binary_data.find(key); it != cm.binary_data.end()) return it->second;
  return std::nullopt;
}

std::map<std::string, std::string> ConfigMapEntries(const ConfigMap& cm) {
  std::map<std::string, std::string> out = cm.data;
  for (const auto& [k, v] : cm.binary_data) out.emplace(k, v);
  return out;
}

}  // namespace podvisor::pod
