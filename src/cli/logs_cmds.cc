// `podvisor logs` and `podvisor events`: read the files the supervisor
// writes (CRI logs, events.jsonl), so both work after the pod has ended;
// -f follows them with inotify until the pod's control socket goes away.
// logs has kubectl's habits: -c, --all-containers, --prefix, --since,
// --since-time, -p, --tail.
#include <poll.h>
#include <sys/inotify.h>
#include <sys/resource.h>
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
#include "cli/pod_loading.h"
#include "cli/pod_records.h"
#include "cli/pod_runs.h"
#include "cli/pod_target.h"
#include "cli/user_dirs.h"
#include "common/fd.h"
#include "common/pod_dir.h"
#include "common/terminal_text.h"
#include "pod/status.h"
#include "supervisor/logs/cri_log.h"
#include "supervisor/logs/log_files.h"

namespace podvisor::cli {
namespace {

namespace fs = std::filesystem;

// S14.20: an error may quote what a pod wrote.
int Fail(const std::string& message) {
  std::fprintf(stderr, "podvisor: %s\n", TerminalSafe(message).c_str());
  return kExitFailed;
}

// Appends to `file` as they happen, byte ranges handed to `sink`; returns
// when `stop_marker` (the pod's control socket) disappears.
class Follower {
 public:
  bool Init(const fs::path& stop_marker) {
    fd_.Reset(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
    if (!fd_) return false;
    ::inotify_add_watch(fd_.get(), stop_marker.parent_path().c_str(),
                        IN_DELETE | IN_MODIFY | IN_CREATE | IN_MOVED_TO);
    stop_marker_ = stop_marker;
    return true;
  }
  void Watch(const fs::path& dir) {
    ::inotify_add_watch(fd_.get(), dir.c_str(), IN_MODIFY | IN_CREATE | IN_MOVED_TO);
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
  std::string container;  // -c
  bool all_containers = false, prefix = false;
  std::string since, since_time;
  bool follow = false, previous = false, timestamps = false;
  int tail = -1;
  // --log-dir as given; "" (not given): where the pod's run put its logs.
  std::string log_dir, state_dir = DefaultStateDir();
  std::string run;    // --run: an earlier run (S14.33); "" the current one
  PodRunFiles files;  // the chosen pod's, once chosen
};

// The pod is chosen among those under the state dir (pod_records.h); a
// pod whose state dir is gone (a reboot emptied /run) still has its logs.
Result<std::string> SelectLogPod(const LogsOptions& o, const std::string& name) {
  auto pod = SelectPod(o.state_dir, name);
  if (pod) return pod;
  std::error_code ec;
  if (!name.empty()) {
    // S14.23: never a path outside the log directory.
    if (Status s = CheckNameArgument("pod name", name); !s) return s.take_error();
    if (fs::is_directory(LogRoot(o.log_dir) / name, ec)) return name;
    return pod;
  }
  if (!FindPods(o.state_dir).empty()) return pod;  // several: that error
  std::vector<std::string> dirs;
  for (const auto& entry : fs::directory_iterator(LogRoot(o.log_dir), ec)) {
    std::string n = entry.path().filename().string();
    if (entry.is_directory(ec) && !n.starts_with('.')) dirs.push_back(n);
  }
  if (dirs.size() == 1) return dirs[0];
  return pod;
}

// The containers of the pod, init list first, from its record; empty
// when there is none (only logs are left).
std::vector<std::string> ContainerNames(const LogsOptions& o, const std::string& pod) {
  std::vector<std::string> names;
  auto record = LoadRunRecord(o.state_dir, pod, o.files);
  if (!record) return names;
  pod::PodSpec spec = SpecShapeFromPodJson(*record);
  for (const auto* list : {&spec.init_containers, &spec.containers}) {
    for (const auto& c : *list) names.push_back(c.name);
  }
  return names;
}

// kubectl's answer when a pod has several containers and none was named.
std::string ChooseContainerMessage(const LogsOptions& o, const std::string& pod) {
  auto record = LoadRunRecord(o.state_dir, pod, o.files);
  pod::PodSpec spec = record ? SpecShapeFromPodJson(*record) : pod::PodSpec{};
  auto join = [](const std::vector<pod::Container>& list) {
    std::string out;
    for (const auto& c : list) out += (out.empty() ? "" : " ") + c.name;
    return out;
  };
  std::string message = "a container name must be specified for pod " + pod + ", choose one of: [" +
                        join(spec.containers) + "]";
  if (!spec.init_containers.empty()) {
    message += " or one of the init containers: [" + join(spec.init_containers) + "]";
  }
  return message;
}

// One container's log stream: its printer and the follower feeding it.
struct Stream {
  std::string container;
  fs::path dir;
  std::unique_ptr<LogPrinter> printer;
  std::unique_ptr<LogFollower> follower;
};

Result<WallTime> SinceTime(const LogsOptions& o) {
  if (!o.since_time.empty()) {
    auto t = ParseRfc3339(o.since_time);
    if (!t) return Error("--since-time: not an RFC 3339 time: \"" + o.since_time + "\"");
    return *t;
  }
  auto d = ParseDuration(o.since);
  if (!d) return d.take_error().Wrap("--since");
  return std::chrono::system_clock::now() - *d;
}

// Prints what one container's chosen instance has written so far (S11.2:
// its rotated files, gzip or not, and its current one); with --follow, the
// stream to follow goes to `streams`. A failure's message, or "".
std::string StartStream(const LogsOptions& o, const std::string& pod, const std::string& name,
                        const std::optional<WallTime>& since, std::vector<Stream>& streams) {
  // S14.23: the argument, or a name in the pod's record, becomes a
  // directory under the pod's logs: "../../x" must not.
  if (Status s = CheckNameArgument("container name", name); !s) return s.error().message();
  fs::path dir = o.files.logs / name;
  auto instances = supervisor::logs::LogInstances(dir);
  if (instances.empty()) {
    if (o.all_containers) return "";  // not started yet: nothing to show
    return "no logs for container " + name + " of pod " + pod + " in " + dir.string();
  }
  int instance = instances.back();
  if (o.previous) {
    if (instances.size() < 2) {
      if (o.all_containers) return "";
      return "previous terminated container \"" + name + "\" in pod \"" + pod + "\" not found";
    }
    instance = instances[instances.size() - 2];
  }
  Stream s{name, dir, std::make_unique<LogPrinter>(o.timestamps), nullptr};
  if (o.prefix) s.printer->SetPrefix("[pod/" + pod + "/" + name + "] ");
  if (since) s.printer->SetSince(*since);
  // S11.2: the instance's rotated files (gzip or not) and its current one.
  s.follower = std::make_unique<LogFollower>(dir, instance, *s.printer);
  // --tail reads backwards from the end only as far as its N lines reach.
  const LogPrinter& printer = *s.printer;
  supervisor::logs::LogTailRequest tail{
      static_cast<std::size_t>(std::max(o.tail, 0)),
      [&printer](const supervisor::logs::LogLine& line) { return printer.Keeps(line); }};
  auto so_far = s.follower->Start(o.tail >= 0 ? &tail : nullptr);
  if (!so_far) return so_far.error().message();
  // --tail counts user lines (per container, as kubectl's): hold them
  // back, then print the last N.
  s.printer->Hold();
  s.printer->Feed(*so_far);
  if (!o.follow || o.previous) {
    s.printer->Finish();
    s.printer->Release(o.tail);
    return "";
  }
  s.printer->Release(o.tail);
  streams.push_back(std::move(s));
  return "";
}

int Logs(LogsOptions o) {
  // kubectl's habits (pod_target.h): POD first, -c for the container,
  // else the pod's default one; a lone word that names no pod is still
  // the container of the only pod.
  auto words = ReadTargetWords(o.args, o.container, [&o](const std::string& word) {
    std::error_code ec;
    return CheckNameArgument("pod name", word).ok() &&
           (fs::is_directory(fs::path(o.state_dir) / word, ec) ||
            fs::is_directory(LogRoot(o.log_dir) / word, ec));
  });
  if (!words) return Fail(words.error().message());
  if (!o.since.empty() && !o.since_time.empty())
    return Fail("--since and --since-time exclude each other");
  auto pod = SelectLogPod(o, words->pod);
  if (!pod) return Fail(pod.error().message());
  // S14.34: the logs are where the pod's run put them, unless --log-dir
  // says otherwise; S14.33: an earlier run's with --run.
  auto files = FindPodRunFiles(o.state_dir, o.log_dir, *pod, o.run);
  if (!files) return Fail(files.error().message());
  o.files = std::move(*files);
  if (!o.files.run.empty()) o.follow = false;  // an earlier run has ended

  std::vector<std::string> containers;
  if (o.all_containers) {
    if (!words->container.empty()) return Fail("--all-containers names no container");
    containers = ContainerNames(o, *pod);
  } else if (!words->container.empty()) {
    containers = {words->container};
  } else {
    // No record (a pod whose state dir a reboot emptied): kubectl's
    // question, as nothing says which containers it had.
    auto record = LoadRunRecord(o.state_dir, *pod, o.files);
    if (!record) return Fail(ChooseContainerMessage(o, *pod));
    auto chosen = AnnounceDefaultContainer(*record);
    if (!chosen) return Fail(chosen.error().message());
    containers = {*chosen};
  }
  std::optional<WallTime> since;
  if (!o.since.empty() || !o.since_time.empty()) {
    auto t = SinceTime(o);
    if (!t) return Fail(t.error().message());
    since = *t;
  }

  std::vector<Stream> streams;
  for (const std::string& name : containers) {
    if (std::string failed = StartStream(o, *pod, name, since, streams); !failed.empty()) {
      return Fail(failed);
    }
  }
  if (streams.empty()) return kExitSucceeded;
  Follower wake;
  if (!wake.Init(PodDir(o.state_dir, *pod).ControlSocket())) return Fail("inotify failed");
  for (const Stream& s : streams) wake.Watch(s.dir);
  while (wake.Wait()) {
    for (Stream& s : streams) {
      while (s.follower->CatchUp()) {
      }
    }
  }
  // The pod is gone: what it wrote last, then lines left open.
  for (Stream& s : streams) {
    while (s.follower->CatchUp()) {
    }
    s.printer->Finish();
  }
  return kExitSucceeded;
}

struct EventsOptions {
  std::string pod;
  std::string state_dir = DefaultStateDir();
  std::string run;  // --run: an earlier run (S14.33)
  bool follow = false;
  std::string output = "table";
};

int Events(const EventsOptions& o) {
  auto pod = SelectPod(o.state_dir, o.pod);
  if (!pod) return Fail(pod.error().message());
  auto files = FindPodRunFiles(o.state_dir, "", *pod, o.run);
  if (!files) return Fail(files.error().message());
  fs::path file = files->state / PodDir::kEventsFile;
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
  if (!o.follow || !files->run.empty()) return kExitSucceeded;
  Follower follower;
  if (!follower.Init(PodDir::At(file.parent_path()).ControlSocket())) return Fail("inotify failed");
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
    cmd->add_option("ARGS", o->args, "[POD] [CONTAINER]")->expected(0, 2);
    cmd->add_option("-c,--container", o->container, "the container (kubectl logs -c)");
    cmd->add_flag("--all-containers", o->all_containers, "every container, init list first");
    cmd->add_flag("--prefix", o->prefix, "prefix each line with [pod/NAME/CONTAINER]");
    cmd->add_option("--since", o->since, "only lines newer than this duration (5s, 2m, 3h)");
    cmd->add_option("--since-time", o->since_time, "only lines at or after this RFC 3339 time");
    cmd->add_flag("-f,--follow", o->follow, "keep printing new output until the pod ends");
    cmd->add_flag("-p,--previous", o->previous, "the previous instance of the container");
    cmd->add_flag("--timestamps", o->timestamps, "prefix each line with its RFC 3339 time");
    cmd->add_option("--tail", o->tail, "only the last N lines")->check(CLI::NonNegativeNumber);
    cmd->add_option("--run", o->run,
                    "an earlier run of the pod: 1 the one before the last, 2 the one before "
                    "that, or its uid");
    cmd->add_option(
        "--log-dir", o->log_dir,
        "as given to run (default: where the pod's run put them, else " + DefaultLogDir() + ")");
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
    cmd->add_option("--run", o->run,
                    "an earlier run of the pod: 1 the one before the last, 2 the one before "
                    "that, or its uid");
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
      auto s = supervisor::logs::CompressLogFile(*file);
      if (!s) std::fprintf(stderr, "podvisor: %s\n", s.error().message().c_str());
      exit_code = s ? kExitSucceeded : kExitFailed;
    });
  }
}

}  // namespace podvisor::cli
