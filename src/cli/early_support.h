// What the two files of the early road share (early_client.h): system
// calls and strings without the C library.
#pragma once

#include <sys/syscall.h>

#include <cstddef>

#if !defined(__x86_64__)
#error "the early road's system calls and entry stub are x86-64 only (meson.build)"
#endif

// GCC turns a loop that copies or fills bytes into a call of memcpy or
// memset, even freestanding; clang does not with -fno-builtin.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-tree-loop-distribute-patterns")
#endif

namespace podvisor::cli::early {

inline long Syscall(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0,
                    long f = 0) {
  long ret;
  register long r10 asm("r10") = d;
  register long r8 asm("r8") = e;
  register long r9 asm("r9") = f;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
               : "rcx", "r11", "memory");
  return ret;  // -errno on failure
}

[[noreturn]] inline void Exit(int code) {
  for (;;) Syscall(SYS_exit_group, code);
}

inline std::size_t Length(const char* s) {
  std::size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

inline bool Equal(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

// Appends to a fixed buffer; `ok` turns false, for good, when it is full.
struct Text {
  char* data;
  std::size_t cap;  // including the NUL
  std::size_t len = 0;
  bool ok = true;

  Text& Add(const char* s, std::size_t n) {
    if (!ok || n >= cap - len) {
      ok = false;
      return *this;
    }
    for (std::size_t i = 0; i < n; ++i) data[len + i] = s[i];
    len += n;
    data[len] = '\0';
    return *this;
  }
  Text& Add(const char* s) { return Add(s, Length(s)); }
};

}  // namespace podvisor::cli::early
