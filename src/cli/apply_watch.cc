#include "cli/apply_watch.h"

#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cli/apply_plan.h"
#include "common/fd.h"

namespace podvisor::cli::apply {
namespace fs = std::filesystem;

bool IsRelevantChange(const fs::path& watched_file, std::string_view name) {
  if (!watched_file.empty()) return name == watched_file.filename().string();
  return IsManifestFileName(name);
}

int WatchAndApply(const fs::path& path, Duration rescan,
                  const std::function<int(bool first, int interrupt)>& pass) {
  std::error_code ec;
  const bool dir = fs::is_directory(path, ec);
  const fs::path watched_dir = dir ? path : path.parent_path().empty() ? "." : path.parent_path();
  const fs::path watched_file = dir ? fs::path() : path;

  sigset_t signals;
  ::sigemptyset(&signals);
  ::sigaddset(&signals, SIGTERM);
  ::sigaddset(&signals, SIGINT);
  ::sigprocmask(SIG_BLOCK, &signals, nullptr);
  Fd signal_fd(::signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK));
  Fd inotify(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  if (!signal_fd || !inotify) {
    std::fprintf(stderr, "podvisor: apply --watch: %s\n", std::strerror(errno));
    return 1;
  }
  // Written in place (IN_CLOSE_WRITE), renamed into place (IN_MOVED_TO),
  // removed (IN_DELETE) or renamed away (IN_MOVED_FROM).
  if (::inotify_add_watch(inotify.get(), watched_dir.c_str(),
                          IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM) < 0) {
    std::fprintf(stderr, "podvisor: apply --watch: watching %s: %s\n", watched_dir.c_str(),
                 std::strerror(errno));
    return 2;
  }

  using SteadyClock = std::chrono::steady_clock;
  pass(/*first=*/true, signal_fd.get());
  SteadyClock::time_point next_rescan = SteadyClock::now() + rescan;
  // A change seen, its pass due at `settle` (no std::optional: GCC 12 at
  // -O2 warns of it as maybe uninitialized).
  bool changed = false;
  SteadyClock::time_point settle{};
  for (;;) {
    SteadyClock::time_point due = changed ? std::min(settle, next_rescan) : next_rescan;
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(due - SteadyClock::now());
    pollfd fds[2] = {{inotify.get(), POLLIN, 0}, {signal_fd.get(), POLLIN, 0}};
    int n = ::poll(fds, 2, static_cast<int>(std::clamp<int64_t>(wait.count(), 0, 3'600'000)));
    if (n < 0 && errno != EINTR) {
      std::fprintf(stderr, "podvisor: apply --watch: poll: %s\n", std::strerror(errno));
      return 1;
    }
    if (fds[1].revents & POLLIN) return 0;  // SIGTERM or SIGINT: the pods run on
    if (fds[0].revents & POLLIN) {
      alignas(inotify_event) char buf[8192];
      ssize_t len = 0;
      while ((len = ::read(inotify.get(), buf, sizeof buf)) > 0) {
        for (char* p = buf; p < buf + len;) {
          auto* event = reinterpret_cast<inotify_event*>(p);
          p += sizeof(inotify_event) + event->len;
          std::string_view name = event->len > 0 ? std::string_view(event->name) : "";
          // An overflowed queue lost changes: a full pass finds them.
          if ((event->mask & IN_Q_OVERFLOW) || IsRelevantChange(watched_file, name)) {
            changed = true;
            settle = SteadyClock::now() + kDebounce;
          }
        }
      }
      continue;
    }
    const auto now = SteadyClock::now();
    if ((changed && now >= settle) || now >= next_rescan) {
      changed = false;
      pass(/*first=*/false, signal_fd.get());
      // A signal during the pass ended its waits: stop now.
      pollfd sig{signal_fd.get(), POLLIN, 0};
      if (::poll(&sig, 1, 0) > 0) return 0;
      next_rescan = SteadyClock::now() + rescan;
    }
  }
}

}  // namespace podvisor::cli::apply
