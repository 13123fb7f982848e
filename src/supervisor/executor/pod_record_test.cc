// PodRecord on plain values: the v1 Pod with what the API server and the
// kubelet add, the summary's columns, the cached `status` reply and the
// kept record that is written only when its text changed.
#include "supervisor/executor/pod_record.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace podvisor::supervisor::executor {
namespace {

using namespace std::chrono_literals;

class PodRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/podvisor-record-XXXXXX";
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    root_ = templ;
    pod_.metadata.name = "web";
    pod::Container app;
    app.name = "app";
    app.image = "registry.local/app:1.2";
    pod::Container tool;
    tool.name = "tool";
    tool.image = "tool";  // no tag: :latest
    pod_.spec.containers = {app, tool};
    status_.phase = pod::PodPhase::kRunning;
    pod::ContainerStatus running;
    running.name = "app";
    running.image = app.image;
    running.ready = true;
    running.started = true;
    running.container_id = "web-app-1";
    running.state.running = pod::ContainerStateRunning{created_ + 2s};
    pod::ContainerStatus waiting;
    waiting.name = "tool";
    waiting.image = tool.image;
    waiting.state.waiting = pod::ContainerStateWaiting{"ContainerCreating", ""};
    status_.container_statuses = {running, waiting};
    status_.pod_ips = {"10.88.0.7"};
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  PodRecord Make(bool shares_node_network = false) {
    PodRecord record(pod_, images_,
                     PodRecord::Facts{"node-1", "runc", shares_node_network, RecordFile()});
    record.SetIdentity("6f1c6c55-0000-4000-8000-000000000001", created_);
    return record;
  }
  std::filesystem::path RecordFile() const { return root_ / "status.json"; }
  nlohmann::json ReadRecord() const {
    std::ifstream in(RecordFile());
    std::stringstream text;
    text << in.rdbuf();
    return nlohmann::json::parse(text.str());
  }

