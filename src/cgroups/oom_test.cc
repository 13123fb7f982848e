// S9.5: reading the OOM kill count of a container's cgroup, v2 and v1.
#include "cgroups/oom.h"

#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

namespace podvisor::cgroups {
namespace {

namespace fs = std::filesystem;

class OomFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / ("podvisor-oom-" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  fs::path root_;
};

TEST_F(OomFiles, S9_5_ReadsOomKillFromMemoryEventsV2) {
  Write(root_ / "v2/pod/c/memory.events",
        "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 1\n");
  EXPECT_EQ(OomKillCount(root_ / "v2/pod/c"), 2u);
}

TEST_F(OomFiles, S9_5_ReadsOomKillFromMemoryOomControlV1) {
  Write(root_ / "memory/pod/c/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
  EXPECT_EQ(OomKillCount(root_ / "memory/pod/c"), 3u);
}

TEST_F(OomFiles, S9_5_NoFileCountsAsNoKill) {
  EXPECT_EQ(OomKillCount(root_ / "nowhere"), 0u);
  Write(root_ / "v2/empty/memory.events", "low 0\n");
  EXPECT_EQ(OomKillCount(root_ / "v2/empty"), 0u);
}

TEST_F(OomFiles, S9_5_ContainerCountIsTheLargestOverTheHierarchies) {
  // A hybrid host: the cgroup2 directory has no memory controller, the v1
  // memory hierarchy counts the kill.
  Write(root_ / "unified/podvisor/web/app/cgroup.procs", "");
  Write(root_ / "memory/podvisor/web/app/memory.oom_control", "oom_kill_disable 0\noom_kill 1\n");
  EXPECT_EQ(ContainerOomKills("/podvisor/web/app", {root_ / "unified", root_ / "memory"}), 1u);
  EXPECT_EQ(ContainerOomKills("/podvisor/web/other", {root_ / "unified", root_ / "memory"}), 0u);
  EXPECT_EQ(ContainerOomKills("/../etc", {root_ / "memory"}), 0u);
  EXPECT_EQ(ContainerOomKills("", {root_ / "memory"}), 0u);
}

}  // namespace
}  // namespace podvisor::cgroups
