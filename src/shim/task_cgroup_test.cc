#include "shim/task_cgroup.h"

#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

namespace podvisor::shim {
namespace {

TEST(ChooseCgroup, UnifiedHostNestsThePodInTheSpecsCgroupsPath) {
  CgroupChoice c = ChooseCgroup("/default/web", /*unified=*/true, "", "default", "web");
  EXPECT_EQ(c.task_cgroup, "/default/web");
  EXPECT_EQ(c.cgroup_parent, "self");
  EXPECT_EQ(c.note, "");
}

TEST(ChooseCgroup, PathIsNormalized) {
  EXPECT_EQ(ChooseCgroup("default//web/", true, "", "default", "web").task_cgroup, "/default/web");
}

TEST(ChooseCgroup, AnnotationOverridesEverything) {
  CgroupChoice c = ChooseCgroup("/default/web", true, "/mine", "default", "web");
  EXPECT_EQ(c.task_cgroup, "");
  EXPECT_EQ(c.cgroup_parent, "/mine");
  EXPECT_EQ(ChooseCgroup("", false, "self", "ns", "id").cgroup_parent, "self");
}

TEST(ChooseCgroup, HybridHostKeepsTheShimsOwnParentAndSaysWhy) {
  CgroupChoice c = ChooseCgroup("/default/web", /*unified=*/false, "", "default", "web");
  EXPECT_EQ(c.task_cgroup, "");
  EXPECT_EQ(c.cgroup_parent, "/podvisor/containerd/default/web");
  EXPECT_NE(c.note.find("not v2 only"), std::string::npos) << c.note;
}

TEST(ChooseCgroup, NoCgroupsPathKeepsTheShimsOwnParent) {
  CgroupChoice c = ChooseCgroup("", true, "", "k8s.io", "t1");
  EXPECT_EQ(c.cgroup_parent, "/podvisor/containerd/k8s.io/t1");
  EXPECT_NE(c.note.find("no linux.cgroupsPath"), std::string::npos) << c.note;
}

TEST(ChooseCgroup, SystemdSlicePathIsNotCreatedBehindSystemdsBack) {
  CgroupChoice c = ChooseCgroup("system.slice:containerd:t1", true, "", "default", "t1");
  EXPECT_EQ(c.task_cgroup, "");
  EXPECT_EQ(c.cgroup_parent, "/podvisor/containerd/default/t1");
  EXPECT_NE(c.note.find("systemd"), std::string::npos) << c.note;
}

TEST(ChooseCgroup, PathLeavingTheMountIsRefused) {
  CgroupChoice c = ChooseCgroup("/../../etc", true, "", "default", "t1");
  EXPECT_EQ(c.task_cgroup, "");
  EXPECT_EQ(c.cgroup_parent, "/podvisor/containerd/default/t1");
  EXPECT_EQ(ChooseCgroup("/", true, "", "default", "t1").task_cgroup, "");
}

class ReadCgroupsPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pv-taskcg-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path Write(const std::string& text) {
    std::ofstream(dir_ / "config.json") << text;
    return dir_ / "config.json";
  }
  std::filesystem::path dir_;
};

TEST_F(ReadCgroupsPathTest, ReadsLinuxCgroupsPath) {
  EXPECT_EQ(ReadCgroupsPath(Write(R"({"linux":{"cgroupsPath":"/default/t1"}})")), "/default/t1");
}

TEST_F(ReadCgroupsPathTest, AbsentOrDamagedIsEmpty) {
  EXPECT_EQ(ReadCgroupsPath(dir_ / "missing.json"), "");
  EXPECT_EQ(ReadCgroupsPath(Write("{not json")), "");
  EXPECT_EQ(ReadCgroupsPath(Write(R"({"linux":{"cgroupsPath":7}})")), "");
  EXPECT_EQ(ReadCgroupsPath(Write(R"({"linux":[]})")), "");
  EXPECT_EQ(ReadCgroupsPath(Write(R"({"process":{}})")), "");
}

TEST_F(ReadCgroupsPathTest, RemovingAMissingTaskCgroupIsOk) {
  EXPECT_TRUE(RemoveTaskCgroup(dir_, "/absent/t1").ok());
  EXPECT_TRUE(RemoveTaskCgroup(dir_, "").ok());
}

}  // namespace
}  // namespace podvisor::shim
