// `podvisor rm`, `prune` and `images`: what outlives a pod on purpose
// (its kept record, events and logs; the image store, images_cmds.h) goes
// only when the user says so (docs/INTERFACE.md "Kept records").
#include <fcntl.h>
#include <sys/file.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <set>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/images_cmds.h"
#include "cli/pod_records.h"
#include "cli/pod_runs.h"
#include "cli/pod_target.h"
#include "cli/user_dirs.h"
#include "common/fd.h"
#include "common/pod_dir.h"
#include "common/pod_lock.h"
#include "image/bundle_image.h"

namespace podvisor::cli {
namespace {

namespace fs = std::filesystem;

struct Dirs {
  std::string state_dir = DefaultStateDir();
  std::string log_dir;  // "" (not given): wherever each run put its logs (S14.34)
};

void AddDirs(CLI::App* cmd, Dirs& d, bool log_dir = true) {
  cmd->add_option("--state-dir", d.state_dir, "as given to run")->capture_default_str();
  if (log_dir) {
    cmd->add_option("--log-dir", d.log_dir,
                    "also remove the pod's logs here (its runs' own log directories always go)");
  }
}

// Mount points under `dir`, from /proc/self/mountinfo: a pod whose
// supervisor was SIGKILLed may still have its volumes mounted there, and
// removing the tree would reach into a hostPath.
bool HasMountsUnder(const fs::path& dir) {
  std::ifstream in("/proc/self/mountinfo");
  const std::string prefix = dir.string() + "/";
  for (std::string line; std::getline(in, line);) {
    // "id parent major:minor root mountpoint ...": the fifth field.
    std::size_t pos = 0;
    for (int i = 0; i < 4 && pos != std::string::npos; ++i) pos = line.find(' ', pos + 1);
    if (pos == std::string::npos) continue;
    std::size_t end = line.find(' ', pos + 1);
    std::string mount_point = line.substr(pos + 1, end - pos - 1);
    if (mount_point.starts_with(prefix) || mount_point == dir.string()) return true;
  }
  return false;
}

// Removes an ended pod's record, events and logs.
Status RemovePod(const Dirs& d, const PodEntry& pod) {
  if (pod.running) return Error("pod " + pod.name + " is running: stop it first");
  if (pod.phase != "Succeeded" && pod.phase != "Failed") {
    return Error("pod " + pod.name + " did not end cleanly (phase " + pod.phase +
                 "): `podvisor run` of it recovers what it left, then it can be removed");
  }
  const fs::path state = fs::path(d.state_dir) / pod.name;
  // S14.30: a `run` of this pod starting now would find it gone or find it
  // whole, never half-removed.
  auto lock = PodLock::TryTake(fs::absolute(d.state_dir), pod.name);
  if (!lock) {
    if (lock.error().code() == EBUSY)
      return Error("pod " + pod.name + " is running: stop it first");
    return lock.take_error();
  }
  if (HasMountsUnder(state)) {
    return Error("pod " + pod.name + " still has mounts under " + state.string());
  }
  std::error_code ec;
  // S14.34: the logs of every run, wherever each went, then the record.
  std::vector<fs::path> dirs = PodLogDirs(d.state_dir, d.log_dir, pod.name);
  dirs.push_back(state);
  for (const fs::path& dir : dirs) {
    fs::remove_all(dir, ec);
    if (ec) return Error("removing " + dir.string() + ": " + ec.message(), ec.value());
  }
  lock->Unlink();
  return Ok();
}

int Rm(const Dirs& d, const std::vector<std::string>& names) {
  int code = kExitSucceeded;
  std::vector<PodEntry> pods = FindPods(d.state_dir);
  for (const std::string& given : names) {
    const std::string name = PodWord(given);  // kubectl's pod/NAME
    // S14.23: a clear error for "../x", not a search for it.
    if (Status s = CheckNameArgument("pod name", name); !s) {
      std::fprintf(stderr, "podvisor: %s\n", s.error().message().c_str());
      code = kExitFailed;
      continue;
    }
    const PodEntry* found = nullptr;
    for (const auto& p : pods) {
      if (p.name == name) found = &p;
    }
    Status s = found ? RemovePod(d, *found)
                     : Status(Error("no pod named " + name + " under " + d.state_dir));
    if (!s) {
      std::fprintf(stderr, "podvisor: %s\n", s.error().message().c_str());
      code = kExitFailed;
      continue;
    }
    std::printf("pod/%s removed\n", name.c_str());
  }
  return code;
}

int Prune(const Dirs& d) {
  int code = kExitSucceeded;
  for (const PodEntry& pod : FindPods(d.state_dir)) {
    if (pod.running) continue;
    if (pod.phase != "Succeeded" && pod.phase != "Failed") {
      std::fprintf(stderr, "podvisor: kept pod %s (phase %s): not ended cleanly\n",
                   pod.name.c_str(), pod.phase.c_str());
      continue;
    }
    if (auto s = RemovePod(d, pod); !s) {
      std::fprintf(stderr, "podvisor: %s\n", s.error().message().c_str());
      code = kExitFailed;
      continue;
    }
    std::printf("pod/%s removed\n", pod.name.c_str());
  }
  // Bundle images a SIGKILLed supervisor unpacked (run of a packed
  // bundle): the next run of one sweeps them too, prune need not wait.
  if (int swept = image::SweepUnpackedBundles(fs::absolute(d.state_dir) / StateDirEntry::kBundles);
      swept > 0) {
    std::printf("%d unpacked bundle image%s removed\n", swept, swept == 1 ? "" : "s");
  }
  return code;
}

}  // namespace

void AddRecordCommands(CLI::App& app, int& exit_code) {
  {
    auto d = std::make_shared<Dirs>();
    auto names = std::make_shared<std::vector<std::string>>();
    CLI::App* cmd = app.add_subcommand(
        "rm", "Delete ended pods' kept records, events and logs (refuses a running pod)");
    cmd->add_option("POD", *names, "the pods")->required();
    AddDirs(cmd, *d);
    cmd->callback([d, names, &exit_code] { exit_code = Rm(*d, *names); });
  }
  {
    auto d = std::make_shared<Dirs>();
    CLI::App* cmd = app.add_subcommand("prune", "Delete every ended pod's record, events and logs");
    AddDirs(cmd, *d);
    cmd->callback([d, &exit_code] { exit_code = Prune(*d); });
  }
  {
    CLI::App* images = app.add_subcommand("images", "List and prune the image store");
    images->require_subcommand(1);
    AddImageSubcommands(*images, exit_code);
  }
}

}  // namespace podvisor::cli
