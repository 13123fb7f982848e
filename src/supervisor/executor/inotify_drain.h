// Reading a non-blocking inotify descriptor to its end, one call per
// event: the watchers of other pods' directories (pod_dependencies.h,
// node_allocations.h) read everything queued before they act, since acting
// may end the watch and close the descriptor.
#pragma once

#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <string_view>

namespace podvisor::supervisor::executor {

// Calls each(event, name) for every queued event; name is "" for an
// event of the watched directory itself.
template <typename Each>
void DrainInotify(int fd, Each&& each) {
  alignas(inotify_event) std::array<char, 8192> buf{};
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // EAGAIN: drained
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf.data() + off);
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      each(*ev, ev->len ? std::string_view(ev->name) : std::string_view());
    }
  }
}

}  // namespace podvisor::supervisor::executor
