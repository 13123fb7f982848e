// S17.7–S17.9: the values, the order of the writes, the failure rules, and
// the file writer on plain directory trees that imitate cgroupfs (v2 and
// v1), where every file holds what was written.
#include "cgroups/resize.h"

#include <unistd.h>

#include <fstream>
#include <map>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cgroups/pod_cgroup.h"

namespace podvisor::cgroups {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kMi = 1024 * 1024;

CgroupResources Mem(int64_t mi) {
  CgroupResources r;
  r.memory_limit = mi * kMi;
  return r;
}

CgroupResources Cpu(std::optional<int64_t> quota, int64_t shares) {
  CgroupResources r;
  r.cpu_quota_us = quota;
  r.cpu_shares = shares;
  return r;
}

// Records "<phase> <resource> <cgroup>" and fails the writes it is told to.
class FakeWriter : public ResizeWriter {
 public:
  Status Write(const ResizeWrite& w) override {
    std::string line = std::string(ResizePhaseName(w.phase)) + " " +
                       std::string(ResizeResourceName(w.resource)) + " " +
                       (w.container.empty() ? "pod" : w.container);
    log.push_back(line);
    if (fail.contains(line)) return Error("EBUSY");
    return Ok();
  }
  std::vector<std::string> log;
  std::set<std::string> fail;
};

std::vector<std::string> Lines(const std::vector<ResizeWrite>& writes) {
  FakeWriter w;
  for (const ResizeWrite& x : writes) (void)w.Write(x);
  return w.log;
}

TEST(ResizeValues, S17_7_ContainerValuesMatchTheOciConfig) {
  pod::Container c;
  c.resources.requests.cpu = pod::Quantity::FromMilli(250);
  c.resources.limits.cpu = pod::Quantity::FromMilli(5);  // below the 1 ms floor
  c.resources.limits.memory = pod::Quantity::FromValue(64 * kMi);
  CgroupResources r = ContainerCgroupResources(c);
  EXPECT_EQ(r.memory_limit, 64 * kMi);
  EXPECT_EQ(r.cpu_quota_us, 1000);
  EXPECT_EQ(r.cpu_shares, 256);
  EXPECT_EQ(ContainerCgroupResources(pod::Container{}), CgroupResources{});
  // The v2 weight agrees with the pod cgroup's conversion from millicores.
  for (int64_t milli : {0, 1, 100, 250, 1000, 4000, 300000}) {
    pod::Container m;
    if (milli > 0) m.resources.requests.cpu = pod::Quantity::FromMilli(milli);
    EXPECT_EQ(CpuWeightFromShares(ContainerCgroupResources(m).cpu_shares),
              CpuWeightFromMilli(milli))
        << milli;
  }
}

TEST(ResizePlan, S17_7_KubeletOrderPerResourceMemoryFirst) {
  ResizeTargets t;
  // The pod grows in memory (a +64Mi, b -32Mi) and shrinks in cpu.
  t.pod = ResizeTargets::Values{Mem(192), Mem(224)};
  t.pod->before.cpu_quota_us = 40000;
  t.pod->after.cpu_quota_us = 30000;
  t.containers = {
      {"a", {Mem(64), Mem(128)}},
      {"b", {Mem(128), Mem(96)}},
  };
  t.containers[0].second.before.cpu_quota_us = 20000;  // a: cpu 200m -> 100m
  t.containers[0].second.after.cpu_quota_us = 10000;
  t.containers[1].second.before.cpu_quota_us = 20000;  // b: cpu unchanged
  t.containers[1].second.after.cpu_quota_us = 20000;
  EXPECT_THAT(Lines(PlanResizeWrites(t)),
              ElementsAre("RaisePod memory pod", "LowerContainer memory b",
                          "RaiseContainer memory a", "LowerContainer cpu a", "LowerPod cpu pod"));
}

TEST(ResizePlan, S17_7_NetDecreaseLowersThePodAfterTheContainers) {
  ResizeTargets t;
  t.pod = ResizeTargets::Values{Mem(256), Mem(160)};
  t.containers = {{"a", {Mem(128), Mem(96)}}, {"b", {Mem(128), Mem(64)}}};
  EXPECT_THAT(
      Lines(PlanResizeWrites(t)),
      ElementsAre("LowerContainer memory a", "LowerContainer memory b", "LowerPod memory pod"));
}

TEST(ResizePlan, S17_7_NoPodCgroupAndUnlimitedCountsAsLargest) {
  ResizeTargets t;
  CgroupResources unlimited;
  t.containers = {{"a", {Mem(64), unlimited}}, {"b", {unlimited, Mem(64)}}};
  EXPECT_THAT(Lines(PlanResizeWrites(t)),
              ElementsAre("LowerContainer memory b", "RaiseContainer memory a"));
  // cpu: with the quota unchanged, the shares decide.
  ResizeTargets s;
  s.containers = {{"a", {Cpu(std::nullopt, 102), Cpu(std::nullopt, 204)}}};
  EXPECT_THAT(Lines(PlanResizeWrites(s)), ElementsAre("RaiseContainer cpu a"));
  ResizeTargets none;
  none.containers = {{"a", {Mem(64), Mem(64)}}};
  EXPECT_THAT(PlanResizeWrites(none), IsEmpty());
}

TEST(ResizeApply, S17_9_FailedDecreaseStopsPodDecreaseAndIncreases) {
  ResizeTargets t;
  t.pod = ResizeTargets::Values{Mem(256), Mem(192)};
  t.containers = {{"a", {Mem(128), Mem(64)}}, {"b", {Mem(64), Mem(32)}}, {"c", {Mem(64), Mem(96)}}};
  t.containers[2].second.after.cpu_shares = 512;  // c: cpu request up
  FakeWriter w;
  w.fail = {"LowerContainer memory a"};
  ResizeOutcome out = ApplyResizeWrites(PlanResizeWrites(t), w);
  // b's decrease is still tried, the pod decrease and c's increase are
  // not; cpu is planned on its own and goes ahead.
  EXPECT_THAT(w.log, ElementsAre("LowerContainer memory a", "LowerContainer memory b",
                                 "RaiseContainer cpu c"));
  ASSERT_EQ(out.failed.size(), 1u);
  EXPECT_EQ(out.failed[0].first.container, "a");
  EXPECT_EQ(out.failed[0].second, "EBUSY");
  EXPECT_THAT(Lines(out.skipped), ElementsAre("LowerPod memory pod", "RaiseContainer memory c"));
  EXPECT_EQ(out.applied.size(), 2u);
  EXPECT_FALSE(out.ok());
}

TEST(ResizeApply, S17_9_FailedIncreaseLetsTheOtherIncreasesRun) {
  ResizeTargets t;
  t.pod = ResizeTargets::Values{Mem(128), Mem(256)};
  t.containers = {{"a", {Mem(64), Mem(128)}}, {"b", {Mem(64), Mem(128)}}};
  FakeWriter w;
  w.fail = {"RaiseContainer memory a"};
  ResizeOutcome out = ApplyResizeWrites(PlanResizeWrites(t), w);
  EXPECT_THAT(w.log, ElementsAre("RaisePod memory pod", "RaiseContainer memory a",
                                 "RaiseContainer memory b"));
  EXPECT_EQ(out.failed.size(), 1u);
  EXPECT_THAT(out.skipped, IsEmpty());
  // A pod cgroup that cannot be raised ends that resource.
  FakeWriter p;
  p.fail = {"RaisePod memory pod"};
  out = ApplyResizeWrites(PlanResizeWrites(t), p);
  EXPECT_THAT(p.log, ElementsAre("RaisePod memory pod"));
  EXPECT_EQ(out.skipped.size(), 2u);
}

class ResizeFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("podvisor-resize-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "v2");
    fs::create_directories(root_ / "memory");
    fs::create_directories(root_ / "cpu");
    Put("v2/memory.max", "67108864\n");
    Put("v2/cpu.max", "20000 100000\n");
    Put("v2/cpu.weight", "4\n");
    Put("memory/memory.limit_in_bytes", "67108864\n");
    Put("memory/memory.memsw.limit_in_bytes", "67108864\n");
    Put("cpu/cpu.cfs_period_us", "100000\n");
    Put("cpu/cpu.cfs_quota_us", "20000\n");
    Put("cpu/cpu.shares", "102\n");
  }
  void TearDown() override { fs::remove_all(root_); }
  void Put(const std::string& file, const std::string& text) {
    std::ofstream(root_ / file) << text;
  }
  std::string Get(const std::string& file) {
    std::ifstream in(root_ / file);
    std::string s;
    std::getline(in, s);
    return s;
  }
  CgroupLocation V2() {
    CgroupLocation at;
    at.v2 = root_ / "v2";
    return at;
  }
  CgroupLocation V1() {
    CgroupLocation at;
    at.v1_memory = root_ / "memory";
    at.v1_cpu = root_ / "cpu";
    return at;
  }
  CgroupFileWriter Writer(CgroupLocation at) {
    return CgroupFileWriter([at](const std::string& c) -> std::optional<CgroupLocation> {
      if (c == "app") return at;
      return std::nullopt;
    });
  }
  fs::path root_;
};

