// Container logs in the CRI format the kubelet writes and log shippers
// (fluent-bit's "cri" parser, vector's kubernetes_logs) read (S11.1):
//
//   2026-11-22T10:04:05.123456789Z stdout F a whole line
//   2026-11-22T10:04:05.123456789Z stderr P the first 16 KiB of a long one
//
// CriLogWriter turns the bytes podvisor reads from a container's stdout and
// stderr pipes into records; each stream keeps its own partial-line buffer,
// so interleaved output never mixes within a record. The timestamp is the
// time podvisor read the bytes that completed the record.
//
// A record is written whole or not at all (S14.16): when the log's file
// system is full, the record is dropped and counted, and the writer only
// says so through TakeNotice, at most once a minute (S14.17), so a full
// disk costs the supervisor neither a flood of warnings nor a torn record
// that shippers would read as a different one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/fd.h"
#include "common/result.h"

namespace podvisor::supervisor::logs {

enum class LogStream { kStdout, kStderr };
std::string_view LogStreamName(LogStream s);  // "stdout", "stderr"

// A line longer than this is split into P records (the kubelet's 16 KiB).
constexpr std::size_t kMaxCriRecordContent = 16 * 1024;

// One record as written: `<time> <stream> <P|F> <content>`.
std::string FormatCriRecord(WallTime time, LogStream stream, bool partial,
                            std::string_view content);

// S14.17: what a writer has to report about records it could not write.
struct LogWriteNotice {
  bool resumed = false;  // false: writes fail (a Warning); true: they work again
  uint64_t dropped = 0;  // records dropped since the previous notice
  std::string message;   // the file and the last error; never log content
};

// At most one notice of each kind (failing, resumed) per interval and
// writer: one per minute and container instance.
constexpr Duration kLogNoticeInterval = std::chrono::minutes(1);

class CriLogWriter {
 public:
  // Opens (creating directories as needed) `path` for appending. With a
  // rotation limit, a record that would take the file past max_size first
  // moves it aside (S11.2: <n>.log.<stamp>, named by log_files.h) and
  // starts a new one, so no record is ever split across files; then
  // `on_rotated` runs (retention and compression are the caller's).
  static Result<CriLogWriter> Open(const std::filesystem::path& path, uint64_t max_size = 0,
                                   std::function<void()> on_rotated = {});

  // Feeds bytes read from one stream; complete lines become F records,
  // overlong ones P records. Writes go straight to the file (no stdio
  // buffering), so a crash of the supervisor loses no complete record.
  // Every byte is consumed even when a write fails: the failed record is
  // dropped (S14.16) and the first error returned.
  Status Append(LogStream stream, std::string_view bytes, WallTime now);

  // The stream reached EOF (the instance exited): a trailing partial line
  // is written as a P record (S11.1).
  Status Close(LogStream stream, WallTime now);

  // S14.17: a notice when records were dropped or a rotation failed since
  // the last one, or writes work again after a failure notice, and none
  // of the same kind was given in the last
  // kLogNoticeInterval; `flush` (the instance ended) reports what is left
  // whatever the interval. The caller publishes it.
  std::optional<LogWriteNotice> TakeNotice(MonoTime now, bool flush = false);
  uint64_t records_dropped() const { return records_dropped_; }

  const std::filesystem::path& path() const { return path_; }
  uint64_t bytes_written() const { return bytes_written_; }

  // S15.1: the bytes of a stream's line not yet ended cross a handover to
  // the next supervisor, which goes on from them: no line is cut in two or
  // written twice.
  const std::string& pending(LogStream stream) const {
    return pending_[stream == LogStream::kStdout ? 0 : 1];
  }
  void RestorePending(LogStream stream, std::string bytes) {
    pending_[stream == LogStream::kStdout ? 0 : 1] = std::move(bytes);
  }

 private:
  CriLogWriter(std::filesystem::path path, Fd fd, uint64_t size)
      : path_(std::move(path)), fd_(std::move(fd)), bytes_written_(size) {}
  Status WriteRecord(LogStream stream, bool partial, std::string_view content, WallTime now);
  Status WriteWhole(std::string_view record);
  Status Rotate(WallTime now);
  void Failed(const Error& error, bool dropped);

  uint64_t max_size_ = 0;
  std::function<void()> on_rotated_;

  std::filesystem::path path_;
  Fd fd_;
  uint64_t bytes_written_ = 0;
  std::string pending_[2];  // per stream, bytes of a line not yet ended

  // S14.17's bookkeeping.
  uint64_t records_dropped_ = 0;  // in the writer's life
  uint64_t dropped_since_notice_ = 0;
  uint64_t failures_since_notice_ = 0;  // failed writes and rotations
  bool write_failing_ = false;          // the last record was dropped
  bool rotation_failing_ = false;       // the last rotation failed
  bool failure_reported_ = false;       // the last notice said writes fail
  std::string last_error_;
  std::optional<MonoTime> last_failure_notice_;
  std::optional<MonoTime> last_resumed_notice_;
};

// A parsed record, for `podvisor logs` and tests.
struct CriRecord {
  std::string time;  // as written (RFC 3339 with nanoseconds)
  LogStream stream = LogStream::kStdout;
  bool partial = false;
  std::string content;
};

// Parses one line (without its '\n'); nullopt for a malformed line.
std::optional<CriRecord> ParseCriRecord(std::string_view line);

// A log line as a user sees it: P records joined with the F that ends
// them (or with the end of the file).
struct LogLine {
  std::string time;  // of the record that completed the line
  LogStream stream = LogStream::kStdout;
  std::string content;
};

// Joins records into user lines: P records of one stream with the F that
// ends them (stdout and stderr may interleave).
class LogLineJoiner {
 public:
  // A completed line, when `record` ends one.
  std::optional<LogLine> Add(const CriRecord& record);
  // Lines still open (their last record was P): the end of the input ends them.
  std::vector<LogLine> Finish();

 private:
  std::optional<LogLine> open_[2];
};

// Reads a whole CRI log file into user lines. Malformed lines are skipped.
Result<std::vector<LogLine>> ReadCriLog(const std::filesystem::path& path);

}  // namespace podvisor::supervisor::logs
