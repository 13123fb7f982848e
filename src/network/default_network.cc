#include "network/default_network.h"

#include <fstream>
#include <sstream>
#include <system_error>

#include "common/file_io.h"

namespace podvisor::network {

NetworkConfigList DefaultNetwork(const DefaultNetworkOptions& options) {
  nlohmann::json ipam{
      {"type", "host-local"},
      {"ranges", nlohmann::json::array({nlohmann::json::array({{{"subnet", options.subnet}}})})},
      {"routes", nlohmann::json::array({{{"dst", "0.0.0.0/0"}}})},
  };
  if (!options.ipam_data_dir.empty()) ipam["dataDir"] = options.ipam_data_dir.string();
  NetworkConfigList list;
  list.name = options.name;
  list.cni_version = "1.0.0";
  list.plugins = {
      {{"type", "bridge"},
       {"bridge", options.bridge},
       {"isGateway", true},
       {"ipMasq", true},
       {"hairpinMode", true},
       {"ipam", std::move(ipam)}},
      {{"type", "portmap"}, {"capabilities", {{"portMappings", true}}}},
      {{"type", "firewall"}},
  };
  return list;
}

Result<NetworkConfigList> WriteDefaultNetwork(const DefaultNetworkOptions& options,
                                              const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error("creating " + dir.string() + ": " + ec.message(), ec.value());
  std::filesystem::path file = dir / (options.name + ".conflist");
  std::string text = DefaultNetwork(options).ToJson().dump(2) + "\n";

  std::ifstream current(file);
  std::stringstream existing;
  if (current) existing << current.rdbuf();
  if (!current || existing.str() != text) {
    // Unsynced: the directory is under /run (/run/podvisor/cni by
    // default), and every run writes the file again when it is missing.
    if (auto s = WriteFileAtomic(file, text, 0644, Durability::kUnsynced); !s) {
      return s.take_error();
    }
  }
  return LoadConfFile(file);
}

}  // namespace podvisor::network
