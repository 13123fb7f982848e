// Tier 3 (runc, root), issue 32 point 1: `podvisor patch --subresource
// resize` on a running pod (SEMANTICS S17). The limits are read back from
// the container's own cgroup files, v1 on a hybrid host (runc makes them
// from the config's cgroupsPath under --cgroup-parent), v2 on a unified
// one: in place (same container, same init), RestartContainer (a new
// instance with the new limits), and Infeasible (old values stay).
#include <signal.h>
#include <unistd.h>

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMi = 1024 * 1024;

class RuncResize : public RuncE2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t = RuncE2eTest::Tier();
    t.helper_log_in_shared_volume = false;  // its pods mount no shared volume
    return t;
  }
  void StartPod(const std::string& extra = "") {
    WritePod(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: rz}\nspec:\n"
        "  terminationGracePeriodSeconds: 2\n  containers:\n"
        "  - name: app\n    image: img\n    command: [\"/bin/sleep\", \"100000\"]\n"
        "    resources:\n      requests: {cpu: 100m, memory: 32Mi}\n"
        "      limits: {cpu: 200m, memory: 64Mi}\n" +
        extra);
    StartRun();
    WaitUntilRunning();
  }
  static std::string ContainerId(const nlohmann::json& pod) {
    const nlohmann::json* c = FindContainerStatus(pod, "app");
    std::string id = c ? c->value("containerID", "") : "";
    return id.substr(id.find("://") == std::string::npos ? 0 : id.find("://") + 3);
  }
  // The container's cgroup directory of `controller` ("memory", "cpu" on
  // v1; "" for the cgroup2 mount on a unified host).
  fs::path CgroupDir(const std::string& controller, const std::string& id) {
    const fs::path base =
        fs::path("/sys/fs/cgroup") / controller / fs::path(Tier().cgroup_parent).relative_path();
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(base, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory() && it->path().filename() == id) return it->path();
    }
    return {};
  }
  bool V1() const { return fs::exists("/sys/fs/cgroup/memory/memory.limit_in_bytes"); }
  int64_t MemoryLimit(const std::string& id) {
    return V1() ? ReadInt(CgroupDir("memory", id) / "memory.limit_in_bytes")
                : ReadInt(CgroupDir("", id) / "memory.max");
  }
  int64_t CpuQuota(const std::string& id) {
    if (V1()) return ReadInt(CgroupDir("cpu", id) / "cpu.cfs_quota_us");
    std::ifstream in(CgroupDir("", id) / "cpu.max");
    int64_t quota = -1;
    in >> quota;
    return quota;
  }
  std::string InitPid(const std::string& id) {
    std::ifstream in((V1() ? CgroupDir("memory", id) : CgroupDir("", id)) / "cgroup.procs");
    std::string pid;
    std::getline(in, pid);
    return pid;
  }
  static int64_t ReadInt(const fs::path& file) {
    std::ifstream in(file);
    int64_t v = -1;
    in >> v;
    return v;
  }
  testing::CommandResult Patch(const std::string& patch) {
    return Client({"patch", "--subresource", "resize", "-p", patch});
  }
  void StopPod() {
    EXPECT_EQ(Client({"stop"}).exit_code, 0);
    WaitRun();
  }
};

TEST_F(RuncResize, S17_8_InPlaceKeepsTheInitAndWritesTheCgroup) {
  StartPod();
  const nlohmann::json before = *Status();
  const std::string id = ContainerId(before);
  ASSERT_FALSE(id.empty());
  ASSERT_FALSE(CgroupDir(V1() ? "memory" : "", id).empty()) << "no cgroup for " << id;
  EXPECT_EQ(MemoryLimit(id), 64 * kMi);
  EXPECT_EQ(CpuQuota(id), 20000);
  const std::string pid = InitPid(id);
  ASSERT_FALSE(pid.empty());

  auto r = Patch(R"({"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"250m"},)"
                 R"("limits":{"cpu":"500m","memory":"128Mi"}}}]}})");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pod/rz patched"));
  // The reply came after the writes: the files hold the new values now.
  EXPECT_EQ(MemoryLimit(id), 128 * kMi);
  EXPECT_EQ(CpuQuota(id), 50000);
  if (V1()) {
    EXPECT_EQ(ReadInt(CgroupDir("cpu", id) / "cpu.shares"), 256);
  }
  EXPECT_EQ(InitPid(id), pid);  // the same process, not a new instance

  const nlohmann::json after = *Status();
  EXPECT_EQ(ContainerId(after), id);
  const nlohmann::json* c = FindContainerStatus(after, "app");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->value("restartCount", -1), 0);
  EXPECT_EQ((*c)["resources"]["limits"]["memory"], "128Mi");
  EXPECT_EQ((*c)["resources"]["limits"]["cpu"], "500m");
  EXPECT_EQ((*c)["allocatedResources"]["cpu"], "250m");
  EXPECT_EQ(after["spec"]["containers"][0]["resources"]["limits"]["cpu"], "500m");
  EXPECT_EQ(ConditionStatus(after, "PodResizePending"), "");
  bool resized = false;
  for (const auto& e : PodEvents()) resized |= e.value("reason", "") == "Resized";
  EXPECT_TRUE(resized);

  // A decrease below the usage of an idle sleep is fine; what the API
  // server refuses leaves everything as it is.
  r = Patch(R"({"spec":{"containers":[{"name":"app","resources":{"limits":{"memory":"96Mi"}}}]}})");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(MemoryLimit(id), 96 * kMi);
  r = Patch(
      R"({"spec":{"containers":[{"name":"app","resources":{"limits":{"ephemeral-storage":"1Gi"}}}]}})");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("Pod \"rz\" is invalid: spec: Forbidden: only cpu and memory "
                               "resources are mutable"));
  r = Patch(R"({"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"1"}}}]}})");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("must be less than or equal to cpu limit of 500m"));
  EXPECT_EQ(MemoryLimit(id), 96 * kMi);
  EXPECT_EQ(CpuQuota(id), 50000);
  StopPod();
}

