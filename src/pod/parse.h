// Reading a manifest (pod.yaml or pod.json) into the typed model.
//
// YAML is first converted to JSON (plain scalars typed by the YAML 1.2 core
// schema, quoted scalars kept as strings), so both formats go through one
// decoder. Decoding never throws and never stops at the first problem:
// wrong types and malformed quantities become FieldErrors with their field
// path, unknown fields become FieldWarnings, and whatever could be decoded
// is still returned so validation can report the rest.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/result.h"
#include "pod/field_error.h"
#include "pod/model.h"

namespace podvisor::pod {

enum class ManifestFormat { kYaml, kJson };

struct ParseOutput {
  Pod pod;  // pod.config holds the ConfigMaps and Secrets read with it
  FieldErrors errors;
  FieldWarnings warnings;
  // When the pod is a workload's template (workloads.h): where the pod's
  // spec is in the file, "spec.template"; validation errors about the pod
  // go through PointAtTemplate with it. Empty for a plain Pod.
  std::string template_path;
};

// Syntax errors (not YAML/JSON at all, not a mapping, no pod or more than
// one) are an Error naming the line; everything else lands in ParseOutput.
// A YAML manifest may hold, besides exactly one Pod or workload (a
// Deployment, Job, ...), any number of ConfigMap and Secret documents.
Result<ParseOutput> ParseManifest(std::string_view text, ManifestFormat format);

// Reads MANIFEST, or BUNDLE/pod.yaml or BUNDLE/pod.json when given a
// directory (both present is an error), and then BUNDLE/config/*.yaml
// (config_objects.h). The format follows the extension; ".yml" and ".yaml"
// are YAML, anything else is tried as JSON then YAML.
Result<ParseOutput> ParseManifestFile(const std::filesystem::path& path);

// The documents of a YAML or JSON file, format by extension as above;
// errors name the file.
Result<std::vector<nlohmann::json>> ReadManifestDocuments(const std::filesystem::path& file);

// YAML text to JSON (exposed for tests and for the fuzzer): exactly one
// document.
Result<nlohmann::json> YamlToJson(std::string_view text);
// Every non-empty document of a YAML stream, in order.
Result<std::vector<nlohmann::json>> YamlToJsonDocuments(std::string_view text);

// JSON text to a document, with the same guards as YamlToJson: nesting
// depth, duplicate keys, errors with line and column.
Result<nlohmann::json> ParseJsonText(std::string_view text);

// Guards against pathological input: a Pod nests about 8 levels deep, so
// anything past this is rejected before it reaches a recursive algorithm.
constexpr int kMaxManifestDepth = 64;
// Manifest files larger than this are refused unread.
constexpr std::size_t kMaxManifestBytes = 4 * 1024 * 1024;

// Decodes an already-parsed JSON document.
ParseOutput DecodePod(const nlohmann::json& doc);

}  // namespace podvisor::pod
