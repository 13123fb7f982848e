// S17.12: the other pods' allocations read from their kept records, and
// the watch that says when they may have changed.
#include "supervisor/executor/node_allocations.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/pod_dir.h"

namespace podvisor::supervisor::executor {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int64_t kMi = 1024 * 1024;

json Record(const std::string& name, const std::string& phase, const std::string& memory) {
  return json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}}},
              {"spec",
               {{"containers", json::array({{{"name", "app"},
                                             {"image", "img"},
                                             {"resources",
                                              {{"requests", {{"cpu", "100m"}, {"memory", memory}}},
                                               {"limits", {{"memory", memory}}}}}}})}}},
              {"status", {{"phase", phase}}}};
}

class NodeAllocationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/podvisor-alloc-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    for (int fd : sockets_) ::close(fd);
    fs::remove_all(root_);
  }
  // A pod directory with its record and, when `live`, a control socket
  // that accepts connections (a supervisor that answers).
  void AddPod(const std::string& name, const json& record, bool live) {
    fs::create_directories(root_ / name);
    std::ofstream(root_ / name / PodDir::kRecordFile) << record.dump();
    if (!live) return;
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string path = (root_ / name / PodDir::kControlSocket).string();
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(fd, 8), 0);
    sockets_.push_back(fd);
  }
  fs::path root_;
  std::vector<int> sockets_;
};

TEST_F(NodeAllocationsTest, S17_12_OnlyRunningPodsWhoseSupervisorAnswersCount) {
  AddPod("self", Record("self", "Running", "700Mi"), true);
  AddPod("a", Record("a", "Running", "100Mi"), true);
  AddPod("b", Record("b", "Pending", "200Mi"), true);
  AddPod("stale", Record("stale", "Running", "400Mi"), false);  // its supervisor died
  AddPod("done", Record("done", "Succeeded", "800Mi"), true);
  fs::create_directories(root_ / ".images");
  const pod::NodeRequests sum = OtherPodsAllocated(root_, "self");
  EXPECT_EQ(sum.memory_bytes, 300 * kMi);
  EXPECT_EQ(sum.cpu_milli, 200);
}

// A pending resize of another pod shows in its spec; what it holds is its
// status's allocatedResources.
TEST_F(NodeAllocationsTest, S17_12_APendingResizeCountsWhatWasAllocated) {
  json record = Record("a", "Running", "900Mi");
  record["status"]["containerStatuses"] =
      json::array({{{"name", "app"}, {"allocatedResources", {{"memory", "100Mi"}}}}});
  auto held = RecordAllocation(record);
  ASSERT_TRUE(held) << held.error().message();
  EXPECT_EQ(held->memory_bytes, 100 * kMi);
  EXPECT_EQ(held->cpu_milli, 100);
  EXPECT_FALSE(RecordAllocation(json{{"status", {{"phase", "Running"}}}}));
}

}  // namespace
}  // namespace podvisor::supervisor::executor
