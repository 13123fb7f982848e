#include "supervisor/executor/image_pulls.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/log.h"
#include "common/signal_names.h"
#include "image/image_cache.h"
#include "image/layer_store.h"
#include "process/spawn.h"
#include "registry/image_name.h"
#include "registry/progress.h"
#include "registry/short_names.h"

namespace podvisor::supervisor::executor {

struct ImagePulls::Worker {
  std::string reference;
  process::ChildProcess child;
  Fd output;
  std::string pending;  // a line not yet ended
  std::string manifest_digest;
  std::string failure_reason;
  std::string failure_message;
  std::string pulled_message;  // the Pulled event's text, the kubelet's words
  bool bundle_layout = false;  // no registry: no Pulling or Pulled event
};

namespace {

// A memfd holding `text`, for the worker to read at its fd: the pod's
// pull credentials never touch the disk or an argv.
Result<Fd> MemfdWith(const std::string& text) {
  Fd fd(::memfd_create("podvisor-pull-credentials", MFD_CLOEXEC));
  if (!fd) return Error::FromErrno("memfd_create");
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::FromErrno("writing the pull credentials");
    done += static_cast<std::size_t>(n);
  }
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) return Error::FromErrno("lseek");
  return fd;
}

}  // namespace

ImagePulls::ImagePulls(loop::EventLoop& loop, process::Reaper& reaper, Seams seams, Options options)
    : loop_(loop), reaper_(reaper), seams_(std::move(seams)), options_(std::move(options)) {}

ImagePulls::~ImagePulls() {
  StopAll();
  // Nothing may call back into a destroyed part: the killed workers' exits
  // become the reaper's orphans, their pipes closed with them.
  for (auto& [reference, worker] : workers_) {
    reaper_.Unwatch(worker->child.pid());
    if (loop_.Watching(worker->output.get())) loop_.Remove(worker->output.get());
  }
}

void ImagePulls::Want(const std::string& container, const std::string& reference,
                      const std::string& policy) {
  wanted_[container] = Wanted{reference, policy, {}, false, std::nullopt};
}

void ImagePulls::WantLayout(const std::string& container, const std::string& reference,
                            const std::filesystem::path& layout) {
  // Once in the store it stays the bundle's: IfNotPresent finds it there.
  wanted_[container] = Wanted{reference, "IfNotPresent", layout, false, std::nullopt};
}

void ImagePulls::StartAll(bool resumed) {
  std::set<std::string> started;
  for (auto& [container, wanted] : wanted_) {
    if (wanted.ready || !started.insert(wanted.reference).second) continue;
    if (wanted.layout.empty() && (resumed || wanted.policy != "Always") &&
        TakeFromStore(wanted.reference, wanted.policy)) {
      continue;
    }
    StartWorker(wanted);
  }
}

// IfNotPresent and Never find the image by name in the store without any
// worker: a warm start costs what it cost before pulling existed.
bool ImagePulls::TakeFromStore(const std::string& reference, const std::string& policy) {
  auto aliases = registry::LoadShortNameAliases(registry::DefaultRegistriesConfLocation());
  if (!aliases) return false;  // the worker says what is wrong with them
  auto name = registry::ResolveImageName(reference, *aliases);
  if (!name) return false;
  auto store = image::LayerStore::Open(options_.store_dir);
  if (!store) return false;
  auto record = store->FindByName(name->ToString());
  if (!record) return false;
  for (auto& [container, wanted] : wanted_) {
    if (wanted.reference != reference || wanted.ready) continue;
    auto hold = store->HoldImage(record->manifest_digest);
    if (!hold || !*hold) return false;  // pruned meanwhile: pull it
    auto loaded = image::ImageFromStore(*store, *record, reference);
    if (!loaded) return false;
    wanted.ready = true;
    wanted.ready_for_instance = 0;
    seams_.image_ready(container, std::move(*loaded), std::move(**hold));
    registry::ProgressEvent present;
    present.image = reference;
    present.already_present = true;
    seams_.publish(lifecycle::Publish{lifecycle::EventType::kNormal, "Pulled",
                                      "container/" + container,
                                      registry::PulledEventMessage(present)});
  }
  (void)policy;
  return true;
}

