// `podvisor status` against a running supervisor (tier 2, fake runtime):
// the table mirrors `kubectl get pod` — NAME READY STATUS RESTARTS AGE,
// RESTARTS as "N (Xs ago)" (S9.4) — then one line per container; `-o wide`
// adds the node and per-container detail.
#include <unistd.h>

#include <regex>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../e2e/harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

class StatusCli : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none", "--backoff-initial", "100ms"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }

  // A sidecar that keeps running and an app that crashes every 300 ms: it
  // restarts at once the first time, then after 100 ms, 200 ms ...
  void StartCrashingPod() {
    WritePod(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: crashy}\nspec:\n"
        "  restartPolicy: Always\n  terminationGracePeriodSeconds: 2\n"
        "  initContainers:\n"
        "  - {name: proxy, image: img, restartPolicy: Always, command: " +
        HelperCmd("proxy", "trap-sigterm 10 0") +
        "}\n"
        "  containers:\n"
        "  - {name: app, image: img, command: " +
        HelperCmd("app", "sleep 300") + "}\n");
    StartRun();
    WaitForStatus(
        [](const nlohmann::json& p) {
          const auto* c = FindContainerStatus(p, "app");
          return c && (*c).value("restartCount", 0) >= 2;
        },
        "app restarted twice");
  }
};

TEST_F(StatusCli, S9_4_TableIsKubectlGetPodPlusOneLinePerContainer) {
  StartCrashingPod();
  auto r = Client({"status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = Lines(r.out);
  ASSERT_GE(lines.size(), 6u) << r.out;
  EXPECT_THAT(lines[0], MatchesRegex("NAME +READY +STATUS +RESTARTS +AGE"));
  // RESTARTS counts the app's and the sidecar's restarts and says when the
  // latest one was, as kubectl does.
  EXPECT_THAT(lines[1],
              MatchesRegex("crashy +[012]/2 +[A-Za-z]+ +[0-9]+ \\([0-9]+s ago\\) +[0-9]+s"))
      << r.out;
  EXPECT_EQ(lines[2], "");
  EXPECT_THAT(lines[3], MatchesRegex("CONTAINER +TYPE +READY +STATE +RESTARTS"));
  EXPECT_THAT(lines[4], MatchesRegex("proxy +sidecar +true +Running \\([0-9]+s\\) +0")) << r.out;
  EXPECT_THAT(lines[5], MatchesRegex("app +container +(true|false) +.+ +[0-9]+ \\([0-9]+s ago\\)"))
      << r.out;
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  WaitRun();
}

TEST_F(StatusCli, WideAddsNodeStartedLastStateImageAndContainerId) {
  StartCrashingPod();
  auto r = Client({"status", "-o", "wide"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = Lines(r.out);
  ASSERT_GE(lines.size(), 6u) << r.out;
  EXPECT_THAT(lines[0], MatchesRegex("NAME +READY +STATUS +RESTARTS +AGE +IP +NODE"));
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  // Without a sandbox the pod is on the host's network: its IP is the host's.
  auto pod = Status();
  ASSERT_TRUE(pod);
  std::string ip = (*pod)["status"].value("podIP", "<none>");
  EXPECT_THAT(lines[1], ContainsRegex(" " + ip + " +" + host + "$")) << r.out;
  EXPECT_THAT(lines[3], MatchesRegex("CONTAINER +TYPE +READY +STARTED +STATE +RESTARTS +LAST STATE "
                                     "+IMAGE +CONTAINER ID"));
  // The sidecar never restarted: no last state.
  EXPECT_THAT(lines[4], MatchesRegex("proxy +sidecar +true +true +Running \\([0-9]+s\\) +0 +- +img "
                                     "+crashy_proxy_0_[0-9]+"))
      << r.out;
  // The app's previous instance exited by itself; the current one may be
  // waiting out its backoff, without a container ID yet.
  EXPECT_THAT(lines[5], ContainsRegex("^app +container .* Terminated: [A-Za-z]+ \\(exit [0-9]+, "
                                      "[0-9]+s ago\\) +img +(crashy_app_[0-9]+_[0-9]+|-)$"))
      << r.out;
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  WaitRun();
}

}  // namespace
}  // namespace podvisor::e2e
