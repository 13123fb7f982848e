// Reading a manifest: the file of a bundle (pod.yaml or pod.json) or one
// given by path, its format picked from the extension; JSON text through
// nlohmann with the guards YamlToJson (yaml_to_json.cc) applies to YAML;
// and the ParseManifest entry points that hand the document to DecodePod.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "pod/config_objects.h"
#include "pod/parse.h"
#include "pod/workloads.h"

namespace podvisor::pod {
namespace {

using nlohmann::json;

// Thrown from nlohmann's parse callback to stop the parse early; never
// leaves this file.
struct JsonGuardViolation {
  std::string message;
};

Result<std::string> ReadWholeFile(const std::filesystem::path& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd) return Error::FromErrno("opening " + path.string());
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::FromErrno("inspecting " + path.string());
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > kMaxManifestBytes) {
    return Error(path.string() + ": the manifest is larger than 4 MiB");
  }
  // Read with a cap even for regular files: /proc files and FIFOs report no
  // size, and a file may grow while it is read.
  std::string content;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno("reading " + path.string());
    }
    if (n == 0) break;
    content.append(buf, static_cast<std::size_t>(n));
    if (content.size() > kMaxManifestBytes) {
      return Error(path.string() + ": the manifest is larger than 4 MiB");
    }
  }
  return content;
}

bool PathExists(const std::filesystem::path& path) {
  // symlink_status: a dangling pod.yaml link still counts as "given", so
  // the user hears that it cannot be opened rather than that it is missing.
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::symlink_status(path, ec));
}

}  // namespace

Result<nlohmann::json> ParseJsonText(std::string_view text) {
  // One set of keys per open object, to catch duplicates that nlohmann
  // would silently resolve to the last one.
  std::vector<std::set<std::string>> open_objects;
  auto guard = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxManifestDepth) {
          throw JsonGuardViolation{"nesting deeper than " + std::to_string(kMaxManifestDepth) +
                                   " levels"};
        }
        if (event == json::parse_event_t::object_start) open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case json::parse_event_t::key:
        if (!open_objects.empty() && parsed.is_string() &&
            !open_objects.back().insert(parsed.get_ref<const std::string&>()).second) {
          throw JsonGuardViolation{"duplicate key " +
                                   QuoteValue(parsed.get_ref<const std::string&>())};
        }
        break;
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), guard);
  } catch (const JsonGuardViolation& v) {
    return Error(v.message);
  } catch (const json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..."
    std::string_view what = e.what();
    constexpr std::string_view kMarker = "parse error at ";
    if (auto at = what.find(kMarker); at != std::string_view::npos) {
      return Error(std::string(what.substr(at + kMarker.size())));
    }
    return Error(std::string(what));
  } catch (const std::exception& e) {
    return Error(std::string("JSON: ") + e.what());
  }
}

