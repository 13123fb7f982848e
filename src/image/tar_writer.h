// A tar writer for `podvisor pack` (POSIX ustar, with pax extended headers
// for names, link targets and sizes ustar cannot hold).
//
// It is self-contained on purpose: reading layers goes through
// layer_unpack.h, which may change its tar reader; writing needs nothing
// but the header layout, and owning it is what makes the output
// reproducible. The caller decides every field that varies between
// machines (mtime, owner, order), and the writer adds nothing of its own:
// no user or group names, no access times, no device numbers for files.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace podvisor::image {

enum class TarEntryType : char {
  kFile = '0',
  kHardlink = '1',
  kSymlink = '2',
  kCharDevice = '3',
  kBlockDevice = '4',
  kDirectory = '5',
  kFifo = '6',
};

struct TarWriteHeader {
  TarEntryType type = TarEntryType::kFile;
  std::string name;      // relative, '/'-separated; directories without the trailing '/'
  std::string linkname;  // symlink target, or the earlier entry a hard link names
  uint32_t mode = 0644;  // permission bits (07777)
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;  // regular files only
  int64_t mtime = 0;
  uint32_t dev_major = 0;  // devices only
  uint32_t dev_minor = 0;
};

class TarWriter {
 public:
  // Where the archive's bytes go, in order (a gzip stream, a string).
  using Sink = std::function<Status(std::string_view)>;
  explicit TarWriter(Sink sink) : sink_(std::move(sink)) {}

  // A header, then for a regular file exactly header.size bytes through
  // Write; the padding to the next 512-byte block is the writer's.
  Status Begin(const TarWriteHeader& header);
  Status Write(std::string_view data);
  // The two zero blocks that end an archive. Fails if a file's bytes are
  // short of its header's size.
  Status Finish();

 private:
  Status EndEntry();

  Sink sink_;
  uint64_t left_ = 0;     // bytes the current file still owes
  uint64_t written_ = 0;  // of the current file, for its padding
  bool finished_ = false;
};

// The ustar header block of `header` (512 bytes), with `name` already
// fitting (ustar's 100-byte name or 155+100 prefix split); exposed for the
// unit tests' byte-level checks.
std::string UstarBlock(const TarWriteHeader& header, std::string_view name, std::string_view prefix,
                       std::string_view linkname);

}  // namespace podvisor::image
