#include "image/layer_view.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <string>

#include "image/layer_unpack.h"

namespace podvisor::image {
namespace {

namespace fs = std::filesystem;

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
// Linux's own bound on symlinks in one resolution.
constexpr int kMaxSymlinks = 40;

// One directory of the merged view: the layers' directories that make it,
// top first, down to the first opaque one.
using MergedDir = std::vector<Fd>;

void PushComponents(std::deque<std::string>& out, std::string_view path) {
  std::deque<std::string> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) parts.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  out.insert(out.begin(), parts.begin(), parts.end());
}

Result<MergedDir> RootOf(const std::vector<fs::path>& layers) {
  MergedDir root;
  for (const auto& layer : layers) {
    Fd fd(::open(layer.c_str(), kDirFlags));
    if (!fd) return Error::FromErrno("opening layer " + layer.string());
    root.push_back(std::move(fd));
  }
  return root;
}

}  // namespace

Result<std::optional<Fd>> OpenInLayers(const std::vector<fs::path>& layers,
                                       std::string_view relative, int flags) {
  if (layers.empty()) return Error("an image without layers", EINVAL);
  std::deque<std::string> todo;
  PushComponents(todo, relative);
  std::vector<MergedDir> stack;  // stack.front() is the root
  auto root = RootOf(layers);
  if (!root) return root.take_error();
  stack.push_back(std::move(*root));
  int symlinks = 0;
  const std::string what = "/" + std::string(relative);
  while (!todo.empty()) {
    const std::string name = std::move(todo.front());
    todo.pop_front();
    if (name == ".") continue;
    if (name == "..") {
      if (stack.size() > 1) stack.pop_back();
      continue;
    }
    const bool last = todo.empty();
    MergedDir next;
    bool found = false;
    for (const Fd& dir : stack.back()) {
      struct stat st {};
      if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) continue;
        return Error::FromErrno("looking up " + what);
      }
      if (!next.empty() && !S_ISDIR(st.st_mode)) break;  // hidden by the directory above
      found = true;
      if (IsOverlayWhiteout(st)) {
        if (next.empty()) return std::optional<Fd>();
        break;
      }
      if (S_ISLNK(st.st_mode)) {
        if (++symlinks > kMaxSymlinks) return Error("looking up " + what, ELOOP);
        std::string target(static_cast<std::size_t>(st.st_size) + 1, '\0');
        ssize_t n = ::readlinkat(dir.get(), name.c_str(), target.data(), target.size());
        if (n < 0) return Error::FromErrno("reading a symlink on " + what);
        target.resize(static_cast<std::size_t>(std::min<ssize_t>(n, st.st_size)));
        if (target.starts_with('/')) stack.resize(1);
        PushComponents(todo, target);
        break;
      }
      if (!S_ISDIR(st.st_mode)) {
        if (!last) return Error("looking up " + what, ENOTDIR);
        Fd fd(::openat(dir.get(), name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC));
        if (!fd) return Error::FromErrno("opening " + what);
        return std::optional<Fd>(std::move(fd));
      }
      Fd sub(::openat(dir.get(), name.c_str(), kDirFlags));
      if (!sub) return Error::FromErrno("opening a directory on " + what);
      const bool opaque = IsOverlayOpaqueDir(sub.get());
      next.push_back(std::move(sub));
      if (opaque) break;
    }
    if (!found) return std::optional<Fd>();
    if (next.empty()) continue;  // a symlink: its target's components are next
    if (last) {
      Fd fd(::openat(next.front().get(), ".", flags | O_CLOEXEC));
      if (!fd) return Error::FromErrno("opening " + what);
      return std::optional<Fd>(std::move(fd));
    }
    stack.push_back(std::move(next));
  }
  // "" or "/": the root itself.
  Fd fd(::openat(stack.back().front().get(), ".", flags | O_CLOEXEC));
  if (!fd) return Error::FromErrno("opening " + what);
  return std::optional<Fd>(std::move(fd));
}

}  // namespace podvisor::image
