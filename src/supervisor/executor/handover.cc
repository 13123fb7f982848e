#include "supervisor/executor/handover.h"

#include <fcntl.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>

#include "common/file_io.h"
#include "pod/defaults.h"
#include "pod/parse.h"
#include "pod/serialize.h"
#include "supervisor/executor/handover_format.h"

namespace podvisor::supervisor::executor {

namespace {

// A state is a few KiB per container; this bounds what a corrupt or
// hostile descriptor can make the new supervisor read.
constexpr std::size_t kMaxStateBytes = 64 * 1024 * 1024;

Result<std::string> ReadAll(int fd) {
  std::string text;
  char buf[65536];
  if (::lseek(fd, 0, SEEK_SET) < 0) return Error::FromErrno("handover state: lseek");
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno("handover state: read");
    if (n == 0) return text;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kMaxStateBytes) return Error("handover state: larger than 64 MiB");
  }
}

}  // namespace

Status CheckHandoverFormat(int oldest, int newest) {
  if (kHandoverFormat < oldest || kHandoverFormat > newest) {
    return Error("it reads handover formats " + std::to_string(oldest) + ".." +
                 std::to_string(newest) + ", this supervisor writes format " +
                 std::to_string(kHandoverFormat));
  }
  return Ok();
}

Status CheckHandoverState(const nlohmann::json& state) {
  if (!state.is_object()) return Error("handover state: not a JSON object");
  auto format = state.find("format");
  if (format == state.end() || !format->is_number_integer()) {
    return Error("handover state: format: missing or not an integer");
  }
  const int f = format->get<int>();
  if (f < kOldestReadableHandoverFormat || f > kHandoverFormat) {
    return Error("handover state: format " + std::to_string(f) + " (this binary reads " +
                 std::to_string(kOldestReadableHandoverFormat) + ".." +
                 std::to_string(kHandoverFormat) + ")");
  }
  auto boot = state.find("bootId");
  if (boot == state.end() || !boot->is_string() || boot->get<std::string>() != BootId()) {
    return Error("handover state: written in another boot");
  }
  return Ok();
}

Result<std::optional<InheritedHandover>> TakeInheritedHandover() {
  const char* env = std::getenv(kHandoverFdEnv);
  if (env == nullptr) return std::optional<InheritedHandover>();
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  ::unsetenv(kHandoverFdEnv);
  InheritedHandover out;
  if (const char* started = std::getenv(kHandoverStartEnv)) {
    out.started_ns = std::strtoll(started, nullptr, 10);
    ::unsetenv(kHandoverStartEnv);
  }
  if (end == env || *end != '\0' || n < 0 || n > INT_MAX) {
    return Error(std::string(kHandoverFdEnv) + ": not a descriptor number");
  }
  Fd memfd(static_cast<int>(n));
  auto text = ReadAll(memfd.get());
  if (!text) return text.take_error();
  out.state = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (out.state.is_discarded()) return Error("handover state: not JSON");
  if (auto s = CheckHandoverState(out.state); !s) return s.take_error();
  auto fds = out.state.find("fds");
  if (fds != out.state.end() && fds->is_object()) {
    for (const auto& [key, number] : fds->items()) {
      if (!number.is_number_integer())
        return Error("handover state: fds." + key + ": not a number");
      const int fd = number.get<int>();
      if (::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
        return Error::FromErrno("handover state: fds." + key + " (" + std::to_string(fd) + ")");
      }
      out.fds.emplace(key, Fd(fd));
    }
  }
  return std::optional<InheritedHandover>(std::move(out));
}

Result<pod::Pod> HandedPod(const nlohmann::json& state, const pod::Pod& loaded) {
  auto saved = state.find("pod");
  if (saved == state.end() || !saved->is_object()) return Error("handover state: pod: missing");
  pod::Pod same = loaded;
  if (saved->contains("metadata") && (*saved)["metadata"].contains("uid") &&
      (*saved)["metadata"]["uid"].is_string()) {
    same.metadata.uid = (*saved)["metadata"]["uid"].get<std::string>();
  }
  if (pod::ToJson(same) == *saved) return same;
  return SavedPod(state, loaded);
}

Result<pod::Pod> SavedPod(const nlohmann::json& state, const pod::Pod& loaded) {
  auto saved = state.find("pod");
  if (saved == state.end() || !saved->is_object()) return Error("handover state: pod: missing");
  pod::ParseOutput decoded = pod::DecodePod(*saved);
  if (!decoded.errors.empty()) {
    return Error("handover state: pod: " + decoded.errors.front().ToString());
  }
  pod::ApplyDefaults(decoded.pod);
  decoded.pod.config = loaded.config;
  return decoded.pod;
}

std::string BootId() {
  auto text = ReadFileBounded("/proc/sys/kernel/random/boot_id");
  if (!text) return {};
  std::string id = *text;
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

std::string SelfExecutablePath() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "/proc/self/exe";
  std::string path(buf, static_cast<std::size_t>(n));
  // The running binary replaced on disk: the path is what is installed now.
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.size() > kDeleted.size() && path.ends_with(kDeleted)) {
    path.resize(path.size() - kDeleted.size());
  }
  return path;
}

}  // namespace podvisor::supervisor::executor
