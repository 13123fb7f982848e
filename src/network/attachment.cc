#include "network/attachment.h"

#include <fstream>
#include <sstream>
#include <system_error>

#include "common/file_io.h"

namespace podvisor::network {
namespace {

// The capability podvisor provides (CNI CONVENTIONS.md "portMappings").
constexpr const char* kPortMappings = "portMappings";

nlohmann::json PortMappingsJson(const std::vector<PortMapping>& mappings) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& m : mappings) {
    nlohmann::json entry{
        {"hostPort", m.host_port}, {"containerPort", m.container_port}, {"protocol", m.protocol}};
    if (!m.host_ip.empty()) entry["hostIP"] = m.host_ip;
    out.push_back(std::move(entry));
  }
  return out;
}

std::string PluginType(const NetworkConfigList& network, size_t index) {
  return network.plugins[index].at("type").get<std::string>();
}

// Runs one plugin of the chain; the error names network and plugin.
Result<std::string> CallPlugin(const NetworkConfigList& network, size_t index,
                               const AttachParams& params, CniCommand command,
                               const nlohmann::json* prev_result) {
  std::string type = PluginType(network, index);
  PluginCall call{.command = command,
                  .type = type,
                  .bin_dirs = params.bin_dirs,
                  .container_id = params.container_id,
                  .netns = params.netns,
                  .ifname = params.ifname,
                  .args = params.CniArgs(),
                  .stdin_config = PluginConfig(network, index, params, prev_result).dump(),
                  .timeout = params.timeout};
  auto outcome = RunPlugin(call);
  if (!outcome) return ChainError(network, type, command, outcome.error().message());
  if (!outcome->ok) return ChainError(network, type, command, outcome->error->ToString());
  return std::move(outcome->stdout_text);
}

}  // namespace

std::string AttachParams::CniArgs() const {
  return "IgnoreUnknown=1;K8S_POD_NAMESPACE=" + pod_namespace + ";K8S_POD_NAME=" + pod_name +
         ";K8S_POD_INFRA_CONTAINER_ID=" + container_id + ";K8S_POD_UID=" + pod_uid;
}

Error ChainError(const NetworkConfigList& network, const std::string& type, CniCommand command,
                 const std::string& what) {
  return Error("network " + network.name + ": plugin " + type + " " + CniCommandName(command) +
               ": " + what);
}

nlohmann::json PluginConfig(const NetworkConfigList& network, size_t index,
                            const AttachParams& params, const nlohmann::json* prev_result) {
  nlohmann::json config = network.plugins[index];
  config["name"] = network.name;
  config["cniVersion"] = network.cni_version;
  if (prev_result != nullptr && !prev_result->is_null()) config["prevResult"] = *prev_result;
  // runtimeConfig carries only what the plugin asked for by capability.
  config.erase("runtimeConfig");
  nlohmann::json runtime = nlohmann::json::object();
  if (auto caps = config.find("capabilities"); caps != config.end() && caps->is_object()) {
    auto pm = caps->find(kPortMappings);
    if (pm != caps->end() && pm->is_boolean() && pm->get<bool>() && !params.port_mappings.empty()) {
      runtime[kPortMappings] = PortMappingsJson(params.port_mappings);
    }
  }
  if (!runtime.empty()) config["runtimeConfig"] = std::move(runtime);
  return config;
}

Result<Attachment> Attach(const NetworkConfigList& network, const AttachParams& params,
                          const std::filesystem::path& state_file) {
  Attachment attachment{network, params, std::nullopt};
  if (!state_file.empty()) {
    if (Status s = SaveAttachment(attachment, state_file); !s) return s.take_error();
  }
  nlohmann::json prev;  // null: no prevResult for the first plugin
  for (size_t i = 0; i < network.plugins.size(); ++i) {
    auto out = CallPlugin(network, i, params, CniCommand::kAdd, prev.is_null() ? nullptr : &prev);
    Result<CniResult> parsed = out ? ParseCniResult(*out) : Result<CniResult>(out.error());
    if (out && !parsed) {
      parsed =
          ChainError(network, PluginType(network, i), CniCommand::kAdd, parsed.error().message());
    }
    if (!parsed) {
      // Undo what the chain did so far, and what the failing plugin may
      // have half done: DEL is idempotent, so every plugin gets one.
      Attachment partial{network, params, std::nullopt};
      if (!prev.is_null()) {
        auto prev_result = ParseCniResult(prev.dump());
        if (prev_result) partial.result = std::move(*prev_result);
      }
      // Best effort, and the saved attachment goes either way: a plugin
      // whose ADD failed must clean up after itself (CNI spec), and a
      // configuration that cannot ADD often cannot DEL either, which must
      // not keep the pod from ever running again.
      Status undone = Detach(partial, {});
      if (!state_file.empty()) {
        std::error_code ec;
        std::filesystem::remove(state_file, ec);
      }
      Error error = parsed.take_error();
      if (!undone) return Error(error.message() + "; cleaning up: " + undone.error().message());
      return error;
    }
    prev = parsed->raw;
  }
  auto result = ParseCniResult(prev.dump());
  if (!result) return result.take_error();
  attachment.result = std::move(*result);
  if (!state_file.empty()) {
    if (Status s = SaveAttachment(attachment, state_file); !s) {
      Error error = s.take_error();
      if (Status undone = Detach(attachment, {}); !undone) {
        return Error(error.message() + "; cleaning up: " + undone.error().message());
      }
      return error;
    }
  }
  return attachment;
}

