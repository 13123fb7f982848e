#include "oci/process_env.h"

#include "pod/env_resolution.h"

#include <algorithm>

namespace podvisor::oci {

// One implementation of Kubernetes' expansion, in pod/ (env_resolution).
std::string ExpandVars(std::string_view input,
                       const std::function<std::optional<std::string>(std::string_view)>& lookup) {
  return pod::ExpandRefs(input, lookup);
}

void SetEnv(EnvList& env, std::string name, std::string value) {
  auto it = std::find_if(env.begin(), env.end(), [&](const auto& kv) { return kv.first == name; });
  if (it != env.end()) {
    it->second = std::move(value);
  } else {
    env.emplace_back(std::move(name), std::move(value));
  }
}

std::optional<std::string> LookupEnv(const EnvList& env, std::string_view name) {
  for (const auto& [key, value] : env) {
    if (key == name) return value;
  }
  return std::nullopt;
}

EnvList BuildContainerEnv(const image::ImageConfig& image, const EnvList& container_env,
                          std::string_view hostname) {
  EnvList env;
  SetEnv(env, "PATH", std::string(kDefaultPath));
  SetEnv(env, "HOSTNAME", std::string(hostname));
  for (const std::string& entry : image.env) {
    std::size_t eq = entry.find('=');  // ParseImageConfig guarantees one
    SetEnv(env, entry.substr(0, eq), entry.substr(eq + 1));
  }
  for (const auto& [name, value] : container_env) SetEnv(env, name, value);
  return env;
}

Result<std::vector<std::string>> BuildProcessArgs(const image::ImageConfig& image,
                                                  const pod::Container& container,
                                                  const EnvList& env) {
  auto expand = [&env](const std::string& s) {
    return ExpandVars(s, [&env](std::string_view name) { return LookupEnv(env, name); });
  };
  std::vector<std::string> args;
  if (!container.command.empty()) {
    for (const auto& s : container.command) args.push_back(expand(s));
    for (const auto& s : container.args) args.push_back(expand(s));
  } else if (!container.args.empty()) {
    args = image.entrypoint;
    for (const auto& s : container.args) args.push_back(expand(s));
  } else {
    args = image.entrypoint;
    args.insert(args.end(), image.cmd.begin(), image.cmd.end());
  }
  if (args.empty()) {
    return Error("no command: the container sets neither command nor args and image \"" +
                 container.image + "\" has no Entrypoint or Cmd");
  }
  return args;
}

Result<std::string> BuildWorkingDir(const image::ImageConfig& image,
                                    const pod::Container& container) {
  if (!container.working_dir.empty()) {
    if (container.working_dir[0] != '/') {
      return Error("workingDir: \"" + container.working_dir + "\" must be an absolute path");
    }
    return container.working_dir;
  }
  if (!image.working_dir.empty()) {
    if (image.working_dir[0] != '/') {
      return Error("image \"" + container.image + "\" WorkingDir \"" + image.working_dir +
                   "\" must be an absolute path");
    }
    return image.working_dir;
  }
  return std::string("/");
}

std::vector<std::string> EnvStrings(const EnvList& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env) {
    std::string entry = name;
    entry.append("=").append(value);
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace podvisor::oci
