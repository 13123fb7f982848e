// `podvisor logs` and `podvisor events`: read the files the supervisor
// writes (CRI logs, events.jsonl), so both work after the pod has ended;
// -f follows them with inotify until the pod's control socket goes away.
#include <poll.h>
#include <sys/resource.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <deque>
#include <fstream>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/events_table.h"
#include "cli/log_follow.h"
#include "common/fd.h"
#include "pod/status.h"
#include "supervisor/logs/cri_log.h"
#include "supervisor/logs/log_files.h"

namespace podvisor::cli {
namespace {

namespace fs = std::filesystem;

int Fail(const std::string& message) {
  std::fprintf(stderr, "podvisor: %s\n", message.c_str());
  return kExitFailed;
}

// Appends to `file` as they happen, byte ranges handed to `sink`; returns
// when `stop_marker` (the pod's control socket) disappears.
class Follower {
 public:
  bool Init(const fs::path& watch_dir, const fs::path& stop_marker) {
    fd_.Reset(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
    if (!fd_) return false;
    ::inotify_add_watch(fd_.get(), watch_dir.c_str(), IN_MODIFY | IN_CREATE | IN_MOVED_TO);
    ::inotify_add_watch(fd_.get(), stop_marker.parent_path().c_str(), IN_DELETE);
    stop_marker_ = stop_marker;
    return true;
  }
  // Blocks until something changed; false once the pod is gone.
  bool Wait() {
    std::error_code ec;
    if (!fs::exists(stop_marker_, ec)) return false;
    pollfd p{fd_.get(), POLLIN, 0};
    while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
    char buf[4096];
    while (::read(fd_.get(), buf, sizeof buf) > 0) {
    }
    return true;
  }

 private:
  Fd fd_;
  fs::path stop_marker_;
};

std::string ReadFrom(const fs::path& file, std::uintmax_t& offset) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(offset));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  offset += data.size();
  return data;
}

struct LogsOptions {
  std::vector<std::string> args;
  bool follow = false, previous = false, timestamps = false;
  int tail = -1;
  std::string log_dir = kDefaultLogDir, state_dir = kDefaultStateDir;
};

int Logs(const LogsOptions& o) {
  std::string pod_name, container;
  if (o.args.size() == 2) {
    pod_name = o.args[0];
    container = o.args[1];
  } else {
    container = o.args.at(0);
  }
  auto pod = ChoosePod(o.log_dir, pod_name, false);
  if (!pod) return Fail(pod.error().message());
  fs::path dir = fs::path(o.log_dir) / *pod / container;
  auto instances = supervisor::LogInstances(dir);
  if (instances.empty()) return Fail("no logs for container " + container + " of pod " + *pod + " in " + dir.string());
  int instance = instances.back();
  if (o.previous) {
    if (instances.size() < 2) return Fail("previous terminated container \"" + container + "\" in pod \"" + *pod + "\" not found");
    instance = instances[instances.size() - 2];
  }
  // S11.2: the instance's rotated files (gzip or not) and its current one.
  LogPrinter printer(o.timestamps);
  LogFollower follower(dir, instance, printer);
  auto so_far = follower.Start();
  if (!so_far) return Fail(so_far.error().message());
  // --tail counts user lines: hold them back, then print the last N.
  printer.Hold();
  printer.Feed(*so_far);
  if (!o.follow || o.previous) {
    printer.Finish();
    printer.Release(o.tail);
    return kExitSucceeded;
  }
  printer.Release(o.tail);
  Follower wake;
  if (!wake.Init(dir, fs::path(o.state_dir) / *pod / "control.sock")) return Fail("inotify failed");
  while (wake.Wait()) {
    while (follower.CatchUp()) {
    }
  }
  // The pod is gone: what it wrote last, then lines left open.
  while (follower.CatchUp()) {
  }
  printer.Finish();
  return kExitSucceeded;
}

struct EventsOptions {
  std::string pod;
  std::string state_dir = kDefaultStateDir;
  bool follow = false;
  std::string output = "table";
};

int Events(const EventsOptions& o) {
  auto pod = ChoosePod(o.state_dir, o.pod, false);
  if (!pod) return Fail(pod.error().message());
  fs::path file = fs::path(o.state_dir) / *pod / "events.jsonl";
  std::error_code ec;
  if (!fs::exists(file, ec)) return Fail("no events for pod " + *pod + " (" + file.string() + ")");
  const bool wide = o.output == "wide";
  std::uintmax_t offset = 0;
  std::string pending = ReadFrom(file, offset);
  // Complete lines only: the supervisor may be halfway through one.
  auto take_lines = [&pending] {
    std::vector<std::string> lines;
    std::size_t start = 0, nl;
    while ((nl = pending.find('\n', start)) != std::string::npos) {
      lines.push_back(pending.substr(start, nl - start));
      start = nl + 1;
    }
    pending.erase(0, start);
    return lines;
  };
  if (o.output == "json") {
    for (const auto& line : take_lines()) {
      if (!line.empty()) std::printf("%s\n", line.c_str());
    }
  } else {
    // A table wants aligned columns: read all first, then align once.
    std::vector<EventRecord> records;
    for (const auto& line : take_lines()) {
      if (auto e = ParseEventLine(line)) records.push_back(std::move(*e));
    }
    auto now = std::chrono::system_clock::now();
    std::printf("%s", FormatTable(EventTable(records, *pod, now, wide)).c_str());
  }
  std::fflush(stdout);
  if (!o.follow) return kExitSucceeded;
  Follower follower;
  if (!follower.Init(file.parent_path(), file.parent_path() / "control.sock")) {
    return Fail("inotify failed");
  }
  bool more = true;
  while (more) {
    more = follower.Wait();
    pending += ReadFrom(file, offset);
    for (const auto& line : take_lines()) {
      if (o.output == "json") {
        if (!line.empty()) std::printf("%s\n", line.c_str());
      } else if (auto e = ParseEventLine(line)) {
        // Each new event on its own line, as `kubectl get events -w` does.
        std::string two = FormatTable(
            {EventHeader(wide), EventRow(*e, *pod, std::chrono::system_clock::now(), wide)});
        std::printf("%s", two.substr(two.find('\n') + 1).c_str());
      }
    }
    std::fflush(stdout);
  }
  return kExitSucceeded;
}

}  // namespace

