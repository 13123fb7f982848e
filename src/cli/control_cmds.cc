// `podvisor stop`, `kill`, `list`: requests to a running pod's supervisor
// over its control socket (docs/INTERFACE.md); `list` reads ended pods'
// kept records too. `status` is status_cmd.cc.
#include <cerrno>
#include <cstdio>
#include <memory>

#include "cli/client.h"
#include "cli/command_grammar_cli11.h"
#include "cli/commands.h"
#include "cli/plain_args.h"
#include "cli/pod_records.h"
#include "cli/pod_summary.h"
#include "cli/user_dirs.h"
#include "common/pod_lock.h"
#include "common/terminal_text.h"

namespace podvisor::cli {
namespace {

int Fail(const Error& e) {
  std::fprintf(stderr, "podvisor: %s\n", TerminalSafe(e.message()).c_str());  // S14.20
  return kExitFailed;
}

struct Common {
  std::string pod;
  std::string state_dir = DefaultStateDir();
};

// `list`'s one option (the commands with a grammar table get theirs from it).
void AddCommon(CLI::App* cmd, Common& c) {
  cmd->add_option("--state-dir", c.state_dir, "as given to run")->capture_default_str();
}

// stop and kill need a live supervisor (client.h AskRunningPod).
Result<PodReply> AskRunningPod(const Common& c, const std::string& name, const nlohmann::json& req,
                               bool wait_forever = false) {
  return cli::AskRunningPod(c.state_dir, name, req,
                            wait_forever ? Duration::zero() : kReplyTimeout);
}

int Stop(const Common& c, const std::string& reason, std::optional<double> grace, bool no_wait) {
  nlohmann::json req = {{"op", "stop"}, {"wait", !no_wait}};
  if (!reason.empty()) req["reason"] = reason;
  if (grace) req["grace"] = *grace;
  auto asked = AskRunningPod(c, c.pod, req, /*wait_forever=*/!no_wait);
  if (!asked) return Fail(asked.error());
  if (no_wait) {
    std::printf("pod/%s stopping\n", asked->pod.c_str());
    return kExitSucceeded;
  }
  std::string phase = asked->reply["status"].value("phase", "Unknown");
  // S14.30: the reply comes when the phase is final; the supervisor then
  // tears the pod down (containers, mounts, network, cgroups) and exits,
  // which releases the pod's lock. Only then is `stop && run` or
  // `stop && rm` safe.
  const std::filesystem::path state_dir = std::filesystem::absolute(c.state_dir);
  if (auto s = PodLock::WaitReleased(state_dir, asked->pod); !s) return Fail(s.error());
  std::printf("pod/%s stopped: phase %s\n", asked->pod.c_str(), phase.c_str());
  if (std::vector<std::string> left = LeftBehind(state_dir, asked->pod); !left.empty()) {
    std::string list;
    for (const auto& l : left) list += (list.empty() ? "" : ", ") + l;
    std::fprintf(stderr,
                 "podvisor: pod %s's supervisor left %s; `podvisor run` of the pod cleans them "
                 "up (its log says why they stayed)\n",
                 asked->pod.c_str(), TerminalSafe(list).c_str());
    return kExitFailed;
  }
  return kExitSucceeded;
}

int Kill(const Common& c, const std::vector<std::string>& args) {
  // [POD] CONTAINER [SIGNAL]: the pod is optional, so count the words
  // (command_grammar.h reads them for every road).
  if (args.empty() || args.size() > static_cast<std::size_t>(grammar::kKill.positionals.max)) {
    std::fprintf(stderr, "podvisor: kill takes [POD] CONTAINER [SIGNAL]\n");
    return kExitUsage;
  }
  std::vector<const char*> words;
  words.reserve(args.size());
  for (const std::string& arg : args) words.push_back(arg.c_str());
  const grammar::KillWords kill =
      grammar::ReadKillWords(words.data(), static_cast<int>(words.size()));
  const std::string pod_name = kill.pod ? kill.pod : c.pod;
  const std::string container = kill.container;
  const std::string signal = kill.signal ? kill.signal : "SIGKILL";
  auto asked =
      AskRunningPod(c, pod_name, {{"op", "kill"}, {"container", container}, {"signal", signal}});
  if (!asked) return Fail(asked.error());
  std::printf("%s delivered to %s/%s\n", asked->reply["signal"].get<std::string>().c_str(),
              asked->pod.c_str(), container.c_str());
  return kExitSucceeded;
}

int List(const Common& c) {
  // kubectl get pods: ended pods stay listed as Completed or Error until
  // `podvisor rm` or `prune`.
  std::vector<std::vector<std::string>> rows{{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}};
  const WallTime now = std::chrono::system_clock::now();
  for (const PodEntry& pod : FindPods(c.state_dir)) {
    auto record = LoadPodRecord(c.state_dir, pod.name);
    if (!record) {
      rows.push_back({pod.name, "-", pod.phase, "-", "-"});
      continue;
    }
    const pod::PodLine line = SummarizePodJson(*record, now);
    rows.push_back({pod.name, line.ready, line.status, line.restarts, line.age});
  }
  if (rows.size() == 1) {
    std::fprintf(stderr, "No pods found under %s.\n", c.state_dir.c_str());
    return kExitSucceeded;
  }
  std::printf("%s", FormatTable(rows).c_str());
  return kExitSucceeded;
}

// The options of either road's reading (command_grammar.h), with defaults.
Common CommonFromArgs(const PlainArgs& args) {
  Common c;
  if (const std::string* dir = args.Value("--state-dir")) c.state_dir = *dir;
  return c;
}

int StopFromArgs(const PlainArgs& args) {
  Common c = CommonFromArgs(args);
  if (!args.positionals.empty()) c.pod = args.positionals[0];
  std::optional<double> grace;
  if (const std::string* text = args.Value("--grace")) grace = ParseSeconds(*text);
  const std::string* reason = args.Value("--reason");
  return Stop(c, reason ? *reason : "", grace, args.Flag("--no-wait"));
}

}  // namespace

std::optional<int> RunStopPlain(std::span<char* const> words) {
  auto args = ScanPlainArgs(words, grammar::kStop);
  if (!args) return std::nullopt;
  return StopFromArgs(*args);
}

std::optional<int> RunKillPlain(std::span<char* const> words) {
  auto args = ScanPlainArgs(words, grammar::kKill);
  if (!args) return std::nullopt;
  return Kill(CommonFromArgs(*args), args->positionals);
}

void AddControlCommands(CLI::App& app, int& exit_code) {
  {
    auto args = std::make_shared<PlainArgs>();
    CLI::App* cmd = AddGrammarCommand(app, grammar::kStop, args);
    cmd->callback([args, &exit_code] { exit_code = StopFromArgs(*args); });
  }
  {
    auto args = std::make_shared<PlainArgs>();
    CLI::App* cmd = AddGrammarCommand(app, grammar::kKill, args);
    cmd->callback(
        [args, &exit_code] { exit_code = Kill(CommonFromArgs(*args), args->positionals); });
  }
  {
    auto c = std::make_shared<Common>();
    CLI::App* cmd = app.add_subcommand(
        "list", "List the pods under the state directory, running and ended (kubectl get pods)");
    AddCommon(cmd, *c);
    cmd->callback([c, &exit_code] { exit_code = List(*c); });
  }
}

}  // namespace podvisor::cli
