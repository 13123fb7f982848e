#include "oci/runtime_cli.h"

#include <fstream>

#include <nlohmann/json.hpp>

namespace podvisor::oci {

std::vector<std::string> RuntimeCli::Base(std::string_view step) const {
  std::vector<std::string> argv{binary_.path.string(), "--root", options_.state_root.string()};
  if (!options_.log_file.empty()) {
    argv.insert(argv.end(), {"--log", options_.log_file.string(), "--log-format", "json"});
  }
  argv.emplace_back(step);
  return argv;
}

RuntimeCommand RuntimeCli::Create(std::string_view id, const std::filesystem::path& bundle,
                                  const std::filesystem::path& pid_file) const {
  auto argv = Base("create");
  argv.insert(argv.end(), {"--bundle", bundle.string(), "--pid-file", pid_file.string()});
  if (options_.no_pivot) argv.emplace_back("--no-pivot");
  argv.emplace_back(id);
  return {std::move(argv), "create"};
}

RuntimeCommand RuntimeCli::Run(std::string_view id, const std::filesystem::path& bundle,
                               const std::filesystem::path& pid_file) const {
  auto argv = Base("run");
  argv.insert(argv.end(),
              {"--detach", "--bundle", bundle.string(), "--pid-file", pid_file.string()});
  if (options_.no_pivot) argv.emplace_back("--no-pivot");
  argv.emplace_back(id);
  return {std::move(argv), "create"};
}

bool RuntimeCli::HasDetachedRun() const {
  // By file name, as LocateRuntime names a runtime given by its path.
  return binary_.name == "runc" || binary_.name == "crun";
}

RuntimeCommand RuntimeCli::Start(std::string_view id) const {
  auto argv = Base("start");
  argv.emplace_back(id);
  return {std::move(argv), "start"};
}

RuntimeCommand RuntimeCli::State(std::string_view id) const {
  auto argv = Base("state");
  argv.emplace_back(id);
  return {std::move(argv), "state"};
}

RuntimeCommand RuntimeCli::Delete(std::string_view id) const {
  auto argv = Base("delete");
  argv.emplace_back("--force");
  argv.emplace_back(id);
  return {std::move(argv), "delete"};
}

RuntimeCommand RuntimeCli::Exec(std::string_view id,
                                const std::filesystem::path& process_json) const {
  auto argv = Base("exec");
  argv.insert(argv.end(), {"--process", process_json.string()});
  argv.emplace_back(id);
  return {std::move(argv), "exec"};
}

Result<RuntimeState> ParseRuntimeState(std::string_view json_text) {
  auto doc = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Error("runtime state is not a JSON object");
  }
  RuntimeState s;
  auto id = doc.find("id");
  auto status = doc.find("status");
  if (id == doc.end() || !id->is_string() || status == doc.end() || !status->is_string()) {
    return Error("runtime state lacks \"id\" or \"status\"");
  }
  s.id = id->get<std::string>();
  s.status = status->get<std::string>();
  auto pid = doc.find("pid");
  if (pid != doc.end() && pid->is_number_integer()) s.pid = pid->get<int>();
  return s;
}

std::string LastRuntimeError(const std::filesystem::path& log_file) {
  std::ifstream in(log_file);
  std::string line, last;
  while (std::getline(in, line)) {
    auto doc = nlohmann::json::parse(line, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
      if (!line.empty()) last = line;  // crun writes plain text without --log-format
      continue;
    }
    std::string level = doc.value("level", "");
    if (level == "error" || level == "fatal" || level == "warning") last = doc.value("msg", line);
  }
  return last;
}

}  // namespace podvisor::oci
