// fake-runtime: a stand-in OCI runtime for test tier 2 (docs/TESTING.md). It has
// runc's command line and its create/start split, but runs the container's
// process.args as a plain host process: no namespaces, no mounts, no
// cgroups, no root needed. It exercises everything podvisor does around a
// runtime: child processes for each call, pid files, the init process
// becoming podvisor's child through the subreaper, direct signals, exec.
//
//   fake-runtime [--root DIR] [--log F] [--log-format F] COMMAND ...
//     create [--bundle B] [--pid-file F] [--no-pivot] ID
//     run --detach [create's options] ID: create, then start, in one call
//     start ID | state ID | kill ID [SIGNAL] | delete [--force] ID
//     exec [--process FILE] [--cwd D] [--env K=V]... ID [ARGS...]
//
// Faults for the reliability tests come from the environment:
// FAKE_RUNTIME_FAIL=create|start|exec makes that step fail (exit 1, message
// on stderr), FAKE_RUNTIME_HANG=create|start|delete (or a comma-separated list) makes it hang
// until killed.
// FAKE_RUNTIME_RUN_AWAIT_EXIT, _LINGER and _ORPHAN_INIT shape `run` (Run).
// FAKE_RUNTIME_CALLS=FILE appends "COMMAND ID" for each call, for tests
// of which calls podvisor makes.
// FAKE_RUNTIME_ARGS="PROGRAM ARG..." runs that (in /) instead of every
// process.args: a manifest written for a real image then runs nothing of
// its own on the host (the corpus walk of tests/e2e/corpus_walk_test.cc).
//
// Like runc, `create` leaves the init process blocked before exec until
// `start`: here it holds ROOT/ID/exec.fifo open read-write (so it never
// sees EOF) and blocks reading it; `start` writes one byte. `create`
// returns only once the child holds the fifo, so an immediate `start`
// always finds its reader.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string g_root = "/run/fake-runtime";
std::string g_log;  // --log: like runc, errors also go there as JSON lines

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "fake-runtime: %s\n", message.c_str());
  if (!g_log.empty()) {
    std::ofstream(g_log, std::ios::app)
        << json{{"level", "error"}, {"msg", message}}.dump() << "\n";
  }
  std::exit(1);
}

void MaybeFault(const char* step) {
  const char* fail = std::getenv("FAKE_RUNTIME_FAIL");
  if (fail && std::strcmp(fail, step) == 0) Die(std::string(step) + ": injected failure");
  // FAKE_RUNTIME_HANG is one step or a comma-separated list of steps.
  const char* hang = std::getenv("FAKE_RUNTIME_HANG");
  if (hang &&
      ("," + std::string(hang) + ",").find("," + std::string(step) + ",") != std::string::npos) {
    for (;;) pause();
  }
}

fs::path StateDir(const std::string& id) {
  return fs::path(g_root) / id;
}

json ReadJson(const fs::path& p) {
  std::ifstream in(p);
  if (!in) Die("cannot read " + p.string());
  try {
    return json::parse(in);
  } catch (const std::exception& e) {
    Die(p.string() + ": " + e.what());
  }
}

void WriteJson(const fs::path& p, const json& j) {
  fs::path tmp = p;
  tmp += ".tmp";
  std::ofstream(tmp) << j.dump();
  fs::rename(tmp, p);
}

json LoadState(const std::string& id) {
  fs::path p = StateDir(id) / "state.json";
  if (!fs::exists(p)) Die("container " + id + " does not exist");
  return ReadJson(p);
}

bool Alive(pid_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  // A zombie is dead for our purposes.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  auto close_paren = line.rfind(')');
  return close_paren == std::string::npos || close_paren + 2 >= line.size() ||
         line[close_paren + 2] != 'Z';
}

std::string Status(const json& state) {
  pid_t pid = state.value("pid", 0);
  if (!Alive(pid)) return "stopped";
  return fs::exists(StateDir(state["id"]) / "exec.fifo") ? "created" : "running";
}

