// `podvisor upgrade [POD]`: asks the pod's supervisor to re-execute in
// place with a new podvisor binary (S15.2), then waits until the new one
// answers on the same control socket. And the hidden `handover-check`,
// which a running supervisor runs with the new binary before it hands
// over: which handover formats that binary reads.
//
// `upgrade` is `ExecReload=` of packaging/systemd/podvisor@.service, so
// its exit status is what `systemctl reload` reports: 0 once the new
// binary answers, 1 when the supervisor refused (it carries on unchanged)
// or did not come back in time, 2 for a command line that is wrong.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <variant>

#include <nlohmann/json.hpp>

#include "cli/client.h"
#include "cli/command_grammar_cli11.h"
#include "cli/commands.h"
#include "cli/pod_loading.h"
#include "cli/user_dirs.h"
#include "common/pod_dir.h"
#include "common/terminal_text.h"
#include "loading/pod_loading.h"
#include "podvisor_version.h"
#include "supervisor/control/control_api.h"
#include "supervisor/control/control_server.h"
#include "supervisor/executor/handover_format.h"

namespace podvisor::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;

// Between two `summary` requests while the supervisor re-executes: a
// connect that finds no listener (a socket file not there yet, a new
// supervisor after a restart) is retried at this pace.
constexpr milliseconds kRetryPause{20};
// On top of the request's timeout, for the wait for its reply: the
// supervisor spends up to the timeout waiting for runtime calls and hooks,
// then runs `NEW handover-check` before it answers.
constexpr auto kReplyMargin = std::chrono::seconds(15);

int Fail(const std::string& message) {
  std::fprintf(stderr, "podvisor: %s\n", TerminalSafe(message).c_str());  // S14.20
  return kExitFailed;
}

int Usage(const std::string& message) {
  std::fprintf(stderr, "podvisor: %s\n", TerminalSafe(message).c_str());
  return kExitUsage;
}

struct UpgradeArgs {
  std::string pod;
  std::string state_dir = DefaultStateDir();
  std::optional<std::string> binary;  // absolute, an executable file
  Duration timeout = milliseconds(supervisor::control::kDefaultUpgradeTimeoutMs);
};

// --binary as the supervisor needs it: an absolute path (the supervisor's
// working directory is not ours) to an executable file; else the usage
// error naming the flag.
Result<std::string> ResolveBinary(const std::string& given) {
  std::error_code ec;
  const fs::path path = fs::absolute(given, ec).lexically_normal();
  if (ec) return Error("--binary " + given + ": " + ec.message());
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return Error("--binary " + given + ": no such file");
  if (!fs::is_regular_file(st)) return Error("--binary " + given + ": not a regular file");
  if (::access(path.c_str(), X_OK) != 0) {
    return Error("--binary " + given + ": not executable (" + std::strerror(errno) + ")");
  }
  return path.string();
}

// The command line's values, checked; the usage error's exit status when
// one is wrong.
std::variant<UpgradeArgs, int> ReadArgs(const PlainArgs& args) {
  UpgradeArgs out;
  if (!args.positionals.empty()) out.pod = args.positionals[0];
  if (const std::string* file = args.Value("--filename")) {
    // The unit's ExecReload names its bundle (/etc/podvisor/pods/%i), whose
    // pod's name is its manifest's, not the instance's.
    if (!out.pod.empty()) return Usage("upgrade takes POD or -f BUNDLE, not both");
    loading::LoadedPod loaded = loading::LoadPod(*file, /*check_images=*/false);
    if (!loaded.ok()) {
      return Usage(
          "-f " + *file + ": " +
          (loaded.messages.empty() ? std::string("cannot read its pod") : loaded.messages.back()));
    }
    out.pod = loaded.pod.metadata.name;
  }
  if (const std::string* dir = args.Value("--state-dir")) out.state_dir = *dir;
  if (const std::string* binary = args.Value("--binary")) {
    auto resolved = ResolveBinary(*binary);
    if (!resolved) return Usage(resolved.error().message());
    out.binary = *resolved;
  }
  if (const std::string* text = args.Value("--timeout")) {
    auto timeout = ParseDuration(*text);
    const auto max = milliseconds(supervisor::control::kMaxUpgradeTimeoutMs);
    if (!timeout || *timeout < milliseconds(1) || *timeout > max) {
      return Usage("--timeout " + *text + ": must be a duration from 1ms to 10m (30s, 2m, ...)");
    }
    out.timeout = *timeout;
  }
  return out;
}

// The summary's "supervisor" object (docs/INTERFACE.md), when the reply
// has one.
struct SupervisorFacts {
  std::string version;
  long long pid = 0;
  long long upgrades = -1;  // -1: not said
};
std::optional<SupervisorFacts> FactsOf(const json& summary) {
  auto s = summary.find("supervisor");
  if (s == summary.end() || !s->is_object()) return std::nullopt;
  SupervisorFacts facts;
  if (auto v = s->find("version"); v != s->end() && v->is_string()) facts.version = *v;
  if (auto p = s->find("pid"); p != s->end() && p->is_number_integer()) facts.pid = *p;
  if (auto u = s->find("upgrades"); u != s->end() && u->is_number_integer()) facts.upgrades = *u;
  return facts;
}

