#include "harness.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

extern char** environ;

namespace podvisor::e2e {
namespace {

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) {
    s.replace(pos, from.size(), to);
  }
}

// "2026-11-22T03:59:15.990Z" → a time point (UTC).
std::optional<Clock::time_point> ParseMsTimestamp(const std::string& text) {
  std::tm t{};
  int ms = 0;
  if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &t.tm_year, &t.tm_mon, &t.tm_mday,
                  &t.tm_hour, &t.tm_min, &t.tm_sec, &ms) != 7) {
    return std::nullopt;
  }
  t.tm_year -= 1900;
  t.tm_mon -= 1;
  return Clock::from_time_t(timegm(&t)) + milliseconds(ms);
}

// The processes whose command line or cgroup mentions one of `needles`:
// what a pod left running.
std::vector<std::string> ProcessesMentioning(const std::vector<std::string>& cmdline_needles,
                                             const std::string& cgroup_needle) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::string pid = entry.path().filename().string();
    if (pid.empty() || !std::all_of(pid.begin(), pid.end(), ::isdigit)) continue;
    if (std::stoi(pid) == getpid()) continue;
    // A zombie is dead and holds nothing but its pid. One adopted from a
    // SIGKILLed supervisor (S15.5) is reaped by the host's PID 1, which
    // may take seconds; a zombie of ours is reaped by the test.
    const std::string stat = ReadFile(entry.path() / "stat");
    if (auto close = stat.rfind(')');
        close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z') {
      continue;
    }
    std::string cmdline = ReadFile(entry.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    bool hit = false;
    for (const auto& n : cmdline_needles)
      hit = hit || (!n.empty() && cmdline.find(n) != std::string::npos);
    if (!cgroup_needle.empty() &&
        ReadFile(entry.path() / "cgroup").find(cgroup_needle) != std::string::npos) {
      hit = true;
    }
    if (hit) found.push_back(pid + ": " + Trim(cmdline));
  }
  return found;
}

// A busybox image with the static helper at /podvisor-test-helper, built
// once per test binary by scripts/make-rootfs.sh and copied into each
// bundle.
class BusyboxImageCache {
 public:
  ~BusyboxImageCache() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  const fs::path& Get() {
    if (!dir_.empty()) return image_;
    dir_ = fs::path(::testing::TempDir()) / ("podvisor-e2e-image-" + std::to_string(getpid()));
    image_ = dir_ / "busybox";
    fs::create_directories(dir_);
    std::string script = RequiredEnv("PODVISOR_SOURCE_ROOT") + "/scripts/make-rootfs.sh";
    auto r = testing::RunCommand({"/bin/bash", script, image_.string()});
    if (r.exit_code != 0) {
      ADD_FAILURE() << "make-rootfs.sh failed: " << r.err;
      return image_;
    }
    fs::copy_file(RequiredEnv("PODVISOR_TEST_HELPER"), image_ / "rootfs" / "podvisor-test-helper",
                  fs::copy_options::overwrite_existing);
    return image_;
  }

 private:
  fs::path dir_, image_;
};

BusyboxImageCache g_image_cache;

}  // namespace

std::string RequiredEnv(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) {
    ADD_FAILURE() << "environment variable " << name << " is not set (run the test through meson)";
    return "";
  }
  return v;
}

std::string FindInPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    fs::path candidate = fs::path(dir) / program;
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  for (const char* dir : {"/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
    fs::path candidate = fs::path(dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

std::string HelperCmd(const std::string& name, const std::string& args) {
  nlohmann::json cmd = {"{{H}}", "--log", name, "--log-file", "{{LOG}}"};
  std::istringstream in(args);
  for (std::string word; in >> word;) cmd.push_back(word);
  return cmd.dump();
}

std::string ShCmd(const std::string& script, const std::vector<std::string>& extra) {
  nlohmann::json cmd = {"/bin/sh", "-c", script};
  for (const auto& e : extra) cmd.push_back(e);
  return cmd.dump();
}

long long MsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<milliseconds>(b - a).count();
}

int IndexOf(const std::vector<HelperEvent>& events, const std::string& key) {
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].Key() == key) return static_cast<int>(i);
  }
  return -1;
}