namespace {

// The documents of TEXT. Kubernetes manifests are UTF-8. YAML hands over
// bytes as they are, and every later dump of the pod (status, events,
// config.json) would throw on invalid UTF-8 (found by the fuzzer): refuse
// it here, once.
Result<std::vector<json>> ParseDocuments(std::string_view text, ManifestFormat format) {
  std::vector<json> docs;
  if (format == ManifestFormat::kJson) {
    Result<json> doc = ParseJsonText(text);
    if (!doc) return doc.take_error();
    if (!doc->is_null()) docs.push_back(std::move(*doc));
  } else {
    auto yaml = YamlToJsonDocuments(text);
    if (!yaml) return yaml.take_error();
    docs = std::move(*yaml);
  }
  for (const json& doc : docs) {
    try {
      (void)doc.dump();
    } catch (const json::type_error& e) {
      return Error(std::string("the manifest is not valid UTF-8: ") + e.what());
    }
  }
  return docs;
}

std::string KindOf(const json& doc) {
  auto it = doc.find("kind");
  return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Sorts the documents of one manifest: config objects into pod.config, the
// one Pod or workload into the pod.
Result<ParseOutput> DecodeDocuments(const std::vector<json>& docs, const std::string& source) {
  if (docs.empty()) return Error("manifest is empty");
  ParseOutput out;
  const json* pod_doc = nullptr;
  std::size_t pod_index = 0;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const json& doc = docs[i];
    if (!doc.is_object()) {
      return Error(std::string("the manifest must be a mapping (a v1 Pod object), not ") +
                   (doc.is_array() ? "a list" : "a scalar") +
                   (docs.size() > 1 ? " (document " + std::to_string(i + 1) + ")" : ""));
    }
    std::string kind = KindOf(doc);
    if (IsConfigObjectKind(kind)) {
      DecodeConfigObject(doc, source, out.pod.config, out.errors, out.warnings);
      continue;
    }
    if (kind == "Service" && docs.size() > 1) {
      out.warnings.push_back({"document " + std::to_string(i + 1) + " (Service)",
                              "ignored: podvisor runs one pod and has no Services"});
      continue;
    }
    if (pod_doc) {
      return Error("documents " + std::to_string(pod_index + 1) + " and " + std::to_string(i + 1) +
                   " are both a pod or workload; podvisor runs exactly one pod (the other "
                   "documents may be ConfigMaps and Secrets)");
    }
    pod_doc = &doc;
    pod_index = i;
  }
  if (!pod_doc) {
    return Error(
        "the manifest holds no Pod or workload (Deployment, Job, ...), only ConfigMaps "
        "and Secrets");
  }
  if (IsWorkloadKind(KindOf(*pod_doc))) {
    json template_pod;
    std::optional<JobLimits> job;
    out.template_path = UnwrapWorkload(*pod_doc, template_pod, out.errors, out.warnings, job);
    ParseOutput decoded = DecodePod(template_pod);
    decoded.pod.job = job;
    PointAtTemplate(out.template_path, decoded.errors, decoded.warnings);
    ConfigObjects config = std::move(out.pod.config);
    out.pod = std::move(decoded.pod);
    out.pod.config = std::move(config);
    for (auto& e : decoded.errors) out.errors.push_back(std::move(e));
    for (auto& w : decoded.warnings) out.warnings.push_back(std::move(w));
    return out;
  }
  ParseOutput decoded = DecodePod(*pod_doc);
  decoded.pod.config = std::move(out.pod.config);
  // Config object problems first, in document order, then the pod's.
  for (auto& e : decoded.errors) out.errors.push_back(std::move(e));
  for (auto& w : decoded.warnings) out.warnings.push_back(std::move(w));
  out.pod = std::move(decoded.pod);
  return out;
}

Result<std::vector<json>> DocumentsOfFile(const std::filesystem::path& file,
                                          const std::string& text) {
  std::string ext = file.extension().string();
  if (ext == ".yaml" || ext == ".yml") return ParseDocuments(text, ManifestFormat::kYaml);
  if (ext == ".json") return ParseDocuments(text, ManifestFormat::kJson);
  // Unknown extension: JSON first (strict, better messages for JSON), then
  // YAML, whose error is the one reported since YAML accepts JSON.
  auto docs = ParseDocuments(text, ManifestFormat::kJson);
  if (!docs) docs = ParseDocuments(text, ManifestFormat::kYaml);
  return docs;
}

}  // namespace

Result<ParseOutput> ParseManifest(std::string_view text, ManifestFormat format) {
  auto docs = ParseDocuments(text, format);
  if (!docs) return docs.take_error();
  return DecodeDocuments(*docs, "the manifest");
}

Result<std::vector<json>> ReadManifestDocuments(const std::filesystem::path& file) {
  Result<std::string> text = ReadWholeFile(file);
  if (!text) return text.take_error();
  auto docs = DocumentsOfFile(file, *text);
  if (!docs) return docs.take_error().Wrap(file.string());
  return docs;
}

Result<ParseOutput> ParseManifestFile(const std::filesystem::path& path) {
  std::filesystem::path manifest = path;
  std::error_code ec;
  bool is_bundle = std::filesystem::is_directory(path, ec);
  if (is_bundle) {
    std::filesystem::path yaml = path / "pod.yaml", json_path = path / "pod.json";
    bool has_yaml = PathExists(yaml), has_json = PathExists(json_path);
    if (has_yaml && has_json) {
      return Error("both " + yaml.string() + " and " + json_path.string() +
                   " exist; a bundle holds exactly one manifest");
    }
    if (!has_yaml && !has_json) {
      return Error("no pod.yaml or pod.json in bundle " + path.string(), ENOENT);
    }
    manifest = has_yaml ? yaml : json_path;
  }
  Result<std::string> text = ReadWholeFile(manifest);
  if (!text) return text.take_error();
  auto docs = DocumentsOfFile(manifest, *text);
  if (!docs) return docs.take_error().Wrap(manifest.string());
  Result<ParseOutput> parsed = DecodeDocuments(*docs, manifest.filename().string());
  if (!parsed) return parsed.take_error().Wrap(manifest.string());
  if (is_bundle) {
    if (Status s = ReadBundleConfigDir(path, parsed->pod.config, parsed->errors, parsed->warnings);
        !s) {
      return s.take_error();
    }
  }
  return parsed;
}

}  // namespace podvisor::pod
