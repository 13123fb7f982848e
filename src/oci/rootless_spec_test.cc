#include "oci/rootless_spec.h"

#include <gtest/gtest.h>

namespace podvisor::oci {
namespace {

nlohmann::json Config() {
  return nlohmann::json::parse(R"({
    "mounts": [
      {"destination": "/proc", "type": "proc", "source": "proc"},
      {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
       "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]}
    ],
    "linux": {
      "cgroupsPath": "/podvisor/web/web_app_1_0",
      "resources": {
        "devices": [{"allow": false, "access": "rwm"}],
        "memory": {"limit": 1048576, "swap": 1048576},
        "cpu": {"shares": 2},
        "pids": {"limit": 10}
      }
    }
  })");
}

TEST(AdaptConfigForRootless, NoCgroupKeepsOnlyTheDeviceRules) {
  nlohmann::json config = Config();
  AdaptConfigForRootless(config, RootlessConfig{.no_cgroup = true, .single_id = false});
  EXPECT_FALSE(config["linux"].contains("cgroupsPath"));
  EXPECT_EQ(config["linux"]["resources"],
            nlohmann::json::parse(R"({"devices": [{"allow": false, "access": "rwm"}]})"));
  // The mounts are the subordinate-ids namespace's business: unchanged.
  EXPECT_EQ(config["mounts"], Config()["mounts"]);
}

TEST(AdaptConfigForRootless, SingleIdMountsDevptsWithoutTheTtyGroup) {
  nlohmann::json config = Config();
  AdaptConfigForRootless(config, RootlessConfig{.no_cgroup = false, .single_id = true});
  EXPECT_EQ(config["mounts"][1]["options"],
            nlohmann::json::parse(
                R"(["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"])"));
  // A delegated cgroup keeps the path and the limits.
  EXPECT_EQ(config["linux"], Config()["linux"]);
}

TEST(AdaptConfigForRootless, BindSysReplacesTheSysfsMount) {
  nlohmann::json config = Config();
  config["mounts"].push_back(nlohmann::json::parse(
      R"({"destination": "/sys", "type": "sysfs", "source": "sysfs",
          "options": ["nosuid", "noexec", "nodev", "ro"]})"));
  AdaptConfigForRootless(config, RootlessConfig{.bind_sys = true});
  EXPECT_EQ(config["mounts"][2],
            nlohmann::json::parse(R"({"destination": "/sys", "type": "bind", "source": "/sys",
                                      "options": ["rbind", "nosuid", "noexec", "nodev", "ro"]})"));
  EXPECT_EQ(config["mounts"][1], Config()["mounts"][1]);
}

}  // namespace
}  // namespace podvisor::oci
