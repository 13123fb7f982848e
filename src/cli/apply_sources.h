// What `podvisor apply -f DIR|FILE` reads, and the bundles it writes
// (docs/SEMANTICS.md S18.1, S18.2): the manifest documents of a directory
// (or one file) split into pods (a Pod or a workload kind) and the
// ConfigMaps and Secrets beside them, and for each pod a bundle of its own
// under the state directory: pod.json, the ConfigMaps and Secrets it uses
// in config/, and images/ as a symlink to the directory's images/.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace podvisor::cli::apply {

struct PodDocument {
  std::string name;    // metadata.name ("" when it has none: an error line says so)
  std::string source;  // "FILE" or "FILE (document N)", for messages
  nlohmann::json doc;
};

struct ManifestSet {
  std::vector<PodDocument> pods;
  std::vector<nlohmann::json> config_objects;  // ConfigMap and Secret documents
  std::filesystem::path images;                // DIR/images when it exists, else empty
  // Files that cannot be read or parsed, documents without a name, a pod
  // named twice: each an invalid manifest (exit 2), naming the file. The
  // pods they name are left as they are.
  std::vector<std::string> errors;
  std::vector<std::string> invalid_pods;  // names of pods whose document is in error
  std::vector<std::string> warnings;      // kinds apply does not run, skipped
};

// The files of `path` in name order: a directory's manifest files
// (IsManifestFileName, not recursive), or the one file given.
std::vector<std::filesystem::path> ManifestFiles(const std::filesystem::path& path);

// Reads every document of ManifestFiles(path). An error only when `path`
// itself cannot be read.
Result<ManifestSet> ReadManifests(const std::filesystem::path& path);

// Writes the bundle of `pod` into `dir` (which must not exist yet; made
// 0700): pod.json, config/<kind>-<name>.json (0600) for each ConfigMap and
// Secret of `set` the pod uses (all documents of that name, so a duplicate
// is reported by loading), and the images symlink.
Status WriteBundle(const std::filesystem::path& dir, const PodDocument& pod,
                   const ManifestSet& set);

// Copies the bundle `from` to `to` (replacing it), through a temporary
// sibling renamed into place; symlinks stay symlinks.
Status CopyBundle(const std::filesystem::path& from, const std::filesystem::path& to);

// Moves `from` to `to`, replacing what is there.
Status ReplaceDir(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace podvisor::cli::apply
