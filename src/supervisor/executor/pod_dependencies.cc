// The watcher of podvisor.io/after's pods (pod_dependencies.h, S19.3).
#include "supervisor/executor/pod_dependencies.h"

#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "common/log.h"
#include "common/pod_dir.h"
#include "pod/pod_order.h"
#include "supervisor/executor/inotify_drain.h"
#include "supervisor/executor/recovery.h"

namespace podvisor::supervisor::executor {
namespace {

namespace fs = std::filesystem;

// The state directory: a pod's directory made, moved in, or removed.
constexpr uint32_t kRootEvents = IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR;
// A pod's directory: status.json replaced by rename (or moved aside into
// .runs/ by its next run, S14.33), control.sock bound or removed.
constexpr uint32_t kPodEvents =
    IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CLOSE_WRITE | IN_ONLYDIR;

const nlohmann::json* Find(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::string StringAt(const nlohmann::json& obj, const char* key) {
  const nlohmann::json* v = Find(obj, key);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

const nlohmann::json* ConditionOf(const nlohmann::json& status, std::string_view type) {
  const nlohmann::json* conditions = Find(status, "conditions");
  if (!conditions || !conditions->is_array()) return nullptr;
  for (const nlohmann::json& c : *conditions) {
    if (StringAt(c, "type") == type) return &c;
  }
  return nullptr;
}

// S19.8: the record's pod waits, itself, for `self`.
bool WaitsFor(const nlohmann::json& record, const nlohmann::json& status, const std::string& self) {
  const nlohmann::json* initialized = ConditionOf(status, "Initialized");
  if (!initialized || StringAt(*initialized, "reason") != "WaitingForPods") return false;
  const nlohmann::json* metadata = Find(record, "metadata");
  const nlohmann::json* annotations = metadata ? Find(*metadata, "annotations") : nullptr;
  const std::string after =
      annotations ? StringAt(*annotations, std::string(pod::kAfterAnnotation).c_str()) : "";
  pod::Pod other;
  other.metadata.annotations[std::string(pod::kAfterAnnotation)] = after;
  const std::vector<std::string> names = pod::AfterPods(other);
  return std::find(names.begin(), names.end(), self) != names.end();
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

std::string_view AwaitedPodStateName(AwaitedPodState state) {
  switch (state) {
    case AwaitedPodState::kMissing:
      return "Missing";
    case AwaitedPodState::kStale:
      return "Stale";
    case AwaitedPodState::kNotReady:
      return "NotReady";
    case AwaitedPodState::kWaitsForUs:
      return "WaitsForUs";
    case AwaitedPodState::kReady:
      return "Ready";
    case AwaitedPodState::kEnded:
      return "Ended";
  }
  return "?";
}

// The socket is asked after the record is read: a record rewritten by a
// new run of the pod is that run's, whose socket exists before its first
// record (the old record is moved aside first, S14.33).
AwaitedPodState LookAtPod(const fs::path& state_root, const std::string& name,
                          const std::string& self) {
  const PodDir dir(state_root, name);
  auto text = ReadFileBounded(dir.RecordFile(), 1024 * 1024);
  if (!text) return AwaitedPodState::kMissing;
  const nlohmann::json record = nlohmann::json::parse(*text, nullptr, false);
  const nlohmann::json* status = record.is_discarded() ? nullptr : Find(record, "status");
  if (!status) return AwaitedPodState::kMissing;  // caught between writes: the next one comes
  const std::string phase = StringAt(*status, "phase");
  if (phase == "Succeeded" || phase == "Failed") return AwaitedPodState::kEnded;
  const nlohmann::json* ready = ConditionOf(*status, "Ready");
  const bool says_ready = ready && StringAt(*ready, "status") == "True";
  if (!SupervisorAnswers(dir.ControlSocket())) return AwaitedPodState::kStale;
  if (says_ready) return AwaitedPodState::kReady;
  return WaitsFor(record, *status, self) ? AwaitedPodState::kWaitsForUs
                                         : AwaitedPodState::kNotReady;
}

Result<std::unique_ptr<PodDependencies>> PodDependencies::Watch(loop::EventLoop& loop,
                                                                fs::path state_root,
                                                                std::string self,
                                                                std::vector<std::string> names,
                                                                Seams seams) {
  Fd inotify(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!inotify) return Error::FromErrno("inotify_init1 for podvisor.io/after");
  // The state directory first: a pod directory made after its own watch
  // failed is then seen being made.
  if (::inotify_add_watch(inotify.get(), state_root.c_str(), kRootEvents) < 0) {
    return Error::FromErrno("watching " + state_root.string() + " for podvisor.io/after");
  }
  std::unique_ptr<PodDependencies> deps(new PodDependencies(loop, std::move(state_root),
                                                            std::move(self), std::move(names),
                                                            std::move(seams), std::move(inotify)));
  for (const std::string& name : deps->names_) deps->WatchPodDir(name);
  PodDependencies* raw = deps.get();
  if (auto s = loop.Add(raw->inotify_.get(), EPOLLIN, [raw](uint32_t) { raw->OnReadable(); }); !s) {
    return s.take_error();
  }
  return deps;
}

PodDependencies::PodDependencies(loop::EventLoop& loop, fs::path state_root, std::string self,
                                 std::vector<std::string> names, Seams seams, Fd inotify)
    : loop_(loop),
      state_root_(std::move(state_root)),
      self_(std::move(self)),
      names_(std::move(names)),
      seams_(std::move(seams)),
      inotify_(std::move(inotify)) {}

PodDependencies::~PodDependencies() {
  Stop();
}

void PodDependencies::Stop() {
  if (!inotify_) return;
  loop_.Remove(inotify_.get());
  inotify_.Reset();
  pod_watches_.clear();
}

// A pod directory that does not exist yet is no error: the state
// directory's watch sees it made (S19.3: a pod started later is waited for).
void PodDependencies::WatchPodDir(const std::string& name) {
  const int wd = ::inotify_add_watch(inotify_.get(), (state_root_ / name).c_str(), kPodEvents);
  if (wd >= 0) {
    pod_watches_[wd] = name;
  } else if (errno != ENOENT && errno != ENOTDIR) {
    log::Warn("podvisor.io/after: cannot watch {}: {}", (state_root_ / name).string(),
              std::strerror(errno));
  }
}

void PodDependencies::OnReadable() {
  // Everything queued is read before anything is reported: the report may
  // end the wait, and with it this watcher's descriptor.
  bool relevant = false;
  std::vector<std::string> appeared;
  DrainInotify(inotify_.get(), [&](const inotify_event& ev, std::string_view event_name) {
    const std::string name(event_name);
    if (ev.mask & IN_Q_OVERFLOW) {
      relevant = true;  // events were lost: look at everything again
      for (const std::string& pod : names_) appeared.push_back(pod);
      return;
    }
    if (ev.mask & IN_IGNORED) {  // the pod's directory went (`podvisor rm`)
      pod_watches_.erase(ev.wd);
      relevant = true;
      return;
    }
    auto pod = pod_watches_.find(ev.wd);
    if (pod == pod_watches_.end()) {  // the state directory's own watch
      if (std::find(names_.begin(), names_.end(), name) != names_.end()) {
        appeared.push_back(name);
        relevant = true;
      }
      return;
    }
    if (name == PodDir::kRecordFile || name == PodDir::kControlSocket) relevant = true;
  });
  for (const std::string& name : appeared) WatchPodDir(name);
  if (relevant) Check();
}

void PodDependencies::Check() {
  if (!inotify_) return;
  std::vector<std::string> not_ready;
  for (const std::string& name : names_) {
    const AwaitedPodState state = LookAtPod(state_root_, name, self_);
    if (state != AwaitedPodState::kReady) not_ready.push_back(name);
    AwaitedPodState& last = last_state_.emplace(name, AwaitedPodState::kMissing).first->second;
    if (state == last) continue;
    last = state;
    log::Debug("podvisor.io/after: pod {} is {}", name, AwaitedPodStateName(state));
    if (state == AwaitedPodState::kEnded) {
      // S19.5: ended before this pod saw it Ready; a later run of it may be.
      seams_.publish(lifecycle::Publish{
          lifecycle::EventType::kWarning, "AwaitedPodEnded", "pod",
          "Pod " + name +
              " has ended without being seen Ready; waiting for a run of it that is "
              "Ready"});
    } else if (state == AwaitedPodState::kWaitsForUs) {
      seams_.publish(lifecycle::Publish{
          lifecycle::EventType::kWarning, "PodsWaitForEachOther", "pod",
          fmt::format("Pod {0} waits for pod {1} and {1} for {0} (podvisor.io/after): neither "
                      "starts until one of them is changed",
                      name, self_)});
    }
  }
  if (last_report_ && *last_report_ == not_ready) return;
  last_report_ = not_ready;
  const bool done = not_ready.empty();
  log::Info("podvisor.io/after: {}",
            done ? "every awaited pod is Ready" : "waiting for " + JoinNames(not_ready));
  // Stopped before the report: the report may destroy nothing, but the
  // watcher has no more to say once the wait is over.
  if (done) Stop();
  seams_.feed(lifecycle::AwaitedPods{std::move(not_ready)});
}

}  // namespace podvisor::supervisor::executor
