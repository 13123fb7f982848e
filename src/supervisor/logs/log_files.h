// The files of a container's CRI logs on disk and their rotation (S11.2):
//
//   <log-dir>/<pod>/<container>/<n>.log                   instance n, being written
//   <log-dir>/<pod>/<container>/<n>.log.<YYYYMMDD-HHMMSS>  rotated; the newest stays plain
//   <log-dir>/<pod>/<container>/<n>.log.<YYYYMMDD-HHMMSS>.<NNNNNN>  more rotations in that second
//   <log-dir>/<pod>/<container>/<n>.log.<stamp>.gz         older rotated ones, gzip
//
// As the kubelet does, the newest rotated file stays uncompressed, so a
// shipper still reading it is not cut off, and `--log-max-files` counts
// the current file plus the rotated ones of one instance. Logs of earlier
// instances are never removed (S11.2: kept for the pod's lifetime).
//
// Everything here is plain functions over names and files, shared by the
// writer (the supervisor), the compressor child and `podvisor logs`; the
// decision what to compress and delete is the pure PlanRetention.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "supervisor/logs/cri_log.h"

namespace podvisor::supervisor::logs {

// `run --log-max-size` and `--log-max-files` (docs/INTERFACE.md).
struct LogRotation {
  uint64_t max_size = 0;  // bytes; 0: never rotate
  int max_files = 5;      // current + rotated files of one instance, >= 2
};
constexpr uint64_t kDefaultLogMaxSize = 10 * 1024 * 1024;
constexpr int kDefaultLogMaxFiles = 5;

struct LogFileName {
  int instance = 0;
  // "YYYYMMDD-HHMMSS" or "YYYYMMDD-HHMMSS.NNNNNN"; empty for the current
  // <n>.log. Stamps of one instance sort as strings in rotation order,
  // which `podvisor logs` relies on.
  std::string stamp;
  bool compressed = false;
};

// "3.log", "3.log.20261122-100405", "3.log.20261122-100405.000002",
// "3.log.20261122-100405.gz"; nullopt for anything else (a compressor's
// ".gz.partial" included).
std::optional<LogFileName> ParseLogFileName(std::string_view name);

// "<n>.log.<YYYYMMDD-HHMMSS>" (UTC) for a rotation at `now`. S14.18: when
// a file of that second (or of a later one: the clock stepped back) exists
// already, the newest rotated file's second gets a six-digit sequence
// number after the newest's, so names stay unique, sort in rotation order
// and never name a second later than both `now` and the newest file.
std::string RotatedLogName(const std::vector<std::string>& existing, int instance, WallTime now);

// The names in `dir` (not recursive); empty when it cannot be read.
std::vector<std::string> ListNames(const std::filesystem::path& dir);

// Instance numbers with a current log file, ascending.
std::vector<int> LogInstances(const std::filesystem::path& dir);

// One instance's files, oldest first, <n>.log last. A rotated file caught
// mid-compression (plain and .gz both present) is listed once, plain.
std::vector<std::filesystem::path> InstanceLogFiles(const std::filesystem::path& dir, int instance);

struct RetentionPlan {
  std::vector<std::string> compress;  // plain rotated files to gzip
  std::vector<std::string> remove;    // names to delete, oldest first
  friend bool operator==(const RetentionPlan&, const RetentionPlan&) = default;
};

// What to do with instance `instance`'s rotated files among `names` so at
// most `max_files` - 1 rotated files remain beside the current one, all but
// the newest compressed. S14.19: `compressing` names the plain rotated
// files a compressor has or will be given (running or queued): they are
// neither removed nor planned again, even when too old; retention runs
// again when the compressor ends and removes what is then too old. A
// rotated file whose plain and .gz forms both exist without a compressor
// (one that died between its rename and its unlink) is one file, removed
// whole when too old.
RetentionPlan PlanRetention(const std::vector<std::string>& names, int instance, int max_files,
                            const std::vector<std::string>& compressing = {});

// Gzips `file` into `file`.gz (through `file`.gz.partial, renamed when
// complete, so a reader never sees a truncated .gz) and removes `file`.
// S14.19: the .gz is fsynced before the rename and the directory after it,
// so `file` is removed only once its compressed copy is on disk whole.
Status CompressLogFile(const std::filesystem::path& file);

// Reads plain and gzip files alike.
Result<std::string> ReadLogFile(const std::filesystem::path& file);

// The user lines of several files read as one stream, so a line whose P
// records straddle a rotation is joined. Malformed lines are skipped.
Result<std::vector<LogLine>> ReadCriLogs(const std::vector<std::filesystem::path>& files);

// The last `max_lines` lines (each ending in '\n') and of those at most
// the last `max_bytes`, from the last 64 KiB of the instance's files (a
// bounded read: this runs on the event loop when a container exits).
std::string TailOfLog(const std::vector<std::filesystem::path>& files, std::size_t max_lines,
                      std::size_t max_bytes);

}  // namespace podvisor::supervisor::logs