// What waiting for the new binary found.
enum class Return { kBack, kOldStillRuns, kTimedOut };

// Sends `summary` until the supervisor that answers is `to` with the same
// pid (and one more upgrade than `before`, when that was known). Each
// connect waits in the listening socket's backlog while the process
// re-executes; a connect or read that fails (no listener: ECONNREFUSED; no
// socket file: ENOENT; a connection closed without a reply) is retried
// until `deadline`.
Return AwaitNewBinary(const fs::path& sock, const std::string& from, const std::string& to,
                      long long pid, long long before, MonoTime deadline) {
  for (;;) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= Duration::zero()) return Return::kTimedOut;
    auto reply = supervisor::control::ControlRequest(sock, {{"op", "summary"}},
                                                     std::max<Duration>(left, milliseconds(1)));
    if (reply && !supervisor::control::ControlErrorOf(*reply)) {
      if (auto facts = FactsOf(*reply); facts && facts->pid == pid) {
        const bool counted = before < 0 || facts->upgrades < 0 || facts->upgrades > before;
        if (facts->version == to && counted) return Return::kBack;
        // The old supervisor answers only when its execve failed: it wrote
        // our reply and re-executed without taking another connection.
        if (facts->version == from && before >= 0 && facts->upgrades == before) {
          return Return::kOldStillRuns;
        }
      }
    }
    std::this_thread::sleep_for(kRetryPause);
  }
}

int Upgrade(const UpgradeArgs& a) {
  const auto started = std::chrono::steady_clock::now();
  // How many upgrades the supervisor had, so that one answering with the
  // same version after the request (an upgrade to the same build) is told
  // apart from the old process still running. Best effort: a pod that
  // does not run is reported by the request itself.
  long long before = -1;
  json request = {{"op", "upgrade"},
                  {"timeout_ms", std::chrono::duration_cast<milliseconds>(a.timeout).count()}};
  if (a.binary) request["binary"] = *a.binary;
  auto summary = AskRunningPod(a.state_dir, a.pod, {{"op", "summary"}}, kReplyTimeout);
  if (!summary) return Fail(summary.error().message());
  const std::string pod = summary->pod;
  if (auto facts = FactsOf(summary->reply)) before = facts->upgrades;

  auto asked = AskRunningPod(a.state_dir, pod, request, a.timeout + kReplyMargin);
  if (!asked) return Fail(asked.error().message());
  const json& r = asked->reply;
  if (!r.value("upgrading", false)) {
    return Fail("pod " + pod + ": unexpected reply to upgrade: " + r.dump());
  }
  const std::string from = r.value("from", "");
  const std::string to = r.value("to", "");
  const long long pid = r.value("pid", 0LL);

  const fs::path sock = PodDir(a.state_dir, pod).ControlSocket();
  switch (
      AwaitNewBinary(sock, from, to, pid, before, std::chrono::steady_clock::now() + a.timeout)) {
    case Return::kBack:
      break;
    case Return::kOldStillRuns:
      return Fail("pod " + pod + ": the upgrade failed: the supervisor (pid " +
                  std::to_string(pid) + ") still runs podvisor " + from +
                  "; its events (UpgradeFailed) and its log say why");
    case Return::kTimedOut: {
      const auto secs = std::chrono::duration_cast<std::chrono::seconds>(a.timeout).count();
      return Fail("pod " + pod + ": the supervisor (pid " + std::to_string(pid) +
                  ") did not come back as podvisor " + to + " within " + std::to_string(secs) +
                  " s after it re-executed; look at its log (under systemd: journalctl -u "
                  "podvisor@" +
                  pod + ")");
    }
  }
  const auto ms =
      std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started).count();
  std::printf("pod %s: podvisor %s -> %s (pid %lld, %lld ms)\n", pod.c_str(),
              TerminalSafe(from).c_str(), TerminalSafe(to).c_str(), pid,
              static_cast<long long>(ms));
  return kExitSucceeded;
}

// S15.2: what a supervisor asks of a binary before it re-executes into
// it. Nothing but constants: no root, bundle or state directory, and it
// runs before anything slow (cli.cc adds only this command for it).
int HandoverCheck() {
  nlohmann::ordered_json out = {
      {"version", PODVISOR_VERSION},
      {"format", supervisor::executor::kHandoverFormat},
      {"oldestFormat", supervisor::executor::kOldestReadableHandoverFormat}};
  std::printf("%s\n", out.dump().c_str());
  return kExitSucceeded;
}

}  // namespace

void AddUpgradeCommands(CLI::App& app, int& exit_code) {
  {
    auto args = std::make_shared<PlainArgs>();
    CLI::App* cmd = AddGrammarCommand(app, grammar::kUpgrade, args);
    cmd->callback([args, &exit_code] {
      auto read = ReadArgs(*args);
      if (const int* usage = std::get_if<int>(&read)) {
        exit_code = *usage;
        return;
      }
      exit_code = Upgrade(std::get<UpgradeArgs>(read));
    });
  }
  {
    // Hidden (no group): internal, as sandbox-init.
    CLI::App* cmd = app.add_subcommand("handover-check", "");
    cmd->group("");
    cmd->callback([&exit_code] { exit_code = HandoverCheck(); });
  }
}

}  // namespace podvisor::cli
