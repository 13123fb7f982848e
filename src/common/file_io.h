// Small file I/O: the one place that reads a whole small file, replaces a
// file atomically, and parses the kernel's flat-keyed files.
//
// "Small" is the point: every read here is bounded, because the files come
// from the kernel, a runtime or a directory another user may write into,
// and a file that grew without bound must cost an error, not the memory of
// the supervisor. Streaming writers (gzip, blobs, logs) and directory
// publications are not here: they write more than fits in one string.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/fd.h"
#include "common/result.h"

namespace podvisor {

// Enough for every kernel flat-keyed file (memory.stat is the longest, a
// few KiB) and every small state file podvisor writes.
inline constexpr std::size_t kSmallFileMax = 64 * 1024;

// The whole of `file`, or an error naming it when it cannot be read or
// holds more than `max_bytes` (EFBIG). Reads to end of file rather than
// trusting st_size: /proc and cgroupfs files report 0 or 4096.
Result<std::string> ReadFileBounded(const std::filesystem::path& file,
                                    std::size_t max_bytes = kSmallFileMax);

// Whether WriteFileAtomic makes the new contents survive a power loss.
enum class Durability {
  // fsync of the file before the rename and of its directory after it: the
  // file has its old contents or its new ones after a crash, never none.
  kSynced,
  // rename only: a reader sees the old file or the new one, but a power
  // loss may leave neither. For files on tmpfs (the state directory under
  // /run) or files of no use after a crash, where a journal commit per
  // write is measurable.
  kUnsynced,
};

// Replaces `file` with `text`: writes FILE.tmp in the same directory (so
// the rename cannot cross filesystems) with `mode`, then renames it over
// `file`. A reader sees the old contents or the new ones, never a part.
// On failure FILE.tmp is removed and `file` is untouched. The temporary
// name is fixed, so two writers of one file must not run at once (none
// does: each file has one owner).
Status WriteFileAtomic(const std::filesystem::path& file, std::string_view text, mode_t mode,
                       Durability durability = Durability::kSynced);

// flock(2) `op` on the file `path` names: opened O_RDWR, O_NOFOLLOW, and
// O_CREAT with `mode` when `create`. A lock file its holder removes while
// holding it (`rm` of a pod, a released host claim) must not stay locked
// by one who opened it before the unlink: once locked, `path` must still
// name the locked file, else it is opened again. Without `create`, no file
// (or one unlinked meanwhile) is an invalid Fd. With LOCK_NB, a held lock
// is an error with EWOULDBLOCK.
Result<Fd> LockNamedFile(const std::filesystem::path& path, int op, bool create,
                         mode_t mode = 0600);

// A parsed flat-keyed kernel file: one "key value" per line (memory.events,
// cgroup.events, memory.stat, memory.oom_control) or "Key:<tab>value"
// (/proc/<pid>/status). The key loses its trailing colon; the value is the
// rest of the line without surrounding blanks ("0\t0\t0\t0" for Uid:).
class FlatKeyed {
 public:
  static FlatKeyed Parse(std::string_view text);

  // The value of the first line with `key`, or nullopt.
  std::optional<std::string_view> Find(std::string_view key) const;
  // The value of `key` as an unsigned number; nullopt when it is absent or
  // not a number (a "max" in a limit file, a word in /proc/<pid>/status).
  std::optional<uint64_t> FindUnsigned(std::string_view key) const;

  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

// ReadFileBounded then FlatKeyed::Parse.
Result<FlatKeyed> ReadFlatKeyed(const std::filesystem::path& file,
                                std::size_t max_bytes = kSmallFileMax);

}  // namespace podvisor
