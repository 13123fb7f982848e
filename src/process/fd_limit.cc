#include "process/fd_limit.h"

#include <sys/resource.h>

#include <atomic>

namespace podvisor::process {
namespace {

// The soft limit children get back; RLIM_INFINITY while nothing was
// raised. Written once at start, read in children: a plain integer, so
// the child never allocates or locks.
std::atomic<rlim_t> g_child_soft{RLIM_INFINITY};
std::atomic<bool> g_raised{false};

uint64_t AsCount(rlim_t value) {
  return value == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(value);
}

}  // namespace

FdLimit CurrentFdLimit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return {};
  FdLimit out{AsCount(lim.rlim_cur), AsCount(lim.rlim_cur), AsCount(lim.rlim_max)};
  if (g_raised.load()) out.original_soft = AsCount(g_child_soft.load());
  return out;
}

FdLimit RaiseFdLimit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return {};
  if (!g_raised.load()) {
    g_child_soft.store(lim.rlim_cur);
    g_raised.store(true);
  }
  if (lim.rlim_cur != lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    // The kernel caps RLIMIT_NOFILE at fs.nr_open: a hard limit above it
    // (RLIM_INFINITY) cannot be the soft one; nr_open is then the most.
    if (::setrlimit(RLIMIT_NOFILE, &raised) != 0 && lim.rlim_max == RLIM_INFINITY) {
      raised.rlim_cur = 1 << 20;  // the kernel's default fs.nr_open
      (void)::setrlimit(RLIMIT_NOFILE, &raised);
    }
  }
  return CurrentFdLimit();
}

void RestoreFdLimitInChild() {
  if (!g_raised.load(std::memory_order_relaxed)) return;
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  rlim_t original = g_child_soft.load(std::memory_order_relaxed);
  // The hard limit may have been lowered since (prlimit): never above it.
  lim.rlim_cur = original < lim.rlim_max ? original : lim.rlim_max;
  (void)::setrlimit(RLIMIT_NOFILE, &lim);
}

}  // namespace podvisor::process