TEST_F(ResizeFiles, S17_8_V2FilesWrittenAndReadBack) {
  CgroupFileWriter w = Writer(V2());
  CgroupResources from = *ReadCgroupResources(V2());
  EXPECT_EQ(from.memory_limit, 64 * kMi);
  EXPECT_EQ(from.cpu_quota_us, 20000);
  CgroupResources to = Mem(128);
  to.cpu_quota_us = std::nullopt;
  to.cpu_shares = 1024;
  ASSERT_TRUE(w.Write({ResizePhase::kRaiseContainer, ResizeResource::kMemory, "app", from, to}));
  ASSERT_TRUE(w.Write({ResizePhase::kRaiseContainer, ResizeResource::kCpu, "app", from, to}));
  EXPECT_EQ(Get("v2/memory.max"), std::to_string(128 * kMi));
  EXPECT_EQ(Get("v2/cpu.max"), "max 100000");
  EXPECT_EQ(Get("v2/cpu.weight"), std::to_string(CpuWeightFromMilli(1000)));
  CgroupResources now = *ReadCgroupResources(V2());
  EXPECT_EQ(now.memory_limit, 128 * kMi);
  EXPECT_EQ(now.cpu_quota_us, std::nullopt);
  EXPECT_EQ(CpuWeightFromShares(now.cpu_shares), CpuWeightFromShares(1024));
}

