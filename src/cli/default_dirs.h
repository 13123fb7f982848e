// The directories podvisor uses when not told otherwise. Constants only, so
// that the early road (early_client.h), which runs before the C library,
// can include it too.
#pragma once

namespace podvisor::cli {

constexpr const char* kDefaultStateDir = "/run/podvisor";
constexpr const char* kDefaultLogDir = "/var/log/podvisor";

}  // namespace podvisor::cli
