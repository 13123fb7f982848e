// `podvisor apply -f DIR|FILE`: makes the pods under a state directory
// match a directory of manifests (docs/SEMANTICS.md S18, docs/INTERFACE.md
// "apply"). A pass reads the manifests, writes each pod's desired bundle
// into a staging directory, loads it as `validate` does, plans
// (apply_plan.h) and carries the plan out, one line per pod.
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "cli/apply_plan.h"
#include "cli/apply_pods.h"
#include "cli/apply_sources.h"
#include "cli/apply_watch.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/pod_loading.h"
#include "cli/pod_records.h"
#include "common/file_io.h"
#include "common/pod_dir.h"
#include "common/terminal_text.h"
#include "supervisor/control/control_error.h"

namespace podvisor::cli {
namespace {
namespace fs = std::filesystem;
using apply::Change;
using supervisor::control::ControlCode;

struct ApplyOptions {
  std::string file;
  std::string state_dir = "/run/podvisor";
  std::string log_dir = "/var/log/podvisor";
  bool prune = false;
  bool dry_run = false;
  bool watch = false;
  std::string timeout;  // "": the pod's startup budget (apply::ReadyBudget)
  std::string rescan = "20s";
  std::string min_ready = "1s";
  std::string runtime;
  std::string cgroup_parent;
  std::vector<std::string> run_args;
  std::string detach = "auto";
};

// The stop reason of a replaced or pruned pod (its PodStopping event).
constexpr const char* kUpdateReason = "Update";
constexpr const char* kPruneReason = "Pruned";

class Applier {
 public:
  Applier(const ApplyOptions& o, apply::HostOptions host, std::optional<Duration> timeout,
          Duration min_ready)
      : o_(o),
        host_(std::move(host)),
        timeout_(timeout),
        min_ready_(min_ready),
        dirs_{host_.state_dir / apply::kApplyDirName} {
    std::string why;  // S18.10: said by --dry-run
    systemd_ = apply::UseSystemd(host_, why);
    if (o_.dry_run) Print(stderr, "podvisor: apply: pods start " + why);
  }

  // One pass; its exit status (docs/INTERFACE.md "apply").
  int Pass(bool first, int interrupt) {
    interrupt_ = interrupt;
    quiet_unchanged_ = !first;
    auto set = apply::ReadManifests(o_.file);
    if (!set) return Fail(kExitUsage, set.error().message());
    int status = kExitSucceeded;
    for (const auto& e : set->errors) {
      Raise(status, kExitUsage);
      Print(stderr, "podvisor: " + e);
    }
    for (const auto& w : set->warnings) Print(stderr, "Warning: " + w);
    std::error_code ec;
    std::optional<Fd> lock;
    if (o_.dry_run) {
      // S18.12: a dry run writes nothing under the state directory; its
      // staging copies (Secrets included) go to a private temporary one.
      std::string tmp = (fs::temp_directory_path(ec) / "podvisor-apply-XXXXXX").string();
      if (::mkdtemp(tmp.data()) == nullptr) {
        return Fail(kExitHost, "creating " + tmp + ": " + std::strerror(errno));
      }
      staging_ = tmp;
    } else {
      fs::create_directories(dirs_.root, ec);
      ::chmod(dirs_.root.c_str(), 0700);
      auto locked = LockNamedFile(dirs_.root / "lock", LOCK_EX, /*create=*/true);
      if (!locked) return Fail(kExitHost, locked.error().message());
      lock.emplace(std::move(*locked));
      staging_ = dirs_.root / (".staging-" + std::to_string(::getpid()));
      fs::remove_all(staging_, ec);
      fs::create_directory(staging_, ec);
      if (ec) return Fail(kExitHost, "creating " + staging_.string() + ": " + ec.message());
    }

    std::vector<apply::Desired> desired = LoadDesired(*set);
    for (const auto& name : set->invalid_pods) {
      desired.push_back({name, std::nullopt, {"pod " + name + " has more than one manifest"}});
    }
    // S18.8: a file that could not be read may hold pods: no prune then.
    const bool prune = o_.prune && set->errors.empty();
    if (o_.prune && !prune) {
      Print(stderr, "podvisor: --prune skipped: not every manifest could be read");
    }
    std::vector<apply::Current> current = LoadCurrent(desired);
    for (const auto& decision : apply::Plan(desired, current, prune)) {
      Raise(status, Carry(decision, desired, current));
    }
    fs::remove_all(staging_, ec);
    return status;
  }

