// `podvisor status`: the pod's state as kubectl get pod prints it, from
// its supervisor while it runs and from its kept record once it ended.
// -o name, json, yaml and jsonpath=TEMPLATE as kubectl's; -w watches,
// printing again on every change of the record (which the supervisor
// rewrites on each, supervisor/executor/pod_record.cc) until the pod ends.
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include <yaml-cpp/yaml.h>

#include "cli/client.h"
#include "cli/command_grammar_cli11.h"
#include "cli/commands.h"
#include "cli/jsonpath.h"
#include "cli/plain_args.h"
#include "cli/pod_records.h"
#include "cli/pod_summary.h"
#include "cli/user_dirs.h"
#include "common/fd.h"
#include "common/pod_dir.h"
#include "common/terminal_text.h"

namespace podvisor::cli {
namespace {

namespace fs = std::filesystem;

YAML::Node JsonToYaml(const nlohmann::json& j) {
  YAML::Node n;
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) n[k] = JsonToYaml(v);
  } else if (j.is_array()) {
    n = YAML::Node(YAML::NodeType::Sequence);
    for (const auto& v : j) n.push_back(JsonToYaml(v));
  } else if (j.is_string()) {
    n = j.get<std::string>();
  } else if (j.is_boolean()) {
    n = j.get<bool>();
  } else if (j.is_number_integer()) {
    n = j.get<int64_t>();
  } else if (j.is_number()) {
    n = j.get<double>();
  }
  return n;
}

struct StatusOptions {
  std::string pod;
  std::string state_dir = DefaultStateDir();
  std::string output = "table";
  bool watch = false;
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "podvisor: %s\n", TerminalSafe(message).c_str());  // S14.20
  return kExitFailed;
}

// The output for one state of the pod. `first` is false for the lines a
// watch adds: a table then prints its pod line only, as kubectl get -w.
Result<std::string> Render(const nlohmann::json& record, const std::string& output, bool first) {
  if (output == "json") return record.dump(4) + "\n";
  if (output == "yaml") {
    YAML::Emitter out;
    out << JsonToYaml(record);
    return std::string(first ? "" : "---\n") + out.c_str() + "\n";
  }
  if (output == "name") return "pod/" + record["metadata"].value("name", "") + "\n";
  if (output.starts_with("jsonpath=")) return EvaluateJsonPath(output.substr(9), record);
  return StatusTable(record, output == "wide", first, std::chrono::system_clock::now());
}

// A line per change: the supervisor renames a new status.json into the
// pod's directory on each change (IN_MOVED_TO), and removes control.sock
// when it is done (IN_DELETE), after its last record.
int Watch(const StatusOptions& o, const std::string& pod, std::string last) {
  const fs::path dir = fs::path(o.state_dir) / pod;
  Fd fd(::inotify_init1(IN_CLOEXEC));
  if (!fd) return Fail("inotify: " + std::string(std::strerror(errno)));
  if (::inotify_add_watch(fd.get(), dir.c_str(), IN_MOVED_TO | IN_DELETE) < 0) {
    return Fail("watching " + dir.string() + ": " + std::strerror(errno));
  }
  std::string shown_state = std::move(last);
  while (SupervisorAnswers(dir / PodDir::kControlSocket)) {
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, -1) < 0 && errno != EINTR)
      return Fail("poll: " + std::string(std::strerror(errno)));
    char buf[4096];
    (void)::read(fd.get(), buf, sizeof buf);
    auto record = LoadPodRecord(o.state_dir, pod);
    if (!record) continue;  // between two records
    // A change the output does not show (a probe's timestamp) is no line.
    auto text = Render(*record, o.output, false);
    if (!text) return Fail(text.error().message());
    if (*text == shown_state) continue;
    shown_state = *text;
    std::fputs(text->c_str(), stdout);
    std::fflush(stdout);
  }
  // The end: the final record, when the last change came with it.
  if (auto record = LoadPodRecord(o.state_dir, pod)) {
    if (auto text = Render(*record, o.output, false); text && *text != shown_state) {
      std::fputs(text->c_str(), stdout);
    }
  }
  return kExitSucceeded;
}

int Status(const StatusOptions& o) {
  const std::string& out = o.output;
  if (out != "table" && out != "wide" && out != "json" && out != "yaml" && out != "name" &&
      !out.starts_with("jsonpath=")) {
    std::fprintf(stderr,
                 "podvisor: --output: unknown format \"%s\": one of table, wide, json, yaml, "
                 "name, jsonpath=TEMPLATE\n",
                 out.c_str());
    return kExitUsage;
  }
  auto pod = SelectPod(o.state_dir, o.pod);
  if (!pod) return Fail(pod.error().message());
  auto record = LoadPodRecord(o.state_dir, *pod);
  if (!record) return Fail(record.error().message());
  auto text = Render(*record, out, true);
  if (!text) return Fail(text.error().message());
  std::fputs(text->c_str(), stdout);
  std::fflush(stdout);
  if (!o.watch) return kExitSucceeded;
  auto again = Render(*record, out, false);
  return Watch(o, *pod, again ? *again : "");
}

// The options of either road's reading (command_grammar.h), with defaults.
StatusOptions FromArgs(const PlainArgs& args) {
  StatusOptions o;
  if (!args.positionals.empty()) o.pod = args.positionals[0];
  if (const std::string* dir = args.Value("--state-dir")) o.state_dir = *dir;
  if (const std::string* output = args.Value("--output")) o.output = *output;
  o.watch = args.Flag("--watch");
  return o;
}

}  // namespace

std::optional<int> RunStatusPlain(std::span<char* const> words) {
  auto args = ScanPlainArgs(words, grammar::kStatus);
  if (!args) return std::nullopt;
  return Status(FromArgs(*args));
}

void AddStatusCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<PlainArgs>();
  CLI::App* cmd = AddGrammarCommand(app, grammar::kStatus, args);
  cmd->callback([args, &exit_code] { exit_code = Status(FromArgs(*args)); });
}

}  // namespace podvisor::cli
