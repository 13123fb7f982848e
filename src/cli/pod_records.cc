#include "cli/pod_records.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cli/client.h"
#include "cli/events_table.h"
#include "cli/pod_target.h"
#include "common/fd.h"
#include "common/mounts.h"
#include "common/pod_dir.h"
#include "common/terminal_text.h"
#include "supervisor/executor/recovery.h"

namespace podvisor::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kRecordFile = PodDir::kRecordFile;

// Pod names are DNS labels (RFC 1123), so ".images", "lost+found" and
// editor droppings are never pods.
bool IsDnsLabel(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return s.front() != '-' && s.back() != '-';
}

std::string RecordPhase(const json& pod) {
  if (auto s = pod.find("status"); s != pod.end() && s->is_object()) {
    return s->value("phase", "Unknown");
  }
  return "Unknown";
}

// A record of a pod whose supervisor is gone without ending it (SIGKILL,
// power loss): what it says is no longer known. As the node controller
// does for a lost node, the phase becomes Unknown.
void MarkLost(json& pod) {
  std::string phase = RecordPhase(pod);
  if (phase == "Succeeded" || phase == "Failed") return;
  pod["status"]["phase"] = "Unknown";
  pod["status"]["reason"] = "SupervisorLost";
  pod["status"]["message"] =
      "the pod's supervisor ended without ending the pod; the next `podvisor run` recovers it";
}

const json& Field(const json& j, const char* key) {
  static const json null;
  if (!j.is_object()) return null;
  auto it = j.find(key);
  return it == j.end() ? null : *it;
}

std::string Str(const json& j, const char* key) {
  const json& v = Field(j, key);
  return v.is_string() ? v.get<std::string>() : "";
}

std::optional<WallTime> Time(const json& j, const char* key) {
  const json& v = Field(j, key);
  if (!v.is_string()) return std::nullopt;
  return ParseRfc3339(v.get<std::string>());
}

pod::ContainerState StateFromJson(const json& j) {
  pod::ContainerState s;
  if (const json& w = Field(j, "waiting"); w.is_object()) {
    s.waiting = pod::ContainerStateWaiting{Str(w, "reason"), Str(w, "message")};
  } else if (const json& r = Field(j, "running"); r.is_object()) {
    s.running = pod::ContainerStateRunning{Time(r, "startedAt").value_or(WallTime{})};
  } else if (const json& t = Field(j, "terminated"); t.is_object()) {
    pod::ContainerStateTerminated term;
    term.exit_code =
        Field(t, "exitCode").is_number_integer() ? Field(t, "exitCode").get<int32_t>() : 0;
    term.signal = Field(t, "signal").is_number_integer() ? Field(t, "signal").get<int32_t>() : 0;
    term.reason = Str(t, "reason");
    term.message = Str(t, "message");
    term.started_at = Time(t, "startedAt");
    term.finished_at = Time(t, "finishedAt").value_or(WallTime{});
    s.terminated = std::move(term);
  }
  return s;
}

std::vector<pod::ContainerStatus> StatusesFromJson(const json& list) {
  std::vector<pod::ContainerStatus> out;
  if (!list.is_array()) return out;
  for (const json& c : list) {
    pod::ContainerStatus s;
    s.name = Str(c, "name");
    s.image = Str(c, "image");
    s.state = StateFromJson(Field(c, "state"));
    s.last_state = StateFromJson(Field(c, "lastState"));
    s.ready = Field(c, "ready").is_boolean() && Field(c, "ready").get<bool>();
    if (Field(c, "started").is_boolean()) s.started = Field(c, "started").get<bool>();
    if (Field(c, "restartCount").is_number_integer()) {
      s.restart_count = Field(c, "restartCount").get<int32_t>();
    }
    s.container_id = Str(c, "containerID");
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::optional<json> ReadRecord(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  json j = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  return j;
}

Status CheckNameArgument(std::string_view what, const std::string& value) {
  if (IsDnsLabel(value)) return Ok();
  return Error(std::string(what) + " " + TerminalSafeQuoted(value) +
                   ": must be a DNS-1123 label (at most 63 lower-case letters, digits and '-', "
                   "starting and ending with a letter or digit)",
               EINVAL);
}

bool SupervisorAnswers(const fs::path& socket) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket.native().size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, socket.c_str(), socket.native().size());
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return false;
  // A stale socket file refuses at once (ECONNREFUSED); a live supervisor
  // accepts from its backlog even while busy.
  return ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
}

