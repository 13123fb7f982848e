#include "cli/log_follow.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "cli/events_table.h"
#include "supervisor/logs/log_files.h"

namespace podvisor::cli {

namespace fs = std::filesystem;

void LogPrinter::Release(int last_n) {
  if (!held_) return;
  std::vector<supervisor::logs::LogLine> lines = std::move(*held_);
  held_.reset();
  std::size_t from = 0;
  if (last_n >= 0 && static_cast<std::size_t>(last_n) < lines.size()) from = lines.size() - last_n;
  for (std::size_t i = from; i < lines.size(); ++i) Print(lines[i]);
  std::fflush(stdout);
}

bool LogPrinter::Keeps(const supervisor::logs::LogLine& l) const {
  if (!since_) return true;
  auto t = ParseRfc3339(l.time);
  return !t || *t >= *since_;
}

void LogPrinter::Print(const supervisor::logs::LogLine& l) {
  // Filtered before holding: --tail counts the lines --since keeps.
  if (!Keeps(l)) return;
  if (held_) {
    held_->push_back(l);
    return;
  }
  if (timestamps_) {
    std::printf("%s%s %s\n", prefix_.c_str(), l.time.c_str(), l.content.c_str());
  } else {
    std::printf("%s%s\n", prefix_.c_str(), l.content.c_str());
  }
}

void LogPrinter::Feed(const std::string& bytes) {
  pending_ += bytes;
  std::size_t start = 0, nl;
  while ((nl = pending_.find('\n', start)) != std::string::npos) {
    auto rec =
        supervisor::logs::ParseCriRecord(std::string_view(pending_).substr(start, nl - start));
    start = nl + 1;
    if (!rec) continue;
    if (auto line = joiner_.Add(*rec)) Print(*line);
  }
  pending_.erase(0, start);
  std::fflush(stdout);
}

void LogPrinter::Finish() {
  for (const auto& line : joiner_.Finish()) Print(line);
  pending_.clear();
  std::fflush(stdout);
}

std::set<std::string> LogFollower::RotatedStamps() const {
  std::set<std::string> out;
  for (const auto& name : supervisor::logs::ListNames(dir_)) {
    auto f = supervisor::logs::ParseLogFileName(name);
    if (f && f->instance == instance_ && !f->stamp.empty()) out.insert(f->stamp);
  }
  return out;
}

Status LogFollower::OpenCurrent() {
  fs::path path = Current();
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::FromErrno("opening log " + path.string());
  struct stat st {};
  ::fstat(fd.get(), &st);
  fd_ = std::move(fd);
  ino_ = st.st_ino;
  return Ok();
}

std::string LogFollower::ReadFd() {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

Result<std::string> LogFollower::Start(const supervisor::logs::LogTailRequest* tail) {
  // Open first, list second: a rotation in between shows as our file
  // under a rotated name, and we start over.
  for (int attempt = 0;; ++attempt) {
    if (auto s = OpenCurrent(); !s) return s.take_error();
    seen_ = RotatedStamps();
    struct stat st {};
    if (::stat(Current().c_str(), &st) == 0 && st.st_ino == ino_) break;
    if (attempt > 100) return Error("log " + Current().string() + " keeps rotating");
  }
  if (tail) return ReadTail(*tail);
  std::string out;
  for (const auto& stamp : seen_) out += ReadRotated(stamp);
  return out + ReadFd();
}

Result<std::string> LogFollower::ReadTail(const supervisor::logs::LogTailRequest& tail) {
  // The current file up to the size seen now, through the descriptor that
  // follows it, then the descriptor moved there: what is appended
  // meanwhile is followed, and a rotation meanwhile changes nothing read.
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) return Error::FromErrno("stat " + Current().string());
  auto size = static_cast<uint64_t>(st.st_size);
  std::vector<std::string> stamps(seen_.begin(), seen_.end());
  auto open = [&](std::size_t index) -> Result<std::unique_ptr<supervisor::logs::LogFileBytes>> {
    if (index == stamps.size()) return supervisor::logs::BorrowLogFileBytes(fd_.get(), size);
    // Plain, or gzip when the compressor got there first (ReadRotated).
    fs::path plain = dir_ / (std::to_string(instance_) + ".log." + stamps[index]);
    auto bytes = supervisor::logs::OpenLogFileBytes(plain);
    if (!bytes && bytes.error().code() == ENOENT) {
      bytes = supervisor::logs::OpenLogFileBytes(plain.string() + ".gz");
    }
    return bytes;
  };
  auto out = supervisor::logs::ReadLogTail(stamps.size() + 1, open, tail);
  if (::lseek(fd_.get(), static_cast<off_t>(size), SEEK_SET) < 0) {
    return Error::FromErrno("seeking in " + Current().string());
  }
  return out;
}

std::string LogFollower::ReadRotated(const std::string& stamp) const {
  // Plain, or gzip when the supervisor's compressor got there first: at
  // every instant one of the two exists whole (CompressLogFile).
  fs::path plain = dir_ / (std::to_string(instance_) + ".log." + stamp);
  auto bytes = supervisor::logs::ReadLogFile(plain);
  if (!bytes) bytes = supervisor::logs::ReadLogFile(plain.string() + ".gz");
  return bytes ? *bytes : std::string();
}

bool LogFollower::CatchUp() {
  bool moved = false;
  std::string data = ReadFd();
  if (!data.empty()) {
    printer_.Feed(data);
    moved = true;
  }
  struct stat st {};
  bool rotated = ::stat(Current().c_str(), &st) == 0 && st.st_ino != ino_;
  if (rotated) {
    // The writer may have appended to our file between the read above and
    // its rename; it never writes there after the rename we just saw.
    printer_.Feed(ReadFd());
    // Open the new file, then list: a rotation in between shows as the
    // file just opened having moved, and we look again.
    std::set<std::string> now;
    for (int attempt = 0; attempt < 100; ++attempt) {
      if (!OpenCurrent()) return true;  // the next wake-up retries
      now = RotatedStamps();
      if (::stat(Current().c_str(), &st) == 0 && st.st_ino == ino_) break;
    }
    // The oldest new rotated name is the file we had open, read to its
    // end through the descriptor; newer ones were rotated while we were
    // not looking.
    bool first = true;
    for (const auto& stamp : now) {
      if (seen_.count(stamp)) continue;
      if (first) {
        first = false;
        continue;
      }
      printer_.Feed(ReadRotated(stamp));
    }
    seen_ = std::move(now);
    printer_.Feed(ReadFd());
    return true;
  }
  auto instances = supervisor::logs::LogInstances(dir_);
  if (!instances.empty() && instances.back() > instance_) {
    printer_.Feed(ReadFd());  // what the old instance wrote last
    printer_.Finish();
    instance_ = instances.back();
    auto all = Start();
    if (all) printer_.Feed(*all);
    return true;
  }
  return moved;
}

}  // namespace podvisor::cli
