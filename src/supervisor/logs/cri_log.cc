#include "supervisor/logs/cri_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <utility>

#include "supervisor/logs/log_files.h"

namespace podvisor::supervisor::logs {
namespace {

std::size_t Index(LogStream s) {
  return s == LogStream::kStdout ? 0 : 1;
}

}  // namespace

std::string_view LogStreamName(LogStream s) {
  return s == LogStream::kStdout ? "stdout" : "stderr";
}

std::string FormatCriRecord(WallTime time, LogStream stream, bool partial,
                            std::string_view content) {
  std::string out = FormatRfc3339(time, TimePrecision::kNanos);
  out.reserve(out.size() + content.size() + 12);
  out += ' ';
  out += LogStreamName(stream);
  out += partial ? " P " : " F ";
  out += content;
  out += '\n';
  return out;
}

Result<CriLogWriter> CriLogWriter::Open(const std::filesystem::path& path, uint64_t max_size,
                                        std::function<void()> on_rotated) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) return Error("creating " + path.parent_path().string() + ": " + ec.message(), ec.value());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) return Error::FromErrno("opening log " + path.string());
  struct stat st {};
  uint64_t size = ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  CriLogWriter writer(path, Fd(fd), size);
  writer.max_size_ = max_size;
  writer.on_rotated_ = std::move(on_rotated);
  return writer;
}

Status CriLogWriter::Rotate(WallTime now) {
  // rename + reopen: a reader holding the old file keeps its inode and
  // reads it to the end; `logs -f` then moves to the new <n>.log. (Not
  // common/file_io.h's atomic write: the file moves, nothing is replaced.)
  std::filesystem::path dir = path_.parent_path();
  int instance = std::atoi(path_.filename().c_str());
  std::filesystem::path rotated = dir / RotatedLogName(ListNames(dir), instance, now);
  if (::rename(path_.c_str(), rotated.c_str()) != 0) {
    return Error::FromErrno("rotating " + path_.string());
  }
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) {
    Error error = Error::FromErrno("opening log " + path_.string());
    // Keep writing to the file we have rather than lose output, under its
    // own name again, so that the next record retries the rotation.
    (void)::rename(rotated.c_str(), path_.c_str());
    return error;
  }
  fd_.Reset(fd);
  bytes_written_ = 0;
  if (on_rotated_) on_rotated_();
  return Ok();
}

