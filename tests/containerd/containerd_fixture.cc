#include "containerd_fixture.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace podvisor::testing {

namespace fs = std::filesystem;

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The pids whose command line contains `needle`.
std::vector<pid_t> ProcessesMentioning(const std::string& needle) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    pid_t pid = std::atoi(e.path().filename().c_str());
    if (pid <= 0 || pid == getpid()) continue;
    std::string cmdline = ReadFile(e.path() / "cmdline");
    if (cmdline.find(needle) != std::string::npos) out.push_back(pid);
  }
  return out;
}

}  // namespace

void ContainerdTest::SetUpTestSuite() {
  if (geteuid() != 0) {
    skip_ = "needs root (containerd, overlay snapshots, runc)";
    return;
  }
  if (RunCommand({"/bin/sh", "-c", "command -v containerd && command -v ctr && command -v runc"})
          .exit_code != 0) {
    skip_ = "needs containerd, ctr and runc (scripts/install-deps.sh)";
    return;
  }
  char tmpl[] = "/tmp/pv-ctrd-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  root_ = tmpl;
  fs::create_directories(root_ / "bin");
  fs::create_symlink(Env("PODVISOR"), root_ / "bin" / "containerd-shim-podvisor-v1");
  std::ofstream(root_ / "config.toml")
      << "version = 2\n"
      << "root = \"" << (root_ / "root").string() << "\"\n"
      << "state = \"" << (root_ / "state").string() << "\"\n"
      << "disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n"
      << "[grpc]\n  address = \"" << (root_ / "c.sock").string() << "\"\n";
  run_containerd_dir_existed_ = fs::exists("/run/containerd");
  StartContainerd();
}

void ContainerdTest::StartContainerd() {
  std::string path = (root_ / "bin").string() + ":" + Env("PATH");
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    std::string log = (root_ / "containerd.log").string();
    freopen(log.c_str(), "a", stdout);
    freopen(log.c_str(), "a", stderr);
    setenv("PATH", path.c_str(), 1);
    execlp("containerd", "containerd", "--config", (root_ / "config.toml").c_str(), nullptr);
    _exit(127);
  }
  containerd_pid_ = pid;
  for (int i = 0; i < 500; ++i) {
    if (fs::exists(root_ / "c.sock") && Ctr({"version"}).exit_code == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "containerd did not answer within 10 s:\n" << ReadFile(root_ / "containerd.log");
}

void ContainerdTest::StopContainerd() {
  if (containerd_pid_ <= 0) return;
  kill(containerd_pid_, SIGTERM);
  int status = 0;
  waitpid(containerd_pid_, &status, 0);
  containerd_pid_ = 0;
}

void ContainerdTest::TearDownTestSuite() {
  if (root_.empty()) return;
  StopContainerd();
  // The shims' own log lines, which containerd copies into its log: what a
  // failure needs explained.
  if (::testing::UnitTest::GetInstance()->failed_test_count() > 0) {
    std::istringstream log(ReadFile(root_ / "containerd.log"));
    std::string line;
    while (std::getline(log, line)) {
      if (line.find("containerd-shim-podvisor-v1") != std::string::npos ||
          line.find("level=error") != std::string::npos ||
          line.find("level=warn") != std::string::npos) {
        std::fprintf(stderr, "containerd.log: %s\n", line.c_str());
      }
    }
  }
  // containerd leaves its snapshots' mounts behind only when a test failed
  // half way; they must go before the directory.
  RunCommand({"/bin/sh", "-c",
              "grep -o ' " + root_.string() +
                  "[^ ]*' /proc/self/mounts | sort -r | xargs -r -n1 umount -l"});
  fs::remove_all(root_);
  // What ctr (fifo/) and the shims (s/) made under /run/containerd, when
  // the suite made the directory.
  if (!run_containerd_dir_existed_) {
    std::error_code ec;
    fs::remove("/run/containerd/s", ec);
    fs::remove("/run/containerd/fifo", ec);
    fs::remove("/run/containerd", ec);
  }
}

void ContainerdTest::SetUp() {
  if (!skip_.empty()) GTEST_SKIP() << skip_;
}

void ContainerdTest::TearDown() {
  if (!skip_.empty()) return;
  for (const auto& [id, pod] : tasks_) {
    RemoveTask(id);
    ExpectNothingLeft(id, pod);
  }
}

CommandResult ContainerdTest::Ctr(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/timeout", "60", "ctr", "-a",
                                   (root_ / "c.sock").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

void ContainerdTest::ImportBundle(const std::string& name, const std::string& pod_yaml) {
  const fs::path src = Env("PODVISOR_SOURCE_ROOT");
  const fs::path dir = root_ / "images" / name;
  fs::create_directories(dir / "bundle");
  std::ofstream(dir / "bundle" / "pod.yaml") << pod_yaml;
  auto rootfs = RunCommand(
      {(src / "scripts/make-rootfs.sh").string(), (dir / "bundle/images/busybox").string()});
  ASSERT_EQ(rootfs.exit_code, 0) << rootfs.err;
  // A packed bundle (docs/SHIM.md), as users make it: `podvisor pack`.
  auto layout =
      RunCommand({Env("PODVISOR"), "pack", (dir / "bundle").string(), (dir / "layout").string()});
  ASSERT_EQ(layout.exit_code, 0) << layout.out << layout.err;
  ImportLayout(name, dir);
}

void ContainerdTest::ImportLayerAsImage(const std::string& name, const fs::path& layer) {
  const fs::path src = Env("PODVISOR_SOURCE_ROOT");
  const fs::path dir = layer.parent_path();
  auto layout = RunCommand({(src / "scripts/make-oci-layout.sh").string(),
                            (dir / "layout").string(), "{}", layer.string()});
  ASSERT_EQ(layout.exit_code, 0) << layout.err;
  ImportLayout(name, dir);
}

void ContainerdTest::ImportLayout(const std::string& name, const fs::path& dir) {
  auto tar = RunCommand(
      {"/bin/tar", "-C", (dir / "layout").string(), "-cf", (dir / "image.tar").string(), "."});
  ASSERT_EQ(tar.exit_code, 0) << tar.err;
  auto imported = Ctr(
      {"image", "import", "--base-name", "podvisor.test/" + name, (dir / "image.tar").string()});
  ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
}

CommandResult ContainerdTest::RunDetached(const std::string& image, const std::string& id,
                                          const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"run",          "-d",
                                   "--fifo-dir",   (root_ / "fifo").string(),
                                   "--runtime",    "io.containerd.podvisor.v1",
                                   "--annotation", "podvisor.network=none"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"podvisor.test/" + image + ":latest", id});
  return Ctr(args);
}