void ImagePulls::StartWorker(const Wanted& wanted) {
  const std::string reference = wanted.reference;
  const std::string policy = wanted.policy;
  if (stopped_ || workers_.count(reference)) return;
  auto fail = [&](const std::string& why) { Failed(reference, "ErrImagePull", why); };
  int out[2];
  if (::pipe2(out, O_CLOEXEC | O_NONBLOCK) != 0)
    return fail(std::string("pipe: ") + std::strerror(errno));
  Fd read_end(out[0]);
  Fd write_end(out[1]);
  std::optional<Fd> credentials;
  process::SpawnOptions spawn;
  spawn.argv = {options_.podvisor_exe.string(),
                "pull-worker",
                "--store",
                options_.store_dir.string(),
                "--policy",
                policy,
                "--progress-fd",
                std::to_string(write_end.get())};
  spawn.keep_fds = {write_end.get()};
  if (!wanted.layout.empty()) {
    spawn.argv.insert(spawn.argv.end(), {"--layout", wanted.layout.string()});
  } else if (!options_.credentials_json.empty()) {
    auto memfd = MemfdWith(options_.credentials_json);
    if (!memfd) return fail(memfd.error().message());
    credentials = std::move(*memfd);
    spawn.argv.insert(spawn.argv.end(), {"--auth-fd", std::to_string(credentials->get())});
    spawn.keep_fds.push_back(credentials->get());
  }
  spawn.argv.emplace_back("--");
  spawn.argv.push_back(reference);
  spawn.stderr_fd = process::SpawnOptions::kInherit;  // its own log lines go to ours
  spawn.cwd = "/";
  spawn.new_process_group = true;  // StopAll ends the worker and its skopeo together
  // The worker dies with its supervisor: a SIGKILLed one's worker went on
  // unpacking into the state directory while the recovery after it (the
  // shim's delete, the next run) removed it (Shim.SigkilledShim...:
  // "Directory not empty"). A later supervisor pulls again; a layer is
  // published only whole (S16.1), its `.partial` is scratch.
  const pid_t supervisor = ::getpid();
  spawn.pre_exec = [supervisor]() -> int {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return errno;
    return ::getppid() == supervisor ? 0 : ESRCH;  // it died before the prctl
  };
  auto child = process::Spawn(spawn);
  if (!child) return fail("starting the puller: " + child.error().message());
  auto worker = std::make_unique<Worker>();
  worker->reference = reference;
  worker->child = std::move(*child);
  worker->output = std::move(read_end);
  worker->bundle_layout = !wanted.layout.empty();
  Worker* w = worker.get();
  if (auto s = loop_.Add(w->output.get(), EPOLLIN, [this, w](uint32_t) { OnOutput(*w); }); !s) {
    (void)w->child.KillAndReap();
    return fail(s.error().message());
  }
  if (auto s = reaper_.Track(
          w->child, [this, reference](const process::ExitInfo& exit) { OnExit(reference, exit); });
      !s) {
    loop_.Remove(w->output.get());
    (void)w->child.KillAndReap();
    return fail(s.error().message());
  }
  workers_[reference] = std::move(worker);
  if (!wanted.layout.empty()) {
    log::Info("image \"{}\": unpacking the bundle's OCI layout {} into the store", reference,
              wanted.layout.string());
    return;
  }
  log::Info("pulling image \"{}\" (imagePullPolicy {})", reference, policy);
  PublishFor(reference, lifecycle::EventType::kNormal, "Pulling",
             registry::PullingEventMessage(reference));
}

void ImagePulls::OnOutput(Worker& worker) {
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(worker.output.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // EOF: the worker and its skopeo closed it; the exit follows.
      if (n == 0) loop_.Remove(worker.output.get());
      return;
    }
    worker.pending.append(buf, static_cast<std::size_t>(n));
    for (std::size_t nl; (nl = worker.pending.find('\n')) != std::string::npos;) {
      std::string line = worker.pending.substr(0, nl);
      worker.pending.erase(0, nl + 1);
      OnLine(worker, line);
    }
    // A worker that never ends a line is cut off at 64 KiB, not buffered.
    if (worker.pending.size() > 65536) worker.pending.clear();
  }
}

void ImagePulls::OnLine(Worker& worker, const std::string& line) {
  auto progress = registry::ParseProgressLine(line);
  if (!progress) {
    log::Warn("image \"{}\": unreadable progress line from the puller", worker.reference);
    return;
  }
  // The supervisor's log says what is fetched and unpacked, with sizes
  // (S16.9); the events say Pulling and Pulled as the kubelet's do.
  switch (progress->kind) {
    case registry::ProgressKind::kResolving:
      break;
    case registry::ProgressKind::kPulling:
      log::Info("image \"{}\": pulling {}", worker.reference, progress->reference);
      break;
    case registry::ProgressKind::kLayer:
      if (progress->unpacked) {
        log::Info("image \"{}\": layer {} in the store ({} bytes)", worker.reference,
                  progress->diff_id, progress->layer_size);
      } else if (progress->bytes == 0) {
        log::Info("image \"{}\": fetching and unpacking layer {} ({} bytes)", worker.reference,
                  progress->diff_id, progress->layer_size);
      }
      break;
    case registry::ProgressKind::kPulled:
      worker.manifest_digest = progress->manifest_digest;
      worker.pulled_message = registry::PulledEventMessage(*progress);
      log::Info("image \"{}\": {}", worker.reference, worker.pulled_message);
      break;
    case registry::ProgressKind::kFailed:
      worker.failure_reason = progress->reason;
      worker.failure_message = progress->message;
      break;
  }
}