int CountOf(const std::vector<HelperEvent>& events, const std::string& key) {
  return static_cast<int>(std::count_if(events.begin(), events.end(),
                                        [&](const HelperEvent& e) { return e.Key() == key; }));
}

std::vector<HelperEvent> EventsNamed(const std::vector<HelperEvent>& events,
                                     const std::string& name, const std::string& verb) {
  std::vector<HelperEvent> out;
  for (const auto& e : events) {
    if (e.name == name && e.verb == verb) out.push_back(e);
  }
  return out;
}

std::string Describe(const std::vector<HelperEvent>& events) {
  std::string out;
  for (const auto& e : events) {
    std::time_t t = Clock::to_time_t(e.time);
    long ms = static_cast<long>(MsBetween(Clock::from_time_t(t), e.time));
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%H:%M:%S", std::gmtime(&t));
    out += "\n  " + std::string(stamp) + "." + std::to_string(1000 + ms).substr(1) + " " + e.Key();
  }
  return out;
}

// This process's open descriptors.
static int OpenFdCount() {
  int n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc/self/fd", ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    ++n;
  }
  return n;
}

void E2eTest::SetUp() {
  tier_ = Tier();
  // Short: the control socket path under it must fit sun_path (108 bytes).
  static int test_number = 0;
  dir_ = fs::path(::testing::TempDir()) /
         ("podvisor-e2e-" + std::to_string(getpid()) + "-" + std::to_string(++test_number));
  fs::remove_all(dir_);
  test_fds_ = OpenFdCount();
  bundle_ = dir_ / "bundle";
  state_dir_ = dir_ / "state";
  log_dir_ = dir_ / "logs";
  scratch_ = dir_ / "shared";
  fs::create_directories(scratch_);
  ::chmod(scratch_.c_str(), 0777);
  fs::create_directories(bundle_ / "images");
  if (tier_.busybox_rootfs) {
    fs::copy(g_image_cache.Get(), bundle_ / "images" / "img",
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  } else {
    fs::create_directories(bundle_ / "images" / "img" / "rootfs");
  }
}

void E2eTest::TearDown() {
  if (dir_.empty()) return;  // skipped before SetUp
  if (run_pid_ > 0 && !run_reaped_) {
    ADD_FAILURE() << "podvisor run still running at the end of the test: killing it";
    ::kill(run_pid_, SIGKILL);
    ::waitpid(run_pid_, nullptr, 0);
    run_reaped_ = true;
  }
  CheckNothingLeftBehind();
  if (HasFailure()) {
    std::printf("---- test dir %s (kept) ----\n", dir_.c_str());
    std::printf("---- podvisor run stderr ----\n%s\n---- helper events ----%s\n",
                RunStderr().c_str(), Describe(HelperEvents()).c_str());
  }
  std::error_code ec;
  if (!HasFailure()) fs::remove_all(dir_, ec);
}

void E2eTest::CheckNothingLeftBehind() {
  // Descriptors: the test's client connections, pipes and files all closed.
  EXPECT_EQ(OpenFdCount(), test_fds_) << "descriptors left open by the test";

  // Processes: anything mentioning our temp dir (tier 2 containers and
  // hooks name it on their command line) or living in our cgroup parent.
  std::string cgroup_needle = tier_.cgroup_parent.empty() ? "" : tier_.cgroup_parent + "/";
  std::vector<std::string> procs;
  for (int i = 0; i < 50; ++i) {  // a just-SIGKILLed process may still be a zombie being reaped
    procs = ProcessesMentioning({dir_.string()}, cgroup_needle);
    if (procs.empty()) break;
    std::this_thread::sleep_for(milliseconds(20));
  }
  for (const auto& p : procs) {
    ADD_FAILURE() << "process left behind: " << p;
    ::kill(std::stoi(p), SIGKILL);
  }

  // Host-wide claims (S14.31, S14.32, S20.4) of this test's state directories.
  for (const char* kind : {"cgroups", "host-ports", "userns"}) {
    std::error_code ec;
    for (const auto& claim : fs::directory_iterator(fs::path("/run/lock/podvisor") / kind, ec)) {
      if (ReadFile(claim.path()).find(dir_.string() + "/") != std::string::npos)
        ADD_FAILURE() << "host claim left behind: " << claim.path();
    }
  }

  // Mounts under the temp dir (overlay roots, volumes, namespace pins).
  std::istringstream mountinfo(ReadFile("/proc/self/mountinfo"));
  for (std::string line; std::getline(mountinfo, line);) {
    if (line.find(dir_.string()) != std::string::npos)
      ADD_FAILURE() << "mount left behind: " << line;
  }

  // Runtime state.
  if (!pod_name_.empty()) {
    fs::path root = state_dir_ / pod_name_ / "runtime";
    if (tier_.check_runc_state) {
      std::error_code ec;
      if (fs::exists(root, ec)) {
        auto r = testing::RunCommand({tier_.runtime, "--root", root.string(), "list", "-q"});
        EXPECT_EQ(Trim(r.out), "") << "runc containers left behind in " << root;
      }
    } else {
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator(root, ec)) {
        ADD_FAILURE() << "runtime state left behind: " << entry.path();
      }
    }
  }

  // Cgroups: the pod's directory under our test-specific parent, in every
  // hierarchy. The parent itself is ours to remove, as /podvisor is the
  // admin's.
  if (!tier_.cgroup_parent.empty()) {
    std::error_code ec;
    for (const auto& hierarchy : fs::directory_iterator("/sys/fs/cgroup", ec)) {
      fs::path parent = hierarchy.path() / tier_.cgroup_parent.substr(1);
      if (!fs::is_directory(parent, ec)) continue;
      if (!pod_name_.empty() && fs::exists(parent / pod_name_, ec)) {
        ADD_FAILURE() << "cgroup left behind: " << (parent / pod_name_);
      }
      ::rmdir(parent.c_str());
    }
  }
}

