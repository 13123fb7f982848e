#include "shim/shim_args.h"

#include <filesystem>
#include <map>

#include "image/digest.h"

namespace podvisor::shim {

Result<ShimArgs> ParseShimArgs(const std::vector<std::string>& args) {
  ShimArgs out;
  out.publish_binary = "containerd";
  std::map<std::string, std::string*> values = {
      {"namespace", &out.ns},    {"id", &out.id},
      {"address", &out.address}, {"publish-binary", &out.publish_binary},
      {"bundle", &out.bundle},   {"socket", &out.socket},
  };
  std::map<std::string, bool*> booleans = {{"debug", &out.debug}, {"v", &out.version}};
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') break;
    if (arg == "--") {
      ++i;
      break;
    }
    std::string name = arg.substr(arg[1] == '-' ? 2 : 1);
    std::string value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
      has_value = true;
    }
    if (auto b = booleans.find(name); b != booleans.end()) {
      *b->second = !has_value || value == "true" || value == "1";
      continue;
    }
    auto v = values.find(name);
    if (v == values.end()) return Error("flag provided but not defined: -" + name);
    if (!has_value) {
      if (i + 1 >= args.size()) return Error("flag needs an argument: -" + name);
      value = args[++i];
    }
    *v->second = value;
  }
  if (i < args.size()) out.action = args[i++];
  if (i < args.size()) return Error("unexpected argument after " + out.action + ": " + args[i]);
  if (!out.action.empty() && out.action != "start" && out.action != "delete") {
    return Error("unknown action " + out.action + " (start, delete, or none to serve)");
  }
  if (!out.version && (out.ns.empty() || out.id.empty())) {
    return Error("-namespace and -id are required");
  }
  return out;
}

bool IsShimInvocation(int argc, char** argv) {
  if (argc < 1 || argv[0] == nullptr) return false;
  if (std::filesystem::path(argv[0]).filename() != kShimBinaryName) return false;
  return argc < 2 || argv[1][0] == '-';
}

std::string ShimSocketAddress(const ShimArgs& args) {
  std::string key = (std::filesystem::path(args.address) / args.ns / args.id).string();
  return "unix:///run/containerd/s/" + image::HashHex("sha256", key);
}

std::string SocketPath(const std::string& address) {
  const std::string prefix = "unix://";
  return address.rfind(prefix, 0) == 0 ? address.substr(prefix.size()) : address;
}

}  // namespace podvisor::shim
