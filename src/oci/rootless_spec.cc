#include "oci/rootless_spec.h"

#include <string>

namespace podvisor::oci {

void AdaptConfigForRootless(nlohmann::json& config, const RootlessConfig& rootless) {
  if (rootless.no_cgroup && config.contains("linux")) {
    nlohmann::json& linux = config["linux"];
    linux.erase("cgroupsPath");
    if (linux.contains("resources")) {
      nlohmann::json kept = nlohmann::json::object();
      if (linux["resources"].contains("devices")) kept["devices"] = linux["resources"]["devices"];
      linux["resources"] = std::move(kept);
    }
  }
  if (rootless.bind_sys && config.contains("mounts")) {
    for (nlohmann::json& mount : config["mounts"]) {
      if (mount.value("type", std::string()) != "sysfs") continue;
      mount = {{"destination", mount.value("destination", std::string("/sys"))},
               {"type", "bind"},
               {"source", "/sys"},
               {"options", {"rbind", "nosuid", "noexec", "nodev", "ro"}}};
    }
  }
  if (rootless.single_id && config.contains("mounts")) {
    for (nlohmann::json& mount : config["mounts"]) {
      if (mount.value("type", std::string()) != "devpts" || !mount.contains("options")) continue;
      nlohmann::json options = nlohmann::json::array();
      for (const auto& o : mount["options"]) {
        if (o != "gid=5") options.push_back(o);
      }
      mount["options"] = std::move(options);
    }
  }
}

}  // namespace podvisor::oci
