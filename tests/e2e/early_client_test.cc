// Tier 2 (fake runtime), issue 17 point 3: `kill`, `status` and
// `stop --no-wait` answered by the early road, before the C library starts
// (src/cli/early_client.h), say what the other two roads say to a running
// supervisor: the plain-argument road (an option as `--opt=VALUE`, which
// the early road leaves to main) and CLI11's (a `--` before the
// positionals). Which command lines the early road takes is
// src/cli/early_client_test.cc; a pod that does not run, by every road,
// tests/cli/client_forms_test.cc.
#include <regex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;

class EarlyClient : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }

  void StartPod() {
    WritePod(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: early}\nspec:\n  restartPolicy: Never\n"
        "  terminationGracePeriodSeconds: 5\n  initContainers:\n"
        "  - {name: proxy, image: img, restartPolicy: Always, command: " +
        HelperCmd("proxy", "sleep 100000") +
        "}\n  containers:\n"
        "  - {name: app, image: img, command: " +
        HelperCmd("app", "sleep 100000") + "}\n");
    StartRun();
    WaitUntilRunning();
  }

  // The same command by the three roads: `words` with `--state-dir DIR`
  // appended (the early road), with `--state-dir=DIR` (the plain road), and
  // with `--state-dir DIR --` before the positionals (CLI11's).
  struct Roads {
    testing::CommandResult early, plain, cli11;
  };
  Roads ByEveryRoad(const std::string& command, const std::vector<std::string>& options,
                    const std::vector<std::string>& positionals) {
    const std::string pv = RequiredEnv("PODVISOR");
    const std::string dir = state_dir_.string();
    std::vector<std::string> early{pv, command}, plain{pv, command}, cli11{pv, command};
    for (auto* v : {&early, &plain, &cli11}) v->insert(v->end(), options.begin(), options.end());
    early.insert(early.end(), positionals.begin(), positionals.end());
    early.insert(early.end(), {"--state-dir", dir});
    plain.insert(plain.end(), positionals.begin(), positionals.end());
    plain.push_back("--state-dir=" + dir);
    cli11.insert(cli11.end(), {"--state-dir", dir, "--"});
    cli11.insert(cli11.end(), positionals.begin(), positionals.end());
    return {testing::RunCommand(early), testing::RunCommand(plain), testing::RunCommand(cli11)};
  }
};

// Ages and durations ("5s", "2m") may tick between two commands.
std::string WithoutAges(const std::string& text) {
  static const std::regex kDuration("\\b[0-9]+(ms|s|m|h|d)\\b");
  return std::regex_replace(text, kDuration, "T");
}

void ExpectAlike(const testing::CommandResult& a, const testing::CommandResult& b,
                 const char* which) {
  EXPECT_EQ(a.exit_code, b.exit_code) << which;
  EXPECT_EQ(WithoutAges(a.out), WithoutAges(b.out)) << which;
  EXPECT_EQ(a.err, b.err) << which;
}

TEST_F(EarlyClient, KillSaysWhatTheOtherRoadsSay) {
  StartPod();
  for (const std::vector<std::string>& words : std::initializer_list<std::vector<std::string>>{
           {"early", "app", "WINCH"},   // POD CONTAINER SIGNAL
           {"app", "SIGWINCH"},         // CONTAINER SIGNAL, the one pod
           {"proxy", "28"},             // a number
           {"early", "nope", "WINCH"},  // no such container
           {"app", "BOGUS"},            // no such signal
       }) {
    Roads r = ByEveryRoad("kill", {}, words);
    ExpectAlike(r.early, r.plain, "plain road");
    ExpectAlike(r.early, r.cli11, "CLI11's road");
  }
  auto ok = ByEveryRoad("kill", {}, {"app", "WINCH"}).early;
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "SIGWINCH delivered to early/app\n");
  auto missing = ByEveryRoad("kill", {}, {"nope", "WINCH"}).early;
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "podvisor: pod early: no container named nope\n");
  // The pod did not notice (SIGWINCH is ignored).
  EXPECT_TRUE(RunIsAlive());
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_GE(WaitRun(), 0) << RunStderr();
}

TEST_F(EarlyClient, StatusPrintsTheTableTheOtherRoadsPrint) {
  StartPod();
  for (const std::vector<std::string>& options :
       std::initializer_list<std::vector<std::string>>{{}, {"-o", "wide"}, {"--output", "table"}}) {
    Roads named = ByEveryRoad("status", options, {"early"});
    ExpectAlike(named.early, named.plain, "plain road");
    ExpectAlike(named.early, named.cli11, "CLI11's road");
    Roads unnamed = ByEveryRoad("status", options, {});
    ExpectAlike(unnamed.early, named.early, "unnamed");
  }
  auto table = ByEveryRoad("status", {}, {}).early;
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("early   2/2     Running"));
  EXPECT_THAT(table.out, HasSubstr("proxy       sidecar     true"));
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_GE(WaitRun(), 0) << RunStderr();
}

TEST_F(EarlyClient, StopNoWaitSaysWhatTheOtherRoadsSay) {
  StartPod();
  // Refused by the supervisor, by every road alike, and the pod runs on.
  for (const std::vector<std::string>& options : std::initializer_list<std::vector<std::string>>{
           {"--no-wait", "--reason", std::string(300, 'x')},
           {"--no-wait", "--grace", "2000000000"},
       }) {
    Roads r = ByEveryRoad("stop", options, {});
    EXPECT_EQ(r.early.exit_code, 1);
    ExpectAlike(r.early, r.plain, "plain road");
    ExpectAlike(r.early, r.cli11, "CLI11's road");
  }
  EXPECT_TRUE(RunIsAlive());
  auto stop = ByEveryRoad("stop", {"--no-wait", "--reason", "Decommissioned", "--grace", "1"}, {});
  EXPECT_EQ(stop.early.exit_code, 0) << stop.early.err;
  EXPECT_EQ(stop.early.out, "pod/early stopping\n");
  EXPECT_GE(WaitRun(), 0) << RunStderr();
  // Ended: the early road finds no supervisor and leaves it to main.
  Roads ended = ByEveryRoad("kill", {}, {"app", "WINCH"});
  EXPECT_THAT(ended.early.err, HasSubstr("pod early is not running (phase "));
  ExpectAlike(ended.early, ended.cli11, "CLI11's road, ended");
}

}  // namespace
}  // namespace podvisor::e2e
