// `podvisor pack`: a bundle directory as an OCI image layout
// (bundle_image.h). The output is reproducible: entries in byte order of
// their names, mtime 0, owner 0:0 for the bundle's own files, permission
// bits reduced to 0644/0755 for them, JSON with sorted keys, and no
// creation time in the config. A rootfs image keeps its numeric owners and
// modes: they are part of the image.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "image/blob_writer.h"
#include "image/bundle_image.h"
#include "image/tar_writer.h"
#include "pod/bundle.h"

namespace podvisor::image {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kManifestType = "application/vnd.oci.image.manifest.v1+json";
constexpr const char* kIndexType = "application/vnd.oci.image.index.v1+json";
constexpr const char* kConfigType = "application/vnd.oci.image.config.v1+json";
constexpr const char* kLayerType = "application/vnd.oci.image.layer.v1.tar+gzip";
constexpr const char* kRefNameAnnotation = "org.opencontainers.image.ref.name";
constexpr std::size_t kReadChunk = 64 * 1024;

json DescriptorJson(const char* media_type, const WrittenBlob& blob) {
  return json{{"mediaType", media_type}, {"digest", blob.digest.ToString()}, {"size", blob.size}};
}

// Writes a tree into a tar, entries named `prefix` + their relative path.
// A rootfs (keep_owner) is written as it is, symlinks included: they mean
// something inside the container. The bundle's own files are followed
// (S14.5): an unpacked bundle image may hold no symlink, so a config file,
// pod.yaml or layout blob that is a link on the operator's disk travels as
// its content.
class TreeWriter {
 public:
  TreeWriter(TarWriter& tar, bool keep_owner) : tar_(tar), keep_owner_(keep_owner) {}

  // Every directory of `name`'s path that was not written yet, outermost
  // first (the bundle's own directories: 0755, owner 0).
  Status Parents(const std::string& name) {
    for (std::size_t slash = name.find('/'); slash != std::string::npos;
         slash = name.find('/', slash + 1)) {
      std::string dir = name.substr(0, slash);
      if (!written_.insert(dir).second) continue;
      TarWriteHeader h;
      h.type = TarEntryType::kDirectory;
      h.name = dir;
      h.mode = 0755;
      if (auto s = tar_.Begin(h); !s) return s;
    }
    return Ok();
  }

  Status Bytes(const std::string& name, std::string_view data) {
    if (auto s = Parents(name); !s) return s;
    if (!written_.insert(name).second) return Error("pack: " + name + " would be written twice");
    TarWriteHeader h;
    h.name = name;
    h.size = data.size();
    if (auto s = tar_.Begin(h); !s) return s;
    return tar_.Write(data);
  }

  // `src` (not followed if a symlink) as `name`, and below it when it is
  // a directory.
  Status Tree(const fs::path& src, const std::string& name) {
    struct stat st {};
    if (Stat(src, st) != 0) return Error::FromErrno("pack: reading " + src.string());
    if (auto s = Parents(name); !s) return s;
    if (auto s = Entry(src, name, st); !s) return s;
    if (!S_ISDIR(st.st_mode)) return Ok();
    return Children(src, name + "/");
  }

