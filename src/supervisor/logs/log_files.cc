#include "supervisor/logs/log_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>

#include "common/fd.h"

namespace podvisor::supervisor::logs {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kLogSuffix = ".log";
constexpr std::string_view kGzSuffix = ".gz";
// How much of the newest files TailOfLog reads at most: enough for 80
// lines of a 2048-byte message with their record headers, bounded so a
// container's exit never makes the loop read megabytes.
constexpr std::size_t kTailWindow = 64 * 1024;

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "YYYYMMDD-HHMMSS", the kubelet's stamp of a rotated log.
constexpr std::size_t kSecondStampSize = 15;
// S14.18: ".NNNNNN" after it for further rotations in that second; six
// digits so that stamps still sort as strings in rotation order.
constexpr std::size_t kSequenceSize = 6;
constexpr int kMaxSequence = 999'999;

bool IsSecondStamp(std::string_view s) {
  return s.size() == kSecondStampSize && s[8] == '-' && AllDigits(s.substr(0, 8)) &&
         AllDigits(s.substr(9));
}

// YYYYMMDD-HHMMSS or YYYYMMDD-HHMMSS.NNNNNN
bool IsStamp(std::string_view s) {
  if (s.size() == kSecondStampSize + 1 + kSequenceSize) {
    return s[kSecondStampSize] == '.' && AllDigits(s.substr(kSecondStampSize + 1)) &&
           IsSecondStamp(s.substr(0, kSecondStampSize));
  }
  return IsSecondStamp(s);
}

// 0 for a stamp without a sequence number.
int SequenceOf(std::string_view stamp) {
  if (stamp.size() <= kSecondStampSize) return 0;
  return std::atoi(std::string(stamp.substr(kSecondStampSize + 1)).c_str());
}

std::string Stamp(WallTime t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

// Per stamp: which forms of one rotated file exist.
struct RotatedForms {
  bool plain = false;
  bool gz = false;
};

std::map<std::string, RotatedForms> RotatedOf(const std::vector<std::string>& names, int instance) {
  std::map<std::string, RotatedForms> out;  // ordered by stamp = by age
  for (const auto& n : names) {
    auto f = ParseLogFileName(n);
    if (!f || f->instance != instance || f->stamp.empty()) continue;
    (f->compressed ? out[f->stamp].gz : out[f->stamp].plain) = true;
  }
  return out;
}

// The second after SECOND_STAMP ("YYYYMMDD-HHMMSS", UTC).
std::string NextSecond(const std::string& second_stamp) {
  std::tm tm{};
  ::strptime(second_stamp.c_str(), "%Y%m%d-%H%M%S", &tm);
  return Stamp(std::chrono::system_clock::from_time_t(::timegm(&tm) + 1));
}

std::string BaseName(int instance) {
  return std::to_string(instance) + std::string(kLogSuffix);
}

// The last `max` bytes of a plain file.
std::string ReadTailBytes(const fs::path& file, std::size_t max) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return {};
  off_t size = st.st_size;
  off_t from = size > static_cast<off_t>(max) ? size - static_cast<off_t>(max) : 0;
  std::string out(static_cast<std::size_t>(size - from), '\0');
  std::size_t got = 0;
  while (got < out.size()) {
    ssize_t n =
        ::pread(fd.get(), out.data() + got, out.size() - got, from + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  return out;
}

// Copies IN into the gzip stream Z.
Status GzipInto(int in, gzFile z, const fs::path& file, const fs::path& partial) {
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno("reading " + file.string());
    if (n == 0) return Ok();
    if (::gzwrite(z, buf, static_cast<unsigned>(n)) != n) {
      return Error("writing " + partial.string() + ": gzwrite failed");
    }
  }
}

}  // namespace

std::optional<LogFileName> ParseLogFileName(std::string_view name) {
  std::size_t dot = name.find('.');
  if (dot == std::string_view::npos || !AllDigits(name.substr(0, dot))) return std::nullopt;
  std::string_view rest = name.substr(dot);
  if (rest.substr(0, kLogSuffix.size()) != kLogSuffix) return std::nullopt;
  rest.remove_prefix(kLogSuffix.size());
  LogFileName out;
  out.instance = std::atoi(std::string(name.substr(0, dot)).c_str());
  if (rest.empty()) return out;
  if (rest[0] != '.') return std::nullopt;
  rest.remove_prefix(1);
  if (rest.size() > kGzSuffix.size() && rest.substr(rest.size() - kGzSuffix.size()) == kGzSuffix) {
    out.compressed = true;
    rest.remove_suffix(kGzSuffix.size());
  }
  if (!IsStamp(rest)) return std::nullopt;
  out.stamp = std::string(rest);
  return out;
}

std::string RotatedLogName(const std::vector<std::string>& existing, int instance, WallTime now) {
  std::string second = Stamp(now);
  auto taken = RotatedOf(existing, instance);
  if (taken.empty()) return BaseName(instance) + "." + second;
  const std::string& newest = taken.rbegin()->first;
  std::string newest_second = newest.substr(0, kSecondStampSize);
  if (second > newest_second) return BaseName(instance) + "." + second;
  // S14.18: the same second as the newest file, or a clock that stepped
  // back: a sequence number after the newest's, never a made-up later
  // second (taking "the next free second" drifted minutes ahead of the
  // clock at a few rotations a second).
  int next = SequenceOf(newest) + 1;
  if (next > kMaxSequence) {
    // A million rotations in one second: only then one second ahead.
    return BaseName(instance) + "." + NextSecond(newest_second);
  }
  char sequence[16];
  std::snprintf(sequence, sizeof sequence, ".%06d", next);
  return BaseName(instance) + "." + newest_second + sequence;
}

std::vector<std::string> ListNames(const fs::path& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(std::move(name));
  }
  ::closedir(d);
  return out;
}

