// The pod as its readers see it (pod_record.h).
//
// The v1 Pod (`status -o json`, the kept record) is what a
// client of the API server would read, so that real clients load it
// (issue 16: the official Kubernetes Python client's V1Pod). Beyond the
// typed status this adds what the kubelet and the API server fill in:
//   - spec.nodeName, the node the pod runs on;
//   - the spec defaults the API server applies on admission (dnsPolicy,
//     schedulerName, securityContext {}, imagePullPolicy,
//     terminationMessagePath/Policy, enableServiceLinks, priority, ...),
//     where the manifest left them out;
//   - per container, imageID (the image's digest) and containerID with the
//     runtime's scheme ("runc://<id>"), as the kubelet reports
//     "containerd://<id>";
//   - metadata.generation and status.observedGeneration (1: the spec of a
//     podvisor pod never changes);
//   - status.hostIP(s), the node's address, and podIP(s) for a pod in the
//     host's network namespace.
#include "supervisor/executor/pod_record.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include "common/file_io.h"
#include "common/log.h"

#include "image/rootfs_digest.h"
#include "pod/resize.h"
#include "pod/serialize.h"
#include "pod/status_summary.h"
#include "podvisor_version.h"

namespace podvisor::supervisor::executor {
namespace {

// The node's address, as the kubelet reports status.hostIP: here the
// first IPv4 address of an interface that is up and not loopback ("" when
// there is none). Read once: a supervisor's node does not move.
const std::string& HostIp() {
  static const std::string ip = [] {
    std::string found;
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return found;
    for (ifaddrs* a = list; a && found.empty(); a = a->ifa_next) {
      if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
      if (!(a->ifa_flags & IFF_UP) || (a->ifa_flags & IFF_LOOPBACK)) continue;
      char buf[INET_ADDRSTRLEN];
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
      if (::inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf)) found = buf;
    }
    ::freeifaddrs(list);
    return found;
  }();
  return ip;
}

void Default(nlohmann::json& obj, const char* key, nlohmann::json value) {
  if (!obj.contains(key)) obj[key] = std::move(value);
}

// The image's tag: "latest" when it has none, as the API server decides
// imagePullPolicy (Always for :latest, IfNotPresent otherwise).
bool IsLatest(const std::string& image) {
  if (image.find('@') != std::string::npos) return false;
  std::size_t slash = image.rfind('/');
  std::size_t colon = image.rfind(':');
  if (colon == std::string::npos || (slash != std::string::npos && colon < slash)) return true;
  return image.substr(colon + 1) == "latest";
}

void ContainerDefaults(nlohmann::json& c) {
  Default(c, "imagePullPolicy", IsLatest(c.value("image", "")) ? "Always" : "IfNotPresent");
  Default(c, "terminationMessagePath", "/dev/termination-log");
  Default(c, "terminationMessagePolicy", "File");
  Default(c, "resources", nlohmann::json::object());
}

void ApiServerDefaults(nlohmann::json& pod) {
  Default(pod["metadata"], "namespace", "default");
  Default(pod["metadata"], "generation", 1);
  nlohmann::json& spec = pod["spec"];
  Default(spec, "dnsPolicy", "ClusterFirst");
  Default(spec, "schedulerName", "default-scheduler");
  Default(spec, "securityContext", nlohmann::json::object());
  Default(spec, "enableServiceLinks", true);
  Default(spec, "priority", 0);
  Default(spec, "serviceAccountName", "default");
  Default(spec, "serviceAccount", spec.value("serviceAccountName", "default"));
  Default(spec, "preemptionPolicy", "PreemptLowerPriority");
  Default(spec, "tolerations", nlohmann::json::array());
  for (const char* list : {"initContainers", "containers"}) {
    if (auto it = spec.find(list); it != spec.end() && it->is_array()) {
      for (auto& c : *it) ContainerDefaults(c);
    }
  }
}

}  // namespace

