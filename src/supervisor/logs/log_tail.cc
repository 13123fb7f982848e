#include "supervisor/logs/log_tail.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "common/fd.h"
#include "supervisor/logs/log_files.h"

namespace podvisor::supervisor::logs {
namespace {

namespace fs = std::filesystem;

// The first read is one block from the end; each next one doubles, so the
// lines are parsed about twice in all however far back N lines reach, and
// a file read to its start costs log2(size / 64 KiB) reads.
constexpr std::size_t kFirstBlock = 64 * 1024;
constexpr std::size_t kLargestBlock = 8 * 1024 * 1024;

class FdBytes : public LogFileBytes {
 public:
  FdBytes(int fd, uint64_t size) : fd_(fd), size_(size) {}
  Result<uint64_t> Size() override { return size_; }
  Result<std::string> ReadAt(uint64_t offset, std::size_t length) override {
    if (offset >= size_) return std::string();
    length = static_cast<std::size_t>(std::min<uint64_t>(length, size_ - offset));
    std::string out(length, '\0');
    std::size_t got = 0;
    while (got < length) {
      ssize_t n = ::pread(fd_, out.data() + got, length - got, static_cast<off_t>(offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Error::FromErrno("reading log");
      if (n == 0) break;  // truncated meanwhile: what there is
      got += static_cast<std::size_t>(n);
    }
    out.resize(got);
    return out;
  }

 private:
  int fd_;
  uint64_t size_;
};

class OwnedFdBytes : public FdBytes {
 public:
  OwnedFdBytes(Fd fd, uint64_t size) : FdBytes(fd.get(), size), owned_(std::move(fd)) {}

 private:
  Fd owned_;
};

class WholeBytes : public LogFileBytes {
 public:
  explicit WholeBytes(std::string data) : data_(std::move(data)) {}
  Result<uint64_t> Size() override { return data_.size(); }
  Result<std::string> ReadAt(uint64_t offset, std::size_t length) override {
    if (offset >= data_.size()) return std::string();
    return data_.substr(static_cast<std::size_t>(offset), length);
  }

 private:
  std::string data_;
};

std::size_t StreamIndex(LogStream s) {
  return s == LogStream::kStdout ? 0 : 1;
}

// Whether `window` (starting at a record boundary) ends with the last
// `request.lines` kept lines whole, and its open lines whole. The first
// line of each stream in the window may have begun with P records before
// it, unless the window starts the instance's stream; every later line of
// that stream began after an F of it inside the window, so it is whole.
bool HoldsTail(std::string_view window, const LogTailRequest& request, bool stream_start) {
  LogLineJoiner joiner;
  std::array<bool, 2> seen{false, false};
  std::array<bool, 2> first_line{false, false};  // its line in progress is its first
  std::array<bool, 2> open{false, false};
  std::size_t whole_run = 0;  // kept lines since the last one that may be cut
  std::size_t start = 0;
  while (start < window.size()) {
    std::size_t nl = window.find('\n', start);
    if (nl == std::string_view::npos) nl = window.size();
    auto rec = ParseCriRecord(window.substr(start, nl - start));
    start = nl + 1;
    if (!rec) continue;
    std::size_t s = StreamIndex(rec->stream);
    if (!seen[s]) first_line[s] = seen[s] = true;
    open[s] = rec->partial;
    auto line = joiner.Add(*rec);
    if (!line) continue;
    bool whole = stream_start || !first_line[s];
    first_line[s] = false;
    if (request.keeps && !request.keeps(*line)) continue;
    whole_run = whole ? whole_run + 1 : 0;
  }
  for (std::size_t s = 0; s < 2; ++s) {
    if (open[s] && first_line[s] && !stream_start) return false;
  }
  return whole_run >= request.lines;
}

}  // namespace

Result<std::unique_ptr<LogFileBytes>> OpenLogFileBytes(const fs::path& file) {
  if (file.extension() == ".gz") {
    auto data = ReadLogFile(file);
    if (!data) return data.take_error();
    return std::unique_ptr<LogFileBytes>(std::make_unique<WholeBytes>(std::move(*data)));
  }
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::FromErrno("opening log " + file.string());
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::FromErrno("stat " + file.string());
  return std::unique_ptr<LogFileBytes>(
      std::make_unique<OwnedFdBytes>(std::move(fd), static_cast<uint64_t>(st.st_size)));
}

std::unique_ptr<LogFileBytes> BorrowLogFileBytes(int fd, uint64_t size) {
  return std::make_unique<FdBytes>(fd, size);
}

Result<std::string> ReadLogTail(std::size_t file_count, const LogFileOpener& open,
                                const LogTailRequest& request) {
  std::string window;  // to the end of the newest file
  for (std::size_t index = file_count; index-- > 0;) {
    // Afresh for each file: often an older file is opened only to see that
    // its last record ends a line, and one block shows that.
    std::size_t block = kFirstBlock;
    auto file = open(index);
    if (!file) {
      // Retention removes the oldest first: this one and older are gone.
      if (file.error().code() == ENOENT) break;
      return file.take_error();
    }
    auto size = (*file)->Size();
    if (!size) return size.take_error();
    uint64_t pos = *size;
    while (pos > 0) {
      std::size_t length = static_cast<std::size_t>(std::min<uint64_t>(block, pos));
      pos -= length;
      block = std::min(block * 2, kLargestBlock);
      auto chunk = (*file)->ReadAt(pos, length);
      if (!chunk) return chunk.take_error();
      window.insert(0, *chunk);
      if (pos == 0) break;
      // Cut inside the file: what precedes the first newline is the end
      // of a record whose start is not read yet.
      std::size_t nl = window.find('\n');
      if (nl == std::string::npos) continue;
      std::string_view whole = std::string_view(window).substr(nl + 1);
      if (HoldsTail(whole, request, false)) return std::string(whole);
    }
    // The file's first byte starts a record: the writer never splits one
    // across a rotation (S11.2), though a line's P records may straddle it.
    if (HoldsTail(window, request, index == 0)) return window;
  }
  return window;
}

}  // namespace podvisor::supervisor::logs
