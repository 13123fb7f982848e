// `podvisor pull`: images from registries into the image store, or into a
// bundle's images/ as OCI layouts (--into), and the hidden `pull-worker`
// the supervisor runs once per image (registry/puller.h does the work).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/default_dirs.h"
#include "cli/pod_loading.h"
#include "cli/user_dirs.h"
#include "common/terminal_text.h"
#include "image/image_cache.h"
#include "pod/bundle.h"
#include "registry/credentials.h"
#include "registry/image_proxy.h"
#include "registry/progress.h"
#include "registry/puller.h"
#include "registry/store_sink.h"

namespace podvisor::cli {
namespace {

namespace fs = std::filesystem;

struct PullOptions {
  std::string state_dir = DefaultStateDir();
  std::string into;
  std::string target;
};

struct WorkerOptions {
  std::string store;
  std::string policy;
  int progress_fd = -1;
  int auth_fd = -1;
  std::string layout;  // a bundle's OCI layout to unpack instead of a pull
  std::string image;
};

bool IsBundle(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path / "pod.yaml", ec) || fs::is_regular_file(path / "pod.json", ec);
}

std::string Megabytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

// Progress for a human: the kubelet's event messages and a line per layer.
void PrintProgress(const registry::ProgressEvent& e) {
  using registry::ProgressKind;
  switch (e.kind) {
    case ProgressKind::kResolving:
      break;
    case ProgressKind::kPulling:
      std::printf("%s\n", TerminalSafe(registry::PullingEventMessage(e.image)).c_str());
      break;
    case ProgressKind::kLayer:
      if (e.unpacked) {
        std::printf("  layer %.19s: %s, unpacked\n", e.diff_id.c_str(),
                    Megabytes(e.layer_size).c_str());
      } else if (e.bytes == 0) {
        std::printf("  layer %.19s: %s, downloading\n", e.diff_id.c_str(),
                    Megabytes(e.layer_size).c_str());
      }
      break;
    case ProgressKind::kPulled:
      std::printf("%s\n", TerminalSafe(registry::PulledEventMessage(e)).c_str());
      if (!e.repo_digest.empty()) std::printf("  %s\n", e.repo_digest.c_str());
      break;
    case ProgressKind::kFailed:
      std::fprintf(stderr, "podvisor: pull: %s\n",
                   TerminalSafe(registry::FailedEventMessage(e.image, e.message)).c_str());
      break;
  }
  std::fflush(stdout);
}

registry::PullRequest BaseRequest(const std::string& image,
                                  const std::vector<registry::RegistryCredential>& secrets) {
  return {.image = image,
          .policy = registry::PullPolicy::kAlways,
          .pull_secret_credentials = secrets,
          .auth_files = registry::DefaultAuthFiles(),
          .registries_conf = registry::DefaultRegistriesConfLocation()};
}

// skopeo copy docker://REF oci:DIR[:TAG], each candidate credential in turn.
// skopeo's oci: transport ends the path at its first ':', which a
// registry's port puts in `dir`: the layout is written to a scratch
// directory beside the images and renamed into place, which also leaves
// nothing half-written behind.
Status CopyIntoBundle(const registry::PullRequest& request, const fs::path& images_root,
                      const fs::path& dir) {
  auto aliases = registry::LoadShortNameAliases(request.registries_conf);
  if (!aliases) return aliases.take_error();
  auto name = registry::ResolveImageName(request.image, *aliases);
  if (!name) return name.take_error();
  auto candidates = registry::CandidateCredentials(request, *name);
  if (!candidates) return candidates.take_error();
  std::vector<const registry::RegistryCredential*> attempts;
  for (const auto& c : *candidates) attempts.push_back(&c);
  if (attempts.empty()) attempts.push_back(nullptr);
  std::error_code ec;
  fs::create_directories(dir.parent_path(), ec);
  const fs::path scratch = images_root / (".pull-" + std::to_string(::getpid()));
  fs::remove_all(scratch, ec);
  // pod::ResolveImageDir's layout reader picks the manifest by this tag.
  std::string destination = "oci:" + scratch.string();
  if (name->digest.empty()) destination += ":" + (name->tag.empty() ? "latest" : name->tag);
  Error last("no attempt");
  for (const registry::RegistryCredential* credential : attempts) {
    registry::ProxyOptions options{.skopeo = request.skopeo};
    if (request.registries_conf.from_environment) {
      options.registries_conf = request.registries_conf.main_file;
    }
    Fd auth;
    if (credential != nullptr) {
      auto memfd = registry::CredentialMemfd(*credential, *name);
      if (!memfd) return memfd.take_error();
      auth = std::move(*memfd);
      options.auth_fd = auth.get();
      options.secrets = registry::CredentialSecrets(*credential);
    }
    std::vector<std::string> args = {"copy", "--quiet"};
    for (std::string& a : registry::SkopeoAuthArgs(options, "--src-")) args.push_back(a);
    args.push_back("docker://" + name->PullReference());
    args.push_back(destination);
    auto copied = registry::RunSkopeo(options, args, 1 << 20);
    if (copied) {
      fs::remove_all(dir, ec);  // an earlier pull's layout of this name
      fs::rename(scratch, dir, ec);
      if (ec) {
        fs::remove_all(scratch, ec);
        return Error("moving the layout to " + dir.string() + ": " + ec.message());
      }
      return Ok();
    }
    last = copied.take_error();
    fs::remove_all(scratch, ec);
  }
  return last;
}

int PullOne(const registry::PullRequest& request, const PullOptions& opts,
            registry::LayerSink* sink) {
  if (!opts.into.empty()) {
    auto dir = pod::ResolveImageDir(opts.into, request.image);
    if (!dir) {
      std::fprintf(stderr, "podvisor: pull: %s\n", dir.error().message().c_str());
      return kExitUsage;
    }
    std::printf("%s\n", TerminalSafe(registry::PullingEventMessage(request.image)).c_str());
    std::fflush(stdout);
    Status copied = CopyIntoBundle(request, fs::path(opts.into) / "images", *dir);
    if (!copied) {
      std::fprintf(
          stderr, "podvisor: pull: %s\n",
          TerminalSafe(registry::FailedEventMessage(request.image, copied.error().message()))
              .c_str());
      return kExitFailed;
    }
    std::printf("  %s\n", dir->c_str());
    return kExitSucceeded;
  }
  registry::PullOutcome outcome = registry::PullImage(request, *sink, &PrintProgress);
  return outcome.ok ? kExitSucceeded : kExitFailed;
}

int RunPull(const PullOptions& opts) {
  std::unique_ptr<registry::LayerSink> sink;
  if (opts.into.empty()) {
    auto opened = registry::OpenStoreSink(image::ImageCacheDir(fs::absolute(opts.state_dir)));
    if (!opened) {
      std::fprintf(stderr, "podvisor: pull: %s\n", opened.error().message().c_str());
      return kExitHost;
    }
    sink = std::move(*opened);
  } else if (!IsBundle(opts.into)) {
    std::fprintf(stderr,
                 "podvisor: pull: --into %s is not a bundle directory (pod.yaml or pod.json)\n",
                 opts.into.c_str());
    return kExitUsage;
  }
  if (!IsBundle(opts.target)) {
    return PullOne(BaseRequest(opts.target, {}), opts, sink.get());
  }
  LoadedPod loaded = LoadPod(opts.target, /*check_images=*/false);
  if (!loaded.ok()) return loaded.exit_code;
  auto secrets = registry::PullSecretCredentials(loaded.pod, loaded.pod.config);
  if (!secrets) {
    std::fprintf(stderr, "podvisor: pull: %s\n", secrets.error().message().c_str());
    return kExitUsage;
  }
  int status = kExitSucceeded;
  std::map<std::string, bool> done;
  for (const auto* list : {&loaded.pod.spec.init_containers, &loaded.pod.spec.containers}) {
    for (const pod::Container& c : *list) {
      if (done[c.image]) continue;
      done[c.image] = true;
      std::error_code ec;
      if (auto dir = pod::ResolveImageDir(opts.target, c.image); dir && fs::exists(*dir, ec)) {
        continue;  // the bundle carries it
      }
      int one = PullOne(BaseRequest(c.image, *secrets), opts, sink.get());
      if (one != kExitSucceeded) status = one;
    }
  }
  return status;
}

Result<std::string> ReadAuthFd(int fd) {
  constexpr std::size_t kMax = 1 << 20;
  std::string text;
  char chunk[8192];
  for (off_t offset = 0;;) {
    ssize_t n = ::pread(fd, chunk, sizeof chunk, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno("reading --auth-fd");
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
    offset += n;
    if (text.size() > kMax) return Error("--auth-fd holds more than 1 MiB");
  }
  return text;
}

int RunPullWorker(const WorkerOptions& opts) {
  registry::ProgressWriter writer(opts.progress_fd);
  auto fail = [&](std::string message) {
    writer.Emit({.kind = registry::ProgressKind::kFailed,
                 .image = opts.image,
                 .reason = std::string(registry::kReasonErrImagePull),
                 .message = std::move(message)});
    return kExitFailed;
  };
  if (::fcntl(opts.progress_fd, F_GETFD) < 0) {
    std::fprintf(stderr, "podvisor: pull-worker: --progress-fd %d is not open\n", opts.progress_fd);
    return kExitUsage;
  }
  if (!opts.layout.empty()) {
    // S16.9: a bundle's OCI layout into the store, in this worker so that
    // the supervisor answers status meanwhile.
    auto started = std::chrono::steady_clock::now();
    auto image = image::LoadOciLayoutImage(opts.layout, opts.image, opts.store);
    if (!image) return fail(image.error().message());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    writer.Emit({.kind = registry::ProgressKind::kPulled,
                 .image = opts.image,
                 .manifest_digest = image->manifest_digest,
                 .seconds = seconds,
                 .seconds_waiting = seconds});
    return kExitSucceeded;
  }
  auto policy = registry::ParsePullPolicy(opts.policy);
  if (!policy) return fail("--policy: " + policy.error().message());
  registry::PullRequest request = BaseRequest(opts.image, {});
  request.policy = *policy;
  if (opts.auth_fd >= 0) {
    auto text = ReadAuthFd(opts.auth_fd);
    if (!text) return fail(text.error().message());
    auto credentials = registry::ParsePullCredentialsJson(*text);
    if (!credentials) return fail(credentials.error().message());
    request.pull_secret_credentials = std::move(*credentials);
    ::close(opts.auth_fd);  // skopeo gets its own memfd per candidate
  }
  auto sink = registry::OpenStoreSink(opts.store);
  if (!sink) return fail(sink.error().message());
  registry::PullOutcome outcome = registry::PullImage(
      request, **sink, [&](const registry::ProgressEvent& e) { writer.Emit(e); });
  return outcome.ok ? kExitSucceeded : kExitFailed;
}

}  // namespace

void AddPullCommands(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<PullOptions>();
  CLI::App* cmd = app.add_subcommand(
      "pull", "Pull images from registries into the image store, or into a bundle (--into)");
  cmd->add_option("--state-dir", opts->state_dir, "State directory (the store is STATE/.images)");
  cmd->add_option("--into", opts->into, "Write OCI layouts into BUNDLE/images/ instead");
  cmd->add_option("target", opts->target, "A bundle (its pod's images) or an image reference")
      ->required();
  cmd->callback([opts, &exit_code] { exit_code = RunPull(*opts); });

  auto worker = std::make_shared<WorkerOptions>();
  CLI::App* hidden = app.add_subcommand("pull-worker", "Pull one image for a supervisor");
  hidden->group("");  // hidden from --help
  hidden->add_option("--store", worker->store, "The image store")->required();
  hidden->add_option("--policy", worker->policy, "Always, IfNotPresent or Never")->required();
  hidden->add_option("--progress-fd", worker->progress_fd, "Where progress lines go")->required();
  hidden->add_option("--auth-fd", worker->auth_fd, "A memfd of pull-secret credentials");
  hidden->add_option("--layout", worker->layout, "Unpack this bundle OCI layout instead");
  hidden->add_option("image", worker->image, "The image as the pod names it")->required();
  hidden->callback([worker, &exit_code] { exit_code = RunPullWorker(*worker); });
}

}  // namespace podvisor::cli
