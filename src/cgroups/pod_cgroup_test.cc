// SEMANTICS S10.4 against a plain directory tree that imitates cgroupfs:
// the mount root is a temp dir whose cgroup.controllers lists what the
// "kernel" offers. What only a real kernel shows (EBUSY, cgroup.kill) is
// checked in test tier 4, inside a VM.
#include "cgroups/pod_cgroup.h"

#include "cgroups/mode.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace podvisor::cgroups {
namespace {

namespace fs = std::filesystem;

pod::Quantity Q(std::string_view text) {
  return *pod::Quantity::Parse(text);
}

// Requests equal to limits, as ApplyDefaults leaves a limit-only container.
pod::Container Make(std::string name, std::string_view cpu, std::string_view memory,
                    bool sidecar = false) {
  pod::Container c;
  c.name = std::move(name);
  c.image = "busybox";
  if (!cpu.empty()) c.resources.requests.cpu = c.resources.limits.cpu = Q(cpu);
  if (!memory.empty()) c.resources.requests.memory = c.resources.limits.memory = Q(memory);
  if (sidecar) c.restart_policy = pod::RestartPolicy::kAlways;
  return c;
}

// The worked example of S10.1, every value a limit too: 1100m / 1024Mi.
pod::PodSpec WorkedExample() {
  pod::PodSpec spec;
  spec.init_containers = {Make("init-1", "500m", "1Gi"), Make("sc-a", "100m", "128Mi", true),
                          Make("init-2", "1000m", "256Mi"), Make("sc-b", "200m", "64Mi", true)};
  spec.containers = {Make("app-1", "300m", "512Mi"), Make("app-2", "200m", "256Mi")};
  return spec;
}

std::string Read(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

class FakeCgroupTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("podvisor-cgroup-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    Write(root_ / "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
    Write(root_ / "cgroup.subtree_control", "");
    Write(root_ / "self-cgroup", "0::/init.scope\n");
  }
  void TearDown() override { fs::remove_all(root_); }

  PodCgroup::Options Options(std::vector<std::string> controllers = {"cpu", "memory", "pids"}) {
    PodCgroup::Options o;
    o.mount = root_;
    o.parent = "/podvisor";
    o.pod = "web";
    o.limits = ComputePodCgroupLimits(WorkedExample(), 512);
    o.controllers = std::move(controllers);
    o.self_cgroup_file = root_ / "self-cgroup";
    return o;
  }

  fs::path root_;
};

TEST(PodCgroupLimits, S10_4_WorkedExampleGivesTheEffectiveLimits) {
  PodCgroupLimits l = ComputePodCgroupLimits(WorkedExample(), 1024);
  ASSERT_TRUE(l.memory_max.has_value());
  EXPECT_EQ(*l.memory_max, 1024LL * 1024 * 1024);
  ASSERT_TRUE(l.cpu_quota_us.has_value());
  EXPECT_EQ(*l.cpu_quota_us, 110000);  // 1100m of a 100 ms period
  EXPECT_EQ(l.cpu_weight, 43);         // shares 1126 -> 1 + 1124 * 9999 / 262142
  EXPECT_EQ(l.pids_max, 1024);
  auto files = LimitFiles(l, {"cpu", "memory", "pids"});
  std::vector<std::pair<std::string, std::string>> want = {{"memory.max", "1073741824"},
                                                           {"cpu.max", "110000 100000"},
                                                           {"cpu.weight", "43"},
                                                           {"pids.max", "1024"}};
  EXPECT_EQ(files, want);
}

TEST(PodCgroupLimits, S10_4_NoPodLimitUnlessEveryContainerHasOne) {
  pod::PodSpec spec = WorkedExample();
  spec.containers[1].resources.limits.memory.reset();
  spec.init_containers[0].resources.limits.cpu.reset();
  PodCgroupLimits l = ComputePodCgroupLimits(spec, std::nullopt);
  EXPECT_FALSE(l.memory_max.has_value());
  EXPECT_FALSE(l.cpu_quota_us.has_value());
  EXPECT_EQ(l.cpu_weight, 43);  // the weight follows the requests, which are all there
  auto files = LimitFiles(l, {"cpu", "memory", "pids"});
  std::vector<std::pair<std::string, std::string>> want = {{"cpu.weight", "43"}};
  EXPECT_EQ(files, want);
}

TEST(PodCgroupLimits, S10_4_OverheadCountsInThePodLimits) {
  pod::PodSpec spec = WorkedExample();
  spec.overhead.memory = Q("64Mi");
  spec.overhead.cpu = Q("250m");
  PodCgroupLimits l = ComputePodCgroupLimits(spec, std::nullopt);
  EXPECT_EQ(*l.memory_max, 1088LL * 1024 * 1024);
  EXPECT_EQ(*l.cpu_quota_us, 135000);
}

TEST(PodCgroupLimits, S10_4_CpuWeightFollowsTheKubeletConversion) {
  EXPECT_EQ(CpuWeightFromMilli(0), 1);            // no request: shares 2
  EXPECT_EQ(CpuWeightFromMilli(1), 1);            // shares clamp to 2
  EXPECT_EQ(CpuWeightFromMilli(1000), 39);        // shares 1024
  EXPECT_EQ(CpuWeightFromMilli(128000), 5000);    // shares 131072
  EXPECT_EQ(CpuWeightFromMilli(1000000), 10000);  // shares capped at 262144
}

TEST(PodCgroupLimits, LimitsOfAMissingControllerAreLeftOut) {
  PodCgroupLimits l = ComputePodCgroupLimits(WorkedExample(), 100);
  auto files = LimitFiles(l, {"memory"});
  std::vector<std::pair<std::string, std::string>> want = {{"memory.max", "1073741824"}};
  EXPECT_EQ(files, want);
}

TEST_F(FakeCgroupTree, S10_4_CreateEnablesControllersDownThePathAndWritesTheLimits) {
  auto cg = PodCgroup::Create(Options());
  ASSERT_TRUE(cg) << cg.error().message();
  EXPECT_EQ(cg->path(), root_ / "podvisor" / "web");
  EXPECT_EQ(cg->relative(), "/podvisor/web");
  for (const fs::path& level : {root_, root_ / "podvisor", root_ / "podvisor" / "web"}) {
    EXPECT_EQ(Read(level / "cgroup.subtree_control"), "+cpu +memory +pids") << level;
  }
  fs::path pod = root_ / "podvisor" / "web";
  EXPECT_EQ(Read(pod / "memory.max"), "1073741824");
  EXPECT_EQ(Read(pod / "cpu.max"), "110000 100000");
  EXPECT_EQ(Read(pod / "cpu.weight"), "43");
  EXPECT_EQ(Read(pod / "pids.max"), "512");
  EXPECT_FALSE(cg->supervisor_leaf().has_value());
}

TEST_F(FakeCgroupTree, RemoveCgroupTreeTakesEveryLevelAndToleratesAMissingOne) {
  Write(root_ / "default" / "t1" / "cgroup.procs", "");
  Write(root_ / "default" / "t1" / "_supervisor" / "cgroup.procs", "");
  Write(root_ / "default" / "t1" / "web" / "web_app_0_1" / "cgroup.procs", "");
  ASSERT_TRUE(RemoveCgroupTree(root_ / "default" / "t1"));
  EXPECT_FALSE(fs::exists(root_ / "default" / "t1"));
  EXPECT_TRUE(fs::exists(root_ / "default")) << "the parent is not the tree's";
  EXPECT_TRUE(RemoveCgroupTree(root_ / "default" / "t1"));
}

TEST_F(FakeCgroupTree, ControllersAlreadyDelegatedAreNotWrittenAgain) {
  Write(root_ / "cgroup.subtree_control", "cpu memory pids io\n");
  auto cg = PodCgroup::Create(Options());
  ASSERT_TRUE(cg) << cg.error().message();
  EXPECT_EQ(Read(root_ / "cgroup.subtree_control"), "cpu memory pids io\n");
}

TEST_F(FakeCgroupTree, OnlyTheControllersTheHostOffersAreEnabled) {
  auto cg = PodCgroup::Create(Options({"memory", "io"}));
  ASSERT_TRUE(cg) << cg.error().message();
  EXPECT_EQ(Read(cg->path() / "cgroup.subtree_control"), "+memory");
  EXPECT_TRUE(fs::exists(cg->path() / "memory.max"));
  EXPECT_FALSE(fs::exists(cg->path() / "cpu.max"));
  EXPECT_FALSE(fs::exists(cg->path() / "pids.max"));
}

TEST_F(FakeCgroupTree, DestroyRemovesThePodItsContainersAndTheParentItMade) {
  auto cg = PodCgroup::Create(Options());
  ASSERT_TRUE(cg) << cg.error().message();
  // A container cgroup the runtime did not remove.
  Write(cg->path() / "web_app_0_1" / "memory.max", "1000");
  ASSERT_TRUE(cg->Destroy());
  EXPECT_FALSE(fs::exists(root_ / "podvisor"));
  EXPECT_TRUE(fs::exists(root_ / "cgroup.controllers"));
  EXPECT_TRUE(cg->Destroy());  // idempotent
}

TEST_F(FakeCgroupTree, DestroyKeepsAParentAnotherPodUses) {
  Write(root_ / "podvisor" / "other" / "cgroup.procs", "");
  {
    auto cg = PodCgroup::Create(Options());
    ASSERT_TRUE(cg) << cg.error().message();
    EXPECT_TRUE(fs::exists(root_ / "podvisor" / "web"));
  }  // the destructor destroys
  EXPECT_FALSE(fs::exists(root_ / "podvisor" / "web"));
  EXPECT_TRUE(fs::exists(root_ / "podvisor" / "other"));
}

TEST_F(FakeCgroupTree, APopulatedPodCgroupOfTheSameNameIsRefusedAndKept) {
  Write(root_ / "podvisor" / "web" / "cgroup.events", "populated 1\nfrozen 0\n");
  auto cg = PodCgroup::Create(Options());
  ASSERT_FALSE(cg);
  EXPECT_EQ(cg.error().code(), EBUSY);
  EXPECT_NE(cg.error().message().find("already running"), std::string::npos)
      << cg.error().message();
  EXPECT_TRUE(fs::exists(root_ / "podvisor" / "web" / "cgroup.events"));
}

// S15: a pod handed over to the next supervisor keeps its populated
// cgroup, limits written again; it is that supervisor's to remove.
TEST_F(FakeCgroupTree, AHandedOverPodKeepsItsPopulatedCgroup) {
  Write(root_ / "podvisor" / "web" / "cgroup.events", "populated 1\nfrozen 0\n");
  auto options = Options();
  options.handed_over = true;
  auto cg = PodCgroup::Create(options);
  ASSERT_TRUE(cg) << cg.error().message();
  EXPECT_EQ(cg->path(), root_ / "podvisor" / "web");
  EXPECT_TRUE(fs::exists(root_ / "podvisor" / "web" / "cgroup.events"));
  // The containers ended: the pod's end removes it.
  Write(root_ / "podvisor" / "web" / "cgroup.events", "populated 0\nfrozen 0\n");
  ASSERT_TRUE(cg->Destroy());
  EXPECT_FALSE(fs::exists(root_ / "podvisor" / "web"));
}

TEST_F(FakeCgroupTree, AStaleEmptyPodCgroupIsReusedAndRemoved) {
  Write(root_ / "podvisor" / "web" / "cgroup.events", "populated 0\nfrozen 0\n");
  auto cg = PodCgroup::Create(Options());
  ASSERT_TRUE(cg) << cg.error().message();
  ASSERT_TRUE(cg->Destroy());
  EXPECT_FALSE(fs::exists(root_ / "podvisor" / "web"));
}

TEST_F(FakeCgroupTree, AParentWithDotDotIsRefusedAndNothingIsMade) {
  auto o = Options();
  o.parent = "/a/../../etc";
  auto cg = PodCgroup::Create(o);
  ASSERT_FALSE(cg);
  EXPECT_NE(cg.error().message().find("--cgroup-parent"), std::string::npos);
  EXPECT_FALSE(fs::exists(root_ / "a"));
}

TEST_F(FakeCgroupTree, AFailedLimitWriteLeavesNothingBehind) {
  // memory.max as a directory: the write fails half way through Create.
  auto o = Options();
  fs::create_directories(root_ / "podvisor" / "web" / "memory.max");
  auto cg = PodCgroup::Create(o);
  ASSERT_FALSE(cg);
  EXPECT_NE(cg.error().message().find("memory.max"), std::string::npos) << cg.error().message();
  EXPECT_FALSE(fs::exists(root_ / "podvisor" / "web"));
  EXPECT_TRUE(fs::exists(root_ / "podvisor"));  // it was there before
}

TEST_F(FakeCgroupTree, KillOfAnUnpopulatedCgroupIsANoOp) {
  Write(root_ / "x" / "cgroup.events", "populated 0\n");
  EXPECT_FALSE(IsPopulated(root_ / "x"));
  EXPECT_TRUE(KillCgroup(root_ / "x", 10));
  EXPECT_FALSE(fs::exists(root_ / "x" / "cgroup.kill"));
}

// On the real cgroup2 of this host (a hybrid host's has no cpu, memory or
// pids, so nothing is enabled and no limit written): a process left in the
// pod cgroup is killed through cgroup.kill and every directory goes.
TEST(PodCgroupOnCgroupfs, DestroyKillsAStragglerThroughCgroupKillAndRemovesTheDirectories) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create cgroups";
  CgroupInfo info = DetectCgroups();
  if (info.v2_mount.empty()) GTEST_SKIP() << "no cgroup2 mount on this host";
  PodCgroup::Options o;
  o.mount = info.v2_mount;
  o.parent = "/podvisor-unit-" + std::to_string(::getpid());
  o.pod = "straggler";
  auto cg = PodCgroup::Create(o);
  ASSERT_TRUE(cg) << cg.error().message();
  if (!fs::exists(cg->path() / "cgroup.kill")) {
    (void)cg->Destroy();
    GTEST_SKIP() << "no cgroup.kill (Linux < 5.14)";
  }
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;) ::pause();
  }
  if (auto moved = WriteCgroupFile(cg->path(), "cgroup.procs", std::to_string(child)); !moved) {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    (void)cg->Destroy();
    FAIL() << moved.error().message();
  }
  EXPECT_TRUE(IsPopulated(cg->path()));
  auto destroyed = cg->Destroy();
  EXPECT_TRUE(destroyed) << destroyed.error().message();
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  EXPECT_FALSE(fs::exists(info.v2_mount / o.parent.substr(1)));
}