struct Exec {
  std::vector<std::string> args, env;
  std::string cwd = "/";
};

Exec FromProcess(const json& process) {
  Exec e;
  for (const auto& a : process.value("args", json::array())) e.args.push_back(a);
  for (const auto& v : process.value("env", json::array())) e.env.push_back(v);
  e.cwd = process.value("cwd", "/");
  if (const char* replace = std::getenv("FAKE_RUNTIME_ARGS")) {
    e.args.clear();
    std::string word;
    for (const char* c = replace;; ++c) {
      if (*c == ' ' || *c == '\0') {
        if (!word.empty()) e.args.push_back(word);
        word.clear();
        if (*c == '\0') break;
      } else {
        word.push_back(*c);
      }
    }
    e.cwd = "/";
  }
  return e;
}

std::vector<char*> CStrings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The container cwd is a path inside the rootfs; a host process uses it
// when it exists on the host and stays in its own cwd otherwise.
void EnterCwd(const std::string& cwd) {
  if (chdir(cwd.c_str()) != 0) {
    // Expected for paths that only exist in an image.
  }
}

int Create(std::vector<std::string> args) {
  std::string bundle = ".", pid_file, id;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--bundle" || args[i] == "-b") {
      bundle = args.at(++i);
    } else if (args[i] == "--pid-file") {
      pid_file = args.at(++i);
    } else if (args[i] == "--console-socket" || args[i] == "--preserve-fds") {
      ++i;
    } else if (args[i].starts_with("--")) {
      continue;  // --no-pivot, --no-new-keyring
    } else {
      id = args[i];
    }
  }
  if (id.empty()) Die("create: container id required");
  MaybeFault("create");
  json config = ReadJson(fs::path(bundle) / "config.json");
  fs::path dir = StateDir(id);
  if (fs::exists(dir)) Die("container " + id + " already exists");
  fs::create_directories(dir);
  fs::path fifo = dir / "exec.fifo";
  if (mkfifo(fifo.c_str(), 0600) != 0) Die("mkfifo " + fifo.string() + ": " + strerror(errno));

  Exec e = FromProcess(config.value("process", json::object()));
  if (e.args.empty()) Die("create: process.args is empty");
  auto argv = CStrings(e.args);
  auto envp = CStrings(e.env);
  std::string fifo_path = fifo.string();

  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) Die(std::string("pipe2: ") + strerror(errno));
  pid_t pid = fork();
  if (pid < 0) Die(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    close(ready[0]);
    setsid();
    EnterCwd(e.cwd);
    int fd = open(fifo_path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) _exit(127);
    if (write(ready[1], "r", 1) != 1) _exit(127);
    close(ready[1]);
    char byte;
    if (read(fd, &byte, 1) != 1) _exit(127);  // blocks until start
    close(fd);
    execvpe(argv[0], argv.data(), envp.data());
    std::fprintf(stderr, "fake-runtime: exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(ready[1]);
  char byte;
  if (read(ready[0], &byte, 1) != 1) Die("create: the container process died before start");
  close(ready[0]);
  json state = {{"ociVersion", "1.0.2"},
                {"id", id},
                {"pid", pid},
                {"bundle", fs::absolute(bundle).string()},
                {"process", config["process"]}};
  WriteJson(dir / "state.json", state);
  if (!pid_file.empty()) std::ofstream(pid_file) << pid;
  return 0;
}

int Start(const std::string& id) {
  json state = LoadState(id);
  MaybeFault("start");
  fs::path fifo = StateDir(id) / "exec.fifo";
  int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) Die("start " + id + ": container is not in created state");
  char byte = 0;
  if (write(fd, &byte, 1) != 1) Die("start " + id + ": " + strerror(errno));
  close(fd);
  fs::remove(fifo);
  return 0;
}

