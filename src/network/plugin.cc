#include "network/plugin.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "process/spawn.h"

extern char** environ;

namespace podvisor::network {
namespace {

// A plugin's output is a JSON document of a few kilobytes; more than this
// is not a CNI answer and is cut off rather than held in memory.
constexpr size_t kMaxOutput = 1 << 20;

Result<Fd> MemFd(const char* name) {
  int fd = ::memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return Error::FromErrno(std::string("memfd_create ") + name);
  return Fd(fd);
}

Status WriteAll(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno("writing plugin stdin");
    text.remove_prefix(static_cast<size_t>(n));
  }
  if (::lseek(fd, 0, SEEK_SET) < 0) return Error::FromErrno("rewinding plugin stdin");
  return Ok();
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[8192];
  off_t offset = 0;
  while (out.size() < kMaxOutput) {
    ssize_t n = ::pread(fd, buf, sizeof buf, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    offset += n;
  }
  return out;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  size_t start = s.find_first_not_of(" \n\r");
  return start == std::string::npos ? std::string() : s.substr(start);
}

// Waits for the pidfd to become readable (the process exited), at most
// until `deadline`. False on timeout.
bool WaitExit(int pidfd, MonoTime deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) return false;
    pollfd pfd{.fd = pidfd, .events = POLLIN, .revents = 0};
    int n = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, INT32_MAX)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;  // cannot wait: let the reap tell
  }
}

std::string FormatTimeout(Duration timeout) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count();
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace

const char* CniCommandName(CniCommand command) {
  switch (command) {
    case CniCommand::kAdd:
      return "ADD";
    case CniCommand::kDel:
      return "DEL";
    case CniCommand::kCheck:
      return "CHECK";
  }
  return "?";
}

std::string PluginError::ToString() const {
  std::string out = msg.empty() ? std::string("plugin failed") : msg;
  if (!details.empty()) out += ": " + details;
  if (code != 0) out += " (CNI error " + std::to_string(code) + ")";
  return out;
}

Result<std::filesystem::path> FindPlugin(const std::string& type,
                                         const std::vector<std::filesystem::path>& bin_dirs) {
  std::string searched;
  for (const auto& dir : bin_dirs) {
    if (dir.empty()) continue;
    std::filesystem::path candidate = dir / type;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    searched += (searched.empty() ? "" : ":") + dir.string();
  }
  return Error("plugin binary " + type + " not found in " +
                   (searched.empty() ? std::string("(no plugin directory)") : searched),
               ENOENT);
}

PluginError DecodePluginError(const std::string& stdout_text, const std::string& stderr_text,
                              int exit_code) {
  PluginError error;
  auto doc = nlohmann::json::parse(stdout_text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_discarded() && doc.is_object() && (doc.contains("msg") || doc.contains("code"))) {
    if (auto it = doc.find("code"); it != doc.end() && it->is_number_unsigned()) {
      error.code = it->get<unsigned>();
    }
    if (auto it = doc.find("msg"); it != doc.end() && it->is_string()) {
      error.msg = it->get<std::string>();
    }
    if (auto it = doc.find("details"); it != doc.end() && it->is_string()) {
      error.details = it->get<std::string>();
    }
    return error;
  }
  // Not the spec's error object: say what the plugin did say.
  std::string said = Trim(stdout_text);
  if (said.empty()) said = Trim(stderr_text);
  error.msg = "exited with status " + std::to_string(exit_code);
  if (!said.empty()) error.msg += ": " + said;
  return error;
}

Result<PluginOutcome> RunPlugin(const PluginCall& call) {
  auto binary = FindPlugin(call.type, call.bin_dirs);
  if (!binary) return binary.take_error();

  auto in = MemFd("cni-stdin");
  if (!in) return in.take_error();
  auto out = MemFd("cni-stdout");
  if (!out) return out.take_error();
  auto err = MemFd("cni-stderr");
  if (!err) return err.take_error();
  if (Status s = WriteAll(in->get(), call.stdin_config); !s) return s.take_error();

  std::string cni_path;
  for (const auto& dir : call.bin_dirs) {
    if (dir.empty()) continue;
    cni_path += (cni_path.empty() ? "" : ":") + dir.string();
  }
  // The plugin inherits podvisor's environment (portmap and firewall find
  // iptables by PATH), with the CNI_* parameters replaced.
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "CNI_", 4) != 0) env.emplace_back(*e);
  }
  env.push_back(std::string("CNI_COMMAND=") + CniCommandName(call.command));
  env.push_back("CNI_CONTAINERID=" + call.container_id);
  env.push_back("CNI_NETNS=" + call.netns);
  env.push_back("CNI_IFNAME=" + call.ifname);
  env.push_back("CNI_ARGS=" + call.args);
  env.push_back("CNI_PATH=" + cni_path);

  auto child = process::Spawn({.argv = {binary->string()},
                               .env = std::move(env),
                               .cwd = "/",
                               .stdin_fd = in->get(),
                               .stdout_fd = out->get(),
                               .stderr_fd = err->get()});
  if (!child) return child.take_error().Wrap("running plugin " + binary->string());

  MonoTime deadline = std::chrono::steady_clock::now() + call.timeout;
  bool exited = WaitExit(child->pidfd(), deadline);
  auto exit = child->KillAndReap();
  if (!exit) return exit.take_error().Wrap("waiting for plugin " + call.type);

  PluginOutcome outcome;
  outcome.stdout_text = ReadAll(out->get());
  if (!exited) {
    outcome.error =
        PluginError{.code = 0,
                    .msg = "did not finish within " + FormatTimeout(call.timeout) + ": killed",
                    .details = {}};
    return outcome;
  }
  if (exit->success()) {
    outcome.ok = true;
    return outcome;
  }
  if (exit->killed()) {
    outcome.error = PluginError{.code = 0, .msg = exit->ToString(), .details = {}};
    return outcome;
  }
  outcome.error = DecodePluginError(outcome.stdout_text, ReadAll(err->get()), exit->code);
  return outcome;
}

}  // namespace podvisor::network
