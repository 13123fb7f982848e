// Reads the tar stream of an image layer (image-spec "layer.md"):
// uncompressed, gzip (zlib) or zstd (libzstd), in the formats image
// builders write: ustar (with its name prefix), pax extended headers
// (path, linkpath, size, uid, gid, mtime, SCHILY.xattr.*; global headers
// are read and ignored, as containerd does) and GNU long names and link
// names ('L', 'K'). Our own reader rather than libarchive: a static
// libarchive drags in libxml2, ICU, nettle and libacl (the last without a
// static archive in Debian) for formats a layer never uses; this is what
// layers need and nothing else (README.md, "Static build").
//
// The reader only parses; layer_unpack decides what an entry may do to
// the root being built.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "image/oci_layout.h"

namespace podvisor::image {

struct TarHeader {
  enum class Type { kFile, kHardLink, kSymlink, kCharDevice, kBlockDevice, kDirectory, kFifo };
  Type type = Type::kFile;
  std::string path;  // as written in the archive, not yet cleaned
  std::string link;  // symlink target or hard link target
  mode_t mode = 0;   // permission bits with setuid/setgid/sticky
  uint64_t uid = 0;
  uint64_t gid = 0;
  int64_t mtime_sec = 0;
  long mtime_nsec = 0;
  uint64_t size = 0;  // of the data that follows (regular files)
  unsigned dev_major = 0;
  unsigned dev_minor = 0;
  std::vector<std::pair<std::string, std::string>> xattrs;
};

// Where compressed bytes come from: fills `buf`, returns how many bytes
// (0 at the end of the blob).
using ByteSource = std::function<Result<std::size_t>(char* buf, std::size_t size)>;

// Uncompressed bytes of a layer blob.
class Decompressor {
 public:
  virtual ~Decompressor() = default;
  // 0 at the end of the stream.
  virtual Result<std::size_t> Read(char* buf, std::size_t size) = 0;
};

std::unique_ptr<Decompressor> MakeDecompressor(LayerCompression compression, ByteSource source);

class TarReader {
 public:
  explicit TarReader(Decompressor& in) : in_(in) {}
  // The next entry's header, or nullopt at the end of the archive. The
  // entry's data not read by ReadData is skipped.
  Result<std::optional<TarHeader>> Next();
  // Up to `size` bytes of the current entry's data; 0 at its end.
  Result<std::size_t> ReadData(char* buf, std::size_t size);

 private:
  Status ReadExact(char* buf, std::size_t size);
  Status Skip(uint64_t bytes);
  Result<std::string> ReadBlob(uint64_t size);  // a pax or GNU long-name record

  Decompressor& in_;
  uint64_t data_left_ = 0;  // of the current entry
  uint64_t padding_ = 0;    // after it, to the 512-byte boundary
  bool ended_ = false;
};

}  // namespace podvisor::image