// S10.8: spec.resources sizes the pod cgroup: its limits are enforced even
// where no container has one, and cpu.weight follows its request.
TEST(PodCgroupLimits, S10_8_PodLevelResourcesSizeThePodCgroup) {
  pod::PodSpec spec;
  pod::Container app = Make("app", "", "");
  app.resources.requests.cpu = Q("250m");
  app.resources.requests.memory = Q("128Mi");
  spec.containers = {app, Make("side", "", "")};
  spec.resources.requests.cpu = Q("1500m");
  spec.resources.requests.memory = Q("256Mi");
  spec.resources.limits.cpu = Q("2");
  spec.resources.limits.memory = Q("512Mi");
  PodCgroupLimits l = ComputePodCgroupLimits(spec, 64);
  ASSERT_TRUE(l.memory_max && l.cpu_quota_us);
  EXPECT_EQ(*l.memory_max, 512LL * 1024 * 1024);
  EXPECT_EQ(*l.cpu_quota_us, 200000);
  EXPECT_EQ(l.cpu_weight, CpuWeightFromMilli(1500));
  EXPECT_EQ(l.cpu_weight, 59);  // shares 1536
  auto files = LimitFiles(l, {"cpu", "memory", "pids"});
  std::vector<std::pair<std::string, std::string>> want = {{"memory.max", "536870912"},
                                                           {"cpu.max", "200000 100000"},
                                                           {"cpu.weight", "59"},
                                                           {"pids.max", "64"}};
  EXPECT_EQ(files, want);
}

