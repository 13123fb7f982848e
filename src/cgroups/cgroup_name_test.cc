#include "cgroups/cgroup_name.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace podvisor::cgroups {
namespace {

namespace fs = std::filesystem;

class CgroupNameTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cgroup-name-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "a" / "web");
    fs::create_directories(dir_ / "b" / "web");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path claims() const { return dir_ / "claims"; }
  ClaimOwner a() const { return {dir_ / "a", "web"}; }
  ClaimOwner b() const { return {dir_ / "b", "web"}; }
  fs::path dir_;
};

TEST_F(CgroupNameTest, TwoStateDirectoriesNeverShareAPodCgroup) {
  auto first = ClaimPodCgroupName(claims(), "/podvisor", a(), std::nullopt);
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(first->name, "web");
  auto second = ClaimPodCgroupName(claims(), "/podvisor", b(), std::nullopt);
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(second->name, "web." + StateDirTag(dir_ / "b"));
  EXPECT_EQ(StateDirTag(dir_ / "b").size(), 8u);
  EXPECT_NE(StateDirTag(dir_ / "a"), StateDirTag(dir_ / "b"));
  // Another parent is another namespace of names.
  auto elsewhere = ClaimPodCgroupName(claims(), "/other", b(), std::nullopt);
  ASSERT_TRUE(elsewhere);
  EXPECT_EQ(elsewhere->name, "web");
}

TEST_F(CgroupNameTest, ARunAfterACrashKeepsItsRecordedName) {
  std::string tagged;
  {
    auto held = ClaimPodCgroupName(claims(), "/podvisor", a(), std::nullopt);
    ASSERT_TRUE(held);
    auto crashed = ClaimPodCgroupName(claims(), "/podvisor", b(), std::nullopt);
    ASSERT_TRUE(crashed);
    tagged = crashed->name;
    held->claim.Release();  // a's pod ended cleanly; b's supervisor died
  }
  ASSERT_TRUE(RecordCgroupName(dir_ / "b" / "web", tagged));
  auto recorded = ReadRecordedCgroupName(dir_ / "b" / "web");
  ASSERT_TRUE(recorded);
  EXPECT_EQ(*recorded, tagged);
  // "web" is free now, but b's cgroup (and what may still run in it) is the
  // tagged one.
  auto again = ClaimPodCgroupName(claims(), "/podvisor", b(), recorded);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->name, tagged);
}

TEST_F(CgroupNameTest, ARecordedNameIsOnlyTrustedWhenPlausible) {
  fs::create_directories(dir_ / "c");
  std::ofstream(dir_ / "c" / kCgroupNameFile) << "../../etc\n";
  EXPECT_FALSE(ReadRecordedCgroupName(dir_ / "c"));
  EXPECT_FALSE(ReadRecordedCgroupName(dir_ / "none"));
}

}  // namespace
}  // namespace podvisor::cgroups
