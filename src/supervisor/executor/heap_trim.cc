#include "supervisor/executor/heap_trim.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <string_view>

namespace podvisor::supervisor::executor {
namespace {

// Unmaps the pages of podvisor's own code (they stay in the page cache and
// come back on their next use), so that code only setup ran (manifest
// parsing, image unpacking, config generation) stops counting in the
// supervisor's RSS. Only executable mappings: they are never written, so
// dropping them loses nothing; read-only data may hold relocated (copied)
// pages and is left alone.
void DropCodePages() {
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  exe[n] = '\0';
  FILE* maps = std::fopen("/proc/self/maps", "re");
  if (!maps) return;
  char line[4096 + 128];
  while (std::fgets(line, sizeof line, maps)) {
    // %p: glibc reads the maps' bare hex addresses as pointers.
    void* start = nullptr;
    void* end = nullptr;
    char perms[5] = {};
    int path_at = 0;
    if (std::sscanf(line, "%p-%p %4s %*s %*s %*s %n", &start, &end, perms, &path_at) < 3) continue;
    std::string_view path(line + path_at);
    if (!path.empty() && path.back() == '\n') path.remove_suffix(1);
    if (std::string_view(perms) != "r-xp" || path != exe) continue;
    ::madvise(start, static_cast<char*>(end) - static_cast<char*>(start), MADV_DONTNEED);
  }
  std::fclose(maps);
}

}  // namespace

HeapTrim::~HeapTrim() {
  if (timer_) loop_.CancelTimer(timer_);
}

void HeapTrim::AfterBatch() {
  if (!churned_) return;
  churned_ = false;
  if (timer_) loop_.CancelTimer(timer_);
  timer_ = loop_.AddTimer(loop_.Now() + std::chrono::seconds(1), [this] {
    timer_ = 0;
    ::malloc_trim(0);
    DropCodePages();
  });
}

}  // namespace podvisor::supervisor::executor
