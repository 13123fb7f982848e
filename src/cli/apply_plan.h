// `podvisor apply`'s decisions, pure (docs/SEMANTICS.md S18): for each pod
// by name, what the manifests ask (a loaded pod, or validate's problems)
// against what the state directory holds (whether its supervisor answers,
// and the manifest apply last started for it), one change: start, keep,
// resize in place, replace, invalid, prune. No file, process or clock is
// touched here; apply_cmd.cc does what the plan says.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "pod/model.h"

namespace podvisor::cli::apply {

enum class Change {
  kStart,    // no pod of that name runs: start it
  kKeep,     // runs the same manifest (S18.3): leave it alone
  kResize,   // only containers' cpu/memory requests or limits differ (S18.4)
  kReplace,  // anything else differs (S18.5)
  kInvalid,  // the manifest does not validate: the running pod is untouched (S18.7)
  kForeign,  // a pod of that name runs, but apply did not start it (S18.9)
  kPrune,    // apply started it and its manifest is gone; only with --prune (S18.8)
  kHeld,     // this very manifest was rolled back before: not tried again (S18.6)
};
std::string_view ChangeName(Change change);

// One pod the manifests describe.
struct Desired {
  std::string name;
  // Parsed, defaulted and validated; pod.config holds the ConfigMaps and
  // Secrets the pod uses (and only those, S18.2). nullopt when invalid.
  std::optional<pod::Pod> pod;
  std::vector<std::string> problems;  // validate's lines, when invalid
};

// One pod the state directory knows.
struct Current {
  std::string name;
  bool running = false;            // its supervisor answers
  bool applied = false;            // apply keeps a bundle for it (STATE/.apply/<pod>/)
  std::optional<pod::Pod> kept;    // that bundle's manifest, loaded as Desired's
  std::string phase;               // the kept record's phase, when not running
  std::optional<pod::Pod> failed;  // the manifest last rolled back, if any
};

struct Decision {
  std::string pod;
  Change change = Change::kKeep;
  std::string why;  // what differs, or why nothing is done; for the output
};

// Kept and desired manifests side by side (S18.3-S18.5).
enum class Difference { kNone, kResources, kOther };
struct Comparison {
  Difference difference = Difference::kNone;
  std::string what;  // "spec.containers[0].image", "configmap/app-config", ...
};
Comparison Compare(const pod::Pod& kept, const pod::Pod& desired);

// Every pod of either list, in name order; pods only in `current` appear
// only with `prune` (and only when apply started them).
std::vector<Decision> Plan(const std::vector<Desired>& desired, const std::vector<Current>& current,
                           bool prune);

// The control request of a resize (the shared interface of issue 32):
// every container, sidecars included, whose cpu or memory differs, with
// the desired cpu and memory requests and limits.
nlohmann::json ResizeRequest(const pod::Pod& kept, const pod::Pod& desired);

// The ConfigMaps and Secrets a pod spec names (volumes, projections, env,
// envFrom; imagePullSecrets as Secrets), sorted and unique.
struct ConfigNames {
  std::vector<std::string> config_maps;
  std::vector<std::string> secrets;
};
ConfigNames UsedConfigNames(const pod::PodSpec& spec);

// How long apply waits for a started pod to become Ready (S18.6):
// --timeout when given; else, when a container has a startup probe, the
// longest startup budget (initialDelaySeconds + periodSeconds x
// failureThreshold) plus a minute for creating and the first readiness
// result; else kDefaultReadyTimeout.
inline constexpr Duration kDefaultReadyTimeout = std::chrono::minutes(5);
Duration ReadyBudget(const pod::Pod& pod, std::optional<Duration> timeout);

// Whether a file of the manifest directory is read (S18.1): *.yaml,
// *.yml and *.json, never a dot-file or an editor's temporary file
// (vim's .x.swp and 4913, emacs's .#x and #x#, a backup x~).
bool IsManifestFileName(std::string_view name);

}  // namespace podvisor::cli::apply
