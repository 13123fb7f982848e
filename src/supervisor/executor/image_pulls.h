// ImagePulls: the images of the pod that come from a registry (S16.4-S16.7).
//
// A container whose image is not in BUNDLE/images/ names a registry image.
// Each distinct image is pulled by one `podvisor pull-worker` child (the
// blocking puller, registry/puller.h, with its threads, out of this
// single-threaded loop), all of them in parallel as soon as the pod
// starts, so that a later container's pull overlaps the init containers'
// run. The worker writes one progress line per step to a pipe this part
// reads on the loop, and its exit says whether the image is now in the
// store.
//
// The Lifecycle asks to create an instance without knowing about images:
// a create whose image is not here yet is parked until the pull ends, then
// carried out, or answered with ImagePullFailed (the Lifecycle's image
// backoff then asks again, and that ask starts a new pull). Under
// imagePullPolicy Always every instance's create pulls again, as the
// kubelet checks the registry at every container start; an unchanged
// manifest downloads nothing.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/fd.h"
#include "image/image.h"
#include "pod/model.h"
#include "process/child_process.h"
#include "process/reaper.h"
#include "supervisor/lifecycle/types.h"
#include "supervisor/loop/event_loop.h"

namespace podvisor::supervisor::executor {

class ImagePulls {
 public:
  struct Seams {
    std::function<void(lifecycle::Event)> feed;
    std::function<void(const lifecycle::Publish&)> publish;
    std::function<void(const lifecycle::CreateContainer&)> create;
    // The container's image is here: keep it (and the hold on it) for the
    // pod's life.
    std::function<void(const std::string& container, image::Image image, Fd hold)> image_ready;
    std::function<bool()> terminating;
    // A bundle's OCI layout that cannot be unpacked (a corrupt blob) will
    // not get better by waiting: the run ends with this error (exit 3).
    std::function<void(const std::string& message)> fatal;
  };
  struct Options {
    std::filesystem::path podvisor_exe;
    std::filesystem::path store_dir;  // image::ImageCacheDir(state root)
    // The pod's imagePullSecrets as the worker reads them (`--auth-fd`);
    // empty: none. Never logged.
    std::string credentials_json;
  };

  ImagePulls(loop::EventLoop& loop, process::Reaper& reaper, Seams seams, Options options);
  ~ImagePulls();  // ends the workers still running
  ImagePulls(const ImagePulls&) = delete;
  ImagePulls& operator=(const ImagePulls&) = delete;

  void SetCredentials(std::string json) { options_.credentials_json = std::move(json); }

  // `container`'s image comes from a registry, pulled per `policy`
  // ("Always", "IfNotPresent", "Never").
  void Want(const std::string& container, const std::string& reference, const std::string& policy);
  // `container`'s image is the bundle's OCI layout at `layout`, not yet in
  // the store: unpacked by a worker too, so that the pod shows in status
  // while a big image unpacks (S16.9), without the registry's events.
  void WantLayout(const std::string& container, const std::string& reference,
                  const std::filesystem::path& layout);
  bool Wants(const std::string& container) const { return wanted_.count(container) != 0; }

  // Images the store already holds under IfNotPresent or Never are taken
  // at once (no worker, as a warm start must not wait for one); the rest
  // are pulled, all in parallel. Called once the pod's events are open.
  // `resumed`: a supervisor handed a running pod takes whatever the store
  // holds whatever the policy: those containers were started with it.
  void StartAll(bool resumed = false);

  // True when the create must wait for the image (it is parked and will
  // be carried out or answered later); false: create it now.
  bool Park(const lifecycle::CreateContainer& create);

  // The pod is terminating: pulls are ended and parked creates dropped
  // (the Lifecycle abandoned them).
  void StopAll();
  // An upgrade waits for quiet: no pull running, no create waiting for one.
  bool Busy() const { return !workers_.empty() || !parked_.empty(); }

 private:
  struct Wanted {
    std::string reference;
    std::string policy;
    std::filesystem::path layout;  // a bundle OCI layout; empty: a registry image
    bool ready = false;
    std::optional<int> ready_for_instance;  // Always: the instance it was pulled for
  };
  struct Worker;

  bool TakeFromStore(const std::string& reference, const std::string& policy);
  void StartWorker(const Wanted& wanted);
  void OnOutput(Worker& worker);
  void OnLine(Worker& worker, const std::string& line);
  void OnExit(const std::string& reference, const process::ExitInfo& exit);
  void Succeeded(const std::string& reference, const std::string& manifest_digest);
  void Failed(const std::string& reference, const std::string& reason, const std::string& message);
  void PublishFor(const std::string& reference, lifecycle::EventType type,
                  const std::string& reason, const std::string& message);

  loop::EventLoop& loop_;
  process::Reaper& reaper_;
  Seams seams_;
  Options options_;
  std::map<std::string, Wanted> wanted_;                      // by container
  std::map<std::string, std::unique_ptr<Worker>> workers_;    // by reference
  std::map<std::string, lifecycle::CreateContainer> parked_;  // by container
  bool stopped_ = false;
};

}  // namespace podvisor::supervisor::executor