Status CriLogWriter::WriteWhole(std::string_view record) {
  std::size_t done = 0;
  while (done < record.size()) {
    ssize_t n = ::write(fd_.get(), record.data() + done, record.size() - done);
    if (n >= 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    Error error = Error::FromErrno("write");
    if (done == 0) return error;
    // S14.16: a full file system (or a file size limit) took the first
    // part of the record: cut it off again, so the file ends with the last
    // whole record and a shipper never reads a torn one as complete. With
    // O_APPEND, our part is the last `done` bytes of the file.
    struct stat st {};
    if (::fstat(fd_.get(), &st) != 0 ||
        ::ftruncate(fd_.get(), st.st_size - static_cast<off_t>(done)) != 0) {
      return Error::FromErrno("cutting a torn record off")
          .Wrap(error.message() + " after " + std::to_string(done) + " bytes");
    }
    return error;
  }
  return Ok();
}

void CriLogWriter::Failed(const Error& error, bool dropped) {
  ++failures_since_notice_;
  last_error_ = error.message();
  if (!dropped) return;
  ++records_dropped_;
  ++dropped_since_notice_;
}

Status CriLogWriter::WriteRecord(LogStream stream, bool partial, std::string_view content,
                                 WallTime now) {
  std::string record = FormatCriRecord(now, stream, partial, content);
  // S11.2: rotate between records, never inside one. A record larger than
  // the limit gets a file of its own.
  Status rotated;
  if (max_size_ > 0 && bytes_written_ > 0 && bytes_written_ + record.size() > max_size_) {
    rotated = Rotate(now);
    rotation_failing_ = !rotated;
    if (!rotated) Failed(rotated.error(), false);
  }
  if (auto s = WriteWhole(record); !s) {
    Error error = s.take_error().Wrap(path_.string());
    write_failing_ = true;
    Failed(error, true);
    return error;
  }
  write_failing_ = false;
  bytes_written_ += record.size();
  return rotated;
}

Status CriLogWriter::Append(LogStream stream, std::string_view bytes, WallTime now) {
  std::string& pending = pending_[Index(stream)];
  Status first_error;
  auto write = [&](bool partial) {
    Status s = WriteRecord(stream, partial, pending, now);
    if (!s && first_error) first_error = std::move(s);
    // Written or dropped (S14.16), the record is done: a failed F record
    // kept here would merge with the next line.
    pending.clear();
  };
  while (!bytes.empty()) {
    std::size_t newline = bytes.find('\n');
    std::string_view piece = bytes.substr(0, newline);
    // Split overlong lines at the record limit, whether or not they end here.
    while (pending.size() + piece.size() >= kMaxCriRecordContent &&
           !(newline != std::string_view::npos &&
             pending.size() + piece.size() == kMaxCriRecordContent)) {
      std::size_t take = kMaxCriRecordContent - pending.size();
      pending.append(piece.substr(0, take));
      piece.remove_prefix(take);
      write(true);
    }
    pending.append(piece);
    if (newline == std::string_view::npos) break;
    write(false);
    bytes.remove_prefix(newline + 1);
  }
  return first_error;
}

Status CriLogWriter::Close(LogStream stream, WallTime now) {
  std::string& pending = pending_[Index(stream)];
  if (pending.empty()) return Ok();
  Status s = WriteRecord(stream, true, pending, now);
  pending.clear();
  return s;
}

std::optional<LogWriteNotice> CriLogWriter::TakeNotice(MonoTime now, bool flush) {
  bool failing = write_failing_ || rotation_failing_;
  // A reported failure is followed by a report that it is over, even when
  // nothing more was dropped after the first.
  bool due = failures_since_notice_ > 0 || (!failing && failure_reported_);
  if (!due) return std::nullopt;
  std::optional<MonoTime>& last = failing ? last_failure_notice_ : last_resumed_notice_;
  if (!flush && last && now - *last < kLogNoticeInterval) return std::nullopt;
  last = now;
  LogWriteNotice notice;
  notice.resumed = !failing;
  notice.dropped = dropped_since_notice_;
  std::string dropped = std::to_string(dropped_since_notice_) + " log record" +
                        (dropped_since_notice_ == 1 ? "" : "s") + " dropped";
  if (failing) {
    notice.message = last_error_ + "; " + dropped + " since the last report";
  } else {
    notice.message = "writing " + path_.string() + " again; " + dropped +
                     " since the last report (last error: " + last_error_ + ")";
  }
  dropped_since_notice_ = 0;
  failures_since_notice_ = 0;
  failure_reported_ = failing;
  return notice;
}

std::optional<CriRecord> ParseCriRecord(std::string_view line) {
  // <time> SP <stream> SP <tag> SP <content>; content may be empty, and
  // the kubelet also accepts a missing SP after the tag for empty content.
  std::size_t a = line.find(' ');
  if (a == std::string_view::npos || a == 0) return std::nullopt;
  std::size_t b = line.find(' ', a + 1);
  if (b == std::string_view::npos) return std::nullopt;
  CriRecord r;
  r.time = std::string(line.substr(0, a));
  std::string_view stream = line.substr(a + 1, b - a - 1);
  if (stream == "stdout") {
    r.stream = LogStream::kStdout;
  } else if (stream == "stderr") {
    r.stream = LogStream::kStderr;
  } else {
    return std::nullopt;
  }
  std::string_view rest = line.substr(b + 1);
  if (rest.empty()) return std::nullopt;
  // The tag field may carry several ':'-separated flags; the first is P/F.
  std::size_t tag_end = rest.find(' ');
  std::string_view tag = rest.substr(0, tag_end);
  if (tag.empty() || (tag[0] != 'P' && tag[0] != 'F')) return std::nullopt;
  r.partial = tag[0] == 'P';
  r.content = tag_end == std::string_view::npos ? "" : std::string(rest.substr(tag_end + 1));
  return r;
}

std::optional<LogLine> LogLineJoiner::Add(const CriRecord& rec) {
  auto& slot = open_[Index(rec.stream)];
  if (!slot) slot = LogLine{rec.time, rec.stream, {}};
  slot->content += rec.content;
  slot->time = rec.time;
  if (rec.partial) return std::nullopt;
  // exchange, not move: a moved-from optional still holds a value.
  return std::exchange(slot, std::nullopt);
}

std::vector<LogLine> LogLineJoiner::Finish() {
  std::vector<LogLine> out;
  for (auto& slot : open_) {
    if (slot) out.push_back(std::move(*slot));
    slot.reset();
  }
  return out;
}

Result<std::vector<LogLine>> ReadCriLog(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return Error::FromErrno("opening log " + path.string());
  std::vector<LogLine> lines;
  LogLineJoiner joiner;
  std::string raw;
  while (std::getline(in, raw)) {
    auto rec = ParseCriRecord(raw);
    if (!rec) continue;
    if (auto line = joiner.Add(*rec)) lines.push_back(std::move(*line));
  }
  for (auto& line : joiner.Finish()) lines.push_back(std::move(line));
  return lines;
}

}  // namespace podvisor::supervisor::logs
