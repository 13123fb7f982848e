// What the handover and adoption tests (docs/SEMANTICS.md S15) share across
// tier 2 (tests/e2e/handover_test.cc), tier 3 (runc_handover_test.cc) and
// the reliability suite (tests/reliability/handover_test.cc): the
// containers' init pids as the runtime knows them, a container that prints
// a numbered line every few milliseconds and the check that its log file
// holds every number exactly once, in order, and the status fields an
// upgrade or an adoption must leave alone.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness.h"

namespace podvisor::e2e::handover {

inline std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Alive and not a zombie.
inline bool Alive(pid_t pid) {
  if (pid <= 0) return false;
  std::string line = Slurp("/proc/" + std::to_string(pid) + "/stat");
  auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

// container name -> its init's pid, from the fake runtime's state under the
// pod's --root (each container's bundle is STATE/<pod>/containers/<name>/<id>).
inline std::map<std::string, pid_t> FakeRuntimePids(const fs::path& root) {
  std::map<std::string, pid_t> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    auto state = nlohmann::json::parse(Slurp(entry.path() / "state.json"), nullptr, false);
    if (state.is_discarded()) continue;
    fs::path bundle = state.value("bundle", "");
    std::string name = bundle.parent_path().filename().string();
    pids[name + "/" + entry.path().filename().string()] = state.value("pid", 0);
  }
  return pids;
}

// The same from `runc list` (ids are <pod>_<container>_<n>_<attempt>).
inline std::map<std::string, pid_t> RuncPids(const std::string& runc, const fs::path& root) {
  std::map<std::string, pid_t> pids;
  auto r = testing::RunCommand({runc, "--root", root.string(), "list", "-f", "json"});
  auto list = nlohmann::json::parse(r.out, nullptr, false);
  if (!list.is_array()) return pids;
  for (const auto& c : list) {
    fs::path bundle = c.value("bundle", "");
    pids[bundle.parent_path().filename().string() + "/" + c.value("id", "")] = c.value("pid", 0);
  }
  return pids;
}

inline std::string PidsText(const std::map<std::string, pid_t>& pids) {
  std::string out;
  for (const auto& [k, v] : pids) out += " " + k + "=" + std::to_string(v);
  return out;
}

// The pid of the one container named `name` in `pids`, or 0.
inline pid_t PidOf(const std::map<std::string, pid_t>& pids, const std::string& name) {
  for (const auto& [k, v] : pids) {
    if (k.rfind(name + "/", 0) == 0) return v;
  }
  return 0;
}

// A container command printing "n 1", "n 2", ... one line every ~5 ms.
inline std::string ChattyCmd() {
  return ShCmd("i=0; while :; do i=$((i+1)); echo \"n $i\"; sleep 0.005; done");
}

// What a container's numbered log lines hold.
struct NumberedLines {
  long count = 0;
  long first = 0;
  long last = 0;
  std::vector<std::string> problems;  // gaps, duplicates, foreign lines
  std::string Problems() const {
    std::string out;
    for (std::size_t i = 0; i < problems.size() && i < 20; ++i) out += "\n  " + problems[i];
    if (problems.size() > 20) out += "\n  ... " + std::to_string(problems.size() - 20) + " more";
    return out;
  }
};

// Reads LOG_DIR/<pod>/<container>/*.log (CRI lines "TIME stdout F n 17";
// partial "P" records joined with what follows) and checks that the numbers
// run 1, 2, 3, ... with no gap and no repeat. The files must not have been
// rotated to .gz (the tests' logs stay far below the rotation size).
inline NumberedLines ReadNumberedLines(const fs::path& log_dir, const std::string& pod,
                                       const std::string& container) {
  NumberedLines out;
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(log_dir / pod / container, ec)) {
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.size() != 1) {
    out.problems.push_back("expected one log file in " + (log_dir / pod / container).string() +
                           ", found " + std::to_string(files.size()) +
                           " (a restart or a rotation)");
  }
  std::string pending;
  for (const auto& file : files) {
    std::istringstream in(Slurp(file));
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      std::string time, stream, tag;
      fields >> time >> stream >> tag;
      std::string text;
      std::getline(fields, text);
      if (!text.empty() && text[0] == ' ') text.erase(0, 1);
      pending += text;
      if (tag == "P") continue;
      std::string message = pending;
      pending.clear();
      long n = 0;
      if (std::sscanf(message.c_str(), "n %ld", &n) != 1 || message != "n " + std::to_string(n)) {
        out.problems.push_back(file.filename().string() + ": not a numbered line: " + line);
        continue;
      }
      if (out.count == 0) {
        out.first = n;
        if (n != 1) out.problems.push_back("the first line is n " + std::to_string(n));
      } else if (n == out.last) {
        out.problems.push_back("n " + std::to_string(n) + " written twice");
      } else if (n < out.last) {
        out.problems.push_back("n " + std::to_string(n) + " after n " + std::to_string(out.last));
      } else if (n != out.last + 1) {
        out.problems.push_back("lost n " + std::to_string(out.last + 1) + " to n " +
                               std::to_string(n - 1));
      }
      out.last = std::max(out.last, n);
      ++out.count;
    }
  }
  if (!pending.empty()) out.problems.push_back("a partial record at the end: " + pending);
  return out;
}