// runc's `run --detach`: create and start in one call. The container
// process is this call's child until the call exits, then podvisor's
// through the subreaper, as with runc. With FAKE_RUNTIME_RUN_AWAIT_EXIT=1
// the call returns only once that process has exited (left a zombie):
// podvisor then adopts an init that is gone already.
int CreateAndStart(const std::vector<std::string>& args, const std::string& id) {
  if (int rc = Create(args); rc != 0) return rc;
  pid_t pid = LoadState(id)["pid"].get<pid_t>();
  if (int rc = Start(id); rc != 0) return rc;
  if (const char* await = std::getenv("FAKE_RUNTIME_RUN_AWAIT_EXIT"); await && *await == '1') {
    siginfo_t info = {};
    while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
    }
  }
  return 0;
}

// FAKE_RUNTIME_RUN_LINGER=MS: crun's way. A fork creates and starts the
// container and reports back; the call exits at once while the fork, the
// container process's parent, lingers MS milliseconds before it exits.
// FAKE_RUNTIME_RUN_ORPHAN_INIT=MS: the container process is handed to
// podvisor before the call ends (a fork creates it and exits at once), and
// the call exits MS milliseconds after the container process has: podvisor
// sees that exit before the call's, as with a multithreaded runc whose
// last thread hands the init over a moment before the process can be
// waited for.
int RunWithOrphanedInit(const std::vector<std::string>& args, const std::string& id, int ms) {
  pid_t creator = fork();
  if (creator < 0) Die(std::string("fork: ") + strerror(errno));
  if (creator == 0) _exit(Create(args));
  int status = 0;
  while (waitpid(creator, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  pid_t pid = LoadState(id)["pid"].get<pid_t>();
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) Die(std::string("pidfd_open: ") + strerror(errno));
  if (int rc = Start(id); rc != 0) return rc;
  pollfd exited = {pidfd, POLLIN, 0};
  while (poll(&exited, 1, -1) < 0 && errno == EINTR) {
  }
  usleep(static_cast<useconds_t>(ms) * 1000);
  return 0;
}

int Run(std::vector<std::string> args) {
  std::erase_if(args, [](const std::string& a) { return a == "--detach" || a == "-d"; });
  if (args.empty() || args.back().starts_with("-")) Die("run: container id required");
  std::string id = args.back();
  if (const char* ms = std::getenv("FAKE_RUNTIME_RUN_ORPHAN_INIT")) {
    return RunWithOrphanedInit(args, id, std::atoi(ms));
  }
  const char* linger = std::getenv("FAKE_RUNTIME_RUN_LINGER");
  if (!linger) return CreateAndStart(args, id);
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) Die(std::string("pipe2: ") + strerror(errno));
  pid_t fork_pid = fork();
  if (fork_pid < 0) Die(std::string("fork: ") + strerror(errno));
  if (fork_pid == 0) {
    close(report[0]);
    int rc = CreateAndStart(args, id);  // Die() exits: the report stays empty
    if (write(report[1], "k", 1) != 1) _exit(1);
    close(report[1]);
    usleep(static_cast<useconds_t>(std::atoi(linger)) * 1000);
    _exit(rc);
  }
  close(report[1]);
  char byte = 0;
  if (read(report[0], &byte, 1) != 1) return 1;  // the fork failed and said why
  return 0;
}

