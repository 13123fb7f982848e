// `podvisor logs --tail N` read from the end (S11.2): the fewest bytes of a
// container instance's log stream (its rotated files, then its current
// one) that still hold its last N user lines whole, read backwards in
// growing blocks from the end of the newest file; an older rotated file is
// opened only when the newer ones hold fewer than N lines, or to read its
// last block when a line at the start of the newer one may have begun
// there (a rotation never splits a record, but may split a line's P
// records from its F). A host that has
// run a pod for months may keep hundreds of MiB of one instance's logs, and
// `--tail 5` must not read them all.
//
// It returns raw CRI bytes starting at a record boundary, to be fed to the
// same printer as a whole read, so --since, --timestamps, --prefix and -f
// print what they would print after reading everything. It does not print,
// and it does not choose the files (log_files.h lists them).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "supervisor/logs/cri_log.h"

namespace podvisor::supervisor::logs {

// One log file's bytes as the backward reader sees them. A seam: `logs -f`
// reads its current file through the descriptor it goes on following, and
// tests count what is read.
class LogFileBytes {
 public:
  virtual ~LogFileBytes() = default;
  virtual Result<uint64_t> Size() = 0;
  // Up to `length` bytes at `offset` (fewer only at the end of the file).
  virtual Result<std::string> ReadAt(uint64_t offset, std::size_t length) = 0;
};

// A plain file is read with pread at the offsets asked for; a gzip file
// cannot be read backwards and is decompressed whole on first use (only an
// older rotated file is compressed, reached when the newer ones hold fewer
// than N lines). ENOENT when the file is gone.
Result<std::unique_ptr<LogFileBytes>> OpenLogFileBytes(const std::filesystem::path& file);

// The first `size` bytes of a plain file through a descriptor the caller
// keeps open (and owns) while this is used: `logs -f` reads the tail of the
// current file it goes on following, up to the size it saw, so a rotation
// meanwhile changes nothing it reads.
std::unique_ptr<LogFileBytes> BorrowLogFileBytes(int fd, uint64_t size);

struct LogTailRequest {
  std::size_t lines = 0;  // N
  // The lines the printer keeps (--since); N counts only those.
  std::function<bool(const LogLine&)> keeps;
};

// Opens file `index` of the stream, oldest first; ENOENT for a file that
// retention removed meanwhile (it and the older ones are then skipped).
using LogFileOpener = std::function<Result<std::unique_ptr<LogFileBytes>>(std::size_t index)>;

// The bytes, from a record boundary to the end of the last file, whose
// user lines end with the stream's last `request.lines` kept lines, each
// whole: none of them may have P records before the returned bytes begin.
// Lines still open at the end (P without F) are whole too, so a follower
// that later reads their F prints them as a whole read would.
Result<std::string> ReadLogTail(std::size_t file_count, const LogFileOpener& open,
                                const LogTailRequest& request);

}  // namespace podvisor::supervisor::logs