  // The entries below `dir`, named `prefix` + name (prefix "" for a layer's root).
  Status Children(const fs::path& dir, const std::string& prefix) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename());
    if (ec) return Error("pack: listing " + dir.string() + ": " + ec.message(), ec.value());
    std::sort(names.begin(), names.end());
    // Followed links could loop (a -> .); no real bundle nests this deep.
    if (prefix.size() > kMaxFollowedName) {
      return Error("pack: " + dir.string() + ": nested too deep (a symlink loop?)", ELOOP);
    }
    for (const auto& n : names) {
      fs::path src = dir / n;
      struct stat st {};
      if (Stat(src, st) != 0) return Error::FromErrno("pack: reading " + src.string());
      if (auto s = Entry(src, prefix + n, st); !s) return s;
      if (S_ISDIR(st.st_mode)) {
        if (auto s = Children(src, prefix + n + "/"); !s) return s;
      }
    }
    return Ok();
  }

 private:
  static constexpr std::size_t kMaxFollowedName = 4096;

  int Stat(const fs::path& src, struct stat& st) const {
    return keep_owner_ ? ::lstat(src.c_str(), &st) : ::stat(src.c_str(), &st);
  }

  Status Entry(const fs::path& src, const std::string& name, const struct stat& st) {
    TarWriteHeader h;
    h.name = name;
    if (keep_owner_) {
      h.mode = st.st_mode & 07777;
      h.uid = st.st_uid;
      h.gid = st.st_gid;
    } else {
      h.mode = S_ISDIR(st.st_mode) || (st.st_mode & 0111) != 0 ? 0755 : 0644;
    }
    if (S_ISDIR(st.st_mode)) {
      if (!written_.insert(name).second) return Ok();
      h.type = TarEntryType::kDirectory;
      return tar_.Begin(h);
    }
    if (!written_.insert(name).second) return Error("pack: " + name + " would be written twice");
    if (S_ISLNK(st.st_mode)) {
      std::error_code ec;
      h.type = TarEntryType::kSymlink;
      h.linkname = fs::read_symlink(src, ec).string();
      if (ec) return Error("pack: reading link " + src.string() + ": " + ec.message(), ec.value());
      if (!keep_owner_) h.mode = 0777;
      return tar_.Begin(h);
    }
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode)) {
      h.type = S_ISCHR(st.st_mode)   ? TarEntryType::kCharDevice
               : S_ISBLK(st.st_mode) ? TarEntryType::kBlockDevice
                                     : TarEntryType::kFifo;
      h.dev_major = major(st.st_rdev);
      h.dev_minor = minor(st.st_rdev);
      return tar_.Begin(h);
    }
    if (!S_ISREG(st.st_mode)) {
      return Error("pack: " + src.string() +
                   " is a socket or other special file; it cannot be packed");
    }
    // A file with several names is stored once; the later names (in the
    // sorted order, so reproducibly) become hard links to the first.
    if (st.st_nlink > 1) {
      auto [it, first] = links_.emplace(std::pair{st.st_dev, st.st_ino}, name);
      if (!first) {
        h.type = TarEntryType::kHardlink;
        h.linkname = it->second;
        return tar_.Begin(h);
      }
    }
    Fd fd(::open(src.c_str(), O_RDONLY | (keep_owner_ ? O_NOFOLLOW : 0) | O_CLOEXEC));
    if (!fd) return Error::FromErrno("pack: opening " + src.string());
    h.size = static_cast<uint64_t>(st.st_size);
    if (auto s = tar_.Begin(h); !s) return s;
    std::string buf(kReadChunk, '\0');
    uint64_t left = h.size;
    while (left > 0) {
      ssize_t n = ::read(fd.get(), buf.data(), std::min<uint64_t>(left, buf.size()));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Error::FromErrno("pack: reading " + src.string());
      if (n == 0) return Error("pack: " + src.string() + " shrank while being packed");
      if (auto s = tar_.Write(std::string_view(buf.data(), static_cast<std::size_t>(n))); !s) {
        return s;
      }
      left -= static_cast<uint64_t>(n);
    }
    return Ok();
  }

  TarWriter& tar_;
  bool keep_owner_;
  std::set<std::string> written_;
  std::map<std::pair<dev_t, ino_t>, std::string> links_;
};

// A gzip layer blob in `layout` made by `fill`.
Result<WrittenBlob> WriteLayer(const fs::path& layout,
                               const std::function<Status(TarWriter&)>& fill) {
  auto blob = BlobWriter::Create(layout, /*gzip=*/true);
  if (!blob) return blob.take_error();
  TarWriter tar([&](std::string_view data) { return blob->Write(data); });
  if (auto s = fill(tar); !s) return s.take_error();
  if (auto s = tar.Finish(); !s) return s.take_error();
  return blob->Commit();
}

// config + manifest + index.json + oci-layout around one layer.
Result<WrittenBlob> FinishLayout(const fs::path& layout, json config, const WrittenBlob& layer,
                                 const json& annotations, const std::string& tag) {
  config["rootfs"] =
      json{{"type", "layers"}, {"diff_ids", json::array({layer.diff_id.ToString()})}};
  auto config_blob = WriteBlob(layout, config.dump());
  if (!config_blob) return config_blob.take_error();
  json manifest{{"schemaVersion", 2},
                {"mediaType", kManifestType},
                {"config", DescriptorJson(kConfigType, *config_blob)},
                {"layers", json::array({DescriptorJson(kLayerType, layer)})}};
  if (!annotations.empty()) manifest["annotations"] = annotations;
  auto manifest_blob = WriteBlob(layout, manifest.dump());
  if (!manifest_blob) return manifest_blob.take_error();
  json entry = DescriptorJson(kManifestType, *manifest_blob);
  entry["annotations"] = json{{kRefNameAnnotation, tag}};
  json index{{"schemaVersion", 2}, {"mediaType", kIndexType}, {"manifests", json::array({entry})}};
  for (auto [file, text] :
       {std::pair{"index.json", index.dump()},
        std::pair{"oci-layout", json{{"imageLayoutVersion", "1.0.0"}}.dump()}}) {
    Fd fd(::open((layout / file).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!fd || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      return Error::FromErrno("pack: writing " + (layout / file).string());
    }
  }
  return *manifest_blob;
}

// An image given as rootfs/ (+ image.json) becomes an OCI layout in
// `layout`: one layer of the rootfs, the image.json as its config.
Status ConvertRootfsImage(const fs::path& image_dir, const fs::path& layout,
                          const std::string& tag) {
  json config = json::object();
  std::error_code ec;
  if (fs::exists(image_dir / "image.json", ec)) {
    std::ifstream in(image_dir / "image.json");
    config = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!config.is_object()) {
      return Error("pack: " + (image_dir / "image.json").string() + ": not a JSON object");
    }
  }
  Platform host = HostPlatform();
  if (!config.contains("os")) config["os"] = host.os;
  if (!config.contains("architecture")) config["architecture"] = host.architecture;
  auto layer = WriteLayer(layout, [&](TarWriter& tar) {
    TreeWriter tree(tar, /*keep_owner=*/true);
    return tree.Children(image_dir / "rootfs", "");
  });
  if (!layer) return layer.take_error();
  auto manifest = FinishLayout(layout, std::move(config), *layer, json::object(), tag);
  if (!manifest) return manifest.take_error();
  return Ok();
}

}  // namespace

