#include "loading/pod_loading.h"

#include <arpa/inet.h>
#include <sys/sysinfo.h>

#include <cerrno>
#include <string>

#include "common/terminal_text.h"
#include "hostfs/instance_plan.h"
#include "hostfs/layout.h"
#include "image/image.h"
#include "network/user_mode.h"
#include "oci/spec.h"
#include "pod/bundle.h"
#include "pod/config_objects.h"
#include "pod/defaults.h"
#include "pod/env_resolution.h"
#include "pod/parse.h"
#include "pod/validate.h"
#include "pod/workloads.h"
#include "registry/image_name.h"

namespace podvisor::loading {
namespace {

// Probe and hook forms podvisor cannot perform: a host name in httpGet or
// tcpSocket would need a DNS lookup, which would block the event loop (the
// kubelet resolves it; podvisor takes IP addresses and "localhost").
void CheckRunnable(const pod::Pod& pod, pod::FieldErrors& errors,
                   std::vector<std::string>& messages) {
  auto check_host = [&](const std::string& host, const std::string& field) {
    in_addr v4{};
    in6_addr v6{};
    if (host.empty() || host == "localhost" || ::inet_pton(AF_INET, host.c_str(), &v4) == 1 ||
        ::inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
      return;
    }
    errors.push_back(
        pod::Invalid(field, host, "podvisor run needs an IP address or \"localhost\" here"));
  };
  auto check_handler = [&](const pod::Handler& h, const std::string& base) {
    if (h.http_get) check_host(h.http_get->host, base + ".httpGet.host");
    if (h.tcp_socket) check_host(h.tcp_socket->host, base + ".tcpSocket.host");
  };
  auto check_list = [&](const std::vector<pod::Container>& list, const std::string& list_path) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      const pod::Container& c = list[i];
      std::string base = list_path + "[" + std::to_string(i) + "]";
      for (auto [probe, name] : {std::pair{&c.startup_probe, "startupProbe"},
                                 std::pair{&c.readiness_probe, "readinessProbe"},
                                 std::pair{&c.liveness_probe, "livenessProbe"}}) {
        if (*probe) check_handler((*probe)->handler, base + "." + name);
      }
      if (c.lifecycle) {
        for (auto [hook, name] : {std::pair{&c.lifecycle->post_start, "postStart"},
                                  std::pair{&c.lifecycle->pre_stop, "preStop"}}) {
          if (!*hook) continue;
          std::string field = base + ".lifecycle." + name;
          check_handler((*hook)->handler, field);
          if ((*hook)->handler.tcp_socket) {
            // S8.1: accepted and ignored, as the kubelet does.
            messages.push_back("Warning: " + field + ".tcpSocket: tcpSocket hooks are not run");
          }
        }
      }
    }
  };
  check_list(pod.spec.init_containers, pod::InitContainersPath(pod));  // S13: maybe an annotation
  check_list(pod.spec.containers, "spec.containers");
}

// What `run` would only find out when it creates a container: the OCI
// config of each one is generated here, against its image, by the plan the
// supervisor uses (oci/instance_plan.h), with facts of no particular host:
// every capability, no devices, paths under /run/podvisor/validate. An
// image that is an OCI layout is left to `run` (it is unpacked there, into
// the state directory). The images loaded go to `images`.
void CheckContainerConfigs(const pod::Pod& pod, const std::filesystem::path& bundle,
                           pod::FieldErrors& errors, std::map<std::string, image::Image>& images) {
  struct sysinfo si {};
  int64_t memory = ::sysinfo(&si) == 0 ? static_cast<int64_t>(si.totalram) * si.mem_unit : 0;
  hostfs::HostFacts host;
  host.node_memory_bytes = memory > 0 ? memory : int64_t{1} << 30;
  host.node_hostname = "validate";
  const hostfs::PodLayout layout("/run/podvisor", "validate");
  for (const auto* list : {&pod.spec.init_containers, &pod.spec.containers}) {
    for (const pod::Container& c : *list) {
      std::error_code ec;
      auto dir = pod::ResolveImageDir(bundle, c.image);
      // A registry image (S16.4) is only known once pulled.
      if (!dir || !std::filesystem::exists(*dir, ec)) continue;
      if (std::filesystem::exists(*dir / "oci-layout", ec)) continue;
      std::string field = oci::ContainerFieldPath(pod, c);
      auto image = image::LoadImage(bundle, c.image);
      if (!image) {
        errors.push_back(
            pod::Invalid(field + ".image", pod::QuoteValue(c.image), image.error().message()));
        continue;
      }
      hostfs::InstanceFacts facts;
      facts.bundle = bundle;
      facts.instance_dir = layout.ContainersDir() / c.name;
      if (pod.spec.share_process_namespace.value_or(false)) facts.namespaces.pid = "/proc/1/ns/pid";
      auto config = oci::GenerateConfig(
          pod, c, *image, hostfs::PlanContainerConfig(pod, c, *image, layout, facts, host));
      images.emplace(c.name, std::move(*image));
      if (config) continue;
      // "spec.containers[0]: no command: ..." -> field and detail.
      std::string message = config.error().message();
      std::size_t colon = message.find(": ");
      if (colon != std::string::npos && message.starts_with(field)) {
        errors.push_back(pod::Forbidden(message.substr(0, colon), message.substr(colon + 2)));
      } else {
        errors.push_back(pod::Forbidden(field, message));
      }
    }
  }
}