int State(const std::string& id) {
  json state = LoadState(id);
  json out = {{"ociVersion", "1.0.2"},
              {"id", id},
              {"pid", state["pid"]},
              {"status", Status(state)},
              {"bundle", state["bundle"]}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

int Kill(const std::string& id, const std::string& sig) {
  json state = LoadState(id);
  int signo = SIGTERM;
  if (!sig.empty()) {
    signo = std::isdigit(static_cast<unsigned char>(sig[0])) ? std::atoi(sig.c_str())
            : sig == "KILL" || sig == "SIGKILL"              ? SIGKILL
            : sig == "INT" || sig == "SIGINT"                ? SIGINT
            : sig == "HUP" || sig == "SIGHUP"                ? SIGHUP
                                                             : SIGTERM;
  }
  if (kill(state["pid"].get<pid_t>(), signo) != 0) Die("kill " + id + ": " + strerror(errno));
  return 0;
}

int Delete(const std::vector<std::string>& args) {
  MaybeFault("delete");
  bool force = false;
  std::string id;
  for (const auto& a : args) {
    if (a == "--force" || a == "-f") {
      force = true;
    } else {
      id = a;
    }
  }
  fs::path dir = StateDir(id);
  if (!fs::exists(dir / "state.json")) {
    if (force) return 0;
    Die("container " + id + " does not exist");
  }
  json state = ReadJson(dir / "state.json");
  std::string status = Status(state);
  if (status != "stopped") {
    if (!force && status == "running") Die("cannot delete running container " + id);
    kill(state["pid"].get<pid_t>(), SIGKILL);
  }
  fs::remove_all(dir);
  return 0;
}

int ExecIn(std::vector<std::string> args) {
  std::string process_file, cwd, id;
  std::vector<std::string> extra_env, cmd;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    if (args[i] == "--process" || args[i] == "-p") {
      process_file = args.at(++i);
    } else if (args[i] == "--cwd") {
      cwd = args.at(++i);
    } else if (args[i] == "--env" || args[i] == "-e") {
      extra_env.push_back(args.at(++i));
    } else if (args[i] == "--pid-file" || args[i] == "--console-socket" || args[i] == "--user") {
      ++i;
    } else if (args[i].starts_with("-")) {
      continue;
    } else {
      id = args[i++];
      break;
    }
  }
  for (; i < args.size(); ++i) cmd.push_back(args[i]);
  json state = LoadState(id);
  MaybeFault("exec");
  if (Status(state) != "running") Die("exec " + id + ": container is not running");
  Exec e = FromProcess(state["process"]);
  if (!process_file.empty()) e = FromProcess(ReadJson(process_file));
  if (!cmd.empty()) e.args = cmd;
  for (auto& v : extra_env) e.env.push_back(v);
  if (!cwd.empty()) e.cwd = cwd;
  if (e.args.empty()) Die("exec: no command");
  auto argv = CStrings(e.args);
  auto envp = CStrings(e.env);
  pid_t pid = fork();
  if (pid == 0) {
    EnterCwd(e.cwd);
    execvpe(argv[0], argv.data(), envp.data());
    std::fprintf(stderr, "fake-runtime: exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::size_t i = 0;
  for (; i < args.size() && args[i].starts_with("-"); ++i) {
    if (args[i] == "--root") {
      g_root = args.at(++i);
    } else if (args[i] == "--log") {
      g_log = args.at(++i);
    } else if (args[i] == "--log-format") {
      ++i;
    } else if (args[i] == "--version" || args[i] == "-v") {
      std::puts("fake-runtime version 0.0 (podvisor tests)\nspec: 1.0.2");
      return 0;
    }
  }
  if (i >= args.size()) Die("usage: fake-runtime [--root DIR] create|start|state|kill|delete|exec");
  std::string cmd = args[i];
  std::vector<std::string> rest(args.begin() + static_cast<long>(i) + 1, args.end());
  if (const char* calls = std::getenv("FAKE_RUNTIME_CALLS")) {
    std::ofstream(calls, std::ios::app) << cmd << " " << (rest.empty() ? "" : rest.back()) << "\n";
  }
  try {
    if (cmd == "create") return Create(rest);
    if (cmd == "run") return Run(rest);
    if (cmd == "start" && rest.size() == 1) return Start(rest[0]);
    if (cmd == "state" && rest.size() == 1) return State(rest[0]);
    if (cmd == "kill" && !rest.empty()) return Kill(rest[0], rest.size() > 1 ? rest[1] : "");
    if (cmd == "delete") return Delete(rest);
    if (cmd == "exec") return ExecIn(rest);
  } catch (const std::exception& e) {
    Die(cmd + ": " + e.what());
  }
  Die("unknown command or arguments: " + cmd);
}
