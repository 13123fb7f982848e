#include "cli/user_dirs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "cli/default_dirs.h"
#include "common/file_io.h"
#include "process/user_namespace_entry.h"

namespace podvisor::cli {
namespace {

std::string AbsoluteEnv(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] == '/' ? std::string(value) : std::string();
}

const DefaultDirs& ProcessDefaults() {
  static const DefaultDirs dirs = DefaultDirsFor(ReadDirEnvironment());
  return dirs;
}

}  // namespace

DirEnvironment ReadDirEnvironment() {
  DirEnvironment env;
  env.uid = ::geteuid();
  env.runtime_dir = AbsoluteEnv("XDG_RUNTIME_DIR");
  env.data_home = AbsoluteEnv("XDG_DATA_HOME");
  env.home = AbsoluteEnv("HOME");
  if (env.home.empty()) {
    // By hand, not getpwuid_r: the static podvisor has no NSS.
    if (auto passwd = ReadFileBounded("/etc/passwd", 16 * 1024 * 1024)) {
      auto entry = process::PasswdEntryOf(*passwd, env.uid);
      if (entry && !entry->home.empty() && entry->home[0] == '/') env.home = entry->home;
    }
  }
  struct stat st {};
  const std::string run_user = "/run/user/" + std::to_string(env.uid);
  env.run_user_is_own =
      ::stat(run_user.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == env.uid;
  return env;
}

DefaultDirs DefaultDirsFor(const DirEnvironment& env) {
  if (env.uid == 0) return {kDefaultStateDir, kDefaultLogDir};
  DefaultDirs dirs;
  if (!env.runtime_dir.empty()) {
    dirs.state_dir = env.runtime_dir + "/podvisor";
  } else if (env.run_user_is_own) {
    dirs.state_dir = "/run/user/" + std::to_string(env.uid) + "/podvisor";
  } else {
    dirs.state_dir = "/tmp/podvisor-" + std::to_string(env.uid);
  }
  if (!env.data_home.empty()) {
    dirs.log_dir = env.data_home + "/podvisor/logs";
  } else if (!env.home.empty() && env.home != "/") {
    dirs.log_dir = env.home + "/.local/share/podvisor/logs";
  } else {
    dirs.log_dir = dirs.state_dir + "/logs";
  }
  return dirs;
}

const std::string& DefaultStateDir() {
  return ProcessDefaults().state_dir;
}
const std::string& DefaultLogDir() {
  return ProcessDefaults().log_dir;
}

}  // namespace podvisor::cli