// A pod-level limit of one resource leaves the other to the S10.4 rule,
// and a pod-level limit replaces a larger aggregate of container limits.
TEST(PodCgroupLimits, S10_8_PodLevelLimitReplacesTheContainersAggregate) {
  pod::PodSpec spec = WorkedExample();  // every container limited: 1100m / 1024Mi
  spec.resources.limits.memory = Q("768Mi");
  spec.resources.requests.memory = Q("768Mi");
  PodCgroupLimits l = ComputePodCgroupLimits(spec, std::nullopt);
  EXPECT_EQ(*l.memory_max, 768LL * 1024 * 1024);
  EXPECT_EQ(*l.cpu_quota_us, 110000);  // the containers' own
  spec.containers[0].resources.limits.cpu.reset();
  EXPECT_FALSE(ComputePodCgroupLimits(spec, std::nullopt).cpu_quota_us.has_value());
}

// S10.11: where no pod cgroup can hold them, pod-level resources are
// refused, naming what is missing.
TEST(PodCgroupLimits, S10_11_PodLevelResourcesNeedCgroupV2ControllersAndRoot) {
  CgroupInfo hybrid{CgroupMode::kHybrid, "/sys/fs/cgroup/unified", {}};
  std::string why = PodLevelResourcesUnenforceable(hybrid, true);
  EXPECT_EQ(why.rfind("cgroup v2 (as in Kubernetes); this host's cgroups are hybrid", 0), 0u)
      << why;
  CgroupInfo unified{CgroupMode::kUnified, "/sys/fs/cgroup", {"cpu", "pids"}};
  why = PodLevelResourcesUnenforceable(unified, true);
  EXPECT_EQ(why.rfind("the memory controller(s) of cgroup v2", 0), 0u) << why;
  unified.controllers = {"cpu", "memory"};
  EXPECT_EQ(PodLevelResourcesUnenforceable(unified, false),
            "root: podvisor makes the pod cgroup that enforces them");
  EXPECT_EQ(PodLevelResourcesUnenforceable(unified, true), "");
}

}  // namespace
}  // namespace podvisor::cgroups
