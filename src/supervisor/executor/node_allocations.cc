// The other pods' allocations and the watch for their changes (S17.12).
#include "supervisor/executor/node_allocations.h"

#include <sys/epoll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "common/log.h"
#include "common/pod_dir.h"
#include "pod/parse.h"
#include "supervisor/executor/inotify_drain.h"
#include "supervisor/executor/recovery.h"

namespace podvisor::supervisor::executor {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::size_t kMaxRecordBytes = 1024 * 1024;
// The state directory: a pod's directory made, moved in, or removed.
constexpr uint32_t kRootEvents = IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR;
// A pod's directory: status.json replaced by rename (a resize or an end
// shows there), control.sock bound or removed (a supervisor came or went).
constexpr uint32_t kPodEvents = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ONLYDIR;

bool IsPodDirName(const std::string& name, const std::string& self) {
  return !name.empty() && name[0] != '.' && name != self;
}

// containerStatuses[] and initContainerStatuses[] by name.
std::map<std::string, const json*> StatusesByName(const json& record) {
  std::map<std::string, const json*> out;
  auto status = record.find("status");
  if (status == record.end() || !status->is_object()) return out;
  for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
    auto l = status->find(list);
    if (l == status->end() || !l->is_array()) continue;
    for (const json& c : *l) {
      auto name = c.find("name");
      if (c.is_object() && name != c.end() && name->is_string()) out[*name] = &c;
    }
  }
  return out;
}

}  // namespace

Result<pod::NodeRequests> RecordAllocation(const json& record) {
  if (!record.is_object() || !record.contains("spec")) return Error("the record holds no pod");
  pod::ParseOutput parsed = pod::DecodePod(record);
  pod::PodSpec& spec = parsed.pod.spec;
  // S17.6: a pending resize shows in the spec; the allocation is the
  // status's allocatedResources (requests only) where the record has it.
  const std::map<std::string, const json*> statuses = StatusesByName(record);
  auto allocate = [&](pod::Container& c) {
    auto st = statuses.find(c.name);
    if (st == statuses.end()) return;
    auto alloc = st->second->find("allocatedResources");
    if (alloc == st->second->end() || !alloc->is_object()) return;
    auto requests = pod::ResourcesFromJson(json{{"requests", *alloc}});
    if (!requests) return;
    if (requests->requests.cpu) c.resources.requests.cpu = requests->requests.cpu;
    if (requests->requests.memory) c.resources.requests.memory = requests->requests.memory;
  };
  for (pod::Container& c : spec.init_containers) allocate(c);
  for (pod::Container& c : spec.containers) allocate(c);
  return pod::PodRequests(spec);
}

pod::NodeRequests OtherPodsAllocated(const fs::path& state_root, const std::string& self) {
  pod::NodeRequests sum;
  std::error_code ec;
  for (fs::directory_iterator it(state_root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!IsPodDirName(name, self) || !it->is_directory(ec)) continue;
    const PodDir dir(state_root, name);
    auto text = ReadFileBounded(dir.RecordFile(), kMaxRecordBytes);
    if (!text) continue;
    const json record = json::parse(*text, nullptr, false);
    if (!record.is_object()) continue;
    const json* status = record.contains("status") ? &record["status"] : nullptr;
    const std::string phase =
        status && status->is_object() ? status->value("phase", std::string()) : std::string();
    if (phase == "Succeeded" || phase == "Failed") continue;
    if (!SupervisorAnswers(dir.ControlSocket())) continue;
    auto held = RecordAllocation(record);
    if (!held) continue;
    sum.cpu_milli += held->cpu_milli;
    sum.memory_bytes += held->memory_bytes;
  }
  return sum;
}

Result<std::unique_ptr<AllocationWatch>> AllocationWatch::Start(loop::EventLoop& loop,
                                                                fs::path state_root,
                                                                std::string self,
                                                                std::function<void()> changed) {
  Fd inotify(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!inotify) return Error::FromErrno("inotify_init1 for a deferred resize");
  if (::inotify_add_watch(inotify.get(), state_root.c_str(), kRootEvents) < 0) {
    return Error::FromErrno("watching " + state_root.string() + " for a deferred resize");
  }
  std::unique_ptr<AllocationWatch> w(new AllocationWatch(
      loop, std::move(state_root), std::move(self), std::move(changed), std::move(inotify)));
  std::error_code ec;
  for (fs::directory_iterator it(w->state_root_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (IsPodDirName(name, w->self_)) w->WatchPodDir(name);
  }
  AllocationWatch* raw = w.get();
  if (auto s = loop.Add(raw->inotify_.get(), EPOLLIN, [raw](uint32_t) { raw->OnReadable(); }); !s) {
    return s.take_error();
  }
  raw->ArmRetry(kFirstRetry);
  return w;
}

AllocationWatch::AllocationWatch(loop::EventLoop& loop, fs::path state_root, std::string self,
                                 std::function<void()> changed, Fd inotify)
    : loop_(loop),
      state_root_(std::move(state_root)),
      self_(std::move(self)),
      changed_(std::move(changed)),
      inotify_(std::move(inotify)) {}

AllocationWatch::~AllocationWatch() {
  *alive_ = false;
  if (retry_) loop_.CancelTimer(retry_);
  if (inotify_) loop_.Remove(inotify_.get());
}

void AllocationWatch::WatchPodDir(const std::string& name) {
  const int wd = ::inotify_add_watch(inotify_.get(), (state_root_ / name).c_str(), kPodEvents);
  if (wd >= 0) {
    pod_watches_[wd] = name;
  } else if (errno != ENOENT && errno != ENOTDIR) {
    log::Warn("deferred resize: cannot watch {}: {}", (state_root_ / name).string(),
              std::strerror(errno));
  }
}

void AllocationWatch::ArmRetry(std::chrono::seconds after) {
  std::weak_ptr<bool> alive = alive_;
  retry_ = loop_.AddTimer(loop_.clock().Now() + after, [this, alive] {
    if (alive.expired() || !*alive.lock()) return;
    retry_ = 0;
    ArmRetry(kRetryPeriod);
    changed_();  // may destroy this watch: nothing after it
  });
}

void AllocationWatch::OnReadable() {
  // Everything queued is read before `changed_`, which may destroy this.
  bool relevant = false;
  DrainInotify(inotify_.get(), [&](const inotify_event& ev, std::string_view event_name) {
    const std::string name(event_name);
    if (ev.mask & (IN_Q_OVERFLOW | IN_IGNORED)) {
      if (ev.mask & IN_IGNORED) pod_watches_.erase(ev.wd);
      relevant = true;
      return;
    }
    if (pod_watches_.contains(ev.wd)) {
      relevant = relevant || name == PodDir::kRecordFile || name == PodDir::kControlSocket;
      return;
    }
    // The state directory's own watch: a pod directory came or went.
    if (!IsPodDirName(name, self_)) return;
    if (ev.mask & (IN_CREATE | IN_MOVED_TO)) WatchPodDir(name);
    relevant = true;
  });
  if (relevant) changed_();
}

}  // namespace podvisor::supervisor::executor
