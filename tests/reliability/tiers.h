// The two tiers the reliability suite runs in: the fake runtime (tier 2,
// no root) and runc with busybox bundles (tier 3, root), plus the pod
// manifest snippets its tests share.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "../e2e/harness.h"

namespace podvisor::e2e {

class FakeRuntimeTier : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
};

using RuncTier = RuncE2eTest;

// "apiVersion: v1 ... spec:" with the restart policy and grace.
inline std::string PodHeader(const std::string& name, const std::string& restart_policy, int grace,
                             bool shared_volume = false) {
  std::string h = "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
                  "}\nspec:\n  restartPolicy: " + restart_policy +
                  "\n  terminationGracePeriodSeconds: " + std::to_string(grace) + "\n";
  if (shared_volume) {
    h +=
        "  volumes: [{name: shared, hostPath: {path: \"{{HOSTDIR}}\", type: DirectoryOrCreate}}]\n";
  }
  return h;
}

// One list entry: "  - {name: N, image: img, command: CMD<extra>}".
inline std::string PodEntry(const std::string& name, const std::string& command,
                            const std::string& extra = "") {
  return "  - {name: " + name + ", image: img, command: " + command + extra + "}\n";
}
inline std::string PodSidecar(const std::string& name, const std::string& command,
                              const std::string& extra = "") {
  return PodEntry(name, command, ", restartPolicy: Always" + extra);
}

}  // namespace podvisor::e2e