// S16.4: an image the bundle does not hold is a registry reference, which
// must parse as one; under imagePullPolicy Never it must already be in the
// image store (`podvisor pull`), which validate cannot see: a warning.
void CheckRegistryImages(const pod::Pod& pod, const std::filesystem::path& bundle,
                         pod::FieldErrors& errors, std::vector<std::string>& messages) {
  const std::string init_path = pod::InitContainersPath(pod);  // S13: maybe an annotation
  for (const auto& [list, path] :
       {std::pair{&pod.spec.init_containers, init_path},
        std::pair{&pod.spec.containers, std::string("spec.containers")}}) {
    for (std::size_t i = 0; i < list->size(); ++i) {
      const pod::Container& c = (*list)[i];
      if (c.image.empty() || pod::ImageInBundle(bundle, c.image)) continue;
      const std::string field = path + "[" + std::to_string(i) + "].image";
      auto name = registry::ParseImageName(c.image);
      if (!name) {
        errors.push_back(pod::Invalid(
            field, pod::QuoteValue(c.image),
            "not in the bundle's images/ and not a registry reference: " + name.error().message()));
        continue;
      }
      if (c.image_pull_policy == "Never") {
        messages.push_back("Warning: " + field + ": " + pod::QuoteValue(c.image) +
                           " is not in the bundle and imagePullPolicy is Never: the container "
                           "waits (ErrImageNeverPull) unless `podvisor pull` put it in the image "
                           "store");
      }
    }
  }
}

// A path that is not what was asked for: the user's mistake when it
// exists, the host's (or a typo's) when it does not.
LoadedPod Refused(std::string message, bool exists) {
  LoadedPod result;
  result.messages.push_back(std::move(message));
  result.failure = exists ? LoadFailure::kInvalid : LoadFailure::kUnreadable;
  return result;
}

LoadedPod Load(const std::filesystem::path& path, bool check_images,
               const ConfigFiles& config_files) {
  LoadedPod result;
  std::error_code ec;
  bool is_bundle = std::filesystem::is_directory(path, ec);
  auto parsed = pod::ParseManifestFile(path);
  if (!parsed) {
    result.messages.push_back("podvisor: " + parsed.error().message());
    // A file we could not read is a host problem; one we could read but
    // not parse is the user's input.
    result.failure = parsed.error().code() != 0 ? LoadFailure::kUnreadable : LoadFailure::kInvalid;
    return result;
  }
  pod::ParseOutput& out = *parsed;
  for (auto [files, kind] : {std::pair{&config_files.config_maps, "ConfigMap"},
                             std::pair{&config_files.secrets, "Secret"}}) {
    for (const std::string& file : *files) {
      if (Status s = pod::ReadConfigFile(file, std::string_view(kind), out.pod.config, out.errors,
                                         out.warnings);
          !s) {
        result.messages.push_back("podvisor: " + s.error().message());
        result.failure = s.error().code() != 0 ? LoadFailure::kUnreadable : LoadFailure::kInvalid;
        return result;
      }
    }
  }
  pod::ApplyDefaults(out.pod);
  pod::FieldErrors errors = std::move(out.errors);
  pod::FieldErrors pod_errors = pod::ValidatePod(out.pod);
  pod::FieldWarnings env_warnings = pod::EnvFromWarnings(out.pod);
  std::filesystem::path bundle = is_bundle ? path : path.parent_path();
  if (bundle.empty()) bundle = ".";
  if (!check_images) {
    // S14.6: an absolute or escaping reference is refused by run whatever
    // the images, so --no-images still reports it.
    for (auto& e : pod::ValidateImages(out.pod, bundle, /*references_only=*/true)) {
      pod_errors.push_back(std::move(e));
    }
  } else {
    for (auto& e : pod::ValidateImages(out.pod, bundle)) pod_errors.push_back(std::move(e));
    CheckRegistryImages(out.pod, bundle, pod_errors, result.messages);
    // The generated config assumes a valid pod: only then is it tried.
    if (errors.empty() && pod_errors.empty()) {
      CheckContainerConfigs(out.pod, bundle, pod_errors, result.images);
    }
  }
  // What `run` cannot perform is refused by `validate` and `pack` alike:
  // validate never passes what run refuses.
  CheckRunnable(out.pod, pod_errors, result.messages);
  // A workload's errors name the field of its template (workloads.h).
  if (!out.template_path.empty()) pod::PointAtTemplate(out.template_path, pod_errors, env_warnings);
  for (auto& e : pod_errors) errors.push_back(std::move(e));
  for (auto& w : env_warnings) out.warnings.push_back(std::move(w));
  // Warnings and errors quote manifest values, which a bundle image from
  // a registry controls: escaped for the terminal (S14.20).
  for (const auto& w : out.warnings) {
    result.messages.push_back("Warning: " + TerminalSafe(w.ToString()));
  }
  if (!errors.empty()) {
    for (const auto& e : errors) {
      result.problems.push_back(TerminalSafe(e.ToString()));
      result.messages.push_back(result.problems.back());
    }
    result.messages.push_back("podvisor: pod " + TerminalSafeQuoted(out.pod.metadata.name) +
                              " is invalid: " + std::to_string(errors.size()) + " problem" +
                              (errors.size() == 1 ? "" : "s"));
    result.failure = LoadFailure::kInvalid;
    return result;
  }
  result.pod = std::move(out.pod);
  return result;
}

}  // namespace

