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

#include <nlohmann/json_fwd.hpp>

#include "common/result.h"
#include "pod/field_error.h"
#include "pod/model.h"

namespace podvisor::pod {

enum class ManifestFormat { kYaml, kJson };

struct ParseOutput {
  Pod pod;
  FieldErrors errors;
  FieldWarnings warnings;
};

// Syntax errors (not YAML/JSON at all, not a mapping, several documents)
// are an Error naming the line; everything else lands in ParseOutput.
Result<ParseOutput> ParseManifest(std::string_view text, ManifestFormat format);

// Reads MANIFEST, or BUNDLE/pod.yaml or BUNDLE/pod.json when given a
// directory (both present is an error). The format follows the extension;
// ".yml" and ".yaml" are YAML, anything else is tried as JSON then YAML.
Result<ParseOutput> ParseManifestFile(const std::filesystem::path& path);

// YAML text to JSON (exposed for tests and for the fuzzer).
Result<nlohmann::json> YamlToJson(std::string_view text);

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