TEST_F(RuncResize, S17_3_RestartContainerMakesANewInstanceWithTheNewLimits) {
  StartPod("    resizePolicy:\n    - {resourceName: memory, restartPolicy: RestartContainer}\n");
  const std::string id = ContainerId(*Status());
  auto r =
      Patch(R"({"spec":{"containers":[{"name":"app","resources":{"limits":{"memory":"96Mi"}}}]}})");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json after = WaitForStatus(
      [&](const nlohmann::json& p) {
        const nlohmann::json* c = FindContainerStatus(p, "app");
        return c && c->value("restartCount", 0) == 1 && StateOf(p, "app") == "running";
      },
      "app restarted once");
  const std::string new_id = ContainerId(after);
  EXPECT_NE(new_id, id);
  EXPECT_EQ(MemoryLimit(new_id), 96 * kMi);  // from the new instance's config.json
  EXPECT_EQ(CpuQuota(new_id), 20000);
  StopPod();
}

TEST_F(RuncResize, S17_5_InfeasibleSaysSoAndKeepsTheOldValues) {
  StartPod();
  const std::string id = ContainerId(*Status());
  auto r = Patch(R"({"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"100000"},)"
                 R"("limits":{"cpu":"100000"}}}]}})");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("PodResizePending: Infeasible: Node didn't have enough capacity: "
                               "cpu, requested: 100000000"));
  const nlohmann::json pod = *Status();
  EXPECT_EQ(ConditionStatus(pod, "PodResizePending"), "True");
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["cpu"], "100k");
  const nlohmann::json* c = FindContainerStatus(pod, "app");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ((*c)["allocatedResources"]["cpu"], "100m");
  EXPECT_EQ((*c)["resources"]["limits"]["cpu"], "200m");
  EXPECT_EQ(CpuQuota(id), 20000);
  // A feasible request replaces the pending one.
  r = Patch(R"({"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"150m"},)"
            R"("limits":{"cpu":"300m"}}}]}})");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ConditionStatus(*Status(), "PodResizePending"), "");
  EXPECT_EQ(CpuQuota(id), 30000);
  StopPod();
}

// S17.10: a supervisor SIGKILLed after a resize is adopted by the next
// `run` of the same manifest with the values it applied, not replaced as
// an update of the (unchanged) manifest.
TEST_F(RuncResize, S17_10_AnAdoptingSupervisorKeepsTheAppliedValues) {
  StartPod();
  const std::string id = ContainerId(*Status());
  const std::string pid = InitPid(id);
  auto r =
      Patch(R"({"spec":{"containers":[{"name":"app","resources":{"limits":{"memory":"96Mi"}}}]}})");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(::kill(run_pid(), SIGKILL), 0);  // the state was written before the reply
  EXPECT_EQ(WaitRun(), -1);

  StartRun();
  const nlohmann::json pod = WaitUntilRunning();
  bool adopted = false;
  for (const auto& e : PodEvents()) adopted |= e.value("reason", "") == "Adopted";
  EXPECT_TRUE(adopted) << RunStderr();
  EXPECT_EQ(ContainerId(pod), id);
  EXPECT_EQ(InitPid(id), pid);
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["memory"], "96Mi");
  EXPECT_EQ(MemoryLimit(id), 96 * kMi);
  // A restart made by the adopting supervisor gets the applied values too.
  EXPECT_EQ(Client({"kill", "app"}).exit_code, 0);
  const nlohmann::json after = WaitForStatus(
      [&](const nlohmann::json& p) {
        const nlohmann::json* c = FindContainerStatus(p, "app");
        return c && c->value("restartCount", 0) == 1 && StateOf(p, "app") == "running";
      },
      "app restarted", std::chrono::seconds(30));
  EXPECT_EQ(MemoryLimit(ContainerId(after)), 96 * kMi);
  StopPod();
}

}  // namespace
}  // namespace podvisor::e2e
