// `podvisor logs` over one container's log files (S11.1, S11.2): the
// instance's rotated files (plain or gzip) and its current file read as one
// stream, and -f following it as the supervisor appends, rotates and
// restarts the container.
//
// Following holds the current file open: when the supervisor renames it
// aside, the open descriptor still reads the old inode to its end, then
// the follower reads any file rotated while it was not looking and opens
// the new <n>.log. A new instance (<n+1>.log) is followed from its first
// byte, as `kubectl logs -f` follows a restarted container. A follower that
// falls behind by more than --log-max-files rotations loses what retention
// deleted meanwhile, as with the kubelet.
#pragma once

#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/fd.h"
#include "common/result.h"
#include "supervisor/logs/cri_log.h"
#include "supervisor/logs/log_tail.h"

namespace podvisor::cli {

// Prints user lines from CRI records fed as raw bytes.
class LogPrinter {
 public:
  explicit LogPrinter(bool timestamps) : timestamps_(timestamps) {}
  // kubectl logs --prefix: "[pod/NAME/CONTAINER] " before each line.
  void SetPrefix(std::string prefix) { prefix_ = std::move(prefix); }
  // --since, --since-time: lines logged before `since` are dropped.
  void SetSince(WallTime since) { since_ = since; }
  // Whether Print shows `line` (--since); --tail counts only these.
  bool Keeps(const supervisor::logs::LogLine& line) const;
  void Print(const supervisor::logs::LogLine& line);
  // Until Release, lines are kept instead of printed; Release prints the
  // last `last_n` of them (all when negative) and prints directly after.
  void Hold() { held_.emplace(); }
  void Release(int last_n);
  // Raw bytes of a log file; a trailing incomplete record waits for more.
  void Feed(const std::string& bytes);
  // Ends the stream: lines still open (P without F) are printed.
  void Finish();

 private:
  bool timestamps_;
  std::string prefix_;
  std::optional<WallTime> since_;
  supervisor::logs::LogLineJoiner joiner_;
  std::string pending_;  // bytes after the last newline
  std::optional<std::vector<supervisor::logs::LogLine>> held_;
};

class LogFollower {
 public:
  LogFollower(std::filesystem::path dir, int instance, LogPrinter& printer)
      : dir_(std::move(dir)), instance_(instance), printer_(printer) {}

  // Opens the instance's current file and returns everything logged so far
  // (rotated files first) as raw CRI bytes, leaving the descriptor at the
  // end; following continues from there.
  // With `tail`, only the end of it that holds the last tail->lines kept
  // lines, read backwards (log_tail.h): --tail on months of logs reads
  // kilobytes, not every rotated file.
  Result<std::string> Start(const supervisor::logs::LogTailRequest* tail = nullptr);

  // Prints what was appended since, following a rotation or a new
  // instance. Returns whether anything moved.
  bool CatchUp();

 private:
  Status OpenCurrent();
  std::string ReadFd();
  Result<std::string> ReadTail(const supervisor::logs::LogTailRequest& tail);
  std::set<std::string> RotatedStamps() const;
  std::string ReadRotated(const std::string& stamp) const;
  std::filesystem::path Current() const { return dir_ / (std::to_string(instance_) + ".log"); }

  std::filesystem::path dir_;
  int instance_;
  LogPrinter& printer_;
  Fd fd_;
  ino_t ino_ = 0;
  std::set<std::string> seen_;  // rotated stamps older than the open file
};

}  // namespace podvisor::cli
