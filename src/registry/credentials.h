// Registry credentials, found and ordered as the kubelet does, handed to
// skopeo one at a time.
//
// Candidates, in order: the pod's imagePullSecrets (Secrets of type
// kubernetes.io/dockerconfigjson, key .dockerconfigjson holding
// {"auths":{...}}, or kubernetes.io/dockercfg, key .dockercfg holding the
// bare map), matched to the image as the kubelet's credentialprovider
// keyring matches (a key is a host whose labels may be `*` globs, an
// optional port and a path prefix, a scheme and /v1/ or /v2/ stripped;
// every matching key's credentials, the key sorting last first, so the
// longer of two keys sharing a prefix comes first; for an image on
// docker.io, index.docker.io's when no key matched). Then the containers
// auth file as podman reads it: $REGISTRY_AUTH_FILE, else
// ${XDG_RUNTIME_DIR}/containers/auth.json, $HOME/.config/containers/
// auth.json, $HOME/.docker/config.json, the first file with a match. The
// puller tries each candidate until one is accepted; none matching means
// anonymous.
//
// **Departs:** the kubelet only warns about an imagePullSecret it cannot
// find (FailedToRetrieveImagePullSecret) and skips one of another type;
// podvisor's Secrets are files of the bundle, so a missing or malformed
// one is a mistake in the bundle and an error naming it.
//
// Values never appear in errors. A candidate reaches skopeo as a memfd
// holding a one-entry auth.json (--authfile /proc/self/fd/N): not argv,
// which `ps` shows, and not a file, which outlives a crash.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/fd.h"
#include "common/result.h"
#include "pod/model.h"
#include "registry/image_name.h"

namespace podvisor::registry {

struct RegistryCredential {
  std::string key{};     // the keyring key: "registry.example.com/team", "index.docker.io"
  std::string source{};  // for messages: `imagePullSecrets[0] (secret "regcred")`, a file
  std::string username{};
  std::string password{};
  std::string identity_token{};
  friend bool operator==(const RegistryCredential&, const RegistryCredential&) = default;
};

// The keyring key of a docker config entry's name: scheme stripped, a
// leading /v1/ or /v2/ of the path dropped, a bare "/" dropped.
std::string NormaliseCredentialKey(std::string_view location);

// credentialprovider.URLsMatchStr: does keyring `key` cover `repository`
// ("docker.io/library/nginx")?
bool CredentialKeyMatches(std::string_view key, std::string_view repository);

// The entries of a docker config's map (config.json's "auths", or a
// .dockercfg), in key order. `source` names it in errors.
Result<std::vector<RegistryCredential>> ParseDockerAuths(std::string_view map_json,
                                                         std::string_view source);

// Every credential of the pod's imagePullSecrets, in their order, from
// `objects` (the bundle's Secrets and `--secret` files).
Result<std::vector<RegistryCredential>> PullSecretCredentials(const pod::Pod& pod,
                                                              const pod::ConfigObjects& objects);

// What the supervisor hands a pull worker at --auth-fd (in a memfd): the
// pod's pull-secret credentials, not yet matched, as
//   {"credentials":[{"key":K,"source":S,"username":U,"password":P,
//                    "identitytoken":T}, ...]}
Result<std::string> PullCredentialsJson(const pod::Pod& pod, const pod::ConfigObjects& objects);
Result<std::vector<RegistryCredential>> ParsePullCredentialsJson(std::string_view json);

// The keyring's Lookup: the credentials of `all` that apply to `image`,
// in the order to try them.
std::vector<RegistryCredential> MatchCredentials(const std::vector<RegistryCredential>& all,
                                                 const ImageName& image);

// The auth files podman reads, in order, for this environment.
std::vector<std::filesystem::path> DefaultAuthFiles();

// The matching credentials of the first of `files` that has any.
Result<std::vector<RegistryCredential>> AuthFileCredentials(
    const std::vector<std::filesystem::path>& files, const ImageName& image);

// A memfd (not close-on-exec cleared: Spawn's keep_fds does that) holding
// {"auths":{"<image's registry>":{"auth":…,"identitytoken":…}}}.
Result<Fd> CredentialMemfd(const RegistryCredential& credential, const ImageName& image);

// The texts of a credential a message must never show.
std::vector<std::string> CredentialSecrets(const RegistryCredential& credential);

}  // namespace podvisor::registry