TEST_F(ResizeFiles, S17_8_V1FilesKeepMemswAboveTheLimit) {
  CgroupFileWriter w = Writer(V1());
  CgroupResources from = *ReadCgroupResources(V1());
  EXPECT_EQ(from.cpu_shares, 102);
  CgroupResources up = Mem(128);
  ASSERT_TRUE(w.Write({ResizePhase::kRaiseContainer, ResizeResource::kMemory, "app", from, up}));
  EXPECT_EQ(Get("memory/memory.limit_in_bytes"), std::to_string(128 * kMi));
  EXPECT_EQ(Get("memory/memory.memsw.limit_in_bytes"), std::to_string(128 * kMi));
  // Unlimited is -1 on v1.
  CgroupResources cpu = Cpu(std::nullopt, 512);
  ASSERT_TRUE(w.Write({ResizePhase::kRaiseContainer, ResizeResource::kCpu, "app", from, cpu}));
  EXPECT_EQ(Get("cpu/cpu.cfs_quota_us"), "-1");
  EXPECT_EQ(Get("cpu/cpu.shares"), "512");
  EXPECT_FALSE(w.Write({ResizePhase::kRaiseContainer, ResizeResource::kCpu, "other", from, cpu}));
}

TEST_F(ResizeFiles, S17_8_ARefusedWriteLeavesTheOldValues) {
  // cpu.shares cannot be written (a directory in its place): the quota
  // and period written before it are put back.
  fs::remove(root_ / "cpu/cpu.shares");
  fs::create_directories(root_ / "cpu/cpu.shares");
  CgroupFileWriter w = Writer(V1());
  CgroupResources from = Cpu(20000, 102);
  Status s =
      w.Write({ResizePhase::kRaiseContainer, ResizeResource::kCpu, "app", from, Cpu(50000, 512)});
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message(), HasSubstr("container app"));
  EXPECT_EQ(Get("cpu/cpu.cfs_quota_us"), "20000");
  EXPECT_EQ(Get("cpu/cpu.cfs_period_us"), "100000");
}

}  // namespace
}  // namespace podvisor::cgroups
