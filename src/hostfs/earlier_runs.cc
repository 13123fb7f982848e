#include "hostfs/earlier_runs.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "common/mounts.h"
#include "common/pod_dir.h"

namespace podvisor::hostfs {
namespace {

namespace fs = std::filesystem;

// The uid in a kept record, or "" when there is none to read.
std::string RecordUid(const fs::path& record) {
  auto text = ReadFileBounded(record, 16 * 1024 * 1024);
  if (!text) return "";
  auto doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("metadata") || !doc["metadata"].is_object()) return "";
  std::string uid = doc["metadata"].value("uid", "");
  // It becomes a directory name: only what a uid holds.
  for (char c : uid) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'))
      return "";
  }
  return uid.size() <= 64 ? uid : "";
}

// `base` or base-2, base-3, ...: a name not yet under `dir`.
std::string FreeName(const fs::path& dir, const std::string& base) {
  std::error_code ec;
  std::string name = base;
  for (int i = 2; fs::exists(dir / name, ec); ++i) name = base + "-" + std::to_string(i);
  return name;
}

Status MoveEntries(const fs::path& from, const fs::path& to, const std::string& skip) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(from, ec)) {
    if (e.path().filename() == skip) continue;
    fs::rename(e.path(), to / e.path().filename(), ec);
    if (ec) return Error("moving " + e.path().string() + " aside: " + ec.message(), ec.value());
  }
  return Ok();
}

void RemoveRun(const EarlierRun& run) {
  std::error_code ec;
  // Only a directory of the shape this code made: <pod logs>/.runs/<id>.
  if (!run.logs.empty() && run.logs.filename() == run.id &&
      run.logs.parent_path().filename() == kEarlierRunsDir) {
    fs::remove_all(run.logs, ec);
  }
  fs::remove_all(run.state, ec);
}

}  // namespace

std::optional<fs::path> RememberedLogDir(const fs::path& pod_dir) {
  auto text = ReadFileBounded(pod_dir / kLogDirFile, 8192);
  if (!text) return std::nullopt;
  std::string path = *text;
  while (!path.empty() && path.back() == '\n') path.pop_back();
  if (path.empty() || path.front() != '/' || path.find('\n') != std::string::npos) {
    return std::nullopt;
  }
  return fs::path(path);
}

Status RememberLogDir(const fs::path& pod_dir, const fs::path& log_dir) {
  return WriteFileAtomic(pod_dir / kLogDirFile, fs::absolute(log_dir).string() + "\n", 0600,
                         Durability::kUnsynced);
}

Result<std::optional<EarlierRun>> SetEarlierRunAside(const fs::path& pod_dir,
                                                     const fs::path& log_dir) {
  std::error_code ec;
  const PodDir pod = PodDir::At(pod_dir);
  if (!fs::exists(pod.RecordFile(), ec) && !fs::exists(pod.EventsFile(), ec)) {
    return std::optional<EarlierRun>();
  }
  const fs::path runs = pod_dir / kEarlierRunsDir;
  if (auto s = MakeDirs(runs, 0700); !s) return s.take_error();
  std::string uid = RecordUid(pod.RecordFile());
  EarlierRun run;
  run.id = FreeName(runs, uid.empty() ? "run" : uid);
  run.state = runs / run.id;
  fs::create_directory(run.state, ec);
  if (ec) return Error("creating " + run.state.string() + ": " + ec.message(), ec.value());
  run.logs_from = RememberedLogDir(pod_dir).value_or(log_dir);
  for (const fs::path& file :
       {pod.RecordFile(), pod.EventsFile(), pod_dir / fs::path(kLogDirFile)}) {
    if (!fs::exists(file, ec)) continue;
    fs::rename(file, run.state / file.filename(), ec);
    if (ec) return Error("moving " + file.string() + " aside: " + ec.message(), ec.value());
  }
  if (fs::is_directory(run.logs_from, ec) && !fs::is_empty(run.logs_from, ec)) {
    run.logs = run.logs_from / kEarlierRunsDir / FreeName(run.logs_from / kEarlierRunsDir, run.id);
    if (auto s = MakeDirs(run.logs, 0755); !s) return s.take_error();
    if (auto s = MoveEntries(run.logs_from, run.logs, kEarlierRunsDir); !s) return s.take_error();
    if (auto s = RememberLogDir(run.state, run.logs); !s) return s.take_error();
  }
  // The oldest beyond what is kept go.
  std::vector<EarlierRun> all = EarlierRuns(pod_dir);
  for (std::size_t i = 0; i + kEarlierRunsKept < all.size(); ++i) RemoveRun(all[i]);
  return std::optional<EarlierRun>(std::move(run));
}

void PutEarlierRunBack(const EarlierRun& run, const fs::path& pod_dir) {
  std::error_code ec;
  if (!run.logs.empty()) {
    (void)MoveEntries(run.logs, run.logs_from, "");
    fs::remove(run.logs, ec);
    fs::remove(run.logs.parent_path(), ec);  // .runs, when it was the only one
  }
  fs::remove(run.state / kLogDirFile, ec);  // named the archive, not the pod's logs
  for (const auto& e : fs::directory_iterator(run.state, ec)) {
    fs::rename(e.path(), pod_dir / e.path().filename(), ec);
  }
  if (!run.logs.empty()) (void)RememberLogDir(pod_dir, run.logs_from);
  fs::remove(run.state, ec);
  fs::remove(pod_dir / kEarlierRunsDir, ec);
}

std::vector<EarlierRun> EarlierRuns(const fs::path& pod_dir) {
  std::vector<std::pair<fs::file_time_type, EarlierRun>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(pod_dir / kEarlierRunsDir, ec)) {
    if (!e.is_directory(ec)) continue;
    EarlierRun run;
    run.id = e.path().filename().string();
    run.state = e.path();
    run.logs = RememberedLogDir(e.path()).value_or(fs::path());
    found.emplace_back(fs::last_write_time(e.path(), ec), std::move(run));
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.id < b.second.id;
  });
  std::vector<EarlierRun> runs;
  runs.reserve(found.size());
  for (auto& [time, run] : found) runs.push_back(std::move(run));
  return runs;
}

std::vector<fs::path> AllLogDirs(const fs::path& pod_dir) {
  std::set<fs::path> dirs;
  if (auto current = RememberedLogDir(pod_dir)) dirs.insert(*current);
  for (const EarlierRun& run : EarlierRuns(pod_dir)) {
    // <pod logs>/.runs/<id>: the pod's log directory of that run.
    if (!run.logs.empty() && run.logs.parent_path().filename() == kEarlierRunsDir) {
      dirs.insert(run.logs.parent_path().parent_path());
    }
  }
  return {dirs.begin(), dirs.end()};
}

}  // namespace podvisor::hostfs
