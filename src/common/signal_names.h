// Signal names <-> numbers, as Kubernetes spells them in
// lifecycle.stopSignal ("SIGTERM", "SIGRTMIN+3") and as OCI images spell
// StopSignal ("SIGTERM", "TERM", "15"). Lives in common (std only) because
// both pod validation and signal delivery need it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace podvisor {

// Kubernetes' strict form: a name from its Linux list, "SIG" prefix required.
std::optional<int> ParseKubernetesSignalName(std::string_view name);

// The lenient form images and the CLI use: "SIGTERM", "TERM", "term", "15".
std::optional<int> ParseSignal(std::string_view text);

// "SIGTERM" for 15, "SIGRTMIN+2" for SIGRTMIN+2, "SIG<n>" if unknown.
std::string SignalName(int signo);

}  // namespace podvisor
