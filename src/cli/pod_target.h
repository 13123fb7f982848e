// What `logs` and `exec` act on, named as kubectl names it: POD first,
// the container with -c; without one, the container the pod's annotation
// kubectl.kubernetes.io/default-container names, else its first
// container, with kubectl's "Defaulted container" notice when it had a
// choice (docs/INTERFACE.md "Client commands", S14.25).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace podvisor::cli {

// The annotation kubectl reads for the container to default to.
inline constexpr const char* kDefaultContainerAnnotation =
    "kubectl.kubernetes.io/default-container";

// kubectl's TYPE/NAME form of a pod argument: "pod/web", "pods/web" and
// "po/web" name the pod "web" (S14.25); any other word is returned as it
// is, for the name checks (S14.23) to judge.
std::string PodWord(const std::string& word);

struct TargetWords {
  std::string pod;        // "": the only pod (pod_records.h SelectPod)
  std::string container;  // "": the default container
};

// `words` are the command's [POD] [CONTAINER] arguments and `container_flag`
// its -c. POD comes first. A lone word that names no pod (`is_pod`) is the
// container of the only pod, podvisor's form before it followed kubectl,
// still taken where it cannot be misread.
Result<TargetWords> ReadTargetWords(const std::vector<std::string>& words,
                                    const std::string& container_flag,
                                    const std::function<bool(const std::string&)>& is_pod);

struct DefaultedContainer {
  std::string name;
  std::string notice;  // kubectl's line for stderr, "" when there was no choice
};

// The container a command defaults to in `pod` (a v1 Pod): the annotation's
// when it names one of the pod's containers, else the first of
// spec.containers. An error when the pod has no container at all.
Result<DefaultedContainer> DefaultContainer(const nlohmann::json& pod);
// DefaultContainer's name, its notice printed on stderr (logs, exec).
Result<std::string> AnnounceDefaultContainer(const nlohmann::json& pod);

}  // namespace podvisor::cli
