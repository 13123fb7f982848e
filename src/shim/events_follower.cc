#include "shim/events_follower.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/pod_dir.h"

namespace podvisor::shim {

namespace {
constexpr size_t kMaxLine = 1 << 20;
}  // namespace

EventsFollower::EventsFollower(supervisor::loop::EventLoop& loop, std::filesystem::path state_dir,
                               std::string pod, LineHandler on_line)
    : loop_(loop),
      state_dir_(std::move(state_dir)),
      pod_(std::move(pod)),
      on_line_(std::move(on_line)) {}

Result<std::unique_ptr<EventsFollower>> EventsFollower::Start(
    supervisor::loop::EventLoop& loop, const std::filesystem::path& state_dir,
    const std::string& pod, LineHandler on_line) {
  std::unique_ptr<EventsFollower> f(new EventsFollower(loop, state_dir, pod, std::move(on_line)));
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) return Error("creating " + state_dir.string() + ": " + ec.message());
  f->inotify_ = Fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!f->inotify_) return Error::FromErrno("inotify_init1");
  if (::inotify_add_watch(f->inotify_.get(), state_dir.c_str(), IN_CREATE | IN_MOVED_TO) < 0) {
    return Error::FromErrno("watching " + state_dir.string());
  }
  // Watching before looking: a directory made in between is seen twice,
  // never missed.
  f->WatchPodDir();
  EventsFollower* raw = f.get();
  if (auto added = loop.Add(f->inotify_.get(), EPOLLIN, [raw](uint32_t) { raw->OnInotify(); });
      !added) {
    return added.take_error();
  }
  f->Drain();
  return f;
}

EventsFollower::~EventsFollower() {
  if (inotify_) loop_.Remove(inotify_.get());
}

void EventsFollower::WatchPodDir() {
  if (pod_watch_ >= 0) return;
  pod_watch_ = ::inotify_add_watch(inotify_.get(), PodDir(state_dir_, pod_).dir().c_str(),
                                   IN_CREATE | IN_MODIFY | IN_MOVED_TO);
}

void EventsFollower::OnInotify() {
  alignas(inotify_event) char buf[4096];
  for (ssize_t n; (n = ::read(inotify_.get(), buf, sizeof buf)) > 0;) {
    // Which file changed does not matter, Drain looks at the one file;
    // only a pod directory that went (IN_IGNORED) must be watched anew.
    for (ssize_t at = 0; at + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buf + at);
      if ((event->mask & IN_IGNORED) != 0 && event->wd == pod_watch_) pod_watch_ = -1;
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  }
  WatchPodDir();
  Drain();
}

void EventsFollower::Drain() {
  Fd fd(::open(PodDir(state_dir_, pod_).EventsFile().c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return;
  if (st.st_ino != inode_ || st.st_size < offset_) {
    // A new file (run replaced the old one): from its start.
    inode_ = st.st_ino;
    offset_ = 0;
    partial_.clear();
  }
  char buf[8192];
  for (;;) {
    ssize_t n = ::pread(fd.get(), buf, sizeof buf, offset_);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    offset_ += n;
    partial_.append(buf, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
      on_line_(partial_.substr(start, nl - start));
    }
    partial_.erase(0, start);
    // A line is an event of a few hundred bytes; a runaway one is dropped
    // rather than buffered without bound.
    if (partial_.size() > kMaxLine) partial_.clear();
  }
}

}  // namespace podvisor::shim
