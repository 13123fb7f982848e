#include "cli/pod_runs.h"

#include <algorithm>

#include "cli/default_dirs.h"
#include "cli/pod_records.h"
#include "cli/user_dirs.h"
#include "common/pod_dir.h"
#include "hostfs/earlier_runs.h"

namespace podvisor::cli {
namespace {

namespace fs = std::filesystem;

bool AllDigits(const std::string& s) {
  return !s.empty() && s.size() < 6 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

fs::path LogRoot(const std::string& log_dir_flag) {
  return log_dir_flag.empty() ? fs::path(DefaultLogDir()) : fs::path(log_dir_flag);
}

Result<PodRunFiles> FindPodRunFiles(const fs::path& state_dir, const std::string& log_dir_flag,
                                    const std::string& pod, const std::string& run) {
  const fs::path pod_dir = state_dir / pod;
  if (run.empty()) {
    PodRunFiles files{pod_dir, LogRoot(log_dir_flag) / pod, ""};
    if (log_dir_flag.empty()) {
      if (auto remembered = hostfs::RememberedLogDir(pod_dir)) files.logs = *remembered;
    }
    return files;
  }
  std::vector<hostfs::EarlierRun> runs = hostfs::EarlierRuns(pod_dir);
  const hostfs::EarlierRun* found = nullptr;
  if (AllDigits(run)) {
    const std::size_t n = std::stoul(run);
    if (n >= 1 && n <= runs.size()) found = &runs[runs.size() - n];
  } else {
    for (const auto& r : runs) {
      if (r.id == run) found = &r;
    }
  }
  if (found == nullptr) {
    std::string ids;
    for (auto it = runs.rbegin(); it != runs.rend(); ++it)
      ids += (ids.empty() ? "" : ", ") + it->id;
    return Error("--run " + run + ": pod " + pod + " has no such earlier run (" +
                 (ids.empty() ? std::string("it has none") : "newest first: " + ids) + ")");
  }
  return PodRunFiles{found->state, found->logs, found->id};
}

Result<nlohmann::json> LoadRunRecord(const fs::path& state_dir, const std::string& pod,
                                     const PodRunFiles& files) {
  if (files.run.empty()) return LoadPodRecord(state_dir, pod);
  auto record = ReadRecord(PodDir::At(files.state).RecordFile());
  if (!record) return Error("run " + files.run + " of pod " + pod + " has no record");
  return *record;
}

std::vector<fs::path> PodLogDirs(const fs::path& state_dir, const std::string& log_dir_flag,
                                 const std::string& pod) {
  std::vector<fs::path> dirs = hostfs::AllLogDirs(state_dir / pod);
  const fs::path named = LogRoot(log_dir_flag) / pod;
  if (std::find(dirs.begin(), dirs.end(), named) == dirs.end()) dirs.push_back(named);
  return dirs;
}

}  // namespace podvisor::cli
