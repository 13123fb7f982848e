// Image references as Kubernetes and docker read them: what `image:` in a
// pod means once normalised ("nginx" is docker.io/library/nginx:latest),
// and the imagePullPolicy the API server gives a container that sets none.
//
// The grammar is distribution's reference grammar (docker/distribution
// reference/regexp.go): [DOMAIN/]PATH[:TAG][@DIGEST]; the first component
// is a domain when it has a '.' or ':' or is "localhost", else the image
// is on docker.io, where a one-component path gets "library/". Parsing is
// strict because the name becomes a skopeo argument and a store key.
//
// Short-name aliases (short_names.h) are applied before this
// normalisation; registries.conf's search order is not (see there).
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace podvisor::registry {

constexpr std::string_view kDockerHubDomain = "docker.io";

struct ImageName {
  std::string domain{};  // "docker.io", "registry.example.com:5000"
  std::string path{};    // "library/nginx", "team/app"
  std::string tag{};     // "" when the reference named none
  std::string digest{};  // "sha256:<hex>", "" when none
  // True when the reference as written had no domain (a short name):
  // only those may be replaced by a registries.conf alias.
  bool short_name = false;

  // "docker.io/library/nginx"
  std::string Repository() const { return domain + "/" + path; }
  // The normalised reference as the kubelet shows it: the repository,
  // ":tag" ("latest" when neither tag nor digest was given) and "@digest".
  std::string ToString() const;
  // What to fetch: "repo@digest" when a digest was given (a digest wins
  // over a tag, as containerd resolves "name:tag@digest"), else "repo:tag".
  std::string PullReference() const;
  // "docker.io/library/nginx@sha256:…", the kubelet's imageID.
  std::string RepoDigest(std::string_view manifest_digest) const {
    return Repository() + "@" + std::string(manifest_digest);
  }
};

// Parses and normalises; errors name the reference and the rule it breaks
// ("invalid reference format: repository name must be lowercase").
Result<ImageName> ParseImageName(std::string_view reference);

enum class PullPolicy { kAlways, kIfNotPresent, kNever };

// "Always", "IfNotPresent", "Never".
const char* PullPolicyName(PullPolicy policy);
Result<PullPolicy> ParsePullPolicy(std::string_view text);

// The API server's default imagePullPolicy (pkg/apis/core/v1/defaults.go):
// Always when the tag is "latest", which a reference with neither tag nor
// digest gets; IfNotPresent otherwise, a digest alone included. A
// reference that does not parse has no tag, so IfNotPresent, as there.
PullPolicy DefaultPullPolicy(std::string_view image);

}  // namespace podvisor::registry
