// Reading one layer blob: from a file of an image layout or a pipe from a
// registry client, decompressed as its media type says, the blob and the
// uncompressed stream hashed on the way (each layer is read once), then
// layer_unpack.cc's entry loop writes it. The checks of layer_unpack.h
// (S14.8, S14.9) are here.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "common/fd.h"
#include "image/layer_entries.h"

namespace podvisor::image {
namespace {

namespace fs = std::filesystem;

// The blob as the decompressor reads it, hashed on the way. Reads stop one
// byte past the descriptor's size: a blob that is a symlink to /dev/zero,
// a file still growing or a registry that never stops sending must not be
// read forever, and one byte more is enough for CheckBlob to name the
// mismatch.
struct BlobSource {
  int fd = -1;
  DigestHasher hasher;
  uint64_t limit = 0;
  const std::function<void(uint64_t)>* progress = nullptr;
  uint64_t bytes = 0;
  int read_errno = 0;

  Result<std::size_t> Read(char* buf, std::size_t size) {
    if (bytes > limit) return std::size_t{0};
    size = static_cast<std::size_t>(std::min<uint64_t>(size, limit + 1 - bytes));
    ssize_t n;
    do {
      n = ::read(fd, buf, size);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      read_errno = errno;
      return Error::FromErrno("reading the blob");
    }
    hasher.Update(buf, static_cast<std::size_t>(n));
    bytes += static_cast<uint64_t>(n);
    if (progress != nullptr && *progress && n > 0) (*progress)(bytes);
    return static_cast<std::size_t>(n);
  }

  // The tar end-of-archive blocks and compressor trailers are part of the
  // blob too: hash whatever the reader did not need.
  void Drain() {
    std::vector<char> buf(1 << 16);
    for (;;) {
      auto n = Read(buf.data(), buf.size());
      if (!n || *n == 0) return;
    }
  }
};

// A blob of unknown size (a registry's chunked response): compressed
// data is not much larger than what it unpacks to, so the image's bound
// with room for incompressible data and trailers bounds it too.
uint64_t BlobLimit(const Descriptor& blob, const LayerBudget& budget) {
  if (blob.size >= 0) return static_cast<uint64_t>(blob.size);
  return budget.max_bytes + budget.max_bytes / 64 + (uint64_t{1} << 20);
}

}  // namespace

Result<LayerStreamSize> UnpackLayerStream(int blob_fd, const LayerDescriptor& layer,
                                          const fs::path& root, LayerFormat format,
                                          LayerBudget& budget,
                                          const std::function<void(uint64_t)>& progress) {
  const Descriptor& blob = layer.blob;
  auto hasher = DigestHasher::Create(blob.digest.algorithm);
  if (!hasher) return hasher.take_error();
  std::optional<DigestHasher> diff_hasher;
  if (layer.diff_id) {
    auto h = DigestHasher::Create(layer.diff_id->algorithm);
    if (!h) return h.take_error();
    diff_hasher.emplace(std::move(*h));
  }
  BlobSource src{blob_fd, std::move(*hasher), BlobLimit(blob, budget), &progress};
  const uint64_t budget_before = budget.bytes;

  // Only the compression the media type declares: a gzip blob labelled
  // plain tar is as wrong as a corrupt one.
  auto decompressor = MakeDecompressor(
      layer.compression, [&src](char* buf, std::size_t size) { return src.Read(buf, size); });
  const std::string name = "layer " + blob.digest.ToString();
  MeteredStream stream(*decompressor, std::move(diff_hasher), budget);
  TarReader reader(stream);
  Status applied = ApplyEntries(reader, stream, root, layer, format, budget);
  if (applied) {
    if (auto s = stream.Drain(); !s)
      applied = Error(name + ": " + s.error().message(), s.error().code());
  }
  if (src.read_errno) return Error::FromErrno(name + ": reading the blob", src.read_errno);
  src.Drain();
  if (src.read_errno) return Error::FromErrno(name + ": reading the blob", src.read_errno);
  if (auto s = CheckBlob(blob.digest, blob.size, src.hasher.FinishHex(), src.bytes); !s) {
    return s.take_error();
  }
  if (!applied) return applied.take_error();
  // S14.8: the blob was the one the manifest names, but the config (whose
  // digest is the image's id) must describe the same content.
  if (layer.diff_id) {
    std::string actual = stream.FinishHex();
    if (actual != layer.diff_id->hex) {
      return Error(name + ": its uncompressed content is " + layer.diff_id->algorithm + ":" +
                   actual + ", the image config's rootfs.diff_ids says " +
                   layer.diff_id->ToString());
    }
  }
  return LayerStreamSize{src.bytes, budget.bytes - budget_before};
}

Status ApplyLayer(const fs::path& layout_dir, const LayerDescriptor& layer, const fs::path& root,
                  LayerBudget& budget) {
  fs::path path = BlobPath(layout_dir, layer.blob.digest);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    return Error::FromErrno("blob " + layer.blob.digest.ToString() +
                            " is missing: " + path.string());
  }
  auto unpacked = UnpackLayerStream(fd.get(), layer, root, LayerFormat::kApplied, budget);
  if (!unpacked) return unpacked.take_error();
  return Ok();
}

}  // namespace podvisor::image
