// Short-name aliases of registries.conf (containers-registries.conf(5),
// the `[aliases]` table): `image: fedora` may name
// registry.fedoraproject.org/fedora on a host that says so, as podman and
// CRI-O read it.
//
// The files, as podman reads them: $CONTAINERS_REGISTRIES_CONF, else
// /etc/containers/registries.conf (for a non-root user
// $HOME/.config/containers/registries.conf when it exists), then
// /etc/containers/registries.conf.d/*.conf in name order; a later file's
// alias replaces an earlier one's.
//
// An unqualified name without an alias is docker.io's, as the kubelet
// normalises it (image_name.h). unqualified-search-registries is not
// used: trying registries in turn makes what a pod runs depend on which
// registry answers first, and a pod must name one image. Mirrors,
// insecure and blocked registries from the same files are applied by
// containers/image inside skopeo, not here.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "registry/image_name.h"

namespace podvisor::registry {

// Where the files are looked for; the defaults are the host's, tests
// point them at a temporary directory.
struct RegistriesConfLocation {
  std::filesystem::path main_file{};  // the registries.conf read first
  std::filesystem::path drop_in_dir{};
  // True when main_file came from $CONTAINERS_REGISTRIES_CONF: skopeo
  // 1.9 does not read that variable, so the proxy is given the file as
  // --registries-conf (image_proxy.h) to see the same configuration.
  bool from_environment = false;
};

// The location podman uses for this process's environment and user.
RegistriesConfLocation DefaultRegistriesConfLocation();

struct ShortNameAliases {
  std::map<std::string, std::string> aliases{};  // short name -> repository
  // Which file each alias came from, for messages.
  std::map<std::string, std::filesystem::path> sources{};
};

// Reads [aliases] of every file of `location` that exists. A file that is
// not valid TOML, or an alias that is not a short name to a fully
// qualified repository without tag or digest, is an error naming the file.
Result<ShortNameAliases> LoadShortNameAliases(const RegistriesConfLocation& location);

// ParseImageName, with a short name replaced by its alias (the tag and
// digest kept).
Result<ImageName> ResolveImageName(std::string_view reference, const ShortNameAliases& aliases);

}  // namespace podvisor::registry
