// Tier 3 of containerd-shim-podvisor-v1 (docs/TESTING.md): Debian's real
// containerd, started by the suite with its own root, state directory,
// socket and config (no CRI plugin), the shim found through a PATH entry
// holding a containerd-shim-podvisor-v1 link to the built podvisor, real
// runc under it, and `ctr` as the client. Packed bundles are imported with
// `ctr image import`. After every test nothing of its task may be left:
// processes, mounts, the bundle directory, the shim's socket, the pod's
// cgroup.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../cli/run_command.h"

namespace podvisor::testing {

class ContainerdTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;
  void TearDown() override;

  // `ctr -a SOCKET ARGS...`, bounded by 60 s.
  static CommandResult Ctr(const std::vector<std::string>& args);
  // Packs `pod_yaml` with a busybox image as a bundle image and imports it
  // as podvisor.test/NAME:latest.
  static void ImportBundle(const std::string& name, const std::string& pod_yaml);
  // `layer` (a directory) as the one layer of an image imported as
  // podvisor.test/NAME:latest, made without `podvisor pack` (which refuses
  // what some tests give the shim).
  static void ImportLayerAsImage(const std::string& name, const std::filesystem::path& layer);
  // DIR/layout (an OCI layout) tarred to DIR/image.tar and imported as
  // podvisor.test/NAME:latest.
  static void ImportLayout(const std::string& name, const std::filesystem::path& dir);
  // `ctr run -d --runtime io.containerd.podvisor.v1` with network none.
  CommandResult RunDetached(const std::string& image, const std::string& id,
                            const std::vector<std::string>& extra = {});
  // The STATUS column of `ctr task ls` for `id` ("" when not listed).
  static std::string TaskStatus(const std::string& id);
  static int TaskPid(const std::string& id);
  // Polls (10 ms steps) until TaskStatus(id) == status, up to `seconds`.
  static bool WaitForStatus(const std::string& id, const std::string& status, int seconds);
  static pid_t ShimPid(const std::string& id);
  static void StartContainerd();
  static void StopContainerd();
  static std::filesystem::path TaskBundle(const std::string& id);
  // Kills, deletes the task and removes the container, whatever state.
  static void RemoveTask(const std::string& id);
  // Nothing of the task `id` and pod `pod` is left on the host.
  void ExpectNothingLeft(const std::string& id, const std::string& pod);

  static inline std::filesystem::path root_;
  static inline pid_t containerd_pid_ = 0;
  static inline std::string skip_;
  static inline bool run_containerd_dir_existed_ = true;
  std::vector<std::pair<std::string, std::string>> tasks_;  // id, pod: checked after the test
};

}  // namespace podvisor::testing
