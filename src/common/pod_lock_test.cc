#include "common/pod_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <optional>
#include <thread>

namespace podvisor {
namespace {

namespace fs = std::filesystem;

class PodLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pod-lock-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(PodLockTest, ASecondTakerIsRefusedAndToldTheHolder) {
  auto first = PodLock::TryTake(dir_, "web");
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(PodLock::RecordedHolder(dir_, "web"), ::getpid());
  // flock is per open file: a second open in this process conflicts as a
  // second supervisor would.
  auto second = PodLock::TryTake(dir_, "web");
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code(), EBUSY);
  EXPECT_EQ(second.error().message(),
            "another supervisor is serving pod web (pid " + std::to_string(::getpid()) +
                ", holding " + (dir_ / "web.lock").string() +
                "; stop it first: podvisor stop --state-dir " + dir_.string() + " web)");
  EXPECT_NE(second.error().message().find("web.lock"), std::string::npos);
  // Another pod of the same state directory is not affected.
  EXPECT_TRUE(PodLock::TryTake(dir_, "db"));
}

TEST_F(PodLockTest, ReleasedWithItsHolder) {
  {
    auto first = PodLock::TryTake(dir_, "web");
    ASSERT_TRUE(first);
  }
  EXPECT_TRUE(PodLock::TryTake(dir_, "web"));
}

TEST_F(PodLockTest, WaitReleasedReturnsOnceTheHolderLetsGo) {
  EXPECT_TRUE(PodLock::WaitReleased(dir_, "none"));  // no file: nothing to wait for
  auto taken = PodLock::TryTake(dir_, "web");
  ASSERT_TRUE(taken);
  std::optional<PodLock> held(std::move(*taken));
  std::atomic<bool> returned = false;
  std::thread waiter([&] {
    EXPECT_TRUE(PodLock::WaitReleased(dir_, "web"));
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned);  // still held
  held.reset();
  waiter.join();
  EXPECT_TRUE(returned);
}

TEST_F(PodLockTest, AnUnlinkedLockIsNotTakenFromTheOldFile) {
  auto rm = PodLock::TryTake(dir_, "web");
  ASSERT_TRUE(rm);
  rm->Unlink();
  EXPECT_FALSE(fs::exists(PodLock::PathFor(dir_, "web")));
  // While `rm` still holds the unlinked file, a new run makes a new one.
  auto run = PodLock::TryTake(dir_, "web");
  ASSERT_TRUE(run) << run.error().message();
  EXPECT_TRUE(fs::exists(PodLock::PathFor(dir_, "web")));
}

}  // namespace
}  // namespace podvisor
