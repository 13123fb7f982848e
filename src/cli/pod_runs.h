// Where a pod's files are, run by run (docs/SEMANTICS.md S14.33, S14.34):
// the current run's record and events under the state directory and its
// logs wherever that run put them (the log directory it remembered), or an
// earlier run's, set aside under .runs/<uid>/ (hostfs/earlier_runs.h).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace podvisor::cli {

struct PodRunFiles {
  std::filesystem::path state;  // DIR/<pod>, or DIR/<pod>/.runs/<id>
  std::filesystem::path logs;   // that run's log directory of the pod
  std::string run;              // "" for the current run, else the earlier run's id
};

// The log directory root the client commands use when --log-dir is not
// given and no run remembered one.
std::filesystem::path LogRoot(const std::string& log_dir_flag);

// `run`: "" the current (or last) run; "1", "2", ...: the run before it,
// the one before that; else an earlier run's id (its uid). `log_dir_flag`
// is --log-dir as given, "" when it was not: then the log directory the
// run remembered, else the default.
Result<PodRunFiles> FindPodRunFiles(const std::filesystem::path& state_dir,
                                    const std::string& log_dir_flag, const std::string& pod,
                                    const std::string& run);

// The record of the run: the supervisor's answer or the kept status.json
// for the current run (LoadPodRecord), the set-aside one for an earlier.
Result<nlohmann::json> LoadRunRecord(const std::filesystem::path& state_dir, const std::string& pod,
                                     const PodRunFiles& files);

// Every log directory of the pod's runs (current and earlier) and the one
// --log-dir names: what `rm` removes besides DIR/<pod>.
std::vector<std::filesystem::path> PodLogDirs(const std::filesystem::path& state_dir,
                                              const std::string& log_dir_flag,
                                              const std::string& pod);

}  // namespace podvisor::cli
