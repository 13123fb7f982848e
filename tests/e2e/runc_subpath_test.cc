// Test tier 3 (docs/TESTING.md), S14.2 with runc: the subPath race of
// CVE-2017-1002101's class, as a tester reproduced it against podvisor.
// A sidecar sharing an emptyDir swaps the victim's subPath between a
// directory and a symlink to a host directory as fast as busybox can;
// the victim writes a marker into its subPath mount and exits, and is
// restarted with a 10 ms backoff as many times as a bounded run allows.
// Not one marker may land in the host directory. Needs root; skipped
// otherwise.
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using RuncSubPath = RuncE2eTest;

int CountEntries(const fs::path& dir) {
  std::error_code ec;
  int n = 0;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    ++n;
  }
  return n;
}

int CountLines(const fs::path& file) {
  std::ifstream in(file);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

TEST_F(RuncSubPath, S14_2_ASidecarSwappingTheSubPathForASymlinkNeverReachesTheHost) {
  fs::path host_target = scratch_ / "host-target";
  fs::create_directories(host_target);
  // mv -T renames without moving into a directory; a step that fails
  // (the subPath was just made again by podvisor) heals on the next round.
  const std::string swapper = ShCmd(
      "mkdir -p /data/sub; ln -sfn \"$0\" /data/l; "
      "while :; do mv -T /data/sub /data/d 2>/dev/null; mv -T /data/l /data/sub 2>/dev/null; "
      "mv -T /data/sub /data/l 2>/dev/null; mv -T /data/d /data/sub 2>/dev/null || "
      "rm -rf /data/d; done",
      {host_target.string()});
  const std::string victim =
      ShCmd("mktemp /sub/marker.XXXXXX >/dev/null 2>&1; echo run >> /shared/runs; exit 0");
  WritePod(R"(apiVersion: v1
kind: Pod
metadata: {name: subpath-race}
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 1
  volumes:
    - {name: shared, hostPath: {path: "{{HOSTDIR}}", type: DirectoryOrCreate}}
    - {name: data, emptyDir: {}}
  initContainers:
    - name: swapper
      image: img
      restartPolicy: Always
      command: )" +
           swapper + R"(
      volumeMounts: [{name: data, mountPath: /data}]
  containers:
    - name: victim
      image: img
      command: )" +
           victim + R"(
      volumeMounts:
        - {name: data, mountPath: /sub, subPath: sub}
        - {name: shared, mountPath: /shared}
)");
  StartRun({"--backoff-initial", "10ms", "--backoff-max", "10ms", "--grace", "1"});
  // Bounded by time, not by a count: a loaded machine makes fewer
  // restarts, and each one is a chance for the race.
  auto deadline = Clock::now() + std::chrono::seconds(90);
  while (Clock::now() < deadline && RunIsAlive() && CountEntries(host_target) == 0 &&
         CountLines(scratch_ / "runs") < 400) {
    std::this_thread::sleep_for(milliseconds(200));
  }
  auto stop = Client({"stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  WaitRun(std::chrono::seconds(30));
  int runs = CountLines(scratch_ / "runs");
  EXPECT_EQ(CountEntries(host_target), 0)
      << "the victim wrote into the host directory (" << runs << " runs)";
  if (CountEntries(host_target) == 0) {
    EXPECT_GE(runs, 20) << "too few victim runs for the race to mean anything\n" << RunStderr();
  }
  RecordProperty("victim_runs", runs);
}

}  // namespace
}  // namespace podvisor::e2e
