// Test tier 2 (docs/TESTING.md): `podvisor oci-config` prints the config
// `podvisor run` gives the runtime. The pod runs under the fake runtime;
// the config.json of its running instance is compared with oci-config's
// output for the same bundle and options.
//
// One value is normalised, because only a running supervisor has it: the
// runtime id's last number, which counts the supervisor's create attempts
// (oci-config prints 1). It is part of the instance's directory, so it
// appears in the termination-log and subPath sources and in the cgroup
// path; the test replaces the one id run used by oci-config's, nothing
// else.
#include <unistd.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness.h"

namespace podvisor::e2e {
namespace {

class OciConfig : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
};

// Replaces every occurrence of `from` in `text` by `to`.
std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

TEST_F(OciConfig, PrintsTheConfigRunGaveTheRuntime) {
  // Fields that come from the host and the run's options as well as from
  // the pod: the downward API's node facts, a memory limit, an emptyDir.
  std::string pod =
      "apiVersion: v1\nkind: Pod\nmetadata: {name: ocicfg}\nspec:\n"
      "  restartPolicy: Never\n  terminationGracePeriodSeconds: 5\n"
      "  volumes: [{name: scratch, emptyDir: {}}]\n"
      "  containers:\n"
      "  - name: app\n    image: img\n    command: " +
      HelperCmd("app", "sleep 100000") +
      "\n    env:\n"
      "    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}\n"
      "    - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}\n"
      "    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}\n"
      "    - {name: CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}\n"
      "    - {name: STORAGE, valueFrom: {resourceFieldRef: {resource: "
      "limits.ephemeral-storage}}}\n"
      "    resources: {limits: {memory: 64Mi}}\n"
      "    volumeMounts:\n"
      "    - {name: scratch, mountPath: /scratch}\n";
  // A subPath is bound by run (S14.2), which needs the privilege to mount.
  if (::geteuid() == 0) pod += "    - {name: scratch, mountPath: /sub, subPath: part}\n";
  WritePod(pod);
  StartRun({"--node-memory", "3Gi", "--pod-pids-limit", "512"});
  WaitUntilRunning();

  fs::path instances = state_dir_ / "ocicfg" / "containers" / "app";
  std::string run_id;
  for (const auto& entry : fs::directory_iterator(instances)) {
    ASSERT_TRUE(run_id.empty()) << "one instance expected under " << instances;
    run_id = entry.path().filename().string();
  }
  ASSERT_FALSE(run_id.empty()) << "no instance under " << instances;
  nlohmann::json used = nlohmann::json::parse(std::ifstream(instances / run_id / "config.json"),
                                              nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(used.is_discarded()) << "config.json of " << run_id;

  auto printed = Client({"oci-config", bundle_.string(), "app", "--sandbox", "none",
                         "--node-memory", "3Gi", "--pod-pids-limit", "512"});
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  nlohmann::json shown = nlohmann::json::parse(printed.out, nullptr, false);
  ASSERT_FALSE(shown.is_discarded()) << printed.out;

  EXPECT_EQ(Client({"stop", "ocicfg"}).exit_code, 0);
  EXPECT_NE(WaitRun(), -1) << RunStderr();

  std::string planned_id = "ocicfg_app_0_1";
  nlohmann::json normalised = nlohmann::json::parse(ReplaceAll(used.dump(), run_id, planned_id));
  // The difference as a JSON patch from run's config to oci-config's.
  EXPECT_EQ(nlohmann::json::diff(normalised, shown), nlohmann::json::array())
      << "oci-config differs from run's config.json (ids " << run_id << " -> " << planned_id << ")";
}

}  // namespace
}  // namespace podvisor::e2e
