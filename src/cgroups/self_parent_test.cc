// --cgroup-parent=self against a plain directory tree imitating cgroupfs
// (the kernel's side is tier 4's): where the leaf and the pod go, what
// Leave restores, and which /proc/self/cgroup contents are refused.
#include "cgroups/self_parent.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cgroups/pod_cgroup.h"

namespace podvisor::cgroups {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Put(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

class SelfParent : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("podvisor-self-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    mount_ = root_ / "cgroup";
    task_ = mount_ / "nomad.slice" / "alloc.task.scope";
    fs::create_directories(task_);
    Put(task_ / "cgroup.subtree_control", "");
    self_file_ = root_ / "self-cgroup";
    Put(self_file_, "0::/nomad.slice/alloc.task.scope\n");
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path root_, mount_, task_, self_file_;
};

TEST_F(SelfParent, LeafBesideThePodAndBackOnLeave) {
  auto leaf = SupervisorLeaf::Enter(mount_, self_file_, 4242);
  ASSERT_TRUE(leaf) << leaf.error().message();
  EXPECT_EQ(leaf->parent(), "/nomad.slice/alloc.task.scope");
  EXPECT_EQ(leaf->leaf(), task_ / "_supervisor");
  EXPECT_EQ(Read(task_ / "_supervisor" / "cgroup.procs"), "4242");

  // The pod cgroup goes beside the leaf, as run passes parent() on.
  PodCgroup::Options o;
  o.mount = mount_;
  o.parent = leaf->parent();
  o.pod = "web";
  o.controllers = {"cpu", "memory", "pids"};
  o.self_cgroup_file = self_file_;
  {
    auto pod = PodCgroup::Create(o);
    ASSERT_TRUE(pod) << pod.error().message();
    EXPECT_EQ(pod->path(), task_ / "web");
    EXPECT_EQ(pod->relative(), "/nomad.slice/alloc.task.scope/web");
    // What the kernel would show once the pod cgroup enabled them.
    Put(task_ / "cgroup.subtree_control", "cpu memory pids\n");
  }
  EXPECT_FALSE(fs::exists(task_ / "web"));

  ASSERT_TRUE(leaf->Leave());
  EXPECT_EQ(Read(task_ / "cgroup.subtree_control"), "-cpu -memory -pids");
  EXPECT_EQ(Read(task_ / "cgroup.procs"), "4242");
  EXPECT_FALSE(fs::exists(task_ / "_supervisor"));
  EXPECT_TRUE(leaf->Leave());  // idempotent
}

// S15.2: a supervisor that re-executed itself in place is in its leaf
// already; it keeps that leaf and the parent the pod cgroup is under.
TEST_F(SelfParent, ASupervisorAlreadyInItsLeafKeepsIt) {
  fs::create_directories(task_ / "_supervisor");
  Put(self_file_, "0::/nomad.slice/alloc.task.scope/_supervisor\n");
  auto leaf = SupervisorLeaf::Enter(mount_, self_file_, 4242);
  ASSERT_TRUE(leaf) << leaf.error().message();
  EXPECT_EQ(leaf->parent(), "/nomad.slice/alloc.task.scope");
  EXPECT_EQ(leaf->leaf(), task_ / "_supervisor");
  EXPECT_FALSE(fs::exists(task_ / "_supervisor" / "_supervisor"));
}

TEST_F(SelfParent, OnlyTheControllersTheEngineDelegatedAreUsed) {
  Put(task_ / "cgroup.controllers", "memory pids\n");
  auto leaf = SupervisorLeaf::Enter(mount_, self_file_, 7);
  ASSERT_TRUE(leaf);
  EXPECT_EQ(leaf->DelegatedControllers(), (std::vector<std::string>{"memory", "pids"}));
}

TEST_F(SelfParent, LeaveKeepsControllersTheEngineEnabled) {
  Put(task_ / "cgroup.subtree_control", "memory\n");
  auto leaf = SupervisorLeaf::Enter(mount_, self_file_, 7);
  ASSERT_TRUE(leaf);
  Put(task_ / "cgroup.subtree_control", "cpu memory pids\n");
  ASSERT_TRUE(leaf->Leave());
  EXPECT_EQ(Read(task_ / "cgroup.subtree_control"), "-cpu -pids");
}

TEST_F(SelfParent, RootCgroupNestsAtTheMount) {
  Put(self_file_, "12:pids:/x\n0::/\n");
  auto leaf = SupervisorLeaf::Enter(mount_, self_file_, 7);
  ASSERT_TRUE(leaf) << leaf.error().message();
  EXPECT_EQ(leaf->parent(), "/");
  EXPECT_EQ(leaf->leaf(), mount_ / "_supervisor");
}

TEST_F(SelfParent, RefusesWhatCannotBeNestedUnder) {
  Put(self_file_, "12:pids:/user.slice\n1:name=systemd:/user.slice\n");
  auto v1 = SupervisorLeaf::Enter(mount_, self_file_, 7);
  ASSERT_FALSE(v1);
  EXPECT_THAT(v1.error().message(), HasSubstr("no cgroup v2 line"));

  Put(self_file_, "0::/../outside\n");
  auto outside = ReadSelfCgroup(self_file_);
  ASSERT_FALSE(outside);
  EXPECT_THAT(outside.error().message(), HasSubstr("\"/../outside\""));

  Put(self_file_, "0::/gone (deleted)\n");
  EXPECT_FALSE(ReadSelfCgroup(self_file_));

  Put(self_file_, "0::/nomad.slice/missing.scope\n");
  auto missing = SupervisorLeaf::Enter(mount_, self_file_, 7);
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message(), HasSubstr("missing.scope/_supervisor"));
  EXPECT_FALSE(ReadSelfCgroup(root_ / "absent"));
}

TEST(AutoCgroupParent, SelfOnlyOnCgroupV2AsRoot) {
  std::string why;
  CgroupInfo v2;
  v2.mode = CgroupMode::kUnified;
  EXPECT_EQ(ResolveAutoCgroupParent(v2, true, why), kSelfCgroupParent);
  EXPECT_EQ(why, "");
  EXPECT_EQ(ResolveAutoCgroupParent(v2, false, why), kDefaultCgroupParent);
  EXPECT_EQ(why, "not root");
  CgroupInfo hybrid;
  hybrid.mode = CgroupMode::kHybrid;
  EXPECT_EQ(ResolveAutoCgroupParent(hybrid, true, why), kDefaultCgroupParent);
  EXPECT_THAT(why, ::testing::StartsWith("cgroups are "));
}

// S21.5: delegated means the directory, its cgroup.procs and its
// cgroup.subtree_control are writable by this process (as root every
// existing one is: the missing file and the host's mode are what fail).
TEST_F(SelfParent, S21_5_DelegationNeedsTheDirectoryAndItsTwoFiles) {
  CgroupInfo cg;
  cg.mode = CgroupMode::kUnified;
  cg.v2_mount = mount_;
  EXPECT_THAT(SelfCgroupNotDelegated(cg, self_file_), HasSubstr("cgroup.procs is not writable"));
  Put(task_ / "cgroup.procs", "");
  EXPECT_EQ(SelfCgroupNotDelegated(cg, self_file_), "");
  fs::remove(task_ / "cgroup.subtree_control");
  EXPECT_THAT(SelfCgroupNotDelegated(cg, self_file_),
              HasSubstr("cgroup.subtree_control is not writable"));
  cg.mode = CgroupMode::kHybrid;
  EXPECT_THAT(SelfCgroupNotDelegated(cg, self_file_), HasSubstr("cgroups are "));
}

}  // namespace
}  // namespace podvisor::cgroups