inline const nlohmann::json* Condition(const nlohmann::json& pod, const std::string& type) {
  if (!pod.contains("status") || !pod["status"].contains("conditions")) return nullptr;
  for (const auto& c : pod["status"]["conditions"]) {
    if (c.value("type", "") == type) return &c;
  }
  return nullptr;
}

// "True 2026-...Z": a flip and back changes the transition time.
inline std::string ReadyAndSince(const nlohmann::json& pod) {
  const nlohmann::json* c = Condition(pod, "Ready");
  if (!c) return "";
  return c->value("status", "") + " " + c->value("lastTransitionTime", "");
}

inline int RestartCount(const nlohmann::json& pod, const std::string& container) {
  const nlohmann::json* c = FindContainerStatus(pod, container);
  return c ? c->value("restartCount", -1) : -1;
}

inline std::string StartedAt(const nlohmann::json& pod, const std::string& container) {
  const nlohmann::json* c = FindContainerStatus(pod, container);
  if (!c || !c->contains("state") || !(*c)["state"].contains("running")) return "";
  return (*c)["state"]["running"].value("startedAt", "");
}

inline std::vector<nlohmann::json> WithReason(const std::vector<nlohmann::json>& events,
                                              const std::string& reason) {
  std::vector<nlohmann::json> out;
  for (const auto& e : events) {
    if (e.value("reason", "") == reason) out.push_back(e);
  }
  return out;
}

inline std::string EventsText(const std::vector<nlohmann::json>& events) {
  std::string out;
  for (const auto& e : events) {
    out += "\n  " + e.value("reason", "") + ": " + e.value("message", "");
  }
  return out;
}

// The pids of live processes whose command line holds every one of `words`
// (NUL-separated arguments joined with spaces).
inline std::vector<pid_t> ProcessesWith(const std::vector<std::string>& words) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    pid_t pid = std::atoi(entry.path().filename().c_str());
    if (pid <= 0 || pid == ::getpid()) continue;
    std::string cmdline = Slurp(entry.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (std::all_of(words.begin(), words.end(),
                    [&](const std::string& w) { return cmdline.find(w) != std::string::npos; }) &&
        Alive(pid)) {
      pids.push_back(pid);
    }
  }
  return pids;
}

// Copies `binary` to `copy` as another build of it would be, with the
// version string `from` replaced by `to` (the same length, so no offset
// moves; `to` differs from `from` in its first character only). The
// version is in the binary as a C string ("0.1.0", or the tail of
// "podvisor 0.1.0"), and an optimising compiler also writes a short one
// into a std::string with immediate stores: `movl $"0.1.", d(%reg)` then a
// `movb` of the rest. Both are replaced: the C strings whole, the movl
// immediates (opcode C7 with a ModRM of [reg+disp8], [reg+disp32] or
// [reg], with or without a SIB byte) by their first four bytes, the rest
// being unchanged. Returns how
// many places were patched.
inline int CopyWithVersion(const fs::path& binary, const fs::path& copy, const std::string& from,
                           const std::string& to) {
  if (from.size() != to.size() || from.size() < 4 || from.substr(1) != to.substr(1)) return 0;
  std::string bytes = Slurp(binary);
  int replaced = 0;
  for (std::size_t pos = 0; (pos = bytes.find(from, pos)) != std::string::npos;) {
    bool starts = pos == 0 || bytes[pos - 1] == '\0' || bytes[pos - 1] == ' ';
    bool ends = pos + from.size() < bytes.size() && bytes[pos + from.size()] == '\0';
    if (starts && ends) {
      bytes.replace(pos, from.size(), to);
      ++replaced;
    }
    pos += from.size();
  }
  const std::string head = from.substr(0, 4);
  auto byte = [&](std::size_t at) { return static_cast<unsigned char>(bytes[at]); };
  for (std::size_t pos = 8; (pos = bytes.find(head, pos)) != std::string::npos; pos += 4) {
    // movl $imm32, disp8(%reg): C7 4x d8; disp32: C7 8x d32; (%reg): C7 0x.
    bool disp8 = byte(pos - 3) == 0xc7 && (byte(pos - 2) & 0xc0) == 0x40;
    bool disp32 = byte(pos - 6) == 0xc7 && (byte(pos - 5) & 0xc0) == 0x80;
    bool direct = byte(pos - 2) == 0xc7 && (byte(pos - 1) & 0xc0) == 0x00;
    // With a SIB byte (ModRM r/m 100): (%base,%index), d8(...), d32(...);
    // clang writes the std::string's bytes through (%rax,%rbp).
    bool sib = byte(pos - 3) == 0xc7 && (byte(pos - 2) & 0xc7) == 0x04;
    bool sib8 = byte(pos - 4) == 0xc7 && (byte(pos - 3) & 0xc7) == 0x44;
    bool sib32 = byte(pos - 7) == 0xc7 && (byte(pos - 6) & 0xc7) == 0x84;
    if (disp8 || disp32 || direct || sib || sib8 || sib32) {
      bytes.replace(pos, 4, to.substr(0, 4));
      ++replaced;
    }
  }
  std::ofstream(copy, std::ios::binary | std::ios::trunc) << bytes;
  fs::permissions(copy, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  return replaced;
}

}  // namespace podvisor::e2e::handover
