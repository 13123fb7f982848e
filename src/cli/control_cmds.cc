// `podvisor stop`, `kill`, `list`: requests to a running pod's supervisor
// over its control socket (docs/INTERFACE.md); `list` reads ended pods'
// kept records too. `status` is status_cmd.cc.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/plain_args.h"
#include "cli/pod_records.h"
#include "cli/pod_summary.h"
#include "common/terminal_text.h"

namespace podvisor::cli {
namespace {

int Fail(const Error& e) {
  std::fprintf(stderr, "podvisor: %s\n", TerminalSafe(e.message()).c_str());  // S14.20
  return kExitFailed;
}

struct Common {
  std::string pod;
  std::string state_dir = kDefaultStateDir;
};

void AddCommon(CLI::App* cmd, Common& c, bool pod_positional = true) {
  if (pod_positional) cmd->add_option("POD", c.pod, "the pod (may be left out when one runs)");
  cmd->add_option("--state-dir", c.state_dir, "as given to run")->capture_default_str();
}

// stop and kill need a live supervisor: an ended pod is named as such.
// The request itself finds out (one connection, not a probe first): no
// socket, or one nobody listens on, is a pod that is not running.
struct Asked {
  std::string pod;
  nlohmann::json reply;
};
Result<Asked> AskRunningPod(const Common& c, const std::string& name, const nlohmann::json& req,
                            bool wait_forever = false) {
  auto pod = SelectPod(c.state_dir, name);
  if (!pod) return pod.take_error();
  auto reply = AskSupervisor(c.state_dir, *pod, req, wait_forever);
  if (reply) return Asked{*pod, std::move(*reply)};
  const std::filesystem::path sock = std::filesystem::path(c.state_dir) / *pod / "control.sock";
  std::error_code ec;
  if (reply.error().code() == ECONNREFUSED || !std::filesystem::exists(sock, ec)) {
    auto record = LoadPodRecord(c.state_dir, *pod);
    std::string phase = record ? (*record)["status"].value("phase", "Unknown") : "Unknown";
    return Error("pod " + *pod + " is not running (phase " + phase + ")");
  }
  return reply.take_error();
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
  std::printf("pod/%s stopped: phase %s\n", asked->pod.c_str(), phase.c_str());
  return kExitSucceeded;
}

int Kill(const Common& c, const std::vector<std::string>& args) {
  // [POD] CONTAINER [SIGNAL]: the pod is optional, so count the words.
  std::string pod_name = c.pod, container, signal = "SIGKILL";
  if (args.size() == 3) {
    pod_name = args[0];
    container = args[1];
    signal = args[2];
  } else if (args.size() == 2) {
    // CONTAINER SIGNAL, or POD CONTAINER. Container names are lowercase
    // DNS labels, so a number or an upper-case word is a signal.
    bool second_is_signal = std::all_of(args[1].begin(), args[1].end(), [](unsigned char ch) {
      return std::isdigit(ch) || std::isupper(ch) || ch == '+' || ch == '-';
    });
    if (second_is_signal) {
      container = args[0];
      signal = args[1];
    } else {
      pod_name = args[0];
      container = args[1];
    }
  } else if (args.size() == 1) {
    container = args[0];
  } else {
    std::fprintf(stderr, "podvisor: kill takes [POD] CONTAINER [SIGNAL]\n");
    return kExitUsage;
  }
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
    PodLine line = SummarizePodJson(*record, now);
    rows.push_back({pod.name, line.ready, line.status, line.restarts, line.age});
  }
  if (rows.size() == 1) {
    std::fprintf(stderr, "No pods found under %s.\n", c.state_dir.c_str());
    return kExitSucceeded;
  }
  std::printf("%s", FormatTable(rows).c_str());
  return kExitSucceeded;
}

// --grace as CLI11's NonNegativeNumber takes it; nullopt for anything else,
// which CLI11 then reports.
std::optional<double> PlainGrace(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0) {
    return std::nullopt;
  }
  return v;
}

}  // namespace

std::optional<int> RunStopPlain(std::span<char* const> words) {
  static constexpr PlainOption kValues[] = {{"", "--state-dir"}, {"", "--reason"}, {"", "--grace"}};
  static constexpr PlainOption kFlags[] = {{"", "--no-wait"}};
  auto args = ScanPlainArgs(words, kValues, kFlags, 1);
  if (!args) return std::nullopt;
  Common c;
  if (!args->positionals.empty()) c.pod = args->positionals[0];
  if (const std::string* dir = args->Value("--state-dir")) c.state_dir = *dir;
  std::optional<double> grace;
  if (const std::string* text = args->Value("--grace")) {
    grace = PlainGrace(*text);
    if (!grace) return std::nullopt;
  }
  const std::string* reason = args->Value("--reason");
  return Stop(c, reason ? *reason : "", grace, args->Flag("--no-wait"));
}

std::optional<int> RunKillPlain(std::span<char* const> words) {
  static constexpr PlainOption kValues[] = {{"", "--state-dir"}};
  auto args = ScanPlainArgs(words, kValues, {}, 3);
  if (!args || args->positionals.empty()) return std::nullopt;
  Common c;
  if (const std::string* dir = args->Value("--state-dir")) c.state_dir = *dir;
  return Kill(c, args->positionals);
}

void AddControlCommands(CLI::App& app, int& exit_code) {
  {
    auto c = std::make_shared<Common>();
    auto reason = std::make_shared<std::string>();
    auto grace = std::make_shared<std::optional<double>>();
    auto no_wait = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand(
        "stop", "Terminate the pod; returns when it has ended (SEMANTICS S5, S6)");
    AddCommon(cmd, *c);
    cmd->add_option("--reason", *reason,
                    "termination reason for preStop hooks (Eviction, Decommissioned, ...)");
    cmd->add_option("--grace", *grace, "seconds; may only shorten the pod's grace period")
        ->check(CLI::NonNegativeNumber);
    cmd->add_flag("--no-wait", *no_wait, "return once the supervisor accepted the request");
    cmd->callback([c, reason, grace, no_wait, &exit_code] {
      exit_code = Stop(*c, *reason, *grace, *no_wait);
    });
  }
  {
    auto c = std::make_shared<Common>();
    auto args = std::make_shared<std::vector<std::string>>();
    CLI::App* cmd = app.add_subcommand(
        "kill", "Deliver a signal (default SIGKILL) to a container's init process directly");
    AddCommon(cmd, *c, false);
    cmd->add_option("ARGS", *args, "[POD] CONTAINER [SIGNAL]")->required()->expected(1, 3);
    cmd->callback([c, args, &exit_code] { exit_code = Kill(*c, *args); });
  }
  {
    auto c = std::make_shared<Common>();
    CLI::App* cmd = app.add_subcommand(
        "list", "List the pods under the state directory, running and ended (kubectl get pods)");
    AddCommon(cmd, *c, false);
    cmd->callback([c, &exit_code] { exit_code = List(*c); });
  }
}

}  // namespace podvisor::cli
