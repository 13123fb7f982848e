// libFuzzer target: random trees of directories and symlinks in a fresh
// temp root, then random relative paths through OpenBeneath and
// MakeDirsBeneath (src/oci/beneath.h), with openat2 and with the
// component walk. Whatever the input, a descriptor returned must be of
// something beneath the root, nothing may appear outside it, and the two
// resolvers must agree on what they open and on what leads out.
//
// Input: lines. "d PATH" makes directories, "f PATH" an empty file,
// "l PATH TARGET" a symlink (PATH's own components are tree names and
// never "..": the tree is the fuzzer's; TARGET is anything, "@" standing
// for the directory beside the root), "o PATH" opens, "m PATH" makes dirs.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/beneath.h"

namespace {

namespace fs = std::filesystem;
using podvisor::BeneathResolver;
using podvisor::Fd;

struct Sandbox {
  fs::path base, root, outside;
  Sandbox() {
    char tmpl[] = "/tmp/podvisor-beneath-fuzz-XXXXXX";
    if (!::mkdtemp(tmpl)) abort();
    base = fs::path(tmpl);
    root = base / "root";
    outside = base / "outside";
  }
};

void RemoveBox();

Sandbox& Box() {
  static Sandbox box;
  static bool registered = std::atexit(RemoveBox) == 0;
  (void)registered;
  return box;
}

// libFuzzer ends with exit() after -runs: leave no temp tree behind.
void RemoveBox() {
  std::error_code ec;
  fs::remove_all(Box().base, ec);
}

// A tree path: "." and ".." components dropped, at most 8 of them.
fs::path TreePath(std::string_view text) {
  fs::path out;
  int n = 0;
  for (const auto& part : fs::path(std::string(text))) {
    std::string p = part.string();
    if (p.empty() || p == "/" || p == "." || p == ".." || ++n > 8) continue;
    out /= p;
  }
  return out;
}

// The path the descriptor is of, which must be the root or below it.
void CheckBeneath(const Fd& fd, const std::string& real_root) {
  char link[4096];
  std::string proc = "/proc/self/fd/" + std::to_string(fd.get());
  ssize_t n = ::readlink(proc.c_str(), link, sizeof link - 1);
  if (n <= 0) abort();
  std::string at(link, static_cast<std::size_t>(n));
  if (at != real_root && at.rfind(real_root + "/", 0) != 0) __builtin_trap();
}

ino_t Inode(const Fd& fd) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) abort();
  return st.st_ino;
}

// The harness builds its tree through real directories only: a component
// the input already made a symlink would lead the harness's own
// create_directories out of the root (following them is what the code
// under test must not do, not the harness). A missing component ends the
// check: nothing beyond it exists to be followed.
bool NoSymlinkOnTheWay(const fs::path& root, const fs::path& relative) {
  fs::path at = root;
  for (const auto& part : relative) {
    at /= part;
    std::error_code ec;
    auto status = fs::symlink_status(at, ec);
    if (ec || !fs::exists(status)) return true;
    if (fs::is_symlink(status)) return false;
  }
  return true;
}

void Exercise(char op, const std::string& path, const Fd& root, const std::string& real_root) {
  using podvisor::MakeDirsBeneath;
  using podvisor::OpenBeneath;
  if (op == 'o') {
    auto kernel = OpenBeneath(root.get(), path, O_PATH, 0, BeneathResolver::kKernel);
    auto walk = OpenBeneath(root.get(), path, O_PATH, 0, BeneathResolver::kWalk);
    if (kernel.ok() != walk.ok()) __builtin_trap();
    // Refused for leading out by one, it must be by the other too.
    if (!kernel &&
        podvisor::IsOutsideRoot(kernel.error()) != podvisor::IsOutsideRoot(walk.error())) {
      __builtin_trap();
    }
    if (kernel) {
      CheckBeneath(*kernel, real_root);
      CheckBeneath(*walk, real_root);
      if (Inode(*kernel) != Inode(*walk)) __builtin_trap();
    }
  } else if (op == 'm') {
    for (auto resolver : {BeneathResolver::kKernel, BeneathResolver::kWalk}) {
      auto made = MakeDirsBeneath(root.get(), path, 0755, resolver);
      if (made) CheckBeneath(*made, real_root);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Sandbox& box = Box();
  std::error_code ec;
  fs::remove_all(box.root, ec);
  fs::remove_all(box.outside, ec);
  fs::create_directories(box.root);
  fs::create_directories(box.outside);
  Fd root(::open(box.root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  std::string real_root = fs::canonical(box.root).string();
  std::string_view input(reinterpret_cast<const char*>(data), size);
  int lines = 0;
  while (!input.empty() && ++lines <= 64) {
    std::size_t end = input.find('\n');
    std::string_view line = input.substr(0, end);
    input = end == std::string_view::npos ? std::string_view() : input.substr(end + 1);
    if (line.size() < 2 || line[1] != ' ' || line.size() > 512) continue;
    std::string rest(line.substr(2));
    if (rest.find('\0') != std::string::npos) continue;
    switch (line[0]) {
      case 'd':
        if (NoSymlinkOnTheWay(box.root, TreePath(rest))) {
          fs::create_directories(box.root / TreePath(rest), ec);
        }
        break;
      case 'f': {
        fs::path file = TreePath(rest);
        if (file.empty() || !NoSymlinkOnTheWay(box.root, file.parent_path())) break;
        fs::create_directories((box.root / file).parent_path(), ec);
        Fd made(
            ::open((box.root / file).c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
        break;
      }
      case 'l': {
        std::size_t space = rest.find(' ');
        if (space == std::string::npos) break;
        fs::path link = TreePath(rest.substr(0, space));
        std::string target = rest.substr(space + 1);
        // "@" stands for the outside directory's absolute path.
        if (target.rfind('@', 0) == 0) target = box.outside.string() + target.substr(1);
        if (link.empty() || target.empty()) break;
        if (!NoSymlinkOnTheWay(box.root, link.parent_path())) break;
        fs::create_directories((box.root / link).parent_path(), ec);
        fs::create_symlink(target, box.root / link, ec);
        break;
      }
      default:
        Exercise(line[0], rest, root, real_root);
    }
  }
  // Nothing was made outside the root, nor beside it.
  if (!fs::is_empty(box.outside)) __builtin_trap();
  for (const auto& entry : fs::directory_iterator(box.base)) {
    if (entry.path() != box.root && entry.path() != box.outside) __builtin_trap();
  }
  return 0;
}
