// Validation as the API server does it, plus podvisor's own limits, with
// every problem reported (never only the first). Messages are kubectl's.
#pragma once

#include <filesystem>

#include "pod/field_error.h"
#include "pod/model.h"

namespace podvisor::pod {

// Checks the pod on its own (after ApplyDefaults).
FieldErrors ValidatePod(const Pod& pod);

// Checks what needs the bundle directory: each container's image resolves
// inside the bundle (bundle.h) and its directory exists, with a rootfs/.
// `references_only`: only the reference itself (S14.6: not absolute, no
// "..", under BUNDLE/images), which `validate --no-images` still checks
// because `run` would refuse it whatever the images.
FieldErrors ValidateImages(const Pod& pod, const std::filesystem::path& bundle,
                           bool references_only = false);

// Where the init list came from, as validation errors name it:
// "spec.initContainers", or "metadata.annotations[<key>]" for a pod whose
// init containers were read from the 1.3–1.5 annotation (S13).
std::string InitContainersPath(const Pod& pod);

// Kubernetes name rules, exposed for reuse (CLI pod names, tests).
bool IsDns1123Label(std::string_view s);      // container, volume, port names
bool IsDns1123Subdomain(std::string_view s);  // pod name
bool IsCIdentifier(std::string_view s);       // reasonDelivery.env (S6.3)
bool IsEnvVarName(std::string_view s);        // env[].name (API's C-like rule)
bool IsHttpToken(std::string_view s);         // header names (RFC 7230 token)

}  // namespace podvisor::pod
