// runtime_timeout.h: which runtime steps are bounded, and the message a
// killed call leaves for the RuntimeFailed status (S2.3).
#include "supervisor/executor/runtime_timeout.h"

#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "oci/runtime_cli.h"

namespace podvisor::supervisor::executor {
namespace {

using namespace std::chrono_literals;

TEST(RuntimeTimeout, BoundsCreateStartDeleteStateButNotExec) {
  for (const char* step : {"create", "start", "delete", "state"})
    EXPECT_TRUE(BoundedByRuntimeTimeout(step)) << step;
  EXPECT_FALSE(BoundedByRuntimeTimeout("exec"));
  EXPECT_FALSE(BoundedByRuntimeTimeout("kill"));
}

TEST(RuntimeTimeout, DefaultIsTheKubeletsRuntimeRequestTimeout) {
  EXPECT_EQ(kDefaultRuntimeTimeout, 2min);
}

TEST(RuntimeTimeout, MessagesUseGoDurations) {
  EXPECT_EQ(RuntimeTimeoutMessage("create", 2min),
            "runtime create did not finish within 2m0s: killed");
  EXPECT_EQ(RuntimeTimeoutMessage("start", 1s), "runtime start did not finish within 1s: killed");
  EXPECT_EQ(RuntimeTimeoutMessage("delete", 1500ms),
            "runtime delete did not finish within 1.5s: killed");
}

TEST(RuntimeTimeout, RecordedAsTheRuntimesLastError) {
  auto log = std::filesystem::path(::testing::TempDir()) /
             ("rt-timeout-" + std::to_string(getpid()) + ".log");
  std::ofstream(log) << "{\"level\":\"info\",\"msg\":\"creating\"}\n";
  RecordRuntimeTimeout(log, "create", 2min);
  EXPECT_EQ(oci::LastRuntimeError(log), "runtime create did not finish within 2m0s: killed");
  std::filesystem::remove(log);
  RecordRuntimeTimeout({}, "create", 2min);  // no log file: nothing to do
}

TEST(RuntimeTimeout, S14_41_TerminationCutsEveryCallToTheGraceWithAFloor) {
  const MonoTime t0{std::chrono::seconds(100)};
  // Before the pod terminates: --runtime-timeout alone, or nothing.
  EXPECT_EQ(RuntimeCallDeadline(t0, 120s, std::nullopt), t0 + 120s);
  EXPECT_EQ(RuntimeCallDeadline(t0, 0s, std::nullopt), std::nullopt);
  // While it terminates, the grace's end when sooner, also with no timeout.
  EXPECT_EQ(RuntimeCallDeadline(t0, 120s, t0 + 5s), t0 + 5s);
  EXPECT_EQ(RuntimeCallDeadline(t0, 0s, t0 + 5s), t0 + 5s);
  EXPECT_EQ(RuntimeCallDeadline(t0, 1s, t0 + 5s), t0 + 1s);
  // A call started when the budget is (nearly) over still gets the floor.
  EXPECT_EQ(RuntimeCallDeadline(t0, 120s, t0 - 3s), t0 + kRuntimeCallFloor);
  EXPECT_EQ(RuntimeCallDeadline(t0, 120s, t0 + 1s), t0 + kRuntimeCallFloor);
}

}  // namespace
}  // namespace podvisor::supervisor::executor
