// The pods under a state directory, running or ended, and their kept
// records (docs/INTERFACE.md "Kept records").
//
// A pod is a directory DIR/<name>/ whose name is a DNS label and that holds
// a control socket or a kept record (status.json, events.jsonl). The image
// cache (.images) and anything else there are never pods. A pod runs while
// its supervisor answers on control.sock: a socket file left by a
// SIGKILLed supervisor does not count, and such a pod's phase is Unknown
// until the next `run` recovers it.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "pod/status.h"

namespace podvisor::cli {

struct PodEntry {
  std::string name;
  bool running = false;
  std::string phase;  // Pending, Running, Succeeded, Failed or Unknown
};

// S14.23: a name the user gives (a pod's, a container's) is joined to the
// state or log directory, so it must be a DNS-1123 label, as pod
// directories and container names are: "../x", "a/b" and "." are refused
// with an error naming the argument (`what`: "pod name", "container name").
Status CheckNameArgument(std::string_view what, const std::string& value);

// What a pod's supervisor left behind after it exited (S14.30), each as
// "2 mounts under /run/podvisor/web": its mounts, its containers' runtime
// state, its network attachment, its control socket. Empty: all gone.
std::vector<std::string> LeftBehind(const std::filesystem::path& state_dir, const std::string& pod);

// A kept record (status.json) as JSON; nullopt when it is missing or no
// JSON object.
std::optional<nlohmann::json> ReadRecord(const std::filesystem::path& file);

// Every pod under `state_dir`, by name.
std::vector<PodEntry> FindPods(const std::filesystem::path& state_dir);

// True when a supervisor accepts a connection on `socket`.
bool SupervisorAnswers(const std::filesystem::path& socket);

// `name` when given (an error when it is no DNS label, or no such pod is
// there); else the only
// running pod; else the only pod. The error lists the candidates with
// their phase.
Result<std::string> SelectPod(const std::filesystem::path& state_dir, const std::string& name);

// The pod's v1 Pod: from its supervisor while it runs, else its kept
// record. A record whose supervisor died mid-run says phase Unknown.
Result<nlohmann::json> LoadPodRecord(const std::filesystem::path& state_dir,
                                     const std::string& pod);

// The typed status back from a v1 Pod's `status` (what SummarizePod and
// describe need); unknown or missing fields are left empty.
pod::PodStatus StatusFromPodJson(const nlohmann::json& pod);
// The spec's shape: container names and restart policies, which is what
// SummarizePod needs to tell sidecars.
pod::PodSpec SpecShapeFromPodJson(const nlohmann::json& pod);

}  // namespace podvisor::cli
