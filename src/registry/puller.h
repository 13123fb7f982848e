// Pulling one image into the image store (image/layer_store.h), as the
// kubelet's image manager and containerd's pull do it together:
//
//   1. the name: short-name alias, else docker.io normalisation;
//   2. the policy: Never and IfNotPresent look in the store by name first;
//   3. the manifest the reference names (`skopeo inspect --raw`): its
//      digest is the repo digest (the kubelet's imageID), an index is
//      resolved to this host's platform; Always stops here when the store
//      already has that platform manifest (the name is re-pointed);
//   4. the platform manifest and the config blob through the image proxy
//      (image_proxy.h), opened by digest, so a tag moved meanwhile cannot
//      mix two images;
//   5. every layer the store lacks (by diff id), three at a time
//      (containerd's default max_concurrent_downloads), each GetBlob pipe
//      streamed straight into the store's unpacker: nothing is written to
//      disk compressed, and a layer unpacks while it downloads;
//   6. the image record with its name and repo digest.
//
// Credentials (credentials.h) are tried in turn for steps 3 and 4, each
// with its own skopeo, until one is accepted; the one accepted fetches
// the layers. A failure at any step publishes no image record; a layer
// is published by the store only once both its digests verified.
//
// The puller talks to the store and the registry through two narrow
// seams, LayerSink and RegistrySource, so its tests need neither.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/fd.h"
#include "common/result.h"
#include "image/layer_store.h"
#include "image/layer_unpack.h"
#include "image/oci_layout.h"
#include "registry/credentials.h"
#include "registry/image_name.h"
#include "registry/image_proxy.h"
#include "registry/progress.h"
#include "registry/short_names.h"

namespace podvisor::registry {

// What the puller needs of the image store; image::LayerStore satisfies
// it through StoreSink (store_sink.h).
class LayerSink {
 public:
  virtual ~LayerSink() = default;
  virtual bool HasLayer(const image::Digest& diff_id) const = 0;
  // As LayerStore::IngestLayer: reads to EOF, verifies, publishes.
  virtual Status IngestLayer(int blob_fd, const image::LayerDescriptor& layer,
                             image::LayerBudget& budget) = 0;
  virtual Status PutImage(const image::ImageRecord& record) = 0;
  virtual std::optional<image::ImageRecord> FindByName(std::string_view name) const = 0;
  virtual std::optional<image::ImageRecord> FindByManifest(std::string_view digest) const = 0;
};

struct BlobStream {
  Fd fd{};  // read end; the data ends only after FinishBlob
  uint32_t pipe_id = 0;
};

// What the puller needs of a registry, for one credential candidate.
class RegistrySource {
 public:
  virtual ~RegistrySource() = default;
  // The raw manifest `reference` ("host/repo:tag" or "@digest") names.
  virtual Result<std::string> TopManifest(const std::string& reference) = 0;
  // Opens "host/repo@sha256:…" (a platform manifest) and returns it as OCI.
  virtual Result<ProxyManifest> OpenManifest(const std::string& reference) = 0;
  // A blob of the opened image, and the end of its transfer (the
  // proxy's verdict on it: digest, size, connection).
  virtual Result<BlobStream> OpenBlob(const image::Descriptor& blob) = 0;
  virtual Status FinishBlob(uint32_t pipe_id) = 0;
};

// nullptr: anonymous.
using SourceFactory =
    std::function<Result<std::unique_ptr<RegistrySource>>(const RegistryCredential* credential)>;

struct PullRequest {
  std::string image{};  // as the pod wrote it
  PullPolicy policy = PullPolicy::kIfNotPresent;
  // The pod's pull-secret credentials, not yet matched (credentials.h).
  std::vector<RegistryCredential> pull_secret_credentials{};
  // The containers auth files; empty: none.
  std::vector<std::filesystem::path> auth_files{};
  RegistriesConfLocation registries_conf{};
  std::string skopeo = "skopeo";
  int parallel_layers = 3;
  image::LayerBudget budget{};
  image::Platform platform = image::HostPlatform();
  // When the pull was asked for, for "(… including waiting)".
  std::chrono::steady_clock::time_point requested_at = std::chrono::steady_clock::now();
};

struct PullOutcome {
  bool ok = false;
  // Pulled on success (already_present for a policy that found it),
  // Failed (reason, message) otherwise; the same event was also sent to
  // the progress callback.
  ProgressEvent event{};
  std::optional<image::ImageRecord> record{};
};

using ProgressCallback = std::function<void(const ProgressEvent&)>;

// The source of a real registry: skopeo for each candidate.
SourceFactory SkopeoSourceFactory(const PullRequest& request, const ImageName& name);

PullOutcome PullImage(const PullRequest& request, LayerSink& sink, const ProgressCallback& progress,
                      const SourceFactory& sources = {});

// The candidates to try for `name`, in order: matching pull secrets,
// then the auth file's. Empty: anonymous.
Result<std::vector<RegistryCredential>> CandidateCredentials(const PullRequest& request,
                                                             const ImageName& name);

// From a manifest list / image index, the digest of this platform's
// manifest; an error listing the platforms it has otherwise.
Result<std::string> PickPlatformManifest(std::string_view index_json,
                                         const image::Platform& platform);

// The config and layers of an OCI image manifest (as the proxy converts
// every manifest to), with each layer's compression.
struct ParsedManifest {
  image::Descriptor config{};
  std::vector<image::LayerDescriptor> layers{};
};
Result<ParsedManifest> ParseImageManifest(std::string_view manifest_json);
// Fills each layer's diff_id from the config's rootfs.diff_ids.
Status AttachDiffIds(std::string_view config_json, std::vector<image::LayerDescriptor>& layers);

}  // namespace podvisor::registry
