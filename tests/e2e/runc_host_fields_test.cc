// Test tier 3 (TESTING.md) with runc: the Pod fields that mean something
// on one host, as the containers see them: mountPropagation
// HostToContainer (a mount made on the host after the start appears in
// the container), hostPID, and readOnlyRootFilesystem on a sidecar.
// Needs root; skipped otherwise.
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using RuncHostFields = RuncE2eTest;

bool WaitForFile(const fs::path& path, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return fs::exists(path);
}

TEST_F(RuncHostFields, HostToContainerPropagationShowsALaterHostMount) {
  // A shared mount of the test's own (the host's / is not touched): the
  // host side of the volume, on which the test mounts a tmpfs once the
  // container runs.
  const fs::path prop = dir_ / "prop";
  fs::create_directories(prop);
  ASSERT_EQ(::mount("podvisor-prop", prop.c_str(), "tmpfs", 0, "size=1m"), 0) << errno;
  ASSERT_EQ(::mount(nullptr, prop.c_str(), nullptr, MS_SHARED, nullptr), 0) << errno;
  fs::create_directories(prop / "later");
  WritePod(R"(apiVersion: v1
kind: Pod
metadata: {name: propagation}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  volumes:
    - {name: shared, hostPath: {path: "{{HOSTDIR}}", type: DirectoryOrCreate}}
    - {name: prop, hostPath: {path: ")" +
           prop.string() + R"(", type: Directory}}
  containers:
    - name: app
      image: img
      command: [/bin/sh, -c, "touch /shared/ready; i=0; while [ $i -lt 100 ] && [ ! -e /prop/later/hello ]; do sleep 0.1; i=$((i+1)); done; cat /prop/later/hello > /shared/seen 2>&1"]
      volumeMounts:
        - {name: shared, mountPath: /shared}
        - {name: prop, mountPath: /prop, mountPropagation: HostToContainer}
)");
  StartRun();
  bool ready = WaitForFile(scratch_ / "ready", std::chrono::seconds(20));
  EXPECT_TRUE(ready) << RunStderr();
  bool mounted =
      ready && ::mount("podvisor-later", (prop / "later").c_str(), "tmpfs", 0, "size=1m") == 0;
  EXPECT_TRUE(mounted) << errno;
  if (mounted) std::ofstream(prop / "later" / "hello") << "from-the-host";
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("seen"), "from-the-host");
  if (mounted) ::umount2((prop / "later").c_str(), MNT_DETACH);
  ::umount2(prop.c_str(), MNT_DETACH);
}

TEST_F(RuncHostFields, HostPidSeesTheHostsProcessesAndASidecarsRootIsReadOnly) {
  std::ifstream host_comm("/proc/1/comm");
  std::string host_init;
  std::getline(host_comm, host_init);
  WritePod(R"(apiVersion: v1
kind: Pod
metadata: {name: hostpid}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  hostPID: true
  volumes:
    - {name: shared, hostPath: {path: "{{HOSTDIR}}", type: DirectoryOrCreate}}
  initContainers:
    - name: side
      image: img
      restartPolicy: Always
      securityContext: {readOnlyRootFilesystem: true}
      command: [/bin/sh, -c, "touch /written 2>/dev/null && echo rw > /shared/side || echo ro > /shared/side; exec sleep 60"]
      volumeMounts: [{name: shared, mountPath: /shared}]
  containers:
    - name: app
      image: img
      command: [/bin/sh, -c, "cat /proc/1/comm > /shared/init; while [ ! -e /shared/side ]; do sleep 0.1; done"]
      volumeMounts: [{name: shared, mountPath: /shared}]
)");
  EXPECT_EQ(Run(), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("init"), host_init) << "with hostPID, pid 1 is the host's";
  EXPECT_EQ(ReadScratch("side"), "ro");
}

}  // namespace
}  // namespace podvisor::e2e