  std::filesystem::path root_;
  pod::Pod pod_;
  std::map<std::string, image::Image> images_;
  pod::PodStatus status_;
  WallTime created_ = WallTime(std::chrono::seconds(1'700'000'000));
};

TEST_F(PodRecordTest, PodJsonCarriesIdentityNodeAndApiServerDefaults) {
  nlohmann::json pod = Make().PodJson(status_);
  EXPECT_EQ(pod["metadata"]["uid"], "6f1c6c55-0000-4000-8000-000000000001");
  EXPECT_EQ(pod["metadata"]["creationTimestamp"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(pod["metadata"]["namespace"], "default");
  EXPECT_EQ(pod["spec"]["nodeName"], "node-1");
  EXPECT_EQ(pod["spec"]["dnsPolicy"], "ClusterFirst");
  EXPECT_EQ(pod["spec"]["schedulerName"], "default-scheduler");
  EXPECT_EQ(pod["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent");
  EXPECT_EQ(pod["spec"]["containers"][1]["imagePullPolicy"], "Always");  // :latest
  EXPECT_EQ(pod["spec"]["containers"][0]["terminationMessagePath"], "/dev/termination-log");
  EXPECT_EQ(pod["status"]["phase"], "Running");
  EXPECT_EQ(pod["status"]["observedGeneration"], 1);
  EXPECT_EQ(pod["status"]["podIP"], "10.88.0.7");
}

TEST_F(PodRecordTest, ContainerIdHasTheRuntimesSchemeAndImageIdTheKnownDigest) {
  PodRecord record = Make();
  record.KnowImageId("app", "sha256:abc");
  nlohmann::json pod = record.PodJson(status_);
  const nlohmann::json& app = pod["status"]["containerStatuses"][0];
  EXPECT_EQ(app["containerID"], "runc://web-app-1");
  EXPECT_EQ(app["imageID"], "sha256:abc");
  const nlohmann::json& tool = pod["status"]["containerStatuses"][1];
  EXPECT_FALSE(tool.contains("containerID") && !tool["containerID"].get<std::string>().empty());
  EXPECT_EQ(tool["imageID"], "");  // no image known for it
}

TEST_F(PodRecordTest, OnlyAPodOnTheNodesNetworkDefaultsItsIpToTheNodes) {
  status_.pod_ips.clear();
  nlohmann::json own = Make(false).PodJson(status_);
  EXPECT_FALSE(own["status"].contains("podIP"));
  nlohmann::json shared = Make(true).PodJson(status_);
  if (!shared["status"].contains("hostIP")) GTEST_SKIP() << "this host has no IPv4 address up";
  EXPECT_EQ(shared["status"]["podIP"], shared["status"]["hostIP"]);
}

// S17.6: the kubelet's resize fields: the spec shows what was asked,
// allocatedResources the admitted requests, resources the cgroup's values.
TEST_F(PodRecordTest, S17_6_ResizeFieldsAsTheKubeletReportsThem) {
  pod_.spec.containers[0].resources.requests.cpu = pod::Quantity::FromMilli(100);
  pod_.spec.containers[0].resources.limits.cpu = pod::Quantity::FromMilli(200);
  pod_.spec.containers[0].resources.limits.memory = pod::Quantity::FromValue(64 << 20);
  PodRecord record = Make();
  nlohmann::json pod = record.PodJson(status_);
  const nlohmann::json& app = pod["status"]["containerStatuses"][0];
  EXPECT_EQ(app["allocatedResources"], (nlohmann::json{{"cpu", "100m"}}));
  EXPECT_EQ(app["resources"]["limits"], (nlohmann::json{{"cpu", "200m"}, {"memory", "67108864"}}));
  EXPECT_FALSE(pod["status"]["containerStatuses"][1].contains("resources"));  // none asked

  PodRecord::ResizeView view;
  pod::ResourceRequirements asked = pod_.spec.containers[0].resources;
  asked.limits.cpu = pod::Quantity::FromValue(64);
  view.desired["app"] = asked;
  pod::ResourceRequirements held = pod_.spec.containers[0].resources;
  held.limits.memory = pod::Quantity::FromValue(32 << 20);
  view.actual["app"] = held;
  record.SetResizeView(view);
  pod = record.PodJson(status_);
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["cpu"], "64");
  EXPECT_EQ(pod["status"]["containerStatuses"][0]["allocatedResources"]["cpu"], "100m");
  EXPECT_EQ(pod["status"]["containerStatuses"][0]["resources"]["limits"]["memory"], "33554432");
}

TEST_F(PodRecordTest, SummaryHasKubectlsColumns) {
  nlohmann::json line = Make().Summary(status_, created_ + 90s);
  EXPECT_EQ(line["name"], "web");
  EXPECT_EQ(line["ready"], "1/2");
  EXPECT_EQ(line["phase"], "Running");
  EXPECT_EQ(line["age"], "90s");
  EXPECT_EQ(line["node"], "node-1");
  EXPECT_EQ(line["ip"], "10.88.0.7");
  ASSERT_EQ(line["containers"].size(), 2u);
  EXPECT_EQ(line["containers"][0]["name"], "app");
  EXPECT_EQ(line["containers"][1]["state"], "Waiting: ContainerCreating");
}

TEST_F(PodRecordTest, StatusReplyIsKeptUntilTheStatusChanges) {
  PodRecord record = Make();
  std::string first = record.StatusReply(status_).line();
  status_.phase = pod::PodPhase::kSucceeded;
  EXPECT_EQ(record.StatusReply(status_).line(), first);  // no event yet: the same reply
  record.Changed();
  std::string second = record.StatusReply(status_).line();
  EXPECT_NE(second, first);
  EXPECT_NE(second.find("\"Succeeded\""), std::string::npos);
}

TEST_F(PodRecordTest, RecordIsRewrittenOnlyWhenItsTextChanged) {
  PodRecord record = Make();
  record.Write(status_);
  EXPECT_EQ(ReadRecord()["status"]["phase"], "Running");
  // Removed behind its back: an unchanged status writes nothing.
  std::filesystem::remove(RecordFile());
  record.Changed();
  record.Write(status_);
  EXPECT_FALSE(std::filesystem::exists(RecordFile()));
  status_.phase = pod::PodPhase::kSucceeded;
  record.Changed();
  record.Write(status_);
  EXPECT_EQ(ReadRecord()["status"]["phase"], "Succeeded");
}

TEST_F(PodRecordTest, UnwritableRecordIsRetriedOnTheNextWrite) {
  std::filesystem::path dir = root_ / "gone";
  PodRecord record(pod_, images_, PodRecord::Facts{"node-1", "runc", false, dir / "status.json"});
  record.Write(status_);  // the directory does not exist: logged, not thrown
  EXPECT_FALSE(std::filesystem::exists(dir / "status.json"));
  std::filesystem::create_directory(dir);
  record.Write(status_);
  EXPECT_TRUE(std::filesystem::exists(dir / "status.json"));
}

}  // namespace
}  // namespace podvisor::supervisor::executor
