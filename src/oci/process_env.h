// What a container runs and with which environment, by Kubernetes' rules:
//  - `command` replaces the image Entrypoint and `args` replaces Cmd; a
//    command without args ignores Cmd; args without command run
//    Entrypoint + args.
//  - The container's own variables (envFrom, env, valueFrom: resolved by
//    pod/env_resolution.h as the kubelet does) overlay the image Env (same
//    name: the container's value, in the image's position), as containerd
//    merges them.
//  - `$(VAR)` in env values, command and args expands from the container's
//    own variables only, as the kubelet does, which never sees the image's
//    (Kubernetes' expansion.Expand): `$$` is a literal `$`, so `$$(VAR)`
//    gives `$(VAR)`; an unknown `$(VAR)` is left as written.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "image/image.h"
#include "pod/model.h"

namespace podvisor::oci {

// An ordered environment: (name, value) pairs, names unique.
using EnvList = std::vector<std::pair<std::string, std::string>>;

// The PATH containerd gives an image that has none.
inline constexpr std::string_view kDefaultPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// Kubernetes' expansion.Expand with a lookup that returns nullopt for an
// unknown name.
std::string ExpandVars(std::string_view input,
                       const std::function<std::optional<std::string>(std::string_view)>& lookup);

// Sets `name` in `env`, replacing in place when present.
void SetEnv(EnvList& env, std::string name, std::string value);
std::optional<std::string> LookupEnv(const EnvList& env, std::string_view name);

// The process environment: PATH (default) and HOSTNAME first, then the
// image Env, then CONTAINER_ENV (ResolveContainerEnv's result). Image and
// container may override PATH and HOSTNAME.
EnvList BuildContainerEnv(const image::ImageConfig& image, const EnvList& container_env,
                          std::string_view hostname);

// process.args by the command/args rules above, with $(VAR) expanded in the
// container's command and args against CONTAINER_ENV (not in the image's
// Entrypoint/Cmd, which Kubernetes never touches). Error when nothing is
// left to run.
Result<std::vector<std::string>> BuildProcessArgs(const image::ImageConfig& image,
                                                  const pod::Container& container,
                                                  const EnvList& container_env);

// process.cwd: workingDir, else the image WorkingDir, else "/". Must be
// absolute (the OCI spec requires it; runc refuses a relative cwd).
Result<std::string> BuildWorkingDir(const image::ImageConfig& image,
                                    const pod::Container& container);

// "NAME=value" strings for config.json.
std::vector<std::string> EnvStrings(const EnvList& env);

}  // namespace podvisor::oci
