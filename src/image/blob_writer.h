// Writing content-addressed blobs into an OCI image layout being built
// (`podvisor pack`): bytes stream into a scratch file under blobs/sha256/
// while their sha256 is computed, and Commit renames the file to its
// digest. A gzip blob (a layer) is compressed on the way with zlib and
// also hashes the uncompressed bytes, which are the layer's diff_id in
// the image config.
//
// zlib's gzip header carries no file name and mtime 0, so the same bytes
// compress to the same blob on every machine with the same zlib.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "common/fd.h"
#include "common/result.h"
#include "image/digest.h"

namespace podvisor::image {

struct WrittenBlob {
  Digest digest;  // of the bytes stored
  int64_t size = 0;
  Digest diff_id;  // of the uncompressed bytes (equal to digest without gzip)
};

class BlobWriter {
 public:
  // A blob in `layout_dir`/blobs/sha256/ (made if missing).
  static Result<BlobWriter> Create(const std::filesystem::path& layout_dir, bool gzip);
  BlobWriter(BlobWriter&&) noexcept;
  BlobWriter& operator=(BlobWriter&&) noexcept;
  ~BlobWriter();  // an uncommitted scratch file is removed

  Status Write(std::string_view data);
  // Ends the gzip stream, syncs nothing (the layout is rebuilt if lost),
  // renames the file to blobs/sha256/<hex>.
  Result<WrittenBlob> Commit();

 private:
  struct State;
  explicit BlobWriter(std::unique_ptr<State> state);
  Status Store(std::string_view bytes);
  std::unique_ptr<State> state_;
};

// A whole small blob (a config, a manifest) at once.
Result<WrittenBlob> WriteBlob(const std::filesystem::path& layout_dir, std::string_view data);

}  // namespace podvisor::image