PodRecord::PodRecord(const pod::Pod& pod, const std::map<std::string, image::Image>& images,
                     Facts facts)
    : pod_(pod), images_(images), facts_(std::move(facts)) {}

void PodRecord::SetIdentity(std::string uid, WallTime created_at) {
  uid_ = std::move(uid);
  created_at_ = created_at;
}

void PodRecord::KnowImageId(const std::string& container, std::string image_id) {
  image_ids_[container] = std::move(image_id);
}

// The imageID of a container's image: its layout's manifest digest, or the
// content digest of its plain rootfs, computed once per image dir.
std::string PodRecord::ImageId(const std::string& container) const {
  if (auto id = image_ids_.find(container); id != image_ids_.end()) return id->second;
  auto image = images_.find(container);
  if (image == images_.end()) return "";
  for (const auto& [other, seen] : images_) {
    if (auto id = image_ids_.find(other); id != image_ids_.end() && seen.dir == image->second.dir) {
      return image_ids_[container] = id->second;
    }
  }
  auto digest = image::RootfsDigest(image->second.rootfs);
  if (!digest) {
    // The rootfs is in use by running containers; an unreadable entry
    // costs the status its imageID, not the pod.
    log::Warn("container {}: no imageID: {}", container, digest.error().message());
    return image_ids_[container] = "";
  }
  return image_ids_[container] = *digest;
}

// S17.6, as the kubelet reports a resizable container (a regular one or a
// sidecar) with cpu or memory resources: status...allocatedResources (the
// requests it was admitted with) and status...resources (what its cgroup
// holds); the spec shows what was asked, pending or not.
void PodRecord::AddResizeFields(nlohmann::json& pod) const {
  for (const auto& [name, desired] : resize_.desired) {
    for (const char* list : {"initContainers", "containers"}) {
      auto it = pod["spec"].find(list);
      if (it == pod["spec"].end()) continue;
      for (auto& c : *it) {
        if (c.value("name", "") == name) c["resources"] = pod::ResourcesJson(desired, false);
      }
    }
  }
  for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
    auto it = pod["status"].find(list);
    if (it == pod["status"].end()) continue;
    for (auto& c : *it) {
      const std::string name = c.value("name", "");
      const pod::Container* spec = pod::FindResizableContainer(pod_.spec, name);
      if (!spec) continue;
      const pod::ResourceRequirements& allocated = spec->resources;
      nlohmann::json requests = pod::ResourcesJson(allocated, true);
      if (!requests.empty()) c["allocatedResources"] = requests;
      auto actual = resize_.actual.find(name);
      nlohmann::json resources =
          pod::ResourcesJson(actual != resize_.actual.end() ? actual->second : allocated, false);
      if (!resources.empty()) c["resources"] = resources;
    }
  }
}

nlohmann::json PodRecord::PodJson(const pod::PodStatus& status) const {
  nlohmann::json pod = pod::ToJson(pod_);
  pod["metadata"]["uid"] = uid_;
  pod["metadata"]["creationTimestamp"] = FormatRfc3339(created_at_);
  // S15.2: the podvisor serving the pod now, as the kubelet marks a static
  // pod's source in annotations (kubernetes.io/config.source).
  pod["metadata"]["annotations"]["podvisor.io/supervisor-version"] = PODVISOR_VERSION;
  // S20.7: the v1 Pod has no field for it; an annotation keeps status -o
  // json loadable by every Kubernetes client.
  if (!user_namespace_ids_.empty()) {
    pod["metadata"]["annotations"]["podvisor.io/user-namespace"] = user_namespace_ids_;
  }
  if (!facts_.node_hostname.empty()) pod["spec"]["nodeName"] = facts_.node_hostname;
  ApiServerDefaults(pod);
  pod::AddStatusToPodJson(status, pod);
  pod["status"]["observedGeneration"] = 1;
  if (!HostIp().empty()) {
    Default(pod["status"], "hostIP", HostIp());
    Default(pod["status"], "hostIPs", nlohmann::json::array({{{"ip", HostIp()}}}));
    // A pod in the host's network namespace has the node's address, as
    // the kubelet reports hostNetwork pods; a pod network's address is the
    // sandbox's to report.
    if (facts_.shares_node_network) {
      Default(pod["status"], "podIP", HostIp());
      Default(pod["status"], "podIPs", nlohmann::json::array({{{"ip", HostIp()}}}));
    }
  }
  AddResizeFields(pod);
  for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
    auto it = pod["status"].find(list);
    if (it == pod["status"].end()) continue;
    for (auto& c : *it) {
      c["imageID"] = ImageId(c.value("name", ""));
      if (auto cid = c.find("containerID");
          cid != c.end() && cid->is_string() && !cid->get<std::string>().empty()) {
        *cid = facts_.runtime_name + "://" + cid->get<std::string>();
      }
    }
  }
  return pod;
}