namespace {

// A pod's directory under the state directory: named by a DNS label, with
// its socket, its record or at least its events.
bool IsPodDirectory(const fs::path& dir) {
  std::error_code ec;
  return IsDnsLabel(dir.filename().string()) && fs::is_directory(dir, ec) &&
         (fs::exists(dir / PodDir::kControlSocket, ec) || fs::exists(dir / kRecordFile, ec) ||
          fs::exists(dir / PodDir::kEventsFile, ec));
}

// The names of the pod directories under `state_dir`, unsorted.
std::vector<std::string> PodDirectoryNames(const fs::path& state_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(state_dir, ec)) {
    if (IsPodDirectory(entry.path())) names.push_back(entry.path().filename().string());
  }
  return names;
}

}  // namespace

std::vector<std::string> LeftBehind(const fs::path& state_dir, const std::string& pod) {
  const PodDir dir(state_dir, pod);
  std::vector<std::string> left;
  std::error_code ec;
  if (auto mounts = MountPointsUnder(dir.dir()); mounts && !mounts->empty()) {
    left.push_back(std::to_string(mounts->size()) + " mount(s) under " + dir.dir().string());
  }
  if (const auto ids = supervisor::executor::RuntimeContainerIds(dir); !ids.empty()) {
    left.push_back("runtime state of " + std::to_string(ids.size()) + " container(s) in " +
                   dir.RuntimeRoot().string());
  }
  if (fs::exists(dir.NetworkFile(), ec)) {
    left.push_back("its network attachment (" + dir.NetworkFile().string() + ")");
  }
  if (fs::exists(dir.ControlSocket(), ec)) {
    left.emplace_back("its control socket (the supervisor did not end cleanly)");
  }
  return left;
}

std::vector<PodEntry> FindPods(const fs::path& state_dir) {
  std::vector<PodEntry> pods;
  std::error_code ec;
  for (std::string& name : PodDirectoryNames(state_dir)) {
    const fs::path dir = state_dir / name;
    const bool has_socket = fs::exists(dir / PodDir::kControlSocket, ec);
    PodEntry pod{name, has_socket && SupervisorAnswers(dir / PodDir::kControlSocket), "Unknown"};
    if (auto record = ReadRecord(dir / kRecordFile)) {
      if (!pod.running) MarkLost(*record);
      pod.phase = RecordPhase(*record);
    } else if (pod.running) {
      pod.phase = "Pending";  // between the socket and the first record
    }
    pods.push_back(std::move(pod));
  }
  std::sort(pods.begin(), pods.end(),
            [](const PodEntry& a, const PodEntry& b) { return a.name < b.name; });
  return pods;
}

Result<std::string> SelectPod(const fs::path& state_dir, const std::string& given) {
  const std::string name = PodWord(given);  // kubectl's pod/NAME
  if (!name.empty()) {
    if (Status s = CheckNameArgument("pod name", name); !s) return s.take_error();
    // Only this pod's directory, as FindPods would judge it: the client
    // commands (kill, status, stop) must not read every other pod's
    // record or knock on its socket to find the one they were given.
    if (IsPodDirectory(state_dir / name)) return name;
    return Error("no pod named " + name + " under " + state_dir.string());
  }
  // The one pod there is needs no knock on its socket nor a read of its
  // record: it is the answer whether it runs or not, and the request made
  // next finds out which.
  if (std::vector<std::string> names = PodDirectoryNames(state_dir); names.size() == 1) {
    return names[0];
  }
  std::vector<PodEntry> pods = FindPods(state_dir);
  std::vector<const PodEntry*> running;
  for (const auto& p : pods) {
    if (p.running) running.push_back(&p);
  }
  if (running.size() == 1) return running[0]->name;
  if (running.empty() && pods.size() == 1) return pods[0].name;
  if (pods.empty()) return Error("no pod found under " + state_dir.string());
  // "Several running pods" lists the running ones: an ended pod is not a
  // candidate then.
  std::string list;
  for (const auto& p : pods) {
    if (!running.empty() && !p.running) continue;
    list += (list.empty() ? "" : ", ") + p.name + " (" + p.phase + ")";
  }
  return Error(std::string(running.empty() ? "several pods" : "several running pods") + " under " +
               state_dir.string() + ": " + list + "; name one");
}

