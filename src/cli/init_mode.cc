#include "cli/init_mode.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cli/cli.h"
#include "cli/commands.h"
#include "pod/parse.h"
#include "process/reaper.h"
#include "supervisor/executor/host_checks.h"

namespace podvisor::cli {
namespace {

struct EssentialMount {
  const char* target;
  const char* fstype;
  unsigned long flags;
  const char* data;
  mode_t mode;
};

// In order: /sys/fs/cgroup only exists once sysfs is mounted.
constexpr EssentialMount kEssentialMounts[] = {
    {"/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr, 0555},
    {"/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr, 0555},
    {"/dev", "devtmpfs", MS_NOSUID, "mode=0755", 0755},
    {"/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755", 0755},
    {"/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", 01777},
    // nsdelegate, as systemd mounts it: cgroup namespaces are delegation
    // boundaries.
    {"/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, "nsdelegate", 0755},
};

// A mount point has another device than its parent (or is "/").
bool IsMountPoint(const std::string& path) {
  struct stat self {
  }, parent{};
  if (::stat(path.c_str(), &self) != 0) return false;
  if (::stat((path + "/..").c_str(), &parent) != 0) return false;
  return self.st_dev != parent.st_dev || self.st_ino == parent.st_ino;
}

void MountEssentials() {
  for (const auto& m : kEssentialMounts) {
    ::mkdir(m.target, m.mode);  // EEXIST is the common case
    if (IsMountPoint(m.target)) continue;
    if (::mount(m.fstype, m.target, m.fstype, m.flags, m.data) != 0) {
      // Keep going: the pod's own start-up reports what is then missing,
      // and the machine still powers off with the final line.
      std::fprintf(stderr, "podvisor: init: mounting %s on %s: %s\n", m.fstype, m.target,
                   std::strerror(errno));
    }
  }
}

// The kernel opens /dev/console for init's stdin, stdout and stderr only
// if the initramfs has that node; otherwise they are closed until /dev is
// mounted.
void EnsureConsole() {
  bool missing = false;
  for (int fd = 0; fd <= 2; ++fd) missing = missing || ::fcntl(fd, F_GETFD) < 0;
  if (!missing) return;
  int console = ::open("/dev/console", O_RDWR | O_NOCTTY);
  if (console < 0) return;
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0) ::dup2(console, fd);
  }
  if (console > 2) ::close(console);
}

std::string ReadAll(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string PodName(const std::string& bundle) {
  auto parsed = pod::ParseManifestFile(bundle);
  if (parsed && !parsed->pod.metadata.name.empty()) return parsed->pod.metadata.name;
  return bundle;  // the pod could not be read: name it by its bundle
}

}  // namespace

InitConfig ParseKernelCmdline(std::string_view cmdline) {
  std::vector<std::string> words;
  std::string word;
  bool quoted = false, in_word = false;
  for (char c : cmdline) {
    if (c == '"') {
      quoted = !quoted;
      in_word = true;
    } else if (!quoted && (c == ' ' || c == '\t' || c == '\n')) {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);

  InitConfig config;
  for (const auto& w : words) {
    auto eq = w.find('=');
    if (eq == std::string::npos) continue;
    std::string key = w.substr(0, eq), value = w.substr(eq + 1);
    if (key == "podvisor.bundle" && !value.empty()) config.bundle = value;
    if (key == "podvisor.runtime") config.runtime = value;
    if (key == "podvisor.cgroup-parent") config.cgroup_parent = value;
    if (key == "podvisor.exit" && (value == "reboot" || value == "poweroff")) {
      config.reboot = value == "reboot";
    }
  }
  return config;
}

std::vector<std::string> InitRunArgs(const InitConfig& config, bool no_pivot) {
  std::vector<std::string> args = {"run"};
  if (no_pivot) args.emplace_back("--no-pivot");
  if (!config.runtime.empty()) args.insert(args.end(), {"--runtime", config.runtime});
  if (!config.cgroup_parent.empty()) {
    args.push_back("--cgroup-parent=" + config.cgroup_parent);
  }
  args.push_back(config.bundle);
  return args;
}

std::string_view PhaseForExitCode(int code) {
  switch (code) {
    case kExitSucceeded:
      return "Succeeded";
    case kExitFailed:
      return "Failed";
    default:
      return "Pending";
  }
}

std::string FinalConsoleLine(std::string_view pod_name, int exit_code) {
  return "podvisor: pod " + std::string(pod_name) +
         " ended: phase=" + std::string(PhaseForExitCode(exit_code)) +
         " exit=" + std::to_string(exit_code);
}

bool ShouldRunAsInit(const std::vector<std::string>& args,
                     const std::vector<std::string>& subcommands) {
  if (::getpid() != 1) return false;
  // The kernel hands init the command-line words it does not know (those
  // without '='); only a subcommand name means "a normal invocation".
  return std::none_of(args.begin(), args.end(), [&](const std::string& a) {
    return std::find(subcommands.begin(), subcommands.end(), a) != subcommands.end();
  });
}

int RunAsInit() {
  ::setsid();
  MountEssentials();
  EnsureConsole();
  // The kernel starts init with HOME and TERM only; runtimes and hooks
  // expect a PATH.
  ::setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 0);
  InitConfig config = ParseKernelCmdline(ReadAll("/proc/cmdline"));
  std::vector<std::string> args = InitRunArgs(config, supervisor::executor::RootIsInitramfs());
  args.insert(args.begin(), "podvisor");
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int code = Main(static_cast<int>(args.size()), argv.data());

  std::string line = FinalConsoleLine(PodName(config.bundle), code);
  std::fprintf(stdout, "%s\n", line.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  // Nothing of the pod is left at this point; anything else (a daemon a
  // hook started outside the pod) does not get to write after the sync.
  ::kill(-1, SIGKILL);
  (void)process::ReapAll();
  ::sync();
  ::reboot(config.reboot ? RB_AUTOBOOT : RB_POWER_OFF);
  std::fprintf(stderr, "podvisor: init: reboot: %s\n", std::strerror(errno));
  return code;
}

}  // namespace podvisor::cli
