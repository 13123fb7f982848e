// Builds OCI image layouts for tests, locally (no registry here): tar
// layers written with libarchive, blobs stored under their sha256, and
// manifests, configs and indexes as JSON.
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "image/digest.h"

namespace podvisor::image::testing {

namespace fs = std::filesystem;
using nlohmann::json;

struct TarEntry {
  enum Kind { kFile, kDir, kSymlink, kHardlink, kFifo } kind = kFile;
  std::string path;
  std::string data;  // file content, or the link target
  int mode = 0644;
  int uid = 0, gid = 0;
};

inline TarEntry File(std::string path, std::string data, int mode = 0644) {
  return {TarEntry::kFile, std::move(path), std::move(data), mode};
}
inline TarEntry Dir(std::string path, int mode = 0755) {
  return {TarEntry::kDir, std::move(path), {}, mode};
}
inline TarEntry Symlink(std::string path, std::string target) {
  return {TarEntry::kSymlink, std::move(path), std::move(target), 0777};
}
inline TarEntry Hardlink(std::string path, std::string target) {
  return {TarEntry::kHardlink, std::move(path), std::move(target), 0644};
}
inline TarEntry Fifo(std::string path) {
  return {TarEntry::kFifo, std::move(path), {}, 0644};
}

// `data` as one gzip member (zlib), so a gzip layer's uncompressed stream
// is exactly the plain tar, whose digest is the layer's diff_id.
inline std::string Gzip(const std::string& data) {
  z_stream z{};
  deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// A tar (gzip-compressed unless `gzip` is false) of `entries`, in order.
inline std::string MakeTar(const std::vector<TarEntry>& entries, bool gzip = true) {
  std::string out;
  struct archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  archive_write_open(
      a, &out, nullptr,
      [](struct archive*, void* client, const void* buf, size_t n) -> la_ssize_t {
        static_cast<std::string*>(client)->append(static_cast<const char*>(buf), n);
        return static_cast<la_ssize_t>(n);
      },
      nullptr);
  for (const auto& t : entries) {
    struct archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, t.path.c_str());
    archive_entry_set_uid(e, t.uid);
    archive_entry_set_gid(e, t.gid);
    archive_entry_set_mtime(e, 1700000000, 0);
    switch (t.kind) {
      case TarEntry::kFile:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, static_cast<la_int64_t>(t.data.size()));
        break;
      case TarEntry::kDir:
        archive_entry_set_filetype(e, AE_IFDIR);
        break;
      case TarEntry::kSymlink:
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_symlink(e, t.data.c_str());
        break;
      case TarEntry::kHardlink:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_hardlink(e, t.data.c_str());
        break;
      case TarEntry::kFifo:
        archive_entry_set_filetype(e, AE_IFIFO);
        break;
    }
    archive_entry_set_perm(e, static_cast<mode_t>(t.mode));
    archive_write_header(a, e);
    if (t.kind == TarEntry::kFile) archive_write_data(a, t.data.data(), t.data.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  return gzip ? Gzip(out) : out;
}

class LayoutBuilder {
 public:
  explicit LayoutBuilder(fs::path dir) : dir_(std::move(dir)) {
    fs::create_directories(dir_ / "blobs" / "sha256");
    Write(dir_ / "oci-layout", R"({"imageLayoutVersion": "1.0.0"})");
  }
  const fs::path& dir() const { return dir_; }

  // Stores `data` as a blob; returns its descriptor.
  json Blob(const std::string& data, const std::string& media_type) {
    std::string hex = HashHex("sha256", data);
    Write(dir_ / "blobs" / "sha256" / hex, data);
    return {{"mediaType", media_type},
            {"digest", "sha256:" + hex},
            {"size", static_cast<int64_t>(data.size())}};
  }
  json Layer(const std::vector<TarEntry>& entries, bool gzip = true) {
    json desc = Blob(MakeTar(entries, gzip), gzip ? "application/vnd.oci.image.layer.v1.tar+gzip"
                                                  : "application/vnd.oci.image.layer.v1.tar");
    diff_ids_[desc["digest"]] = "sha256:" + HashHex("sha256", MakeTar(entries, false));
    return desc;
  }
  // A config whose rootfs.diff_ids are those of `layers` (made by Layer()).
  json Config(const json& config, const std::string& arch = "amd64",
              const std::vector<json>& layers = {}) {
    json ids = json::array();
    for (const auto& l : layers) ids.push_back(diff_ids_.at(l["digest"].get<std::string>()));
    json doc = {{"architecture", arch},
                {"os", "linux"},
                {"config", config},
                {"rootfs", {{"type", "layers"}, {"diff_ids", ids}}}};
    return Blob(doc.dump(), "application/vnd.oci.image.config.v1+json");
  }
  // A manifest of `layers` with a config that lists their diff_ids.
  json ManifestWith(const json& config, const std::vector<json>& layers,
                    const std::string& arch = "amd64") {
    return Manifest(Config(config, arch, layers), layers);
  }
  json Manifest(const json& config, const std::vector<json>& layers) {
    json doc = {{"schemaVersion", 2},
                {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                {"config", config},
                {"layers", layers}};
    return Blob(doc.dump(), "application/vnd.oci.image.manifest.v1+json");
  }
  json Index(const std::vector<json>& manifests) {
    json doc = {{"schemaVersion", 2},
                {"mediaType", "application/vnd.oci.image.index.v1+json"},
                {"manifests", manifests}};
    return Blob(doc.dump(), "application/vnd.oci.image.index.v1+json");
  }
  static json WithPlatform(json desc, const std::string& arch) {
    desc["platform"] = {{"os", "linux"}, {"architecture", arch}};
    return desc;
  }
  static json WithTag(json desc, const std::string& tag) {
    desc["annotations"] = {{"org.opencontainers.image.ref.name", tag}};
    return desc;
  }
  void WriteIndex(const std::vector<json>& manifests) {
    json doc = {{"schemaVersion", 2}, {"manifests", manifests}};
    Write(dir_ / "index.json", doc.dump());
  }
  // A one-manifest layout for this host's platform.
  json Simple(const std::vector<std::vector<TarEntry>>& layers,
              const json& config = json::object()) {
    std::vector<json> descs;
    descs.reserve(layers.size());
    for (const auto& l : layers) descs.push_back(Layer(l));
    json manifest = ManifestWith(config, descs);
    WriteIndex({manifest});
    return manifest;
  }
  fs::path BlobFile(const json& desc) const {
    std::string digest = desc["digest"];
    return dir_ / "blobs" / "sha256" / digest.substr(7);
  }

  static void Write(const fs::path& path, const std::string& data) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << data;
  }

 private:
  fs::path dir_;
  std::map<std::string, std::string> diff_ids_;  // layer digest -> diff_id
};

// A fresh temp dir per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::path(::testing::TempDir()) /
            ("podvisor-oci-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace podvisor::image::testing