std::string E2eTest::Expand(const std::string& text) const {
  std::string out = text;
  bool shared = tier_.helper_log_in_shared_volume;
  ReplaceAll(out, "{{H}}", tier_.helper_in_container);
  ReplaceAll(out, "{{LOG}}", shared ? "/shared/events.log" : EventLogOnHost().string());
  ReplaceAll(out, "{{DIR}}", shared ? "/shared" : scratch_.string());
  ReplaceAll(out, "{{HOSTDIR}}", scratch_.string());
  return out;
}

void E2eTest::WritePod(const std::string& yaml_template) {
  std::string yaml = Expand(yaml_template);
  std::smatch m;
  if (std::regex_search(yaml, m, std::regex(R"(metadata:\s*\{?\s*name:\s*([a-z0-9.-]+))"))) {
    pod_name_ = m[1];
  }
  std::ofstream(bundle_ / "pod.yaml") << yaml;
}

namespace {

// `podvisor run` with the test's dirs and the tier's options, its stdin
// /dev/null and its output appended to `err_file`.
pid_t SpawnRun(const std::vector<std::string>& base, const std::vector<std::string>& extra_args,
               const fs::path& bundle, const std::vector<std::string>& extra_env,
               const std::string& err_file) {
  std::vector<std::string> argv = base;
  for (const auto& a : extra_args) argv.push_back(a);
  // As root the default network is cni, which would make a bridge and
  // iptables rules on this host: only a test that asks for a network gets
  // one (tests/e2e/runc_network_test.cc, with a test-only configuration).
  bool network_given = false;
  for (const auto& a : argv) network_given |= a.rfind("--network", 0) == 0;
  if (!network_given) argv.insert(argv.end(), {"--network", "none"});
  argv.push_back(bundle.string());

  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  for (const auto& e : extra_env) env.push_back(e);
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, err_file.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  EXPECT_EQ(rc, 0) << "cannot spawn " << argv[0] << ": " << std::strerror(rc);
  return rc == 0 ? pid : -1;
}

}  // namespace