LoadedPod LoadPod(const std::filesystem::path& path, bool check_images,
                  const ConfigFiles& config_files) {
  return Load(path, check_images, config_files);
}

LoadedPod LoadPodForRun(const std::filesystem::path& bundle, bool manifest,
                        const ConfigFiles& config_files) {
  std::error_code ec;
  if (manifest) {
    if (!std::filesystem::is_regular_file(bundle, ec)) {
      return Refused("podvisor: -f " + bundle.string() + ": no such manifest file",
                     std::filesystem::exists(bundle, ec));
    }
    return Load(bundle, true, config_files);
  }
  if (!std::filesystem::is_directory(bundle, ec)) {
    return Refused("podvisor: " + bundle.string() + " is not a bundle directory",
                   std::filesystem::exists(bundle, ec));
  }
  return Load(bundle, true, config_files);
}

OpenedBundle OpenBundle(const std::filesystem::path& path,
                        const std::filesystem::path& unpack_parent) {
  OpenedBundle opened;
  opened.dir = path;
  if (!image::LooksLikeBundleImage(path)) return opened;
  image::SweepUnpackedBundles(unpack_parent);
  auto unpacked = image::UnpackBundleImage(path, unpack_parent);
  if (!unpacked) {
    opened.error = "podvisor: " + unpacked.error().message();
    // An ordinary image where a bundle was expected is the user's mistake;
    // an unreadable or corrupt layout is the host's.
    opened.failure =
        unpacked.error().code() == EINVAL ? LoadFailure::kInvalid : LoadFailure::kUnreadable;
    return opened;
  }
  opened.dir = unpacked->dir();
  opened.unpacked.emplace(std::move(*unpacked));
  return opened;
}

std::optional<std::string> CheckPodNetwork(const pod::Pod& pod, network::NetworkMode mode,
                                           bool sandbox) {
  if (mode == network::NetworkMode::kCni && !sandbox) {
    return "--network cni needs the pod's own network namespace: --sandbox namespaces (as root)";
  }
  if (network::IsUserModeNetwork(mode) && !sandbox) {
    return std::string("--network ") + network::NetworkModeName(mode) +
           " needs the pod's own network namespace: --sandbox namespaces";
  }
  if (pod.spec.host_network) return std::nullopt;
  if (network::IsUserModeNetwork(mode)) {
    // S22.6: what slirp4netns or pasta cannot forward.
    const auto tool = mode == network::NetworkMode::kPasta ? network::UserModeTool::kPasta
                                                           : network::UserModeTool::kSlirp4netns;
    for (const auto* list : {&pod.spec.init_containers, &pod.spec.containers}) {
      for (const auto& c : *list) {
        std::vector<network::PortMapping> ports;
        for (const auto& p : c.ports) {
          if (!p.host_port || *p.host_port == 0) continue;
          std::string protocol = p.protocol.empty() ? "tcp" : p.protocol;
          for (char& ch : protocol)
            ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
          ports.push_back({*p.host_port, p.container_port, protocol, p.host_ip});
        }
        if (auto refused = network::CheckUserModePorts(tool, ports)) {
          return "container " + c.name + ": " + *refused;
        }
      }
    }
  }
  for (const auto* list : {&pod.spec.init_containers, &pod.spec.containers}) {
    for (const auto& c : *list) {
      for (const auto& p : c.ports) {
        if (!p.host_port || *p.host_port == 0) continue;
        std::string port = "container " + c.name + ": hostPort " + std::to_string(*p.host_port);
        if (mode == network::NetworkMode::kNone) {
          return port + " needs a pod network: run with --network cni (or hostNetwork: true)";
        }
        if (mode == network::NetworkMode::kHost && *p.host_port != p.container_port) {
          return port + " differs from containerPort " + std::to_string(p.container_port) +
                 ": with --network host the container's port is the host's";
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace podvisor::loading
