// The ordering annotation between pods of one state directory (SEMANTICS
// S19): `podvisor.io/after: "POD[,POD...]"` makes a pod's supervisor wait,
// once started, until every pod it names is Ready before it creates any
// container. This file reads and checks the annotation; the wait itself is
// the Lifecycle's (it holds the start plan) and the executor's watcher's
// (supervisor/executor/pod_dependencies.h), which reads the other pods'
// kept records.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pod/field_error.h"
#include "pod/model.h"

namespace podvisor::pod {

inline constexpr std::string_view kAfterAnnotation = "podvisor.io/after";

// S19.1: the pods the annotation names, in its order, each once, spaces
// around a name ignored; empty when the pod has no such annotation. Only
// meaningful on a pod ValidateAfterAnnotation accepted.
std::vector<std::string> AfterPods(const Pod& pod);

// S19.2: every name a valid pod name (a DNS-1123 subdomain, as
// metadata.name), none empty, none the pod itself, none twice. Errors
// name the field `metadata.annotations[podvisor.io/after]`.
FieldErrors ValidateAfterAnnotation(const Pod& pod);

}  // namespace podvisor::pod