std::vector<std::string> E2eTest::RunArgs() const {
  std::vector<std::string> argv = tier_.run_prefix;
  argv.insert(argv.end(), {RequiredEnv("PODVISOR"), "run", "--state-dir", state_dir_.string(),
                           "--log-dir", log_dir_.string(), "--runtime", tier_.runtime});
  if (!tier_.cgroup_parent.empty()) {
    argv.push_back("--cgroup-parent");
    argv.push_back(tier_.cgroup_parent);
  }
  for (const auto& a : tier_.extra_run_args) argv.push_back(a);
  return argv;
}

void E2eTest::StartRun(const std::vector<std::string>& extra_args,
                       const std::vector<std::string>& extra_env) {
  run_pid_ = SpawnRun(RunArgs(), extra_args, bundle_, extra_env, (dir_ / "run.stderr").string());
  ASSERT_GT(run_pid_, 0);
  run_reaped_ = false;
}

pid_t E2eTest::SpawnOtherRun(const fs::path& bundle, const std::string& name,
                             const std::vector<std::string>& extra_args) {
  return SpawnRun(RunArgs(), extra_args, bundle, {}, (dir_ / (name + ".stderr")).string());
}

pid_t E2eTest::StartOtherPod(const std::string& name, const std::string& yaml_template) {
  const fs::path bundle = dir_ / ("bundle-" + name);
  fs::create_directories(bundle);
  fs::copy(bundle_ / "images", bundle / "images", fs::copy_options::recursive);
  std::ofstream(bundle / "pod.yaml") << Expand(yaml_template);
  return SpawnOtherRun(bundle, "run-" + name);
}

void E2eTest::StopOtherPod(const std::string& name, pid_t& pid) {
  if (pid <= 0) return;
  Client({"stop", name});
  int status = 0;
  ::waitpid(pid, &status, 0);  // `stop` returned after its supervisor ended
  pid = -1;
}

bool E2eTest::RunIsAlive() {
  if (run_reaped_) return false;
  int status = 0;
  pid_t r = ::waitpid(run_pid_, &status, WNOHANG);
  if (r == run_pid_) {
    run_reaped_ = true;
    reaped_status_ = status;
    return false;
  }
  return true;
}

