#include "registry/puller.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "image/digest.h"
#include "registry/layer_fetch.h"

namespace podvisor::registry {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxConfig = 8 << 20;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Result<image::LayerCompression> CompressionOf(const std::string& media_type) {
  auto ends = [&](std::string_view suffix) {
    return media_type.size() >= suffix.size() &&
           media_type.compare(media_type.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends("+gzip") || ends(".tar.gzip")) return image::LayerCompression::kGzip;
  if (ends("+zstd") || ends(".tar.zstd")) return image::LayerCompression::kZstd;
  if (ends(".tar") || ends("layer.v1.tar")) return image::LayerCompression::kNone;
  return Error("unsupported layer media type \"" + media_type + "\"");
}

Result<image::Descriptor> ParseDescriptor(const Json& j, std::string_view what) {
  if (!j.is_object()) return Error(std::string(what) + " is not an object");
  image::Descriptor d;
  d.media_type = j.value("mediaType", "");
  auto digest = image::ParseDigest(j.value("digest", ""));
  if (!digest) return digest.take_error().Wrap(what);
  d.digest = *digest;
  auto size = j.find("size");
  if (size == j.end() || !size->is_number_integer() || size->get<int64_t>() < 0) {
    return Error(std::string(what) + " has no size");
  }
  d.size = size->get<int64_t>();
  if (auto p = j.find("platform"); p != j.end() && p->is_object()) {
    d.platform = image::Platform{.os = p->value("os", ""),
                                 .architecture = p->value("architecture", ""),
                                 .variant = p->value("variant", "")};
  }
  return d;
}

bool IsIndex(const Json& manifest) {
  std::string type = manifest.value("mediaType", "");
  return type == "application/vnd.oci.image.index.v1+json" ||
         type == "application/vnd.docker.distribution.manifest.list.v2+json" ||
         (type.empty() && manifest.contains("manifests") && !manifest.contains("layers"));
}

ProgressEvent Failed(const PullRequest& request, std::string_view reason, std::string message) {
  return {.kind = ProgressKind::kFailed,
          .image = request.image,
          .reason = std::string(reason),
          .message = std::move(message)};
}

// Steps 3 and 4 of puller.h with one candidate: what to fetch.
struct Resolved {
  std::string repo_digest{};
  std::string manifest_digest{};
  ParsedManifest manifest{};
  std::string config_json{};
};

Result<Resolved> Resolve(RegistrySource& source, const ImageName& name, const PullRequest& request,
                         LayerSink& sink, bool& already_in_store) {
  auto top = source.TopManifest(name.PullReference());
  if (!top) return top.take_error();
  const std::string top_digest = "sha256:" + image::HashHex("sha256", *top);
  if (!name.digest.empty() && name.digest != top_digest) {
    return Error("manifest digest mismatch: the registry's manifest for " + name.PullReference() +
                 " has digest " + top_digest);
  }
  Resolved resolved{.repo_digest = name.RepoDigest(top_digest), .manifest_digest = top_digest};
  Json top_json = Json::parse(*top, nullptr, /*allow_exceptions=*/false);
  if (!top_json.is_object()) return Error("the registry's manifest is not JSON");
  if (IsIndex(top_json)) {
    auto picked = PickPlatformManifest(*top, request.platform);
    if (!picked) return picked.take_error();
    resolved.manifest_digest = *picked;
  }
  if (request.policy == PullPolicy::kAlways && sink.FindByManifest(resolved.manifest_digest)) {
    already_in_store = true;
    return resolved;
  }
  auto opened = source.OpenManifest(name.Repository() + "@" + resolved.manifest_digest);
  if (!opened) return opened.take_error();
  if (opened->digest != resolved.manifest_digest) {
    return Error("manifest digest mismatch: asked for " + resolved.manifest_digest + ", got " +
                 opened->digest);
  }
  auto parsed = ParseImageManifest(opened->manifest);
  if (!parsed) return parsed.take_error();
  resolved.manifest = std::move(*parsed);
  auto config = ReadSmallBlob(source, resolved.manifest.config, kMaxConfig);
  if (!config) return config.take_error().Wrap("image config");
  if (Status s = AttachDiffIds(*config, resolved.manifest.layers); !s) return s.take_error();
  resolved.config_json = std::move(*config);
  return resolved;
}

}  // namespace

Result<std::string> PickPlatformManifest(std::string_view index_json,
                                         const image::Platform& platform) {
  Json index = Json::parse(index_json, nullptr, /*allow_exceptions=*/false);
  if (!index.is_object() || !index.contains("manifests") || !index["manifests"].is_array()) {
    return Error("the image index has no manifests");
  }
  std::optional<std::string> loose;
  std::vector<std::string> seen;
  for (const Json& entry : index["manifests"]) {
    auto d = ParseDescriptor(entry, "an image index entry");
    if (!d) return d.take_error();
    if (!d->platform) continue;
    seen.push_back(d->platform->ToString());
    if (d->platform->os != platform.os || d->platform->architecture != platform.architecture) {
      continue;
    }
    if (d->platform->variant == platform.variant) return d->digest.ToString();
    if ((d->platform->variant.empty() || platform.variant.empty()) && !loose) {
      loose = d->digest.ToString();
    }
  }
  if (loose) return *loose;
  std::string list;
  for (const std::string& p : seen) list += (list.empty() ? "" : ", ") + p;
  return Error("no matching manifest for " + platform.ToString() +
               " in the manifest list entries (it has " + (list.empty() ? "none" : list) + ")");
}

Result<ParsedManifest> ParseImageManifest(std::string_view manifest_json) {
  Json m = Json::parse(manifest_json, nullptr, /*allow_exceptions=*/false);
  if (!m.is_object() || !m.contains("config") || !m.contains("layers") || !m["layers"].is_array()) {
    return Error("the image manifest has no config or layers");
  }
  ParsedManifest out;
  auto config = ParseDescriptor(m["config"], "the manifest's config");
  if (!config) return config.take_error();
  out.config = std::move(*config);
  for (const Json& entry : m["layers"]) {
    auto d = ParseDescriptor(entry, "a manifest layer");
    if (!d) return d.take_error();
    auto compression = CompressionOf(d->media_type);
    if (!compression) return compression.take_error();
    out.layers.push_back({.blob = std::move(*d), .compression = *compression, .diff_id = {}});
  }
  return out;
}

Status AttachDiffIds(std::string_view config_json, std::vector<image::LayerDescriptor>& layers) {
  Json config = Json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  const Json* ids = nullptr;
  if (config.is_object() && config.contains("rootfs") && config["rootfs"].is_object()) {
    auto it = config["rootfs"].find("diff_ids");
    if (it != config["rootfs"].end() && it->is_array()) ids = &*it;
  }
  if (ids == nullptr) return Error("the image config has no rootfs.diff_ids");
  if (ids->size() != layers.size()) {
    return Error("the image config has " + std::to_string(ids->size()) + " diff_ids for " +
                 std::to_string(layers.size()) + " layers");
  }
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto digest = image::ParseDigest((*ids)[i].is_string() ? (*ids)[i].get<std::string>() : "");
    if (!digest) return digest.take_error().Wrap("rootfs.diff_ids[" + std::to_string(i) + "]");
    layers[i].diff_id = *digest;
  }
  return Ok();
}

