// The early road of the client commands (early_client.h). Freestanding:
// system calls by hand, strings by hand, every buffer fixed, nothing
// zero-initialised by the compiler (it would call memset, an IFUNC that a
// static program has not resolved yet at this point).
#include "cli/early_client.h"

#include <fcntl.h>

#include <cstddef>
#include <initializer_list>

#include "cli/default_dirs.h"
#include "cli/early_support.h"
// The names only: PodDir's constants are views of string literals, so
// their data() is a NUL-terminated string the early road can use as is.
#include "common/pod_dir.h"

namespace podvisor::cli::early {
namespace {

bool IsDnsLabel(const char* s) {
  const std::size_t n = Length(s);
  if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-') return false;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

// Printable ASCII without a quote or a backslash: copied into the JSON
// request as it is. Anything else is left to main, which escapes it.
bool IsJsonSafe(const char* s) {
  if (*s == '\0') return false;
  for (; *s != '\0'; ++s) {
    const unsigned char c = static_cast<unsigned char>(*s);
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') return false;
  }
  return true;
}

// --grace as a JSON number: digits, and a fraction of digits.
bool IsPlainNumber(const char* s) {
  std::size_t i = 0;
  while (s[i] >= '0' && s[i] <= '9') ++i;
  if (i == 0 || i > 12 || (i > 1 && s[0] == '0')) return false;
  if (s[i] == '\0') return true;
  if (s[i] != '.') return false;
  std::size_t j = ++i;
  while (s[j] >= '0' && s[j] <= '9') ++j;
  return j > i && j - i <= 9 && s[j] == '\0';
}

// "DIR/NAME" or "DIR/NAME/LEAF" without doubling DIR's trailing slash.
bool JoinPath(Text& out, const char* dir, const char* name, const char* leaf) {
  out.Add(dir);
  if (out.len == 0 || out.data[out.len - 1] != '/') out.Add("/");
  out.Add(name);
  if (leaf != nullptr) out.Add("/").Add(leaf);
  return out.ok;
}

bool Exists(int dir_fd, const char* path) {
  return Syscall(SYS_faccessat, dir_fd, reinterpret_cast<long>(path), F_OK) == 0;
}

// The one pod directory under `state_dir`, judged as SelectPod's first step
// judges it (cli/pod_records.cc): a directory named by a DNS label with its
// socket, its record or its events. Anything else (none, several, a
// file system that gives no entry types) is main's to sort out.
bool FindOnePod(const char* state_dir, char* pod, std::size_t cap) {
  const long fd = Syscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>(state_dir),
                          O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  int found = 0;
  alignas(8) char entries[4096];
  for (;;) {
    const long n = Syscall(SYS_getdents64, fd, reinterpret_cast<long>(entries), sizeof entries);
    if (n <= 0) {
      if (n < 0) found = -1;
      break;
    }
    for (long at = 0; at < n;) {
      // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
      const char* entry = entries + at;
      const unsigned short reclen = static_cast<unsigned short>(
          static_cast<unsigned char>(entry[16]) | static_cast<unsigned char>(entry[17]) << 8);
      const unsigned char type = static_cast<unsigned char>(entry[18]);
      const char* name = entry + 19;
      at += reclen;
      if (!IsDnsLabel(name)) continue;
      if (type != 4 /* DT_DIR */) {
        if (type == 0 /* DT_UNKNOWN */) found = -1;
        continue;
      }
      char probe[128];
      bool is_pod = false;
      for (const char* leaf : {PodDir::kControlSocket.data(), PodDir::kRecordFile.data(),
                               PodDir::kEventsFile.data()}) {
        Text path{probe, sizeof probe};
        if (JoinPath(path, name, leaf, nullptr) && Exists(static_cast<int>(fd), probe)) {
          is_pod = true;
          break;
        }
      }
      if (!is_pod) continue;
      if (++found == 1) {
        Text out{pod, cap};
        if (!out.Add(name).ok) found = -1;
      }
    }
    if (found < 0) break;
  }
  Syscall(SYS_close, fd);
  return found == 1;
}

bool Is(const char* word, const grammar::Option& o) {
  return Equal(word, o.long_name) || (o.short_name != nullptr && Equal(word, o.short_name));
}

// The words after the command by its grammar: positionals, and options as
// separate words, each once; a value never starts with '-' and is of its
// option's kind. Anything else: false.
bool ScanWords(int argc, char* const* argv, Words& w) {
  const grammar::Command& g = *w.command;
  for (int i = 2; i < argc; ++i) {
    const char* word = argv[i];
    if (word[0] != '-') {
      if (word[0] == '\0' || w.count == g.positionals.max) return false;
      w.positionals[w.count++] = word;
      continue;
    }
    std::size_t k = 0;
    while (k < g.option_count && !Is(word, g.options[k])) ++k;
    if (k == g.option_count || w.values[k] != nullptr) return false;
    const grammar::Option& option = g.options[k];
    if (option.kind == grammar::ValueKind::kFlag) {
      w.values[k] = word;
      continue;
    }
    if (i + 1 >= argc || argv[i + 1][0] == '-') return false;
    w.values[k] = argv[++i];
    if (option.kind == grammar::ValueKind::kSeconds && !IsPlainNumber(w.values[k])) return false;
  }
  return w.count >= g.positionals.min;
}

// What the early road takes of each command beyond its grammar: what it
// can answer itself, with values it can copy into the request as they are.
bool EarlyRoadTakes(const Words& w) {
  if (w.command == &grammar::kKill) {
    const grammar::KillWords kill = grammar::ReadKillWords(w.positionals, w.count);
    return IsJsonSafe(kill.container) && (kill.signal == nullptr || IsJsonSafe(kill.signal));
  }
  if (w.command == &grammar::kStatus) {
    // -w watches the record: main's.
    const char* output = w.values[grammar::status::kOutput];
    return w.values[grammar::status::kWatch] == nullptr &&
           (output == nullptr || Equal(output, "table") || Equal(output, "wide"));
  }
  // Only stop --no-wait: a stop that waits for the pod's end is not about
  // start-up time.
  const char* reason = w.values[grammar::stop::kReason];
  return w.values[grammar::stop::kNoWait] != nullptr && (reason == nullptr || IsJsonSafe(reason));
}

}  // namespace

bool ReadCommandLine(int argc, char* const* argv, Words& w) {
  if (argc < 2) return false;
  const char* command = argv[1];
  w.command = nullptr;
  for (const grammar::Command* g : {&grammar::kKill, &grammar::kStatus, &grammar::kStop}) {
    if (Equal(command, g->name)) w.command = g;
  }
  if (w.command == nullptr) return false;
  w.count = 0;
  for (const char*& value : w.values) value = nullptr;
  return ScanWords(argc, argv, w) && EarlyRoadTakes(w);
}

// PlanRequest reads the state directory as every command's first option.
static_assert(grammar::kill::kStateDir == 0 && grammar::status::kStateDir == 0 &&
              grammar::stop::kStateDir == 0);

bool PlanRequest(int argc, char* const* argv, Plan& plan) {
  Words w;
  if (!ReadCommandLine(argc, argv, w)) return false;
  const char* pod = nullptr;
  Text req{plan.request, sizeof plan.request};
  if (w.command == &grammar::kKill) {
    const grammar::KillWords kill = grammar::ReadKillWords(w.positionals, w.count);
    plan.command = Command::kKill;
    pod = kill.pod;
    const char* signal = kill.signal != nullptr ? kill.signal : "SIGKILL";
    Text name{plan.container, sizeof plan.container};
    if (!name.Add(kill.container).ok) return false;
    req.Add("{\"op\":\"kill\",\"container\":\"").Add(kill.container);
    req.Add("\",\"signal\":\"").Add(signal).Add("\"}\n");
  } else if (w.command == &grammar::kStatus) {
    const char* output = w.values[grammar::status::kOutput];
    plan.command = Command::kStatus;
    if (w.count == 1) pod = w.positionals[0];
    req.Add("{\"op\":\"status\",\"output\":\"").Add(output != nullptr ? output : "table");
    req.Add("\"}\n");
  } else {
    plan.command = Command::kStop;
    if (w.count == 1) pod = w.positionals[0];
    req.Add("{\"op\":\"stop\",\"wait\":false");
    if (const char* reason = w.values[grammar::stop::kReason]; reason != nullptr) {
      req.Add(",\"reason\":\"").Add(reason).Add("\"");
    }
    if (const char* grace = w.values[grammar::stop::kGrace]; grace != nullptr) {
      req.Add(",\"grace\":").Add(grace);
    }
    req.Add("}\n");
  }
  if (!req.ok) return false;
  plan.request_len = req.len;

  // S21.4: without root the default is the user's own directory, which
  // the environment names; main reads it (user_dirs.h).
  if (w.values[0] == nullptr && Syscall(SYS_geteuid) != 0) return false;
  const char* state_dir = w.values[0] != nullptr ? w.values[0] : kDefaultStateDir;
  if (state_dir[0] == '\0') return false;
  Text pod_name{plan.pod, sizeof plan.pod};
  if (pod != nullptr) {
    if (!IsDnsLabel(pod) || !pod_name.Add(pod).ok) return false;
  } else if (!FindOnePod(state_dir, plan.pod, sizeof plan.pod)) {
    return false;
  }
  Text socket_path{plan.socket_path, sizeof plan.socket_path};
  return JoinPath(socket_path, state_dir, plan.pod, PodDir::kControlSocket.data());
}

namespace {

constexpr long kMalformed = -2;

void SkipSpace(const char*& p, const char* end) {
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool Hex4(const char*& p, const char* end, unsigned& out) {
  if (end - p < 4) return false;
  out = 0;
  for (int i = 0; i < 4; ++i) {
    const int d = HexDigit(*p++);
    if (d < 0) return false;
    out = out << 4 | static_cast<unsigned>(d);
  }
  return true;
}

// A JSON string at p (its opening quote), decoded into `out` when given
// (whose `ok` says whether it all fitted).
bool String(const char*& p, const char* end, Text* out) {
  if (p >= end || *p != '"') return false;
  ++p;
  while (p < end) {
    const char c = *p++;
    if (c == '"') return true;
    if (static_cast<unsigned char>(c) < 0x20) return false;
    if (c != '\\') {
      if (out != nullptr) out->Add(&c, 1);
      continue;
    }
    if (p >= end) return false;
    const char e = *p++;
    char plain = 0;
    switch (e) {
      case '"':
        plain = '"';
        break;
      case '\\':
        plain = '\\';
        break;
      case '/':
        plain = '/';
        break;
      case 'b':
        plain = '\b';
        break;
      case 'f':
        plain = '\f';
        break;
      case 'n':
        plain = '\n';
        break;
      case 'r':
        plain = '\r';
        break;
      case 't':
        plain = '\t';
        break;
      case 'u':
        break;
      default:
        return false;
    }
    if (e != 'u') {
      if (out != nullptr) out->Add(&plain, 1);
      continue;
    }
    unsigned cp = 0;
    if (!Hex4(p, end, cp)) return false;
    if (cp >= 0xd800 && cp < 0xdc00) {  // a surrogate pair's first half
      unsigned low = 0;
      if (end - p < 2 || p[0] != '\\' || p[1] != 'u') return false;
      p += 2;
      if (!Hex4(p, end, low) || low < 0xdc00 || low >= 0xe000) return false;
      cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    } else if (cp >= 0xdc00 && cp < 0xe000) {
      return false;
    }
    char utf8[4];
    std::size_t n = 0;
    if (cp < 0x80) {
      utf8[n++] = static_cast<char>(cp);
    } else if (cp < 0x800) {
      utf8[n++] = static_cast<char>(0xc0 | cp >> 6);
      utf8[n++] = static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      utf8[n++] = static_cast<char>(0xe0 | cp >> 12);
      utf8[n++] = static_cast<char>(0x80 | (cp >> 6 & 0x3f));
      utf8[n++] = static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      utf8[n++] = static_cast<char>(0xf0 | cp >> 18);
      utf8[n++] = static_cast<char>(0x80 | (cp >> 12 & 0x3f));
      utf8[n++] = static_cast<char>(0x80 | (cp >> 6 & 0x3f));
      utf8[n++] = static_cast<char>(0x80 | (cp & 0x3f));
    }
    if (out != nullptr) out->Add(utf8, n);
  }
  return false;
}

// Any JSON value at p, skipped; nesting bounded.
bool SkipValue(const char*& p, const char* end, int depth) {
  SkipSpace(p, end);
  if (p >= end || depth > 64) return false;
  if (*p == '"') return String(p, end, nullptr);
  if (*p == '{' || *p == '[') {
    const char close = *p == '{' ? '}' : ']';
    const bool object = *p == '{';
    ++p;
    SkipSpace(p, end);
    if (p < end && *p == close) {
      ++p;
      return true;
    }
    for (;;) {
      if (object) {
        SkipSpace(p, end);
        if (!String(p, end, nullptr)) return false;
        SkipSpace(p, end);
        if (p >= end || *p++ != ':') return false;
      }
      if (!SkipValue(p, end, depth + 1)) return false;
      SkipSpace(p, end);
      if (p >= end) return false;
      if (*p == close) {
        ++p;
        return true;
      }
      if (*p++ != ',') return false;
    }
  }
  // A number or a literal: the characters they are made of.
  const char* start = p;
  while (p < end && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || *p == '-' ||
                     *p == '+' || *p == '.' || *p == 'E')) {
    ++p;
  }
  return p > start;
}

}  // namespace

long TopLevelString(const char* json, std::size_t n, const char* key, char* out, std::size_t cap) {
  const char* p = json;
  const char* end = json + n;
  SkipSpace(p, end);
  if (p >= end || *p++ != '{') return kMalformed;
  long found = -1;  // absent, another type, or too long
  SkipSpace(p, end);
  if (p < end && *p == '}') {
    ++p;
    SkipSpace(p, end);
    return p == end ? -1 : kMalformed;
  }
  for (;;) {
    char name_buf[64];
    Text name{name_buf, sizeof name_buf};
    SkipSpace(p, end);
    if (!String(p, end, &name)) return kMalformed;
    SkipSpace(p, end);
    if (p >= end || *p++ != ':') return kMalformed;
    SkipSpace(p, end);
    if (name.ok && Equal(name_buf, key) && p < end && *p == '"') {
      Text value{out, cap};
      if (!String(p, end, &value)) return kMalformed;
      found = value.ok ? static_cast<long>(value.len) : -1;
    } else if (!SkipValue(p, end, 0)) {
      return kMalformed;
    }
    SkipSpace(p, end);
    if (p >= end) return kMalformed;
    if (*p == '}') break;
    if (*p++ != ',') return kMalformed;
  }
  ++p;
  SkipSpace(p, end);
  return p == end ? found : kMalformed;
}

}  // namespace podvisor::cli::early