Result<PackResult> PackBundle(const PackInput& input, const fs::path& out) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(out, ec))) {
    return Error("pack: " + out.string() + " already exists", EEXIST);
  }
  fs::path staging = out;
  staging += ".partial-" + std::to_string(::getpid());
  fs::remove_all(staging, ec);
  if (::mkdir(staging.c_str(), 0755) != 0)
    return Error::FromErrno("pack: creating " + staging.string());
  // Removes the scratch work on every return that does not rename it.
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code e;
      if (!dir.empty()) fs::remove_all(dir, e);
    }
  } cleanup{staging};
  fs::path scratch = staging / ".images";

  PackResult result;
  std::vector<std::string> images = input.images;
  std::sort(images.begin(), images.end());
  images.erase(std::unique(images.begin(), images.end()), images.end());
  // Each image is taken from where `run` finds it: pod::ResolveImageDir,
  // which LoadImage uses too, so pack accepts every layout run accepts. A
  // tagged reference may name a layout under its untagged name (skopeo's
  // images/tools/ for `tools:1.0`); that layout travels once, under its own
  // name, for all its tags, and resolves in the unpacked bundle as here.
  fs::path images_dir = (input.bundle / "images").lexically_normal();
  if (!images_dir.has_filename()) images_dir = images_dir.parent_path();
  std::map<std::string, fs::path> layouts;  // name under images/ -> the layout directory to copy
  for (std::size_t i = 0; i < images.size(); ++i) {
    auto dir = pod::ResolveImageDir(input.bundle, images[i]);
    if (!dir) return dir.take_error().Wrap("pack: image \"" + images[i] + "\"");
    std::string name = dir->lexically_relative(images_dir).string();
    if (layouts.count(name)) continue;
    if (IsOciLayout(*dir)) {
      // The image's directory may be a symlink to a layout kept elsewhere:
      // its content travels, not the link.
      fs::path real = fs::canonical(*dir, ec);
      if (ec) return Error("pack: resolving " + dir->string() + ": " + ec.message(), ec.value());
      layouts[name] = real;
      continue;
    }
    fs::path converted = scratch / std::to_string(i);
    std::string tag = TagOf(images[i]);
    if (auto s = ConvertRootfsImage(*dir, converted, tag.empty() ? "latest" : tag); !s) {
      return s.take_error().Wrap("image " + images[i]);
    }
    layouts[name] = converted;
    result.converted_images.push_back(images[i]);
  }

  auto layer = WriteLayer(staging, [&](TarWriter& tar) -> Status {
    TreeWriter tree(tar, /*keep_owner=*/false);
    // Byte order of names: config/, images/, pod.json or pod.yaml.
    fs::path config_dir = input.bundle / "config";
    if (fs::is_directory(config_dir, ec)) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(config_dir, ec)) {
        std::string ext = e.path().extension();
        if (e.is_regular_file(ec) && (ext == ".yaml" || ext == ".yml" || ext == ".json")) {
          files.push_back(e.path());
        }
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) {
        if (auto s = tree.Tree(f, "config/" + f.filename().string()); !s) return s;
      }
    }
    for (const auto& [name, dir] : layouts) {
      if (auto s = tree.Tree(dir, "images/" + name); !s) return s;
    }
    return tree.Tree(input.bundle / input.manifest_file, input.manifest_file);
  });
  if (!layer) return layer.take_error();
  fs::remove_all(scratch, ec);

  json labels{{kBundleLabel, kBundleLabelValue}, {kBundlePodLabel, input.pod_name}};
  Platform host = HostPlatform();
  json config{
      {"os", host.os}, {"architecture", host.architecture}, {"config", json{{"Labels", labels}}}};
  auto manifest = FinishLayout(staging, std::move(config), *layer, labels, input.tag);
  if (!manifest) return manifest.take_error();
  // A whole directory is published, so this is not common/file_io.h's
  // WriteFileAtomic (which replaces one file).
  if (::rename(staging.c_str(), out.c_str()) != 0) {
    return Error::FromErrno("pack: renaming " + staging.string() + " to " + out.string());
  }
  cleanup.dir.clear();
  result.manifest = Descriptor{kManifestType, manifest->digest, manifest->size, {}, input.tag};
  result.layer = Descriptor{kLayerType, layer->digest, layer->size, {}, {}};
  return result;
}

}  // namespace podvisor::image