 private:
  static void Raise(int& status, int code) { status = std::max(status, code); }
  static void Print(FILE* out, const std::string& line) {
    std::fprintf(out, "%s\n", TerminalSafe(line).c_str());
    std::fflush(out);
  }
  static int Fail(int code, const std::string& message) {
    Print(stderr, "podvisor: apply: " + message);
    return code;
  }

  std::vector<apply::Desired> LoadDesired(const apply::ManifestSet& set) {
    std::vector<apply::Desired> out;
    for (const auto& doc : set.pods) {
      sources_[doc.name] = doc.source;
      apply::Desired d{doc.name, std::nullopt, {}};
      if (auto named = CheckNameArgument("pod name", doc.name); !named) {
        d.problems.push_back(doc.source + ": metadata.name: " + named.error().message());
        out.push_back(std::move(d));
        continue;
      }
      const fs::path bundle = staging_ / doc.name;
      if (Status s = apply::WriteBundle(bundle, doc, set); !s) {
        d.problems.push_back(s.error().message());
        out.push_back(std::move(d));
        continue;
      }
      loading::LoadedPod loaded = loading::LoadPod(bundle, /*check_images=*/true);
      // Messages name the file the user edits, not the staging copy.
      for (auto line : loaded.messages) {
        for (std::size_t at; (at = line.find((bundle / "pod.json").string())) != std::string::npos;)
          line.replace(at, (bundle / "pod.json").string().size(), doc.source);
        if (loaded.ok()) {
          warnings_[doc.name].push_back(line);
        } else {
          d.problems.push_back(line);
        }
      }
      if (loaded.ok()) d.pod = std::move(loaded.pod);
      out.push_back(std::move(d));
    }
    return out;
  }

  std::optional<pod::Pod> LoadKept(const fs::path& bundle) {
    std::error_code ec;
    if (!fs::exists(bundle / "pod.json", ec)) return std::nullopt;
    loading::LoadedPod kept = loading::LoadPod(bundle, /*check_images=*/false);
    if (!kept.ok()) return std::nullopt;
    return std::move(kept.pod);
  }

