#include "cli/pod_target.h"

#include <cstdio>
#include <string_view>

namespace podvisor::cli {

std::string PodWord(const std::string& word) {
  for (std::string_view type : {"pod/", "pods/", "po/"}) {
    if (word.starts_with(type)) return word.substr(type.size());
  }
  return word;
}

Result<TargetWords> ReadTargetWords(const std::vector<std::string>& words,
                                    const std::string& container_flag,
                                    const std::function<bool(const std::string&)>& is_pod) {
  if (words.size() > 2) return Error("too many arguments: [POD] [CONTAINER] (or POD -c CONTAINER)");
  TargetWords target{"", container_flag};
  if (words.size() == 2) {
    if (!container_flag.empty()) {
      return Error("a container was given both as argument and with -c");
    }
    target.pod = PodWord(words[0]);
    target.container = words[1];
  } else if (words.size() == 1) {
    // kubectl's reading first: the word is the pod. Only a word that names
    // no pod, with no -c, is taken as the container of the only pod.
    const std::string pod = PodWord(words[0]);
    if (!container_flag.empty() || pod != words[0] || is_pod(words[0])) {
      target.pod = pod;
    } else {
      target.container = words[0];
    }
  }
  return target;
}

Result<DefaultedContainer> DefaultContainer(const nlohmann::json& pod) {
  std::vector<std::string> names;
  std::vector<std::string> all;  // kubectl's list: containers, then "init (init)"
  const nlohmann::json spec = pod.value("spec", nlohmann::json::object());
  for (const auto& c : spec.value("containers", nlohmann::json::array())) {
    names.push_back(c.value("name", ""));
    all.push_back(names.back());
  }
  for (const auto& c : spec.value("initContainers", nlohmann::json::array())) {
    all.push_back(c.value("name", "") + " (init)");
  }
  const std::string pod_name =
      pod.value("metadata", nlohmann::json::object()).value("name", std::string());
  if (names.empty()) return Error("pod " + pod_name + " has no containers");
  const nlohmann::json annotations = pod.value("metadata", nlohmann::json::object())
                                         .value("annotations", nlohmann::json::object());
  std::string wanted;
  if (auto it = annotations.find(kDefaultContainerAnnotation);
      it != annotations.end() && it->is_string()) {
    wanted = it->get<std::string>();
  }
  for (const auto& n : names) {
    if (!wanted.empty() && n == wanted) return DefaultedContainer{n, ""};
  }
  DefaultedContainer chosen{names.front(), ""};
  // As kubectl does: an annotation naming no container is said and passed
  // over.
  if (!wanted.empty()) {
    chosen.notice = "Default container name \"" + wanted + "\" not found in pod " + pod_name;
  }
  if (all.size() > 1) {
    std::string list;
    for (const auto& n : all) list += (list.empty() ? "" : ", ") + n;
    if (!chosen.notice.empty()) chosen.notice += "\n";
    chosen.notice += "Defaulted container \"" + chosen.name + "\" out of: " + list;
  }
  return chosen;
}

Result<std::string> AnnounceDefaultContainer(const nlohmann::json& pod) {
  auto chosen = DefaultContainer(pod);
  if (!chosen) return chosen.take_error();
  if (!chosen->notice.empty()) std::fprintf(stderr, "%s\n", chosen->notice.c_str());
  return chosen->name;
}

}  // namespace podvisor::cli
