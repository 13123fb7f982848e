// The model back to Kubernetes JSON: `podvisor status -o json` prints
// `spec` "as given, with defaults applied" (docs/INTERFACE.md), so a script
// written for `kubectl get pod -o json` reads it unchanged. Fields that are
// absent (nullopt, empty lists/maps, false booleans the API omits) are
// omitted, as the API server does.
#pragma once

#include <nlohmann/json.hpp>

#include "pod/model.h"

namespace podvisor::pod {

nlohmann::json ToJson(const Quantity& q);  // "500m", "128Mi"
nlohmann::json ToJson(const ResourceList& r);
nlohmann::json ToJson(const Container& c);
nlohmann::json ToJson(const PodSpec& spec);
nlohmann::json ToJson(const ObjectMeta& meta);
nlohmann::json ToJson(const Pod& pod);  // apiVersion, kind, metadata, spec

}  // namespace podvisor::pod
