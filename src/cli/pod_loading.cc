#include "cli/pod_loading.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/commands.h"
#include "pod/defaults.h"
#include "pod/parse.h"
#include "pod/validate.h"

namespace podvisor::cli {
namespace {

// Probe and hook forms podvisor cannot perform: a host name in httpGet or
// tcpSocket would need a DNS lookup, which would block the event loop (the
// kubelet resolves it; podvisor takes IP addresses and "localhost").
void CheckRunnable(const pod::Pod& pod, pod::FieldErrors& errors) {
  auto check_host = [&](const std::string& host, const std::string& field) {
    in_addr v4{};
    in6_addr v6{};
    if (host.empty() || host == "localhost" || ::inet_pton(AF_INET, host.c_str(), &v4) == 1 ||
        ::inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
      return;
    }
    errors.push_back(pod::Invalid(field, host, "podvisor run needs an IP address or \"localhost\" here"));
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
            std::fprintf(stderr, "Warning: %s.tcpSocket: tcpSocket hooks are not run\n", field.c_str());
          }
        }
      }
    }
  };
  check_list(pod.spec.init_containers, pod::InitContainersPath(pod));  // S13: maybe an annotation
  check_list(pod.spec.containers, "spec.containers");
}

LoadedPod Load(const std::filesystem::path& path, bool check_images, bool for_run) {
  LoadedPod result;
  std::error_code ec;
  bool is_bundle = std::filesystem::is_directory(path, ec);
  auto parsed = pod::ParseManifestFile(path);
  if (!parsed) {
    std::fprintf(stderr, "podvisor: %s\n", parsed.error().message().c_str());
    // A file we could not read is a host problem; one we could read but
    // not parse is the user's input.
    result.exit_code = parsed.error().code() != 0 ? kExitHost : kExitUsage;
    return result;
  }
  pod::ParseOutput& out = *parsed;
  for (const auto& w : out.warnings) std::fprintf(stderr, "Warning: %s\n", w.ToString().c_str());
  pod::ApplyDefaults(out.pod);
  pod::FieldErrors errors = std::move(out.errors);
  for (auto& e : pod::ValidatePod(out.pod)) errors.push_back(std::move(e));
  if (check_images) {
    std::filesystem::path bundle = is_bundle ? path : path.parent_path();
    if (bundle.empty()) bundle = ".";
    for (auto& e : pod::ValidateImages(out.pod, bundle)) errors.push_back(std::move(e));
  }
  if (for_run) CheckRunnable(out.pod, errors);
  if (!errors.empty()) {
    for (const auto& e : errors) std::fprintf(stderr, "%s\n", e.ToString().c_str());
    std::fprintf(stderr, "podvisor: pod \"%s\" is invalid: %zu problem%s\n",
                 out.pod.metadata.name.c_str(), errors.size(), errors.size() == 1 ? "" : "s");
    result.exit_code = kExitUsage;
    return result;
  }
  result.pod = std::move(out.pod);
  return result;
}

}  // namespace

LoadedPod LoadPod(const std::filesystem::path& path, bool check_images) {
  return Load(path, check_images, false);
}

LoadedPod LoadPodForRun(const std::filesystem::path& bundle, bool manifest) {
  std::error_code ec;
  if (manifest) {
    if (!std::filesystem::is_regular_file(bundle, ec)) {
      std::fprintf(stderr, "podvisor: -f %s: no such manifest file\n", bundle.c_str());
      return LoadedPod{{}, std::filesystem::exists(bundle, ec) ? kExitUsage : kExitHost};
    }
    return Load(bundle, true, true);
  }
  if (!std::filesystem::is_directory(bundle, ec)) {
    std::fprintf(stderr, "podvisor: %s is not a bundle directory\n", bundle.c_str());
    return LoadedPod{{}, std::filesystem::exists(bundle, ec) ? kExitUsage : kExitHost};
  }
  return Load(bundle, true, true);
}

Result<Duration> ParseDuration(std::string_view text) {
  std::string s(text);
  char* end = nullptr;
  double value = std::strtod(s.c_str(), &end);
  std::string unit = end ? std::string(end) : "";
  if (end == s.c_str() || value < 0) {
    return Error("invalid duration \"" + s + "\": use e.g. 10s, 500ms, 5m, 2h");
  }
  double seconds;
  if (unit.empty() || unit == "s") {
    seconds = value;
  } else if (unit == "ms") {
    seconds = value / 1000;
  } else if (unit == "m") {
    seconds = value * 60;
  } else if (unit == "h") {
    seconds = value * 3600;
  } else {
    return Error("invalid duration \"" + s + "\": use e.g. 10s, 500ms, 5m, 2h");
  }
  if (seconds > 1e9) return Error("duration \"" + s + "\" is too long");
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
}

std::optional<std::string> CheckPodNetwork(const pod::Pod& pod, network::NetworkMode mode,
                                           bool sandbox) {
  if (mode == network::NetworkMode::kCni && !sandbox) {
    return "--network cni needs the pod's own network namespace: --sandbox namespaces (as root)";
  }
  if (pod.spec.host_network) return std::nullopt;
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

}  // namespace podvisor::cli