int E2eTest::WaitRun(std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!run_reaped_) {
    int status = 0;
    pid_t r = ::waitpid(run_pid_, &status, WNOHANG);
    if (r == run_pid_) {
      run_reaped_ = true;
      reaped_status_ = status;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "podvisor run did not end within " << timeout.count() << " s: SIGKILL";
      ::kill(run_pid_, SIGKILL);
      ::waitpid(run_pid_, &status, 0);
      run_reaped_ = true;
      reaped_status_ = status;
      break;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  return WIFEXITED(reaped_status_) ? WEXITSTATUS(reaped_status_) : -1;
}

int E2eTest::Run(const std::vector<std::string>& extra_args,
                 const std::vector<std::string>& extra_env, std::chrono::seconds timeout) {
  StartRun(extra_args, extra_env);
  return WaitRun(timeout);
}

std::string E2eTest::RunStderr() const {
  return ReadFile(dir_ / "run.stderr");
}

testing::CommandResult E2eTest::Client(std::vector<std::string> args, bool with_log_dir) {
  std::vector<std::string> argv = tier_.client_prefix;
  argv.push_back(RequiredEnv("PODVISOR"));
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--state-dir");
  argv.push_back(state_dir_.string());
  if (with_log_dir) {
    argv.push_back("--log-dir");
    argv.push_back(log_dir_.string());
  }
  return testing::RunCommand(argv);
}

std::optional<nlohmann::json> E2eTest::Status() {
  auto r = Client({"status", "-o", "json"});
  if (r.exit_code != 0) return std::nullopt;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

nlohmann::json E2eTest::WaitForStatus(const std::function<bool(const nlohmann::json&)>& pred,
                                      const std::string& what, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  nlohmann::json last;
  for (;;) {
    if (auto s = Status()) {
      last = *s;
      if (pred(last)) return last;
    }
    if (!RunIsAlive()) {
      ADD_FAILURE() << "podvisor run ended while waiting for: " << what
                    << "\nlast status: " << last.dump(2);
      return last;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "timed out waiting for: " << what << "\nlast status: " << last.dump(2);
      return last;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
}

nlohmann::json E2eTest::WaitUntilRunning() {
  return WaitForStatus(
      [](const nlohmann::json& pod) {
        if (Phase(pod) != "Running") return false;
        for (const char* list : {"containerStatuses", "initContainerStatuses"}) {
          for (const auto& c : pod["status"].value(list, nlohmann::json::array())) {
            bool sidecar_or_regular = std::string(list) == "containerStatuses" ||
                                      c.value("started", false) || c["state"].contains("running");
            if (sidecar_or_regular && !c.value("ready", false) &&
                !c["state"].contains("terminated")) {
              return false;
            }
          }
        }
        return true;
      },
      "pod Running with every container ready");
}

bool E2eTest::WaitForHelperEvent(const std::string& key, int count,
                                 std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (CountOf(HelperEvents(), key) < count) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "timed out waiting for helper event \"" << key << "\" x" << count;
      return false;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

std::vector<HelperEvent> E2eTest::HelperEvents() const {
  std::vector<HelperEvent> events;
  std::istringstream in(ReadFile(EventLogOnHost()));
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string stamp;
    HelperEvent e;
    fields >> stamp >> e.name >> e.verb;
    auto t = ParseMsTimestamp(stamp);
    if (!t || e.verb.empty()) {
      ADD_FAILURE() << "malformed helper log line: " << line;
      continue;
    }
    e.time = *t;
    events.push_back(e);
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const HelperEvent& a, const HelperEvent& b) { return a.time < b.time; });
  return events;
}

std::vector<nlohmann::json> E2eTest::PodEvents() const {
  std::vector<nlohmann::json> events;
  std::istringstream in(ReadFile(state_dir_ / pod_name_ / "events.jsonl"));
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    try {
      events.push_back(nlohmann::json::parse(line));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "events.jsonl line is not JSON: " << line;
    }
  }
  return events;
}

std::string E2eTest::ReadScratch(const std::string& name) const {
  return Trim(ReadFile(scratch_ / name));
}

std::string E2eTest::RawControlRequest(const std::string& bytes) {
  fs::path sock = state_dir_ / pod_name_ / "control.sock";
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ADD_FAILURE() << "connect " << sock << ": " << std::strerror(errno);
    ::close(fd);
    return "";
  }
  if (!bytes.empty() && ::write(fd, bytes.data(), bytes.size()) < 0) {
    // The server may answer and close before reading everything.
  }
  ::shutdown(fd, SHUT_WR);
  std::string reply;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    reply.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return reply;
}

const nlohmann::json* FindContainerStatus(const nlohmann::json& pod, const std::string& name) {
  if (!pod.contains("status")) return nullptr;
  for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
    if (!pod["status"].contains(list)) continue;
    for (const auto& c : pod["status"][list]) {
      if (c.value("name", "") == name) return &c;
    }
  }
  return nullptr;
}

std::string StateOf(const nlohmann::json& pod, const std::string& container) {
  const nlohmann::json* c = FindContainerStatus(pod, container);
  if (!c || !c->contains("state")) return "";
  for (const char* s : {"waiting", "running", "terminated"}) {
    if ((*c)["state"].contains(s)) return s;
  }
  return "";
}

std::string Phase(const nlohmann::json& pod) {
  if (!pod.contains("status")) return "";
  return pod["status"].value("phase", "");
}

std::string ConditionStatus(const nlohmann::json& pod, const std::string& type) {
  if (!pod.contains("status") || !pod["status"].contains("conditions")) return "";
  for (const auto& c : pod["status"]["conditions"]) {
    if (c.value("type", "") == type) return c.value("status", "");
  }
  return "";
}

}  // namespace podvisor::e2e
