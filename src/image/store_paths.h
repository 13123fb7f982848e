// The names of the layer store's files (layer_store.h has the layout) and
// the record files' JSON, shared by the store's parts. Internal to image/.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "image/digest.h"
#include "image/layer_store.h"

namespace podvisor::image::store {

inline constexpr std::string_view kLayers = "layers";
inline constexpr std::string_view kImages = "images";
inline constexpr std::string_view kFlat = "flat";
inline constexpr std::string_view kTrees = "trees";
inline constexpr std::string_view kNames = "names.json";
inline constexpr std::string_view kStoreLock = "store.lock";
inline constexpr std::string_view kRecordsLock = "records.lock";
inline constexpr std::string_view kPartialSuffix = ".partial";

// STORE/<kind>/<alg>/<hex><suffix>: a digest names a file only once
// ParseDigest accepted it (no '/', no "..").
inline std::filesystem::path EntryPath(const std::filesystem::path& root, std::string_view kind,
                                       const Digest& digest, std::string_view suffix = "") {
  return root / kind / digest.algorithm / (digest.hex + std::string(suffix));
}
// STORE/<kind>/<alg>/.<hex>.partial: the scratch an entry is built in.
inline std::filesystem::path ScratchPath(const std::filesystem::path& root, std::string_view kind,
                                         const Digest& digest) {
  return root / kind / digest.algorithm / ("." + digest.hex + std::string(kPartialSuffix));
}

// The record file's text, and back. A record that does not parse is an
// error naming `file`.
std::string RecordJson(const ImageRecord& record);
Result<ImageRecord> ParseRecord(std::string_view text, const std::filesystem::path& file);

// names.json: reference -> manifest digest. Absent: empty.
Result<std::map<std::string, std::string>> ReadNames(const std::filesystem::path& root);
Status WriteNames(const std::filesystem::path& root,
                  const std::map<std::string, std::string>& names);

// Reads every byte left on `fd`, at most `limit` (a caller's pipe must
// reach EOF; /dev/zero must not keep us).
void DrainFd(int fd, uint64_t limit);

}  // namespace podvisor::image::store