Result<json> LoadPodRecord(const fs::path& state_dir, const std::string& pod) {
  const fs::path dir = state_dir / pod;
  std::error_code ec;
  // Asked at once, without knocking first: one connection, not two, for
  // `status` of a running pod (a client's whole cost is its start-up and
  // this round trip).
  auto reply = AskSupervisor(state_dir, pod, {{"op", "status"}});
  if (reply) return reply;
  // No socket (an ended pod), a stale one that refuses (a supervisor killed
  // by SIGKILL), or a pod that ended meanwhile: its record has the end.
  const int code = reply.error().code();
  if (code != ENOENT && code != ECONNREFUSED && !fs::exists(dir / kRecordFile, ec)) return reply;
  auto record = ReadRecord(dir / kRecordFile);
  if (!record) {
    return Error("pod " + pod + " has no record (" + (dir / kRecordFile).string() +
                 " is missing or not JSON)");
  }
  MarkLost(*record);
  return *record;
}

pod::PodStatus StatusFromPodJson(const json& pod) {
  const json& s = Field(pod, "status");
  pod::PodStatus status;
  const std::string phase = Str(s, "phase");
  for (auto p : {pod::PodPhase::kPending, pod::PodPhase::kRunning, pod::PodPhase::kSucceeded,
                 pod::PodPhase::kFailed, pod::PodPhase::kUnknown}) {
    if (pod::PodPhaseName(p) == phase) status.phase = p;
  }
  if (phase.empty() || phase == "Unknown") status.phase = pod::PodPhase::kUnknown;
  status.reason = Str(s, "reason");
  status.message = Str(s, "message");
  if (Field(s, "stopReason").is_string()) status.stop_reason = Str(s, "stopReason");
  if (const json& conds = Field(s, "conditions"); conds.is_array()) {
    for (const json& c : conds) {
      pod::PodCondition cond;
      cond.type = Str(c, "type");
      const std::string st = Str(c, "status");
      cond.status = st == "True"    ? pod::ConditionStatus::kTrue
                    : st == "False" ? pod::ConditionStatus::kFalse
                                    : pod::ConditionStatus::kUnknown;
      cond.last_transition_time = Time(c, "lastTransitionTime");
      cond.reason = Str(c, "reason");
      cond.message = Str(c, "message");
      status.conditions.push_back(std::move(cond));
    }
  }
  status.start_time = Time(s, "startTime");
  status.qos_class = Str(s, "qosClass");
  status.init_container_statuses = StatusesFromJson(Field(s, "initContainerStatuses"));
  status.container_statuses = StatusesFromJson(Field(s, "containerStatuses"));
  status.deletion_timestamp = Time(Field(pod, "metadata"), "deletionTimestamp");
  return status;
}

pod::PodSpec SpecShapeFromPodJson(const json& pod) {
  pod::PodSpec spec;
  const json& s = Field(pod, "spec");
  for (auto [key, list] : {std::pair{"initContainers", &spec.init_containers},
                           std::pair{"containers", &spec.containers}}) {
    const json& items = Field(s, key);
    if (!items.is_array()) continue;
    for (const json& c : items) {
      pod::Container container;
      container.name = Str(c, "name");
      container.image = Str(c, "image");
      if (Str(c, "restartPolicy") == "Always")
        container.restart_policy = pod::RestartPolicy::kAlways;
      list->push_back(std::move(container));
    }
  }
  return spec;
}

}  // namespace podvisor::cli
