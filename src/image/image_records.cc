// The layer store's image records and names (layer_store.h): one JSON
// file per manifest digest and names.json, each replaced atomically while
// records.lock is held, so two pulls finishing at once lose neither's
// names (S16.1).
#include <sys/file.h>
#include <sys/stat.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "common/file_io.h"
#include "common/mounts.h"
#include "image/layer_store.h"
#include "image/store_paths.h"

namespace podvisor::image {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Image configs are kilobytes; a record holds one and a few names.
constexpr std::size_t kRecordMax = 4 << 20;
constexpr std::size_t kNamesMax = 16 << 20;

std::vector<std::string> Union(std::vector<std::string> a, const std::vector<std::string>& b) {
  for (const auto& x : b) {
    if (std::find(a.begin(), a.end(), x) == a.end()) a.push_back(x);
  }
  return a;
}

// The names names.json points at `manifest`, sorted.
std::vector<std::string> NamesOf(const std::map<std::string, std::string>& names,
                                 std::string_view manifest) {
  std::vector<std::string> out;
  for (const auto& [name, digest] : names) {
    if (digest == manifest) out.push_back(name);
  }
  return out;
}

std::optional<ImageRecord> ReadRecord(const fs::path& root, const Digest& manifest,
                                      const std::map<std::string, std::string>& names) {
  fs::path file = store::EntryPath(root, store::kImages, manifest, ".json");
  auto text = ReadFileBounded(file, kRecordMax);
  if (!text) return std::nullopt;
  auto record = store::ParseRecord(*text, file);
  if (!record || record->manifest_digest != manifest.ToString()) return std::nullopt;
  record->names = NamesOf(names, record->manifest_digest);
  return std::move(*record);
}

}  // namespace

namespace store {

std::string RecordJson(const ImageRecord& record) {
  json ids = json::array();
  for (const auto& id : record.diff_ids) ids.push_back(id.ToString());
  json doc = {{"manifest_digest", record.manifest_digest},
              {"config", record.config_json},
              {"diff_ids", ids},
              {"names", record.names},
              {"repo_digests", record.repo_digests},
              {"compressed_size", record.compressed_size},
              {"unpacked_size", record.unpacked_size}};
  return doc.dump(2) + "\n";
}

Result<ImageRecord> ParseRecord(std::string_view text, const fs::path& file) {
  json doc = json::parse(text, nullptr, false);
  auto bad = [&](const std::string& why) { return Error(file.string() + ": " + why); };
  if (!doc.is_object()) return bad("not a JSON object");
  ImageRecord r;
  try {
    r.manifest_digest = doc.at("manifest_digest").get<std::string>();
    r.config_json = doc.at("config").get<std::string>();
    for (const auto& id : doc.at("diff_ids")) {
      auto digest = ParseDigest(id.get<std::string>());
      if (!digest) return bad(digest.error().message());
      r.diff_ids.push_back(std::move(*digest));
    }
    r.names = doc.value("names", std::vector<std::string>{});
    r.repo_digests = doc.value("repo_digests", std::vector<std::string>{});
    r.compressed_size = doc.value("compressed_size", uint64_t{0});
    r.unpacked_size = doc.value("unpacked_size", uint64_t{0});
  } catch (const json::exception& e) {
    return bad(e.what());
  }
  return r;
}

Result<std::map<std::string, std::string>> ReadNames(const fs::path& root) {
  const fs::path file = root / kNames;
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) return std::map<std::string, std::string>{};
  auto text = ReadFileBounded(file, kNamesMax);
  if (!text) return text.take_error();
  json doc = json::parse(*text, nullptr, false);
  std::map<std::string, std::string> names;
  if (!doc.is_object()) return Error(file.string() + ": not a JSON object");
  for (const auto& [name, digest] : doc.items()) {
    if (digest.is_string()) names[name] = digest.get<std::string>();
  }
  return names;
}

Status WriteNames(const fs::path& root, const std::map<std::string, std::string>& names) {
  json doc = json::object();
  for (const auto& [name, digest] : names) doc[name] = digest;
  return WriteFileAtomic(root / kNames, doc.dump(2) + "\n", 0600);
}

}  // namespace store

Status LayerStore::PutImage(const ImageRecord& record) {
  const std::string what = "recording image " + record.manifest_digest;
  auto manifest = ParseDigest(record.manifest_digest);
  if (!manifest) return manifest.take_error().Wrap(what);
  for (const auto& id : record.diff_ids) {
    if (!HasLayer(id)) return Error(what + ": layer " + id.ToString() + " is not in the store");
  }
  if (auto s = MakeDirs(root_ / store::kImages / manifest->algorithm, 0700); !s) {
    return s.take_error().Wrap(what);
  }
  // WriteFileAtomic's temporary name is fixed: one writer at a time.
  auto lock = LockNamedFile(root_ / store::kRecordsLock, LOCK_EX, /*create=*/true);
  if (!lock) return lock.take_error().Wrap(what);
  auto names = store::ReadNames(root_);
  if (!names) return names.take_error().Wrap(what);
  ImageRecord merged = record;
  if (auto old = ReadRecord(root_, *manifest, *names)) {
    merged.names = Union(old->names, record.names);
    merged.repo_digests = Union(old->repo_digests, record.repo_digests);
  }
  for (const auto& name : record.names) (*names)[name] = record.manifest_digest;
  merged.names = NamesOf(*names, record.manifest_digest);
  if (auto s = WriteFileAtomic(store::EntryPath(root_, store::kImages, *manifest, ".json"),
                               store::RecordJson(merged), 0600);
      !s) {
    return s.take_error().Wrap(what);
  }
  if (auto s = store::WriteNames(root_, *names); !s) return s.take_error().Wrap(what);
  return Ok();
}

std::optional<ImageRecord> LayerStore::FindByManifest(std::string_view manifest_digest) const {
  auto digest = ParseDigest(manifest_digest);
  if (!digest) return std::nullopt;
  auto names = store::ReadNames(root_);
  return ReadRecord(root_, *digest, names ? *names : std::map<std::string, std::string>{});
}

std::optional<ImageRecord> LayerStore::FindByName(std::string_view name) const {
  auto names = store::ReadNames(root_);
  if (!names) return std::nullopt;
  auto it = names->find(std::string(name));
  if (it == names->end()) return std::nullopt;
  auto digest = ParseDigest(it->second);
  if (!digest) return std::nullopt;
  return ReadRecord(root_, *digest, *names);
}

std::vector<ImageRecord> LayerStore::List() const {
  auto names = store::ReadNames(root_);
  const auto all_names = names ? *names : std::map<std::string, std::string>{};
  std::vector<ImageRecord> out;
  std::error_code ec;
  for (const auto& alg : fs::directory_iterator(root_ / store::kImages, ec)) {
    for (const auto& file : fs::directory_iterator(alg.path(), ec)) {
      const fs::path& p = file.path();
      if (p.extension() != ".json") continue;
      auto digest = ParseDigest(alg.path().filename().string() + ":" + p.stem().string());
      if (!digest) continue;
      if (auto record = ReadRecord(root_, *digest, all_names)) out.push_back(std::move(*record));
    }
  }
  std::sort(out.begin(), out.end(), [](const ImageRecord& a, const ImageRecord& b) {
    return a.manifest_digest < b.manifest_digest;
  });
  return out;
}

}  // namespace podvisor::image