  std::vector<apply::Current> LoadCurrent(const std::vector<apply::Desired>& desired) {
    std::set<std::string> names;
    for (const auto& d : desired) names.insert(d.name);
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dirs_.root, ec)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory(ec) && CheckNameArgument("pod name", name)) names.insert(name);
    }
    std::vector<apply::Current> out;
    for (const auto& name : names) {
      apply::Current c;
      c.name = name;
      c.running = SupervisorAnswers(PodDir(host_.state_dir, name).ControlSocket());
      c.applied = fs::exists(dirs_.Current(name), ec);
      c.kept = LoadKept(dirs_.Current(name));
      c.failed = LoadKept(dirs_.Pod(name) / "failed");
      if (auto record = ReadRecord(PodDir(host_.state_dir, name).RecordFile())) {
        c.phase = apply::Text(apply::Member(*record, "status"), "phase");
      }
      out.push_back(std::move(c));
    }
    return out;
  }

  int Carry(const apply::Decision& d, const std::vector<apply::Desired>& desired,
            const std::vector<apply::Current>& current) {
    const std::string pod = "pod/" + d.pod;
    const apply::Desired* want = nullptr;
    for (const auto& x : desired) want = x.name == d.pod ? &x : want;
    const apply::Current* have = nullptr;
    for (const auto& x : current) have = x.name == d.pod ? &x : have;
    if (d.change == Change::kInvalid) {
      // S18.7: which file, then validate's own lines.
      if (auto source = sources_.find(d.pod); source != sources_.end()) {
        Print(stderr, "podvisor: apply: " + source->second + ":");
      }
      for (const auto& line : want->problems) Print(stderr, line);
      Print(stdout, pod + " invalid" + std::string(have && have->running ? ", left running" : ""));
      return kExitUsage;
    }
    if (d.change == Change::kForeign || d.change == Change::kHeld) {
      Print(stdout, pod + " skipped: " + d.why);
      return kExitFailed;
    }
    if (d.change == Change::kKeep) {
      if (!quiet_unchanged_ || o_.dry_run) Print(stdout, pod + " unchanged");
      if (!o_.dry_run && have && have->running) KeepLastGood(d.pod);
      return kExitSucceeded;
    }
    if (o_.dry_run) {
      static const std::map<Change, std::string> kWould = {
          {Change::kStart, "created"},
          {Change::kResize, "configured (resized)"},
          {Change::kReplace, "replaced"},
          {Change::kPrune, "pruned"}};
      Print(stdout,
            pod + " " + kWould.at(d.change) + " (dry run)" + (d.why.empty() ? "" : ": " + d.why));
      return kExitFailed;  // not as asked yet
    }
    for (const auto& w : warnings_[d.pod]) Print(stderr, w);
    switch (d.change) {
      case Change::kPrune:
        return Prune(d.pod, have && have->running);
      case Change::kResize:
        if (auto done = Resize(d.pod, *have->kept, *want->pod)) return *done;
        return Bring(d.pod, *want->pod, /*stop_first=*/true, "replaced");
      case Change::kReplace:
        return Bring(d.pod, *want->pod, /*stop_first=*/true, "replaced");
      case Change::kStart:
        return Bring(d.pod, *want->pod, /*stop_first=*/false,
                     have && have->applied ? "started" : "created");
      default:
        return kExitSucceeded;
    }
  }

  // A running pod that is Ready on its current manifest makes that the
  // last good one, if it is not yet (a start whose wait timed out).
  void KeepLastGood(const std::string& name) {
    std::error_code ec;
    if (fs::exists(dirs_.LastGood(name), ec)) return;
    auto record = ReadRecord(PodDir(host_.state_dir, name).RecordFile());
    if (record && apply::Text(apply::Condition(*record, "Ready"), "status") == "True") {
      (void)apply::CopyBundle(dirs_.Current(name), dirs_.LastGood(name));
    }
  }

  int Prune(const std::string& name, bool running) {
    if (running) {
      if (Status s = apply::StopPod(host_, name, kPruneReason); !s) {
        return Fail(kExitFailed, "pod " + name + ": " + s.error().message());
      }
    }
    std::error_code ec;
    fs::remove_all(dirs_.Pod(name), ec);
    Print(stdout, "pod/" + name + " pruned");
    return kExitSucceeded;
  }

  // S18.4: in place through the supervisor; nullopt: replace it instead.
  std::optional<int> Resize(const std::string& name, const pod::Pod& kept, const pod::Pod& want) {
    std::optional<supervisor::control::ControlError> refusal;
    auto reply = AskSupervisorWithin(host_.state_dir, name, apply::ResizeRequest(kept, want),
                                     kReplyTimeout, &refusal);
    if (!reply) {
      if (refusal && (refusal->code == ControlCode::kUnimplemented ||
                      refusal->code == ControlCode::kInvalidArgument)) {
        Print(stderr, "podvisor: pod " + name + ": no resize in place (" +
                          std::string(supervisor::control::ControlCodeName(refusal->code)) + ": " +
                          refusal->message + "): replacing it");
        return std::nullopt;
      }
      return Fail(kExitFailed, reply.error().message());
    }
    const nlohmann::json& pending = apply::Condition(*reply, "PodResizePending");
    if (apply::Text(pending, "status") == "True" &&
        apply::Text(pending, "reason") == "Infeasible") {
      Print(stdout, "pod/" + name + " not resized: Infeasible: " + apply::Text(pending, "message"));
      return kExitFailed;
    }
    if (Status s = apply::ReplaceDir(staging_ / name, dirs_.Current(name)); !s) {
      return Fail(kExitHost, s.error().message());
    }
    std::error_code ec;
    fs::remove_all(dirs_.LastGood(name), ec);
    KeepLastGood(name);
    // Deferred (KEP-1287): accepted, applied when the node has room.
    Print(stdout,
          "pod/" + name + " configured (resized" +
              (apply::Text(pending, "status") == "True"
                   ? ", " + apply::Text(pending, "reason") + ": " + apply::Text(pending, "message")
                   : std::string()) +
              ")");
    return kExitSucceeded;
  }

  // Starts the pod on its current bundle and waits for Ready.
  apply::ReadyOutcome StartAndWait(const std::string& name, const pod::Pod& pod) {
    const std::string mark = apply::RecordMark(host_.state_dir, name);
    Fd supervisor;
    if (Status s = apply::StartPod(host_, systemd_, name, supervisor); !s) {
      return {apply::ReadyOutcome::kNotReady, s.error().message()};
    }
    return apply::WaitReady(host_, name, mark, supervisor, apply::ReadyBudget(pod, timeout_),
                            min_ready_, interrupt_);
  }

  // S18.5, S18.6: stop (for a replace), start the desired manifest, wait
  // for Ready; else back to the last good manifest.
  int Bring(const std::string& name, const pod::Pod& want, bool stop_first,
            const std::string& done) {
    const std::string pod = "pod/" + name;
    if (stop_first) {
      if (Status s = apply::StopPod(host_, name, kUpdateReason); !s) {
        return Fail(kExitFailed, "pod " + name + ": " + s.error().message());
      }
    }
    std::error_code ec;
    fs::create_directories(dirs_.Pod(name), ec);
    ::chmod(dirs_.Pod(name).c_str(), 0700);  // its bundles hold the pod's Secrets
    if (Status s = apply::ReplaceDir(staging_ / name, dirs_.Current(name)); !s) {
      return Fail(kExitHost, s.error().message());
    }
    apply::ReadyOutcome outcome = StartAndWait(name, want);
    if (outcome.kind == apply::ReadyOutcome::kInterrupted) {
      Print(stdout, pod + " " + done + ", not Ready yet (interrupted)");
      return kExitFailed;
    }
    if (outcome.kind == apply::ReadyOutcome::kReady) {
      (void)apply::CopyBundle(dirs_.Current(name), dirs_.LastGood(name));
      fs::remove_all(dirs_.Pod(name) / "failed", ec);
      Print(stdout, pod + " " + done);
      return kExitSucceeded;
    }
    std::optional<pod::Pod> last_good = LoadKept(dirs_.LastGood(name));
    if (!last_good || apply::Compare(*last_good, want).difference == apply::Difference::kNone) {
      // Nothing to go back to: the pod stays as it is, for `status` to show.
      Print(stdout, pod + " " + done + ", not Ready: " + outcome.reason);
      return kExitFailed;
    }
    (void)apply::CopyBundle(dirs_.Current(name), dirs_.Pod(name) / "failed");
    if (Status s = apply::StopPod(host_, name, kUpdateReason); !s) {
      return Fail(kExitFailed, "pod " + name + ": " + s.error().message());
    }
    if (Status s = apply::CopyBundle(dirs_.LastGood(name), dirs_.Current(name)); !s) {
      return Fail(kExitHost, s.error().message());
    }
    apply::ReadyOutcome back = StartAndWait(name, *last_good);
    std::string line = pod + " rolled back: " + outcome.reason;
    if (back.kind != apply::ReadyOutcome::kReady) {
      line += "; the last good manifest is not Ready either: " + back.reason;
    }
    Print(stdout, line);
    return kExitFailed;
  }

  const ApplyOptions& o_;
  apply::HostOptions host_;
  std::optional<Duration> timeout_;
  Duration min_ready_;
  apply::ApplyDir dirs_;
  bool systemd_ = false;
  fs::path staging_;
  int interrupt_ = -1;
  bool quiet_unchanged_ = false;
  std::map<std::string, std::vector<std::string>> warnings_;
  std::map<std::string, std::string> sources_;  // pod -> the file (and document) it is in
};

