// `podvisor patch [POD] --subresource resize -p PATCH` (SEMANTICS S17,
// docs/INTERFACE.md): kubectl's in-place resize of a running pod. The
// patch is kubectl's document, {"spec":{"containers":[{"name":...,
// "resources":{...}}]}}, in JSON or YAML; it becomes the control socket's
// `resize` request, a merge by container name, and the supervisor answers
// as the API server and the kubelet would.
#include <cstdio>
#include <memory>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/default_dirs.h"
#include "cli/user_dirs.h"
#include "common/terminal_text.h"
#include "pod/parse.h"

namespace podvisor::cli {
namespace {

struct PatchArgs {
  std::string pod;
  std::string state_dir = DefaultStateDir();
  std::string subresource;
  std::string patch;
  std::string type = "strategic";
};

int Usage(const std::string& message) {
  std::fprintf(stderr, "podvisor: %s\n", TerminalSafe(message).c_str());
  return kExitUsage;
}

// kubectl's patch document to the request's "containers": each entry of
// spec.containers and spec.initContainers (sidecars) with its name and
// resources. What a resize cannot change is refused here, naming it.
Result<nlohmann::json> ResizeContainers(const nlohmann::json& doc) {
  if (!doc.is_object())
    return Error("the patch must be an object: {\"spec\":{\"containers\":[...]}}");
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [key, value] : doc.items()) {
    if (key != "spec") {
      return Error(key + ": Forbidden: a resize changes only spec.containers[*].resources");
    }
    if (!value.is_object()) return Error("spec: must be an object");
    for (const auto& [list, entries] : value.items()) {
      if (list != "containers" && list != "initContainers") {
        return Error("spec." + list +
                     ": Forbidden: a resize changes only the resources of containers");
      }
      if (!entries.is_array()) return Error("spec." + list + ": must be a list");
      for (std::size_t i = 0; i < entries.size(); ++i) {
        const nlohmann::json& e = entries[i];
        const std::string at = "spec." + list + "[" + std::to_string(i) + "]";
        if (!e.is_object()) return Error(at + ": must be an object");
        nlohmann::json entry = nlohmann::json::object();
        for (const auto& [field, v] : e.items()) {
          if (field != "name" && field != "resources") {
            std::string where = at;
            where.append(".").append(field);
            return Error(where + ": Forbidden: a resize changes only resources");
          }
          entry[field] = v;
        }
        out.push_back(std::move(entry));
      }
    }
  }
  if (out.empty()) return Error("the patch names no container: {\"spec\":{\"containers\":[...]}}");
  return out;
}

int Patch(const PatchArgs& a) {
  if (a.subresource != "resize") {
    return Usage("patch changes a running pod's resources only: use --subresource resize");
  }
  if (a.type != "strategic" && a.type != "merge") {
    return Usage("--type " + a.type + ": only merge and strategic patches are supported");
  }
  if (a.patch.empty()) return Usage("patch needs -p PATCH");
  // JSON is YAML; one reader takes both, as kubectl does.
  auto doc = pod::YamlToJson(a.patch);
  if (!doc) return Usage("the patch is not JSON or YAML: " + doc.error().message());
  auto containers = ResizeContainers(*doc);
  if (!containers) return Usage(containers.error().message());
  std::string pod = a.pod;
  if (pod.rfind("pod/", 0) == 0) pod = pod.substr(4);  // kubectl's TYPE/NAME
  auto asked = AskRunningPod(
      a.state_dir, pod, {{"op", "resize"}, {"containers", std::move(*containers)}}, kReplyTimeout);
  if (!asked) {
    std::fprintf(stderr, "podvisor: %s\n", TerminalSafe(asked.error().message()).c_str());
    return kExitFailed;
  }
  std::printf("pod/%s patched\n", asked->pod.c_str());
  // The request was taken; whether the node can give it is the status's.
  for (const auto& c : asked->reply["status"].value("conditions", nlohmann::json::array())) {
    const std::string type = c.value("type", "");
    if (type != "PodResizePending" && type != "PodResizeInProgress") continue;
    std::fprintf(stderr, "podvisor: %s: %s: %s\n", type.c_str(),
                 TerminalSafe(c.value("reason", "")).c_str(),
                 TerminalSafe(c.value("message", "")).c_str());
  }
  return kExitSucceeded;
}

}  // namespace

void AddPatchCommand(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<PatchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "patch", "Resize a running pod's containers in place (kubectl patch --subresource resize)");
  cmd->add_option("pod", a->pod, "the pod (pod/NAME also); the only one when omitted");
  cmd->add_option("--state-dir", a->state_dir, "as given to run")->capture_default_str();
  cmd->add_option("--subresource", a->subresource, "resize (the only one)")->required();
  cmd->add_option("-p,--patch", a->patch,
                  "the patch, JSON or YAML: {\"spec\":{\"containers\":[{\"name\":\"app\","
                  "\"resources\":{...}}]}}")
      ->required();
  cmd->add_option("--type", a->type, "merge or strategic (the same for resources)")
      ->capture_default_str();
  cmd->callback([a, &exit_code] { exit_code = Patch(*a); });
}

}  // namespace podvisor::cli
