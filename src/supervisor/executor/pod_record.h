// supervisor::PodRecord: what the pod looks like to its readers.
//   - the v1 Pod of `status -o json`, with what the kubelet and the API
//     server fill in (defaults, imageID, containerID, hostIP);
//   - the summary `status` and `list` print (kubectl's columns);
//   - the kept record DIR/<pod>/status.json, rewritten when it changed
//     (docs/INTERFACE.md "Kept records").
// It reads the typed status it is given and never the Lifecycle: the
// Executor hands it the status of the moment, so it is tested on plain
// values (pod_record_test.cc).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "image/image.h"
#include "pod/model.h"
#include "pod/status.h"
#include "supervisor/control/control_server.h"

namespace podvisor::supervisor::executor {

class PodRecord {
 public:
  struct Facts {
    std::string node_hostname;  // spec.nodeName, the summary's NODE
    std::string runtime_name;   // containerID's scheme: "runc://<id>"
    // The pod has the node's address as its own (hostNetwork, or no
    // sandbox of its own): podIP defaults to hostIP.
    bool shares_node_network = false;
    std::filesystem::path record_file;  // DIR/<pod>/status.json
  };

  // `pod` and `images` (by container name) are the Executor's and outlive
  // the record.
  PodRecord(const pod::Pod& pod, const std::map<std::string, image::Image>& images, Facts facts);

  // What the API server would have given the pod: its uid and the time
  // it was created.
  void SetIdentity(std::string uid, WallTime created_at);
  // S20.7: the pod's block of host ids ("65536-131071"), said by the
  // annotation podvisor.io/user-namespace; "" for the host's ids.
  void SetUserNamespaceIds(std::string ids) { user_namespace_ids_ = std::move(ids); }
  // A container's imageID known without hashing (a layout's manifest
  // digest); the others are computed when a status first asks.
  void KnowImageId(const std::string& container, std::string image_id);

  // S17.6: what a resize leaves that neither the pod (its allocated
  // resources) nor the Lifecycle's status says.
  struct ResizeView {
    // The spec's resources where they are not the allocated ones (a
    // resize pending as Infeasible), by container.
    std::map<std::string, pod::ResourceRequirements> desired;
    // status.containerStatuses[].resources where the cgroup does not hold
    // the allocated ones, by container.
    std::map<std::string, pod::ResourceRequirements> actual;
  };
  void SetResizeView(ResizeView view) {
    resize_ = std::move(view);
    Changed();
  }

  nlohmann::json PodJson(const pod::PodStatus& status) const;
  nlohmann::json Summary(const pod::PodStatus& status, WallTime now) const;

  // The `status` reply, serialized once per state change however many
  // clients ask; Changed() drops it.
  control::ControlReply StatusReply(const pod::PodStatus& status);
  void Changed() { status_reply_.reset(); }
  // Rewrites the record when its text changed; a failed write is logged,
  // and the next change tries again.
  void Write(const pod::PodStatus& status);

 private:
  std::string ImageId(const std::string& container) const;
  std::string Serialize(const pod::PodStatus& status) const;
  void AddResizeFields(nlohmann::json& pod) const;

  const pod::Pod& pod_;
  const std::map<std::string, image::Image>& images_;
  Facts facts_;
  std::string uid_;
  std::string user_namespace_ids_;
  WallTime created_at_{};
  mutable std::map<std::string, std::string> image_ids_;  // by container, filled on demand
  std::optional<control::ControlReply> status_reply_;
  std::string record_text_;  // what the record file holds now
  ResizeView resize_;
};

}  // namespace podvisor::supervisor::executor