int Refuse(const std::string& message) {
  std::fprintf(stderr, "podvisor: apply: %s\n", message.c_str());
  return kExitUsage;
}

int Apply(const ApplyOptions& o) {
  std::optional<Duration> timeout;
  if (!o.timeout.empty()) {
    auto d = ParseDuration(o.timeout);
    if (!d || d->count() <= 0) {
      return Refuse("--timeout: invalid duration \"" + o.timeout + "\" (e.g. 5m)");
    }
    timeout = *d;
  }
  auto min_ready = ParseDuration(o.min_ready);
  if (!min_ready || min_ready->count() < 0) {
    return Refuse("--min-ready: invalid duration \"" + o.min_ready + "\" (e.g. 1s, 0)");
  }
  auto rescan = ParseDuration(o.rescan);
  if (!rescan || rescan->count() <= 0) {
    return Refuse("--rescan: invalid duration \"" + o.rescan + "\" (e.g. 20s)");
  }
  if (o.watch && o.dry_run) return Refuse("--watch and --dry-run do not go together");
  apply::HostOptions host;
  // "/run/podvisor/" is the unit's directory too (S18.10).
  auto normal = [](const std::string& dir) {
    fs::path p = fs::absolute(dir).lexically_normal();
    return p.has_filename() || !p.has_relative_path() ? p : p.parent_path();
  };
  host.state_dir = normal(o.state_dir);
  host.log_dir = normal(o.log_dir);
  if (!o.runtime.empty()) host.run_args.insert(host.run_args.end(), {"--runtime", o.runtime});
  if (!o.cgroup_parent.empty()) {
    host.run_args.insert(host.run_args.end(), {"--cgroup-parent", o.cgroup_parent});
  }
  host.run_args.insert(host.run_args.end(), o.run_args.begin(), o.run_args.end());
  host.detach = o.detach == "systemd"   ? apply::Detach::kSystemd
                : o.detach == "process" ? apply::Detach::kProcess
                                        : apply::Detach::kAuto;
  Applier applier(o, std::move(host), timeout, *min_ready);
  if (!o.watch) return applier.Pass(/*first=*/true, /*interrupt=*/-1);
  return apply::WatchAndApply(
      o.file, *rescan, [&](bool first, int interrupt) { return applier.Pass(first, interrupt); });
}

}  // namespace

void AddApplyCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ApplyOptions>();
  CLI::App* cmd = app.add_subcommand(
      "apply", "Make the pods under the state directory match a directory of manifests");
  cmd->add_option("-f,--filename", o->file,
                  "a directory of manifests (*.yaml, *.yml, *.json) or one manifest file")
      ->required();
  cmd->add_option("--state-dir", o->state_dir, "as given to run")->capture_default_str();
  cmd->add_option("--log-dir", o->log_dir, "as given to run")->capture_default_str();
  cmd->add_flag("--prune", o->prune, "stop the pods apply started whose manifest is gone");
  cmd->add_flag("--dry-run", o->dry_run,
                "print what would be done and change nothing; exit 1 when anything would");
  cmd->add_option("--timeout", o->timeout,
                  "how long a started pod has to become Ready (default: its startup probes' "
                  "budget + 1m, else 5m)");
  cmd->add_option("--min-ready", o->min_ready,
                  "a started pod counts as Ready once Ready this long with no restart")
      ->capture_default_str();
  cmd->add_flag("--watch", o->watch, "apply again on each change of the directory");
  cmd->add_option("--rescan", o->rescan, "--watch: a full pass this often")->capture_default_str();
  cmd->add_option("--runtime", o->runtime, "given to each pod's `run`");
  cmd->add_option("--cgroup-parent", o->cgroup_parent, "given to each pod's `run`");
  cmd->add_option("--run-arg", o->run_args, "one more word for each pod's `run`, repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--detach", o->detach,
                  "auto (a systemd unit on a systemd host, else a process of its own), "
                  "systemd or process")
      ->check(CLI::IsMember({"auto", "systemd", "process"}))
      ->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = Apply(*o); });
}

}  // namespace podvisor::cli
