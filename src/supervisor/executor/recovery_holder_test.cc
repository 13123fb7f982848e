// recovery.h EndLeftHolder: a sandbox holder a dead supervisor left is
// found by the handover state or, before the first one was written, by
// the holder's identity file, and is ended only when it is still the
// recorded process (S15.4).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "common/file_io.h"
#include "process/proc_stat.h"
#include "process/spawn.h"
#include "supervisor/executor/handover.h"
#include "supervisor/executor/recovery.h"

namespace podvisor::supervisor::executor {
namespace {

namespace fs = std::filesystem;

class LeftHolder : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pv-left-holder-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ / "pod");
    // Recovery checks the holder's command line for sandbox-init: a shell
    // named so, waiting on a pipe this test holds (no orphan when killed).
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    stdin_read_ = Fd(fds[0]);
    stdin_write_ = Fd(fds[1]);
    process::SpawnOptions spawn;
    spawn.argv = {"/bin/sh", "-c", "read line", "sandbox-init"};
    spawn.stdin_fd = stdin_read_.get();
    auto child = process::Spawn(spawn);
    ASSERT_TRUE(child) << child.error().message();
    child_ = std::move(*child);
  }
  void TearDown() override {
    if (child_.pid() > 0) (void)child_.KillAndReap();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  nlohmann::json Identity(uint64_t start_time_offset = 0) {
    auto start = process::ProcessStartTime(child_.pid());
    EXPECT_TRUE(start);
    return {{"bootId", BootId()}, {"pid", child_.pid()}, {"startTime", *start + start_time_offset}};
  }
  void Write(const fs::path& file, const nlohmann::json& j) {
    ASSERT_TRUE(WriteFileAtomic(file, j.dump(), 0600, Durability::kUnsynced));
  }
  bool ChildEnded() {
    pollfd p{child_.pidfd(), POLLIN, 0};
    return ::poll(&p, 1, 2000) == 1;
  }

  fs::path root_;
  Fd stdin_read_;
  Fd stdin_write_;
  process::ChildProcess child_;
};

TEST_F(LeftHolder, TheIdentityFileAloneFindsAHolderKilledBeforeTheFirstHandoverState) {
  hostfs::PodLayout layout(root_, "pod");
  Write(layout.SandboxHolderFile(), Identity());
  EXPECT_TRUE(EndLeftHolder(layout));
  EXPECT_TRUE(ChildEnded());
  EXPECT_FALSE(fs::exists(layout.SandboxHolderFile()));
}

TEST_F(LeftHolder, TheHandoverStateNamesTheHolderFirst) {
  hostfs::PodLayout layout(root_, "pod");
  nlohmann::json state = {{"bootId", BootId()}, {"sandbox", Identity()}};
  Write(layout.SupervisorStateFile(), state);
  EXPECT_TRUE(EndLeftHolder(layout));
  EXPECT_TRUE(ChildEnded());
  EXPECT_FALSE(fs::exists(layout.SupervisorStateFile()));
}

TEST_F(LeftHolder, AProcessThatTookTheRecordedPidIsNeverKilled) {
  hostfs::PodLayout layout(root_, "pod");
  Write(layout.SandboxHolderFile(), Identity(/*start_time_offset=*/1));
  EXPECT_FALSE(EndLeftHolder(layout));
  EXPECT_EQ(::kill(child_.pid(), 0), 0);
  EXPECT_FALSE(fs::exists(layout.SandboxHolderFile())) << "a stale record is not kept";
}

TEST_F(LeftHolder, AnotherBootsRecordIsIgnored) {
  hostfs::PodLayout layout(root_, "pod");
  nlohmann::json identity = Identity();
  identity["bootId"] = "00000000-0000-0000-0000-000000000000";
  Write(layout.SandboxHolderFile(), identity);
  EXPECT_FALSE(EndLeftHolder(layout));
  EXPECT_EQ(::kill(child_.pid(), 0), 0);
}

}  // namespace
}  // namespace podvisor::supervisor::executor