std::string ContainerdTest::TaskStatus(const std::string& id) {
  std::istringstream lines(Ctr({"task", "ls"}).out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string task, pid, status;
    words >> task >> pid >> status;
    if (task == id) return status;
  }
  return "";
}

int ContainerdTest::TaskPid(const std::string& id) {
  std::istringstream lines(Ctr({"task", "ls"}).out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string task;
    int pid = 0;
    words >> task >> pid;
    if (task == id) return pid;
  }
  return 0;
}

bool ContainerdTest::WaitForStatus(const std::string& id, const std::string& status, int seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (TaskStatus(id) == status) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

pid_t ContainerdTest::ShimPid(const std::string& id) {
  for (pid_t pid : ProcessesMentioning("containerd-shim-podvisor-v1")) {
    std::string cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
    if (cmdline.find(std::string("-id") + '\0' + id + '\0') != std::string::npos &&
        cmdline.find((root_ / "c.sock").string()) != std::string::npos) {
      return pid;
    }
  }
  return 0;
}

fs::path ContainerdTest::TaskBundle(const std::string& id) {
  return root_ / "state" / "io.containerd.runtime.v2.task" / "default" / id;
}

void ContainerdTest::RemoveTask(const std::string& id) {
  if (!TaskStatus(id).empty()) {
    Ctr({"task", "kill", "-s", "SIGKILL", id});
    WaitForStatus(id, "STOPPED", 30);
    Ctr({"task", "delete", id});
  }
  Ctr({"container", "rm", id});
}

void ContainerdTest::ExpectNothingLeft(const std::string& id, const std::string& pod) {
  const fs::path bundle = TaskBundle(id);
  EXPECT_EQ(TaskStatus(id), "") << "task " << id << " still listed";
  // The supervisor's command line names the bundle; the shim's the id.
  for (int i = 0; i < 200 && (!ProcessesMentioning(bundle.string()).empty() || ShimPid(id)); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::string left;
  for (pid_t pid : ProcessesMentioning(bundle.string())) {
    std::string cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    left += "\n  " + std::to_string(pid) + ": " + cmdline;
    kill(pid, SIGKILL);  // reported, and not left on the host
  }
  EXPECT_EQ(left, "") << "a process of " << id << " is left";
  EXPECT_EQ(ShimPid(id), 0) << "the shim of " << id << " is left";
  std::string mounts = ReadFile("/proc/self/mountinfo");
  EXPECT_EQ(mounts.find(bundle.string()), std::string::npos) << "a mount of " << id << " is left";
  EXPECT_FALSE(fs::exists(bundle)) << bundle << " is left";
  EXPECT_FALSE(fs::exists(root_ / "root" / "io.containerd.runtime.v2.task" / "default" / id));
  // The shim's socket: /run/containerd/s/<sha256 of ADDRESS/NS/ID>.
  auto hash = RunCommand({"/bin/sh", "-c",
                          "printf %s '" + (root_ / "c.sock" / "default" / id).string() +
                              "' | sha256sum | cut -d' ' -f1"});
  ASSERT_EQ(hash.out.size(), 65u) << hash.out << hash.err;
  const fs::path socket = "/run/containerd/s/" + hash.out.substr(0, 64);
  EXPECT_FALSE(fs::exists(socket)) << "the shim's socket " << socket << " is left";
  // The task's cgroups, in every hierarchy: the shim's parent
  // /podvisor/containerd/default/ID and the pod's directory below it.
  auto cgroups = RunCommand({"/bin/sh", "-c",
                             "find /sys/fs/cgroup -maxdepth 6 -type d -path "
                             "'*/podvisor/containerd/default/" +
                                 id + "*'"});
  EXPECT_EQ(cgroups.out, "") << "cgroups of task " << id << " (pod " << pod << ") are left";
}

}  // namespace podvisor::testing