Result<std::vector<RegistryCredential>> CandidateCredentials(const PullRequest& request,
                                                             const ImageName& name) {
  std::vector<RegistryCredential> candidates =
      MatchCredentials(request.pull_secret_credentials, name);
  auto from_files = AuthFileCredentials(request.auth_files, name);
  if (!from_files) return from_files.take_error();
  candidates.insert(candidates.end(), from_files->begin(), from_files->end());
  return candidates;
}

PullOutcome PullImage(const PullRequest& request, LayerSink& sink, const ProgressCallback& progress,
                      const SourceFactory& sources) {
  const Clock::time_point started = Clock::now();
  auto emit = [&](const ProgressEvent& e) {
    if (progress) progress(e);
  };
  auto fail = [&](std::string_view reason, std::string message) {
    PullOutcome outcome{.ok = false, .event = Failed(request, reason, std::move(message))};
    emit(outcome.event);
    return outcome;
  };
  emit({.kind = ProgressKind::kResolving, .image = request.image});

  auto aliases = LoadShortNameAliases(request.registries_conf);
  if (!aliases) return fail(kReasonErrImagePull, aliases.error().message());
  auto name = ResolveImageName(request.image, *aliases);
  if (!name) {
    return fail(kReasonInvalidImageName, "Failed to apply default image tag \"" + request.image +
                                             "\": couldn't parse image name \"" + request.image +
                                             "\": " + name.error().message());
  }
  const std::string reference = name->ToString();
  auto present = [&](const image::ImageRecord& record) {
    PullOutcome outcome{
        .ok = true,
        .event = {.kind = ProgressKind::kPulled,
                  .image = request.image,
                  .reference = reference,
                  .manifest_digest = record.manifest_digest,
                  .image_id = "sha256:" + image::HashHex("sha256", record.config_json),
                  .repo_digest = record.repo_digests.empty() ? "" : record.repo_digests[0],
                  .size = record.compressed_size,
                  .already_present = true},
        .record = record};
    emit(outcome.event);
    return outcome;
  };
  if (request.policy != PullPolicy::kAlways) {
    if (auto record = sink.FindByName(reference)) return present(*record);
    if (request.policy == PullPolicy::kNever) {
      return fail(kReasonErrImageNeverPull, NeverPullMessage(request.image));
    }
  }

  emit({.kind = ProgressKind::kPulling, .image = request.image, .reference = reference});
  auto candidates = CandidateCredentials(request, *name);
  if (!candidates) return fail(kReasonErrImagePull, candidates.error().message());
  const SourceFactory factory = sources ? sources : SkopeoSourceFactory(request, *name);
  const std::string failed_prefix = "failed to pull and unpack image \"" + reference + "\": ";

  // The kubelet tries each matching credential until one works, and pulls
  // anonymously when none matches.
  std::vector<const RegistryCredential*> attempts;
  for (const RegistryCredential& c : *candidates) attempts.push_back(&c);
  if (attempts.empty()) attempts.push_back(nullptr);
  std::unique_ptr<RegistrySource> source;
  std::optional<Resolved> resolved;
  bool already_in_store = false;
  std::string last_error;
  for (const RegistryCredential* credential : attempts) {
    auto opened = factory(credential);
    if (!opened) return fail(kReasonErrImagePull, failed_prefix + opened.error().message());
    auto attempt = Resolve(**opened, *name, request, sink, already_in_store);
    if (attempt) {
      source = std::move(*opened);
      resolved = std::move(*attempt);
      break;
    }
    last_error = attempt.error().message();
    if (credential != nullptr && attempts.size() > 1) {
      last_error += " (credentials of " + credential->source + ")";
    }
  }
  if (!resolved) return fail(kReasonErrImagePull, failed_prefix + last_error);

  image::ImageRecord record;
  if (already_in_store) {
    record = *sink.FindByManifest(resolved->manifest_digest);
  } else {
    std::vector<image::LayerDescriptor> missing;
    for (const image::LayerDescriptor& layer : resolved->manifest.layers) {
      record.diff_ids.push_back(*layer.diff_id);
      record.compressed_size += static_cast<uint64_t>(layer.blob.size);
      if (sink.HasLayer(*layer.diff_id)) {
        emit({.kind = ProgressKind::kLayer,
              .diff_id = layer.diff_id->ToString(),
              .layer_size = static_cast<uint64_t>(layer.blob.size),
              .bytes = static_cast<uint64_t>(layer.blob.size),
              .unpacked = true});
      } else if (std::none_of(missing.begin(), missing.end(),
                              [&](const auto& m) { return m.diff_id == layer.diff_id; })) {
        missing.push_back(layer);
      }
    }
    auto fetched =
        FetchLayers(*source, sink, missing, request.parallel_layers, request.budget, progress);
    if (!fetched) return fail(kReasonErrImagePull, failed_prefix + fetched.error().message());
    record.manifest_digest = resolved->manifest_digest;
    record.config_json = resolved->config_json;
    record.unpacked_size = fetched->unpacked_bytes;
  }
  // A name moves to this image; the repo digest is added to those it had.
  if (std::find(record.names.begin(), record.names.end(), reference) == record.names.end()) {
    record.names.push_back(reference);
  }
  if (std::find(record.repo_digests.begin(), record.repo_digests.end(), resolved->repo_digest) ==
      record.repo_digests.end()) {
    record.repo_digests.insert(record.repo_digests.begin(), resolved->repo_digest);
  }
  if (Status put = sink.PutImage(record); !put) {
    return fail(kReasonErrImagePull, failed_prefix + put.error().message());
  }
  PullOutcome outcome{
      .ok = true,
      .event = {.kind = ProgressKind::kPulled,
                .image = request.image,
                .reference = reference,
                .manifest_digest = record.manifest_digest,
                .image_id = "sha256:" + image::HashHex("sha256", record.config_json),
                .repo_digest = resolved->repo_digest,
                .size = record.compressed_size,
                .seconds = SecondsSince(started),
                .seconds_waiting = SecondsSince(std::min(request.requested_at, started))},
      .record = record};
  emit(outcome.event);
  return outcome;
}

}  // namespace podvisor::registry
