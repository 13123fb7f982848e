#include "image/oci_layout.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/fd.h"

namespace podvisor::image {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr std::string_view kRefNameAnnotation = "org.opencontainers.image.ref.name";
// containerd's limits for documents it reads whole.
constexpr std::size_t kMaxIndexBytes = 4 << 20;
constexpr std::size_t kMaxConfigBytes = 16 << 20;
// An index pointing at an index pointing at ... is legal but never deep;
// the bound only guards against a cycle of descriptors.
constexpr int kMaxIndexDepth = 8;

bool IsIndexType(std::string_view t) {
  return t == "application/vnd.oci.image.index.v1+json" ||
         t == "application/vnd.docker.distribution.manifest.list.v2+json";
}
bool IsManifestType(std::string_view t) {
  return t == "application/vnd.oci.image.manifest.v1+json" ||
         t == "application/vnd.docker.distribution.manifest.v2+json";
}

std::optional<LayerCompression> CompressionOf(std::string_view t) {
  // The non-distributable ("foreign") variants have the same bytes.
  for (std::string_view base : {"application/vnd.oci.image.layer.v1.",
                                "application/vnd.oci.image.layer.nondistributable.v1."}) {
    if (t.substr(0, base.size()) != base) continue;
    std::string_view rest = t.substr(base.size());
    if (rest == "tar") return LayerCompression::kNone;
    if (rest == "tar+gzip") return LayerCompression::kGzip;
    if (rest == "tar+zstd") return LayerCompression::kZstd;
  }
  if (t == "application/vnd.docker.image.rootfs.diff.tar.gzip" ||
      t == "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip") {
    return LayerCompression::kGzip;
  }
  return std::nullopt;
}

Result<json> ParseJson(const std::string& text, const std::string& what) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error(what + ": not valid JSON");
  if (!doc.is_object()) return Error(what + ": must be a JSON object");
  return doc;
}

