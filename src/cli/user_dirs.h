// Where podvisor keeps its state and its logs when not told (S21.4): the
// system's directories for root, the user's own (the XDG base directory
// specification, as podman's rootless storage) for anyone else. Every
// command reads the same defaults, so `podvisor status` as the user who
// ran a pod finds it without --state-dir.
#pragma once

#include <sys/types.h>

#include <string>

namespace podvisor::cli {

// What the defaults depend on, read by ReadDirEnvironment (or set by a test).
struct DirEnvironment {
  uid_t uid = 0;                 // the effective uid
  std::string runtime_dir;       // $XDG_RUNTIME_DIR
  std::string data_home;         // $XDG_DATA_HOME
  std::string home;              // $HOME, else the passwd entry's home
  bool run_user_is_own = false;  // /run/user/<uid> is a directory the uid owns
};

DirEnvironment ReadDirEnvironment();

struct DefaultDirs {
  std::string state_dir;
  std::string log_dir;
};

// Root: /run/podvisor and /var/log/podvisor. Anyone else:
//  state: $XDG_RUNTIME_DIR/podvisor, else /run/user/<uid>/podvisor when the
//         uid owns /run/user/<uid> (systemd-logind's), else
//         /tmp/podvisor-<uid> (`run` refuses it when another uid owns it);
//  logs:  $XDG_DATA_HOME/podvisor/logs, else $HOME/.local/share/podvisor/logs,
//         else the state directory's logs/.
// Relative XDG variables are ignored, as the specification says.
DefaultDirs DefaultDirsFor(const DirEnvironment& env);

// DefaultDirsFor(ReadDirEnvironment()), read once per process.
const std::string& DefaultStateDir();
const std::string& DefaultLogDir();

}  // namespace podvisor::cli