Status Detach(const Attachment& attachment, const std::filesystem::path& state_file) {
  const auto& network = attachment.network;
  const nlohmann::json* prev = attachment.result ? &attachment.result->raw : nullptr;
  std::string errors;
  for (size_t i = network.plugins.size(); i-- > 0;) {
    auto out = CallPlugin(network, i, attachment.params, CniCommand::kDel, prev);
    if (!out) errors += (errors.empty() ? "" : "; ") + out.error().message();
  }
  if (!errors.empty()) return Error(errors);
  if (!state_file.empty()) {
    std::error_code ec;
    std::filesystem::remove(state_file, ec);
    if (ec) return Error("removing " + state_file.string() + ": " + ec.message(), ec.value());
  }
  return Ok();
}

Status SaveAttachment(const Attachment& attachment, const std::filesystem::path& state_file) {
  const auto& p = attachment.params;
  nlohmann::json mappings = PortMappingsJson(p.port_mappings);
  nlohmann::json bin_dirs = nlohmann::json::array();
  for (const auto& d : p.bin_dirs) bin_dirs.push_back(d.string());
  nlohmann::json doc{
      {"network", attachment.network.ToJson()},
      {"containerId", p.container_id},
      {"netns", p.netns},
      {"ifname", p.ifname},
      {"podNamespace", p.pod_namespace},
      {"podName", p.pod_name},
      {"podUid", p.pod_uid},
      {"portMappings", std::move(mappings)},
      {"binDirs", std::move(bin_dirs)},
      {"timeoutMs", std::chrono::duration_cast<std::chrono::milliseconds>(p.timeout).count()},
  };
  if (attachment.result) doc["result"] = attachment.result->raw;
  // Unsynced, as before: the attachment lives in the state dir (tmpfs
  // under /run by default) and names a netns that a power loss ends too.
  return WriteFileAtomic(state_file, doc.dump(2) + "\n", 0644, Durability::kUnsynced);
}

Result<std::optional<Attachment>> LoadAttachment(const std::filesystem::path& state_file) {
  std::ifstream in(state_file);
  if (!in) {
    if (errno == ENOENT) return std::optional<Attachment>();
    return Error::FromErrno("reading " + state_file.string());
  }
  std::stringstream text;
  text << in.rdbuf();
  auto bad = [&](const std::string& what) {
    return Error(state_file.string() + ": " + what, EINVAL);
  };
  auto doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("network")) {
    return bad("not a saved network attachment");
  }
  auto network = ParseConfList(doc["network"].dump(), state_file);
  if (!network) return network.take_error();
  Attachment a{std::move(*network), {}, std::nullopt};
  try {
    a.params.container_id = doc.at("containerId").get<std::string>();
    a.params.netns = doc.value("netns", "");
    a.params.ifname = doc.value("ifname", "eth0");
    a.params.pod_namespace = doc.value("podNamespace", "");
    a.params.pod_name = doc.value("podName", "");
    a.params.pod_uid = doc.value("podUid", "");
    for (const auto& m : doc.value("portMappings", nlohmann::json::array())) {
      a.params.port_mappings.push_back({m.at("hostPort").get<int>(),
                                        m.at("containerPort").get<int>(),
                                        m.value("protocol", "tcp"), m.value("hostIP", "")});
    }
    for (const auto& d : doc.value("binDirs", nlohmann::json::array())) {
      a.params.bin_dirs.emplace_back(d.get<std::string>());
    }
    a.params.timeout = std::chrono::milliseconds(doc.value(
        "timeoutMs",
        static_cast<int64_t>(
            std::chrono::duration_cast<std::chrono::milliseconds>(kDefaultPluginTimeout).count())));
  } catch (const nlohmann::json::exception& e) {
    return bad(e.what());
  }
  if (auto it = doc.find("result"); it != doc.end() && !it->is_null()) {
    auto result = ParseCniResult(it->dump());
    if (!result) return bad(result.error().message());
    a.result = std::move(*result);
  }
  return std::optional<Attachment>(std::move(a));
}

}  // namespace podvisor::network