std::string StringField(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Result<Descriptor> DecodeDescriptor(const json& d, const std::string& where) {
  if (!d.is_object()) return Error(where + ": must be an object");
  Descriptor out;
  out.media_type = StringField(d, "mediaType");
  auto digest = ParseDigest(StringField(d, "digest"));
  if (!digest) return digest.error().Wrap(where + ".digest");
  out.digest = *digest;
  auto size = d.find("size");
  if (size == d.end() || !size->is_number_integer() || size->get<int64_t>() < 0) {
    return Error(where + ".size: must be a non-negative integer (blob " + out.digest.ToString() +
                 ")");
  }
  out.size = size->get<int64_t>();
  if (auto p = d.find("platform"); p != d.end() && p->is_object()) {
    out.platform = Platform{StringField(*p, "os"), StringField(*p, "architecture"),
                            StringField(*p, "variant")};
  }
  if (auto a = d.find("annotations"); a != d.end() && a->is_object()) {
    if (auto r = a->find(kRefNameAnnotation); r != a->end() && r->is_string()) {
      out.ref_name = r->get<std::string>();
    }
  }
  return out;
}

Result<std::vector<Descriptor>> DecodeManifestList(const json& index, const std::string& what) {
  auto it = index.find("manifests");
  if (it == index.end() || !it->is_array()) return Error(what + ": manifests: must be an array");
  std::vector<Descriptor> out;
  for (std::size_t i = 0; i < it->size(); ++i) {
    auto d = DecodeDescriptor((*it)[i], what + ": manifests[" + std::to_string(i) + "]");
    if (!d) return d.take_error();
    out.push_back(std::move(*d));
  }
  if (out.empty()) return Error(what + ": lists no manifests");
  return out;
}

bool PlatformMatches(const Platform& have, const Platform& want) {
  if (have.os != want.os || have.architecture != want.architecture) return false;
  return want.variant.empty() || have.variant.empty() || have.variant == want.variant;
}

std::string RefNames(const std::vector<Descriptor>& list) {
  std::string out;
  for (const auto& d : list) {
    if (d.ref_name.empty()) continue;
    out += (out.empty() ? "" : ", ") + d.ref_name;
  }
  return out.empty() ? "none" : out;
}

// Among several descriptors of one index, the one for `tag` (top level
// only) and then for `platform`.
Result<Descriptor> Choose(const std::vector<Descriptor>& list, std::string_view tag, bool by_tag,
                          const Platform& platform, const std::string& what) {
  // A digest ("sha256:...") names one manifest or index: the one listed
  // here, or (in an index of platform manifests) one further down.
  if (tag.find(':') != std::string_view::npos) {
    for (const auto& d : list) {
      if (d.digest.ToString() == tag) return d;
    }
    if (!by_tag) return Error(what + " has no manifest " + std::string(tag));
    // Not at the top: let a nested index find it (ResolveLayout keeps
    // looking by digest there), when there is exactly one entry to follow.
    if (list.size() == 1) return list.front();
    return Error(what + " has no manifest " + std::string(tag));
  }
  if (list.size() == 1) return list.front();
  std::vector<Descriptor> candidates = list;
  bool tagged = false;
  for (const auto& d : list) tagged = tagged || !d.ref_name.empty();
  if (by_tag && tagged) {
    std::string want = tag.empty() ? "latest" : std::string(tag);
    candidates.clear();
    for (const auto& d : list) {
      bool suffix =
          d.ref_name.size() > want.size() && d.ref_name.compare(d.ref_name.size() - want.size() - 1,
                                                                std::string::npos, ":" + want) == 0;
      if (d.ref_name == want || suffix) candidates.push_back(d);
    }
    if (candidates.empty()) {
      return Error(what + " has no manifest tagged \"" + want + "\" (tags: " + RefNames(list) +
                   ")");
    }
    if (candidates.size() == 1) return candidates.front();
  }
  for (const auto& d : candidates) {
    if (d.platform && PlatformMatches(*d.platform, platform)) return d;
  }
  return Error(what + " lists " + std::to_string(candidates.size()) + " manifests and none for " +
               platform.ToString());
}

Status CheckConfigPlatform(const std::string& config_json, const Descriptor& config,
                           const Platform& platform) {
  auto doc = ParseJson(config_json, "image config " + config.digest.ToString());
  if (!doc) return doc.take_error();
  Platform have{StringField(*doc, "os"), StringField(*doc, "architecture"),
                StringField(*doc, "variant")};
  if (have.os.empty() || have.architecture.empty()) return Ok();
  if (!PlatformMatches(have, platform)) {
    return Error("image config " + config.digest.ToString() + " is for " + have.ToString() +
                 ", this host runs " + platform.ToString());
  }
  return Ok();
}

// S14.8: rootfs.diff_ids is required (image-spec config.md) and lists one
// digest per layer, in the manifest's order; each is checked against the
// layer's uncompressed stream when the layer is unpacked (layer_unpack.h).
Status DecodeDiffIds(const std::string& config_json, ResolvedLayout& out) {
  std::string what = "image config " + out.config.digest.ToString() + ": rootfs.diff_ids";
  auto doc = ParseJson(config_json, "image config " + out.config.digest.ToString());
  if (!doc) return doc.take_error();
  auto rootfs = doc->find("rootfs");
  const json* ids = nullptr;
  if (rootfs != doc->end() && rootfs->is_object()) {
    auto it = rootfs->find("diff_ids");
    if (it != rootfs->end()) ids = &*it;
  }
  if (ids == nullptr || !ids->is_array()) return Error(what + ": must be an array");
  if (ids->size() != out.layers.size()) {
    return Error(what + " lists " + std::to_string(ids->size()) + " digests for the manifest's " +
                 std::to_string(out.layers.size()) + " layers");
  }
  for (std::size_t i = 0; i < ids->size(); ++i) {
    auto digest = ParseDigest((*ids)[i].is_string() ? (*ids)[i].get<std::string>() : "");
    if (!digest) return digest.take_error().Wrap(what + "[" + std::to_string(i) + "]");
    out.layers[i].diff_id = std::move(*digest);
  }
  return Ok();
}

Status DecodeManifest(const json& doc, ResolvedLayout& out) {
  std::string what = "manifest " + out.manifest.digest.ToString();
  auto config = doc.find("config");
  if (config == doc.end()) return Error(what + ": config: missing");
  auto c = DecodeDescriptor(*config, what + ": config");
  if (!c) return c.take_error();
  out.config = std::move(*c);
  auto layers = doc.find("layers");
  if (layers == doc.end() || !layers->is_array()) return Error(what + ": layers: must be an array");
  for (std::size_t i = 0; i < layers->size(); ++i) {
    std::string where = what + ": layers[" + std::to_string(i) + "]";
    auto d = DecodeDescriptor((*layers)[i], where);
    if (!d) return d.take_error();
    auto compression = CompressionOf(d->media_type);
    if (!compression) {
      return Error(where + ": layer " + d->digest.ToString() + " has unsupported media type \"" +
                   d->media_type + "\"");
    }
    out.layers.push_back({std::move(*d), *compression, std::nullopt});
  }
  return Ok();
}

}  // namespace

std::string Platform::ToString() const {
  return os + "/" + architecture + (variant.empty() ? "" : "/" + variant);
}

Platform HostPlatform() {
  struct utsname u {};
  ::uname(&u);
  std::string machine = u.machine;
  std::string arch = machine, variant;
  if (machine == "x86_64") {
    arch = "amd64";
  } else if (machine == "aarch64") {
    arch = "arm64";
  } else if (machine == "i386" || machine == "i686") {
    arch = "386";
  } else if (machine.rfind("armv7", 0) == 0) {
    arch = "arm";
    variant = "v7";
  } else if (machine.rfind("armv6", 0) == 0) {
    arch = "arm";
    variant = "v6";
  }
  return {"linux", arch, variant};
}

