// The pod's images (S16.4-S16.9): those of the bundle loaded before
// anything starts, those of registries and bundle OCI layouts the store
// lacks handed to ImagePulls, and each image that arrives kept for the
// pod's life.
#include "common/log.h"
#include "common/signal_names.h"
#include "image/image_cache.h"
#include "image/layer_store.h"
#include "image/oci_layout.h"
#include "pod/bundle.h"
#include "registry/credentials.h"
#include "registry/image_name.h"
#include "supervisor/executor/executor.h"

namespace podvisor::supervisor::executor {

// Images first: a bundle image that cannot be loaded is the user's problem
// and must leave nothing behind. Those `run` loaded are not loaded again.
// An image the bundle does not hold comes from a registry (S16.4): pulled
// once the pod runs, its container waiting meanwhile.
Status Executor::LoadImages() {
  if (auto credentials = registry::PullCredentialsJson(pod_, pod_.config); credentials) {
    pulls_->SetCredentials(std::move(*credentials));
  } else {
    // The kubelet goes on without a pull secret it cannot read, and says so.
    log::Warn("{}", credentials.error().message());
    pending_pull_warning_ = credentials.error().message();
  }
  for (const auto* list : {&pod_.spec.init_containers, &pod_.spec.containers}) {
    for (const auto& c : *list) {
      if (!images_.count(c.name)) {
        // A bundle OCI layout the store lacks is unpacked by a worker, so
        // the pod shows in status meanwhile (S16.9).
        if (auto layout = LayoutToUnpack(c.image)) {
          pulls_->WantLayout(c.name, c.image, *layout);
          continue;
        }
      }
      if (!images_.count(c.name) && !pod::ImageInBundle(options_.bundle, c.image)) {
        pulls_->Want(c.name, c.image,
                     c.image_pull_policy.empty()
                         ? registry::PullPolicyName(registry::DefaultPullPolicy(c.image))
                         : c.image_pull_policy);
        continue;
      }
      // An unpacked layout is held (a shared lock) for the pod's life, so
      // `images prune` leaves it alone; one pruned between the unpack and
      // the lock is unpacked again.
      for (int attempt = 0;; ++attempt) {
        auto image = images_.find(c.name);
        if (image == images_.end()) {
          auto loaded = image::LoadImage(options_.bundle, c.image, {options_.image_cache_dir});
          if (!loaded) return loaded.take_error().Wrap("container " + c.name);
          image = images_.emplace(c.name, std::move(*loaded)).first;
        }
        const std::string& digest = image->second.manifest_digest;
        if (!digest.empty()) {
          auto held = image::HoldEntry(options_.image_cache_dir, digest);
          if (!held) return held.take_error().Wrap("container " + c.name);
          if (!*held) {
            if (attempt < 3) {
              images_.erase(image);
              continue;
            }
            return Error("container " + c.name + ": image cache entry " + digest +
                         " keeps disappearing");
          }
          image_locks_.push_back(std::move(**held));
          // imageID: the manifest digest of a layout; a plain rootfs's
          // content digest is computed when a status first asks for it
          // (PodRecord), since hashing the whole tree here delayed every
          // pod's start.
          record_.KnowImageId(c.name, digest);
        }
        break;
      }
    }
  }
  return Ok();
}

// The bundle's OCI layout `reference` names when the store does not hold
// its manifest yet; nullopt otherwise (a plain rootfs, a layout already
// unpacked, or one whose index, manifest or config is unreadable: loading
// it now reports that before anything starts).
std::optional<std::filesystem::path> Executor::LayoutToUnpack(const std::string& reference) const {
  auto dir = pod::ResolveImageDir(options_.bundle, reference);
  if (!dir || !image::IsOciLayout(*dir)) return std::nullopt;
  auto layout = image::ResolveLayout(*dir, image::TagOf(reference), image::HostPlatform());
  if (!layout) return std::nullopt;
  auto store = image::LayerStore::Open(options_.image_cache_dir);
  if (!store) return std::nullopt;
  if (store->FindByManifest(layout->manifest.digest.ToString())) return std::nullopt;
  return *dir;
}

// A registry image pulled (or found in the store): the container's from now
// on, held against prune for the pod's life.
void Executor::ImageReady(const std::string& container, image::Image image, Fd hold) {
  image_locks_.push_back(std::move(hold));
  // imageID: the repository digest the registry gave (S16.7).
  record_.KnowImageId(container, image.image_id.empty() ? image.manifest_digest : image.image_id);
  if (!image.config.stop_signal.empty()) {
    if (auto signo = ParseSignal(image.config.stop_signal)) {
      lifecycle_.SetImageStopSignal(container, *signo);
    }
  }
  images_.insert_or_assign(container, std::move(image));
}

}  // namespace podvisor::supervisor::executor