void AddLogCommands(CLI::App& app, int& exit_code) {
  {
    auto o = std::make_shared<LogsOptions>();
    CLI::App* cmd = app.add_subcommand("logs", "Print a container's output (kubectl logs)");
    cmd->add_option("ARGS", o->args, "[POD] CONTAINER")->required()->expected(1, 2);
    cmd->add_flag("-f,--follow", o->follow, "keep printing new output until the pod ends");
    cmd->add_flag("-p,--previous", o->previous, "the previous instance of the container");
    cmd->add_flag("--timestamps", o->timestamps, "prefix each line with its RFC 3339 time");
    cmd->add_option("--tail", o->tail, "only the last N lines")->check(CLI::NonNegativeNumber);
    cmd->add_option("--log-dir", o->log_dir, "as given to run")->capture_default_str();
    cmd->add_option("--state-dir", o->state_dir, "as given to run")->capture_default_str();
    cmd->callback([o, &exit_code] { exit_code = Logs(*o); });
  }
  {
    auto o = std::make_shared<EventsOptions>();
    CLI::App* cmd = app.add_subcommand("events", "Print the pod's events (kubectl get events)");
    cmd->add_option("POD", o->pod, "the pod (may be left out when there is one)");
    cmd->add_flag("-f,--follow", o->follow, "keep printing new events until the pod ends");
    cmd->add_option("-o,--output", o->output,
                    "table, wide (adds FIRST SEEN, COUNT) or json (one object a line)")
        ->check(CLI::IsMember({"table", "wide", "json"}))
        ->capture_default_str();
    cmd->add_option("--state-dir", o->state_dir, "as given to run")->capture_default_str();
    cmd->callback([o, &exit_code] { exit_code = Events(*o); });
  }
  {
    // The supervisor's gzip of a rotated log (S11.2), in a child process
    // so the event loop never waits for it (supervisor/executor/container_logs.cc).
    auto file = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("compress-log", "");
    cmd->group("");  // hidden from --help
    cmd->add_option("FILE", *file)->required();
    cmd->callback([file, &exit_code] {
      // Below the containers: compressing old logs is never urgent.
      ::setpriority(PRIO_PROCESS, 0, 10);
      auto s = supervisor::CompressLogFile(*file);
      if (!s) std::fprintf(stderr, "podvisor: %s\n", s.error().message().c_str());
      exit_code = s ? kExitSucceeded : kExitFailed;
    });
  }
}

}  // namespace podvisor::cli