bool IsOciLayout(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "oci-layout", ec);
}

fs::path BlobPath(const fs::path& dir, const Digest& digest) {
  return dir / "blobs" / digest.algorithm / digest.hex;
}

Result<std::string> ReadBlob(const fs::path& dir, const Descriptor& desc, std::size_t max_size) {
  std::string name = "blob " + desc.digest.ToString();
  if (desc.size > static_cast<int64_t>(max_size)) {
    return Error(name + " is " + std::to_string(desc.size) + " bytes, more than the " +
                 std::to_string(max_size) + " a " +
                 (desc.media_type.empty() ? "document" : desc.media_type) + " may have");
  }
  fs::path path = BlobPath(dir, desc.digest);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::FromErrno(name + " is missing: " + path.string());
  std::string data;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno(name + ": reading " + path.string());
    if (n == 0) break;
    data.append(buf, static_cast<std::size_t>(n));
    if (data.size() > max_size)
      return Error(name + ": " + path.string() + " is larger than its descriptor says");
  }
  if (auto s = CheckBlob(desc.digest, desc.size, HashHex(desc.digest.algorithm, data), data.size());
      !s) {
    return s.take_error();
  }
  return data;
}

std::string TagOf(std::string_view reference) {
  // A digest reference ("debian@sha256:...") selects by digest (Choose).
  if (std::size_t at = reference.find('@'); at != std::string_view::npos) {
    return std::string(reference.substr(at + 1));
  }
  std::size_t slash = reference.rfind('/');
  std::string_view last = slash == std::string_view::npos ? reference : reference.substr(slash + 1);
  std::size_t colon = last.rfind(':');
  return colon == std::string_view::npos ? "" : std::string(last.substr(colon + 1));
}

Result<ResolvedLayout> ResolveLayout(const fs::path& dir, std::string_view tag,
                                     const Platform& platform) {
  ResolvedLayout out;
  out.dir = dir;
  std::string where = "OCI layout " + dir.string();
  auto index_text = [&]() -> Result<std::string> {
    Fd fd(::open((dir / "index.json").c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return Error::FromErrno(where + ": reading index.json");
    std::string data;
    char buf[65536];
    ssize_t n;
    while ((n = ::read(fd.get(), buf, sizeof buf)) > 0) {
      data.append(buf, static_cast<std::size_t>(n));
      if (data.size() > kMaxIndexBytes) return Error(where + ": index.json is too large");
    }
    if (n < 0) return Error::FromErrno(where + ": reading index.json");
    return data;
  }();
  if (!index_text) return index_text.take_error();
  auto index = ParseJson(*index_text, where + ": index.json");
  if (!index) return index.take_error();
  auto list = DecodeManifestList(*index, where + ": index.json");
  if (!list) return list.take_error();
  auto chosen = Choose(*list, tag, /*by_tag=*/true, platform, where + ": index.json");
  if (!chosen) return chosen.take_error();
  Descriptor desc = std::move(*chosen);

  for (int depth = 0;; ++depth) {
    if (depth > kMaxIndexDepth) return Error(where + ": image indexes nested too deep");
    auto text = ReadBlob(dir, desc, kMaxIndexBytes);
    if (!text) return text.take_error().Wrap(where);
    std::string what = "blob " + desc.digest.ToString();
    auto doc = ParseJson(*text, what);
    if (!doc) return doc.take_error().Wrap(where);
    // The descriptor's mediaType decides; a document that lacks one is
    // told apart by its fields (both are optional in the spec).
    std::string type = desc.media_type.empty() ? StringField(*doc, "mediaType") : desc.media_type;
    bool is_index = IsIndexType(type) || (type.empty() && doc->contains("manifests"));
    if (is_index) {
      auto nested = DecodeManifestList(*doc, "image index " + desc.digest.ToString());
      if (!nested) return nested.take_error().Wrap(where);
      auto next =
          Choose(*nested, tag, /*by_tag=*/false, platform, "image index " + desc.digest.ToString());
      if (!next) return next.take_error().Wrap(where);
      desc = std::move(*next);
      continue;
    }
    if (!IsManifestType(type) && !(type.empty() && doc->contains("layers"))) {
      std::string msg = where;
      msg.append(": ").append(what).append(" has unsupported media type \"").append(type) += '"';
      return Error(msg);
    }
    out.manifest = desc;
    if (auto s = DecodeManifest(*doc, out); !s) return s.take_error().Wrap(where);
    break;
  }
  auto config = ReadBlob(dir, out.config, kMaxConfigBytes);
  if (!config) return config.take_error().Wrap(where);
  out.config_json = std::move(*config);
  if (auto s = CheckConfigPlatform(out.config_json, out.config, platform); !s) {
    return s.take_error().Wrap(where);
  }
  if (auto s = DecodeDiffIds(out.config_json, out); !s) return s.take_error().Wrap(where);
  return out;
}

}  // namespace podvisor::image
