// Tier 2 (fake runtime), issue 16 point 6: `status -o json` is a Pod the
// official Kubernetes Python client loads (python3-kubernetes,
// ApiClient().deserialize into V1Pod, with its client-side validation of
// required fields), in every phase: Pending (an init container runs),
// Running, Succeeded and Failed (kept records of ended pods), with the
// image digest as imageID, the runtime's scheme in containerID and the
// spec defaults the API server fills in.
#include <fstream>
#include <regex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

class KubernetesClient : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
  void SetUp() override {
    if (testing::RunCommand({"/usr/bin/python3", "-c", "import kubernetes"}).exit_code != 0) {
      GTEST_SKIP() << "python3-kubernetes is not installed (scripts/install-deps.sh installs it)";
    }
    E2eTest::SetUp();
  }

  // Saves `status -o json` of the pod as FILE.
  fs::path Save(const std::string& pod, const std::string& file) {
    std::vector<std::string> args = {"status", "-o", "json"};
    if (!pod.empty()) args.insert(args.begin() + 1, pod);
    auto r = Client(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    fs::path path = dir_ / file;
    std::ofstream(path) << r.out;
    return path;
  }

  // What the Python client read from each file, one object each.
  std::vector<nlohmann::json> Load(const std::vector<fs::path>& files) {
    std::vector<std::string> argv = {
        "/usr/bin/python3", RequiredEnv("PODVISOR_SOURCE_ROOT") + "/tests/e2e/k8s_client_test.py"};
    for (const auto& f : files) argv.push_back(f.string());
    auto r = testing::RunCommand(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<nlohmann::json> out;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  }
};

TEST_F(KubernetesClient, V1PodLoadsInEveryPhase) {
  const std::string go = (scratch_ / "go").string(), done = (scratch_ / "done").string();
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: phases}\nspec:\n  restartPolicy: Never\n"
      "  initContainers:\n"
      "  - {name: wait, image: img, command: " +
      ShCmd("while [ ! -e " + go + " ]; do sleep 0.02; done") +
      "}\n"
      "  containers:\n"
      "  - {name: app, image: img, command: " +
      ShCmd("while [ ! -e " + done + " ]; do sleep 0.02; done") + "}\n");
  StartRun();
  WaitForStatus([](const nlohmann::json& p) { return StateOf(p, "wait") == "running"; },
                "init runs");
  fs::path pending = Save("", "pending.json");
  std::ofstream(go) << "";
  WaitUntilRunning();
  fs::path running = Save("", "running.json");
  std::ofstream(done) << "";
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  fs::path succeeded = Save("phases", "succeeded.json");

  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: broken}\nspec:\n  restartPolicy: Never\n"
      "  containers:\n  - {name: app, image: \"img:2.0\", command: " +
      ShCmd("exit 2") + "}\n");
  fs::create_directories(bundle_ / "images" / "img:2.0" / "rootfs");
  EXPECT_EQ(Run(), 1);
  fs::path failed = Save("broken", "failed.json");

  auto pods = Load({pending, running, succeeded, failed});
  ASSERT_EQ(pods.size(), 4u);
  std::vector<std::string> phases;
  for (const auto& p : pods) phases.push_back(p["phase"]);
  EXPECT_EQ(phases, (std::vector<std::string>{"Pending", "Running", "Succeeded", "Failed"}));
  const std::string runtime = fs::path(RequiredEnv("PODVISOR_FAKE_RUNTIME")).filename().string();
  for (const auto& p : pods) {
    EXPECT_TRUE(p["startTime"].get<bool>()) << p;
    EXPECT_EQ(p["dnsPolicy"], "ClusterFirst");
    EXPECT_EQ(p["schedulerName"], "default-scheduler");
    EXPECT_TRUE(p["securityContext"].get<bool>());
    EXPECT_EQ(p["enableServiceLinks"], true);
    EXPECT_EQ(p["priority"], 0);
    EXPECT_EQ(p["generation"], 1);
    // The node's address; with --sandbox none the pod is in the host's
    // network namespace, so it has the node's address too.
    EXPECT_THAT(p["hostIP"].get<std::string>(), MatchesRegex("[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+"))
        << p;
    EXPECT_EQ(p["podIP"], p["hostIP"]);
    EXPECT_NE(p["nodeName"], "");
    EXPECT_EQ(p["terminationMessagePath"], "/dev/termination-log");
    EXPECT_EQ(p["terminationMessagePolicy"], "File");
    for (const auto& id : p["imageIDs"])
      EXPECT_THAT(id.get<std::string>(), MatchesRegex("sha256:[0-9a-f]{64}"));
    for (const auto& id : p["containerIDs"]) {
      if (!id.is_null()) {
        EXPECT_THAT(id.get<std::string>(), HasSubstr(runtime + "://")) << p;
      }
    }
  }
  // hostIPs (newer than this client's V1PodStatus) as the API has it.
  std::ifstream in(running);
  auto raw = nlohmann::json::parse(in);
  EXPECT_EQ(raw["status"]["hostIPs"], nlohmann::json::array({{{"ip", pods[1]["hostIP"]}}}));
  EXPECT_EQ(raw["status"]["podIPs"], nlohmann::json::array({{{"ip", pods[1]["hostIP"]}}}));
  // "img" has no tag, so the API server would pull it Always; "img:2.0" IfNotPresent.
  EXPECT_EQ(pods[0]["imagePullPolicy"], "Always");
  EXPECT_EQ(pods[3]["imagePullPolicy"], "IfNotPresent");
  // The same (empty) rootfs content has the same digest under both names.
  EXPECT_EQ(pods[2]["imageIDs"][1], pods[3]["imageIDs"][0]);
}

}  // namespace
}  // namespace podvisor::e2e