std::vector<int> LogInstances(const fs::path& dir) {
  std::vector<int> out;
  for (const auto& n : ListNames(dir)) {
    auto f = ParseLogFileName(n);
    if (f && f->stamp.empty()) out.push_back(f->instance);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<fs::path> InstanceLogFiles(const fs::path& dir, int instance) {
  auto names = ListNames(dir);
  std::vector<fs::path> out;
  for (const auto& [stamp, forms] : RotatedOf(names, instance)) {
    out.push_back(dir /
                  (BaseName(instance) + "." + stamp + (forms.plain ? "" : std::string(kGzSuffix))));
  }
  if (std::find(names.begin(), names.end(), BaseName(instance)) != names.end()) {
    out.push_back(dir / BaseName(instance));
  }
  return out;
}

RetentionPlan PlanRetention(const std::vector<std::string>& names, int instance, int max_files,
                            const std::vector<std::string>& compressing) {
  RetentionPlan plan;
  auto rotated = RotatedOf(names, instance);
  std::size_t keep = max_files > 1 ? static_cast<std::size_t>(max_files - 1) : 1;
  std::size_t i = 0;
  for (const auto& [stamp, forms] : rotated) {
    std::string name = BaseName(instance) + "." + stamp;
    bool newest = i + 1 == rotated.size();
    bool too_old = rotated.size() - i > keep;
    ++i;
    // S14.19: a compressor reads this file and will rename its .gz into
    // place; removing either now would leave an orphan .gz or fail it.
    if (std::find(compressing.begin(), compressing.end(), name) != compressing.end()) continue;
    if (too_old) {
      if (forms.plain) plan.remove.push_back(name);
      if (forms.gz) plan.remove.push_back(name + std::string(kGzSuffix));
    } else if (forms.plain && forms.gz) {
      // A compressor ended between renaming its fsynced .gz into place
      // and removing the original: the .gz is whole, the plain copy goes.
      plan.remove.push_back(name);
    } else if (!newest && forms.plain) {
      plan.compress.push_back(name);
    }
  }
  return plan;
}

Status CompressLogFile(const fs::path& file) {
  fs::path gz = file.string() + std::string(kGzSuffix);
  fs::path partial = gz.string() + ".partial";
  Fd in(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) return Error::FromErrno("opening " + file.string());
  Fd out(::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640));
  if (!out) return Error::FromErrno("creating " + partial.string());
  // zlib closes the descriptor it is given; ours stays open for fsync.
  int gz_fd = ::fcntl(out.get(), F_DUPFD_CLOEXEC, 0);
  if (gz_fd < 0) return Error::FromErrno("dup " + partial.string());
  gzFile z = ::gzdopen(gz_fd, "wb6");
  if (!z) {
    ::close(gz_fd);
    return Error("gzdopen " + partial.string());
  }
  Status status = GzipInto(in.get(), z, file, partial);
  if (::gzclose(z) != Z_OK && status) status = Error("closing " + partial.string());
  // S14.19: the .gz's bytes on disk before its name, and its name before
  // the original goes: a crash or power loss at any point leaves the
  // plain file or a whole .gz, never neither.
  // The steps of common/file_io.h's WriteFileAtomic, by hand: the .gz is
  // streamed through zlib from a file that may be 10 MiB, not one string.
  if (status && ::fsync(out.get()) != 0) status = Error::FromErrno("fsync " + partial.string());
  if (status && ::rename(partial.c_str(), gz.c_str()) != 0) {
    status = Error::FromErrno("renaming " + partial.string());
  }
  if (status) {
    Fd dir(::open(file.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir || ::fsync(dir.get()) != 0) {
      status = Error::FromErrno("fsync " + file.parent_path().string());
    }
  }
  if (!status) {
    ::unlink(partial.c_str());
    return status;
  }
  // Readers prefer the plain file while both exist (InstanceLogFiles).
  if (::unlink(file.c_str()) != 0) return Error::FromErrno("removing " + file.string());
  return Ok();
}

Result<std::string> ReadLogFile(const fs::path& file) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::FromErrno("opening log " + file.string());
  // zlib reads a file without a gzip header as it is.
  gzFile z = ::gzdopen(fd.Release(), "rb");
  if (!z) return Error("gzdopen " + file.string());
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = ::gzread(z, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  int err = 0;
  const char* msg = n < 0 ? ::gzerror(z, &err) : nullptr;
  std::string message = msg ? msg : "";
  ::gzclose(z);
  if (n < 0) return Error("reading log " + file.string() + ": " + message);
  return out;
}

Result<std::vector<LogLine>> ReadCriLogs(const std::vector<fs::path>& files) {
  std::vector<LogLine> lines;
  LogLineJoiner joiner;
  for (const auto& file : files) {
    auto data = ReadLogFile(file);
    if (!data) {
      // Removed by retention between listing and reading: it is gone.
      if (data.error().code() == ENOENT) continue;
      return data.take_error();
    }
    std::size_t start = 0;
    while (start < data->size()) {
      std::size_t nl = data->find('\n', start);
      if (nl == std::string::npos) nl = data->size();
      auto rec = ParseCriRecord(std::string_view(*data).substr(start, nl - start));
      start = nl + 1;
      if (!rec) continue;
      if (auto line = joiner.Add(*rec)) lines.push_back(std::move(*line));
    }
  }
  for (auto& line : joiner.Finish()) lines.push_back(std::move(line));
  return lines;
}

std::string TailOfLog(const std::vector<fs::path>& files, std::size_t max_lines,
                      std::size_t max_bytes) {
  std::string window;
  bool cut = false;
  for (auto it = files.rbegin(); it != files.rend() && window.size() < kTailWindow; ++it) {
    std::size_t want = kTailWindow - window.size();
    std::string tail;
    if (it->extension() == kGzSuffix) {
      // Reached only when the newer plain files hold less than the window,
      // that is when files are small: decompressing one whole is cheap.
      auto data = ReadLogFile(*it);
      if (!data) break;
      tail = data->size() > want ? data->substr(data->size() - want) : *data;
      cut = tail.size() < data->size();
    } else {
      tail = ReadTailBytes(*it, want);
      std::error_code ec;
      cut = tail.size() < fs::file_size(*it, ec);
    }
    window.insert(0, tail);
  }
  // A record cut by the window is dropped whole.
  if (cut) {
    std::size_t nl = window.find('\n');
    window.erase(0, nl == std::string::npos ? window.size() : nl + 1);
  }
  std::vector<LogLine> lines;
  LogLineJoiner joiner;
  std::size_t start = 0;
  while (start < window.size()) {
    std::size_t nl = window.find('\n', start);
    if (nl == std::string::npos) nl = window.size();
    auto rec = ParseCriRecord(std::string_view(window).substr(start, nl - start));
    start = nl + 1;
    if (!rec) continue;
    if (auto line = joiner.Add(*rec)) lines.push_back(std::move(*line));
  }
  for (auto& line : joiner.Finish()) lines.push_back(std::move(line));
  std::size_t from = lines.size() > max_lines ? lines.size() - max_lines : 0;
  std::string text;
  for (std::size_t i = from; i < lines.size(); ++i) text += lines[i].content + "\n";
  if (text.size() > max_bytes) text = text.substr(text.size() - max_bytes);
  return text;
}

}  // namespace podvisor::supervisor::logs
