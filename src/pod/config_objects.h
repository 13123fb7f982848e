// ConfigMap and Secret documents: the config objects a bundle gives its pod
// (docs/INTERFACE.md "Bundle layout"). They come from the documents of
// pod.yaml next to the workload, from BUNDLE/config/*.yaml, and from
// `run --configmap FILE` / `--secret FILE`.
//
// Each document is checked as the API server checks it: a DNS subdomain
// name, keys of [-._a-zA-Z0-9]+, no key in both data and binaryData,
// base64 in binaryData and a Secret's data, at most 1 MiB in total. A name
// given twice (per kind) is a Duplicate value. Errors name the object the
// way kubectl does ("configmap/app-config: data[bad key]: ...") and never
// quote a Secret's value.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "common/result.h"
#include "pod/field_error.h"
#include "pod/model.h"

namespace podvisor::pod {

// True for kind: ConfigMap and kind: Secret documents.
bool IsConfigObjectKind(std::string_view kind);

// Decodes one ConfigMap or Secret document (`doc["kind"]` says which) into
// `objects`; `source` names the file for a duplicate's message.
void DecodeConfigObject(const nlohmann::json& doc, const std::string& source,
                        ConfigObjects& objects, FieldErrors& errors, FieldWarnings& warnings);

// Reads every document of FILE (YAML or JSON); each must be a ConfigMap or
// Secret, of `only_kind` when given (`--configmap` takes ConfigMaps).
// Syntax errors are an Error naming the file.
Status ReadConfigFile(const std::filesystem::path& file, std::optional<std::string_view> only_kind,
                      ConfigObjects& objects, FieldErrors& errors, FieldWarnings& warnings);

// BUNDLE/config/*.yaml, *.yml and *.json in name order; none is fine.
Status ReadBundleConfigDir(const std::filesystem::path& bundle, ConfigObjects& objects,
                           FieldErrors& errors, FieldWarnings& warnings);

// RFC 4648 base64 with padding, as Go's base64.StdEncoding (which the API
// server uses for []byte fields). nullopt when the text is not valid.
std::optional<std::string> DecodeBase64(std::string_view text);
std::string EncodeBase64(std::string_view bytes);

// The kube-api-access volume the ServiceAccount admission plugin injects
// projects the cluster CA, ConfigMap kube-root-ca.crt, next to a token.
// Without an API server neither exists, so in a projection that also asks
// for a token a missing kube-root-ca.crt is skipped like the token: a
// manifest from `kubectl get pod -o yaml` runs. A bundle may still give
// the ConfigMap, and then it is used.
bool IsClusterCaOfTokenVolume(const ProjectedVolumeSource& projected,
                              const ConfigMapVolumeSource& source);

// Lookups for env and volumes: nullptr when the object does not exist.
const ConfigMap* FindConfigMap(const ConfigObjects& objects, const std::string& name);
const Secret* FindSecret(const ConfigObjects& objects, const std::string& name);
// A ConfigMap key from data or binaryData.
std::optional<std::string> ConfigMapValue(const ConfigMap& cm, const std::string& key);
// Every key of a ConfigMap (data and binaryData) with its value, sorted.
std::map<std::string, std::string> ConfigMapEntries(const ConfigMap& cm);

}  // namespace podvisor::pod