// What `podvisor status` and `list` print: kubectl's columns, by the
// summariser the CLI uses on a kept record (pod/status_summary.h).
nlohmann::json PodRecord::Summary(const pod::PodStatus& status, WallTime now) const {
  pod::PodFacts facts{pod_.metadata.name, created_at_, facts_.node_hostname,
                      status.pod_ips.empty() ? std::string("<none>") : status.pod_ips.front()};
  const pod::PodLine line = pod::SummarizePodLine(pod_.spec, status, facts, now);
  nlohmann::json out = {{"name", line.name},
                        {"ready", line.ready},
                        {"status", line.status},
                        {"restarts", line.restarts},
                        {"age", line.age},
                        {"node", line.node},
                        {"ip", line.ip},
                        {"phase", std::string(pod::PodPhaseName(status.phase))},
                        {"containers", nlohmann::json::array()}};
  for (const pod::ContainerLine& c : line.containers) {
    out["containers"].push_back({{"name", c.name},
                                 {"type", c.type},
                                 {"ready", c.ready},
                                 {"started", c.started},
                                 {"state", c.state},
                                 {"lastState", c.last_state},
                                 {"restarts", c.restart_count},
                                 {"restartsColumn", c.restarts},
                                 {"image", c.image},
                                 {"containerID", c.container_id}});
  }
  return out;
}

// replace: a termination message is the container's bytes and may be
// invalid UTF-8 (or cut inside a character by its 4096-byte tail); strict
// dumping threw and aborted the supervisor.
std::string PodRecord::Serialize(const pod::PodStatus& status) const {
  return PodJson(status).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

control::ControlReply PodRecord::StatusReply(const pod::PodStatus& status) {
  if (!status_reply_) status_reply_.emplace(control::ControlReply::FromText(Serialize(status)));
  return *status_reply_;
}

// DIR/<pod>/status.json: `status`, `describe`, `list` and `run`'s last
// lines read the truth after the supervisor has gone (docs/INTERFACE.md
// "Kept records"). Runtime state, mounts and cgroups go with the pod; this
// file and events.jsonl stay until `podvisor rm`.
void PodRecord::Write(const pod::PodStatus& status) {
  // Serialized once per batch and compared: most batches change nothing
  // visible (a probe success, a timer), and those cost no write. The same
  // text then answers `status` requests until the next event.
  std::string text = Serialize(status);
  if (!status_reply_) status_reply_.emplace(control::ControlReply::FromText(text));
  if (text == record_text_) return;
  // Unsynced: a reader sees the old record or the new one, never half of
  // one; the state dir is /run (tmpfs) by default, and a record that did
  // not survive a power loss is a pod that did not either.
  if (auto s = WriteFileAtomic(facts_.record_file, text + "\n", 0644, Durability::kUnsynced); !s) {
    log::Warn("{}", s.error().message());
    return;
  }
  record_text_ = std::move(text);
}

}  // namespace podvisor::supervisor::executor