void ImagePulls::OnExit(const std::string& reference, const process::ExitInfo& exit) {
  auto found = workers_.find(reference);
  if (found == workers_.end()) return;
  std::unique_ptr<Worker> worker = std::move(found->second);
  workers_.erase(found);
  OnOutput(*worker);  // what is left in the pipe
  if (!worker->pending.empty()) OnLine(*worker, worker->pending);
  if (loop_.Watching(worker->output.get())) loop_.Remove(worker->output.get());
  if (stopped_) return;
  if (exit.success() && !worker->manifest_digest.empty()) {
    if (!worker->pulled_message.empty() && !worker->bundle_layout) {
      PublishFor(reference, lifecycle::EventType::kNormal, "Pulled", worker->pulled_message);
    }
    return Succeeded(reference, worker->manifest_digest);
  }
  std::string reason = worker->failure_reason.empty() ? "ErrImagePull" : worker->failure_reason;
  std::string message = worker->failure_message;
  if (message.empty()) message = "the puller " + exit.ToString();
  Failed(reference, reason, message);
}

void ImagePulls::Succeeded(const std::string& reference, const std::string& manifest_digest) {
  auto fail = [&](const std::string& why) { Failed(reference, "ErrImagePull", why); };
  auto store = image::LayerStore::Open(options_.store_dir);
  if (!store) return fail(store.error().message());
  auto record = store->FindByManifest(manifest_digest);
  if (!record) return fail("image " + manifest_digest + " is not in the store after its pull");
  std::vector<lifecycle::CreateContainer> due;
  for (auto& [container, wanted] : wanted_) {
    if (wanted.reference != reference) continue;
    auto hold = store->HoldImage(manifest_digest);
    if (!hold || !*hold) return fail("image " + manifest_digest + " was pruned during its pull");
    auto loaded = image::ImageFromStore(*store, *record, reference);
    if (!loaded) return fail(loaded.error().message());
    auto parked = parked_.find(container);
    wanted.ready = true;
    wanted.ready_for_instance = parked != parked_.end() ? parked->second.instance : 0;
    seams_.image_ready(container, std::move(*loaded), std::move(**hold));
    if (parked != parked_.end()) {
      due.push_back(parked->second);
      parked_.erase(parked);
    }
  }
  for (const auto& create : due) {
    if (seams_.terminating()) {
      // Abandoned by the Lifecycle (S5.8): it waits for nothing.
      seams_.feed(lifecycle::ImagePullFailed{create.container, create.instance, "ErrImagePull",
                                             "the pod is terminating"});
    } else {
      seams_.create(create);
    }
  }
}

void ImagePulls::Failed(const std::string& reference, const std::string& reason,
                        const std::string& message) {
  for (const auto& [container, wanted] : wanted_) {
    if (wanted.reference == reference && !wanted.layout.empty()) {
      return seams_.fatal(
          fmt::format("container {}: image \"{}\": {}", container, reference, message));
    }
  }
  log::Warn("image \"{}\": {}: {}", reference, reason, message);
  std::vector<lifecycle::CreateContainer> failed;
  for (auto& [container, wanted] : wanted_) {
    if (wanted.reference != reference) continue;
    if (auto parked = parked_.find(container); parked != parked_.end()) {
      failed.push_back(parked->second);
      parked_.erase(parked);
    }
  }
  for (const auto& create : failed) {
    seams_.feed(lifecycle::ImagePullFailed{create.container, create.instance, reason, message});
  }
}

bool ImagePulls::Park(const lifecycle::CreateContainer& create) {
  auto found = wanted_.find(create.container);
  if (found == wanted_.end()) return false;  // a bundle image
  Wanted& wanted = found->second;
  if (wanted.ready) {
    // Always: every instance's start checks the registry (the kubelet's
    // EnsureImageExists at each container start).
    if (wanted.policy != "Always" || wanted.ready_for_instance == create.instance) return false;
    wanted.ready = false;
  }
  parked_[create.container] = create;
  if (!workers_.count(wanted.reference)) {
    if (!wanted.layout.empty() || wanted.policy == "Always" ||
        !TakeFromStore(wanted.reference, wanted.policy)) {
      StartWorker(wanted);
    } else {
      parked_.erase(create.container);
      return false;
    }
  }
  return true;
}

void ImagePulls::StopAll() {
  stopped_ = true;
  parked_.clear();
  for (auto& [reference, worker] : workers_) {
    // The worker's process group: it and the skopeo it drives.
    if (worker->child.pid() > 0) ::kill(-worker->child.pid(), SIGKILL);
  }
}

void ImagePulls::PublishFor(const std::string& reference, lifecycle::EventType type,
                            const std::string& reason, const std::string& message) {
  for (const auto& [container, wanted] : wanted_) {
    if (wanted.reference != reference) continue;
    seams_.publish(lifecycle::Publish{type, reason, "container/" + container, message});
  }
}

}  // namespace podvisor::supervisor::executor
