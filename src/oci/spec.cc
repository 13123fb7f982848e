#include "oci/spec.h"

#include "common/file_io.h"
#include "oci/capabilities.h"
#include "oci/spec_internal.h"

namespace podvisor::oci {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxHostnameLength = 63;

}  // namespace

std::string ContainerFieldPath(const pod::Pod& pod, const pod::Container& container) {
  const auto& init = pod.spec.init_containers;
  for (std::size_t i = 0; i < init.size(); ++i) {
    if (&init[i] == &container) return "spec.initContainers[" + std::to_string(i) + "]";
  }
  const auto& regular = pod.spec.containers;
  for (std::size_t i = 0; i < regular.size(); ++i) {
    if (&regular[i] == &container) return "spec.containers[" + std::to_string(i) + "]";
  }
  return "container \"" + container.name + "\"";
}

std::string PodHostname(const pod::Pod& pod, const std::string& node_hostname) {
  if (pod.spec.host_network) return node_hostname;
  std::string name = pod.spec.hostname;
  if (name.empty()) {
    name = pod.metadata.name;
    if (name.size() > kMaxHostnameLength) {
      name.resize(kMaxHostnameLength);
      while (!name.empty() && (name.back() == '-' || name.back() == '.')) name.pop_back();
    }
  }
  // setHostnameAsFQDN: the kernel hostname is the pod's FQDN (the cluster
  // domain as network/hosts.h gives it; validation bounds its length).
  if (pod.spec.set_hostname_as_fqdn.value_or(false) && !pod.spec.subdomain.empty()) {
    name += "." + pod.spec.subdomain + "." +
            (pod.metadata.namespace_name.empty() ? std::string("default")
                                                 : pod.metadata.namespace_name) +
            ".svc.cluster.local";
  }
  return name;
}

bool IsPrivileged(const pod::Container& container) {
  return container.security_context && container.security_context->privileged.value_or(false);
}

bool HasReadOnlyRoot(const pod::Container& container) {
  return container.security_context &&
         container.security_context->read_only_root_filesystem.value_or(false);
}

Result<json> GenerateConfig(const pod::Pod& pod, const pod::Container& container,
                            const image::Image& image, const ContainerConfigInput& input) {
  std::string field = ContainerFieldPath(pod, container);
  internal::SpecContext ctx{pod,
                            container,
                            image,
                            input,
                            field,
                            PodHostname(pod, input.node_hostname),
                            /*privileged=*/false,
                            /*read_only_root=*/false,
                            /*capabilities=*/{},
                            /*own_env=*/{}};
  ctx.privileged = IsPrivileged(container);
  ctx.read_only_root = HasReadOnlyRoot(container);
  if (input.root_path.empty()) return Error(field + ": no root path given for the container");

  const std::vector<std::string> available =
      input.available_capabilities ? *input.available_capabilities : AllCapabilities();
  auto caps =
      ComputeCapabilities(container.security_context ? &*container.security_context : nullptr,
                          internal::SecurityField(ctx, "capabilities"), &available);
  if (!caps) return caps.take_error();
  // Kubernetes: a privileged container has every capability (containerd:
  // all the runtime itself has); add/drop were still checked above.
  if (ctx.privileged) {
    ctx.capabilities = available;
  } else {
    ctx.capabilities = std::move(*caps);
  }

  pod::DownwardApiNode node;
  node.node_name = input.node_hostname;
  node.host_ips = input.host_ips;
  node.pod_ips = input.pod_ips;
  node.cpu_milli = input.node_cpu_milli;
  node.memory_bytes = input.node_memory_bytes;
  node.ephemeral_storage_bytes = input.node_ephemeral_storage_bytes;
  auto own_env = pod::ResolveContainerEnv(pod, container, node);
  if (!own_env) return own_env.error().Wrap(field);
  ctx.own_env = std::move(*own_env);

  auto process = internal::BuildProcess(ctx);
  if (!process) return process.take_error();
  auto mounts = internal::BuildMounts(ctx);
  if (!mounts) return mounts.take_error();
  auto linux = internal::BuildLinux(ctx);
  if (!linux) return linux.take_error();

  json config{{"ociVersion", "1.0.2"},
              {"process", std::move(*process)},
              {"root", {{"path", input.root_path.string()}, {"readonly", ctx.read_only_root}}},
              {"mounts", std::move(*mounts)},
              {"linux", std::move(*linux)},
              {"annotations",
               {{"io.kubernetes.pod.name", pod.metadata.name},
                {"io.kubernetes.pod.namespace", pod.metadata.namespace_name},
                {"io.kubernetes.container.name", container.name}}}};
  // runc refuses a hostname without a UTS namespace of the container's
  // own or the pod's; hostNetwork pods use the host's.
  if (!pod.spec.host_network) config["hostname"] = ctx.hostname;
  if (input.rootless) AdaptConfigForRootless(config, *input.rootless);
  return config;
}

Status WriteConfigFile(const json& config, const std::filesystem::path& file) {
  // Unsynced: the runtime reads the file at once, and after a crash the
  // next run deletes the instance (recovery) instead of reading it again.
  // A journal commit per container was a measurable part of pod start.
  return WriteFileAtomic(file, config.dump(2) + "\n", 0600, Durability::kUnsynced);
}

}  // namespace podvisor::oci
