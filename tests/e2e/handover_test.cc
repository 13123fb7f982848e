// Tier 2 (fake runtime): a pod that outlives its supervisor
// (docs/SEMANTICS.md S15).
//
// Upgrade (S15.2): `podvisor upgrade` re-executes the supervisor in place;
// the supervisor's pid, every container's pid, restart counts, the Ready
// condition's transition time and every log line stay as they were; a
// binary with another version string shows it everywhere; a binary that
// cannot read the handover format, and a pod that terminates, are refused
// with the old supervisor carrying on; SIGHUP does what `upgrade` does.
//
// Adoption (S15.5, S15.6): the supervisor SIGKILLed at the moments that
// matter (steady state, mid-start, a probe in flight, mid-stop, a restart
// backoff, a container that ends while nobody supervises it, a changed
// manifest), then `run` again: what is adopted keeps its pids and counts,
// what ended is reported with its real exit, a changed pod is stopped
// gracefully before the new one starts, and at the end nothing is left
// (the harness's leftovers check, plus the sandbox holders). Adoption
// needs the sandbox holder (`--sandbox namespaces`), hence root.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "handover_support.h"
#include "harness.h"

namespace podvisor::e2e {
namespace {

using namespace handover;  // NOLINT(google-build-using-namespace)
using ::testing::AnyOf;
using ::testing::HasSubstr;

std::string Header(const std::string& name, const std::string& restart_policy = "Always",
                   int grace = 5) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         "}\nspec:\n  restartPolicy: " + restart_policy +
         "\n  terminationGracePeriodSeconds: " + std::to_string(grace) + "\n";
}

// An exec readiness probe running the helper: `exit 0` passes at once.
std::string Readiness(const std::string& helper_args, int period = 1, int timeout = 1) {
  return ", readinessProbe: {exec: {command: " + HelperCmd("probe", helper_args) +
         "}, periodSeconds: " + std::to_string(period) +
         ", timeoutSeconds: " + std::to_string(timeout) + "}";
}

// What every upgrade test runs: a sidecar, a chatty app with a readiness
// probe, and a quiet one.
std::string ChattyPod(const std::string& name) {
  return Header(name) +
         "  initContainers:\n  - {name: side, image: img, restartPolicy: Always, "
         "command: " +
         HelperCmd("side", "trap-sigterm 0 0") +
         "}\n  containers:\n  - {name: chat, image: img, command: " + ChattyCmd() +
         Readiness("exit 0") +
         "}\n  - {name: quiet, image: img, command: " + HelperCmd("quiet", "trap-sigterm 0 0") +
         "}\n";
}

class HandoverBase : public E2eTest {
 protected:
  fs::path RuntimeRoot() const { return state_dir_ / pod_name_ / "runtime"; }
  std::map<std::string, pid_t> Pids() const { return FakeRuntimePids(RuntimeRoot()); }

  // The control socket's `summary` reply, or null.
  nlohmann::json Summary() {
    std::string reply = RawControlRequest("{\"op\":\"summary\"}\n");
    return nlohmann::json::parse(reply, nullptr, false);
  }
  long long Upgrades() {
    auto s = Summary();
    if (!s.is_object() || !s.contains("supervisor")) return -1;
    return s["supervisor"].value("upgrades", -1LL);
  }

  testing::CommandResult Upgrade(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"upgrade", pod_name_};
    args.insert(args.end(), extra.begin(), extra.end());
    return Client(args);
  }

  // Waits until the chatty container has printed at least `n` lines more
  // than it had (read from its log file).
  void WaitForMoreLines(long n) {
    long start = ReadNumberedLines(log_dir_, pod_name_, "chat").last;
    for (int i = 0; i < 1500; ++i) {
      if (ReadNumberedLines(log_dir_, pod_name_, "chat").last >= start + n) return;
      std::this_thread::sleep_for(milliseconds(10));
    }
    ADD_FAILURE() << "the chatty container printed fewer than " << n << " lines in 15 s";
  }

  // Bounded: a supervisor that never ends its stop is SIGKILLed by WaitRun
  // and the test fails, rather than `stop` waiting forever.
  void StopAndWait() {
    auto stop = Client({"stop", "--no-wait"});
    EXPECT_EQ(stop.exit_code, 0) << stop.err;
    EXPECT_THAT(WaitRun(std::chrono::seconds(60)), AnyOf(0, 1, 4)) << RunStderr();
  }

  void ExpectNoHolderLeft() {
    EXPECT_THAT(ProcessesWith({"sandbox-init", dir_.string()}), ::testing::IsEmpty())
        << "a sandbox holder of this test is left";
  }

  void ExpectEveryLineOnce() {
    NumberedLines lines = ReadNumberedLines(log_dir_, pod_name_, "chat");
    EXPECT_GT(lines.count, 0);
    EXPECT_TRUE(lines.problems.empty()) << lines.count << " lines, n " << lines.first << " to n "
                                        << lines.last << ":" << lines.Problems();
  }
};

// Upgrades: no sandbox needed (the execve carries everything).
class Handover : public HandoverBase {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
  std::string Version() {
    auto r = testing::RunCommand({RequiredEnv("PODVISOR"), "handover-check"});
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.out << r.err;
    return j.is_object() ? j.value("version", "") : "";
  }
};

TEST_F(Handover, S15_2_AnUpgradeKeepsEveryPidRestartCountReadinessAndLogLine) {
  WritePod(ChattyPod("keep"));
  StartRun();
  auto before = WaitUntilRunning();
  WaitForMoreLines(50);
  const auto pids = Pids();
  ASSERT_EQ(pids.size(), 3u) << PidsText(pids);
  const std::string ready = ReadyAndSince(before);
  ASSERT_THAT(ready, ::testing::StartsWith("True ")) << before.dump(2);
  EXPECT_EQ(Upgrades(), 0);

  auto up = Upgrade();
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_THAT(up.out, ::testing::MatchesRegex("pod keep: podvisor [^ ]+ -> [^ ]+ \\(pid " +
                                              std::to_string(run_pid()) + ", [0-9]+ ms\\)\n"));
  WaitForMoreLines(50);  // lines go on after the handover too

  EXPECT_TRUE(RunIsAlive()) << "the supervisor process is gone";
  EXPECT_EQ(Pids(), pids) << "a container was re-created";
  for (const auto& [id, pid] : pids) EXPECT_TRUE(Alive(pid)) << id;
  auto after = Status();
  ASSERT_TRUE(after);
  for (const char* c : {"side", "chat", "quiet"}) {
    EXPECT_EQ(RestartCount(*after, c), 0) << c;
    EXPECT_EQ(StartedAt(*after, c), StartedAt(before, c)) << c;
  }
  EXPECT_EQ(ReadyAndSince(*after), ready) << "the Ready condition flipped";
  EXPECT_EQ((*after)["metadata"]["uid"], before["metadata"]["uid"]);

  auto summary = Summary();
  ASSERT_TRUE(summary.contains("supervisor")) << summary.dump();
  EXPECT_EQ(summary["supervisor"].value("upgrades", -1), 1);
  EXPECT_EQ(summary["supervisor"].value("pid", 0), run_pid());
  EXPECT_TRUE(summary["supervisor"].contains("upgradedAt")) << summary.dump();
  auto describe = Client({"describe", pod_name_});
  EXPECT_THAT(describe.out, HasSubstr("(pid " + std::to_string(run_pid()) + ")"));
  EXPECT_THAT(describe.out, HasSubstr("upgraded 1 time"));

  auto upgraded = WithReason(PodEvents(), "Upgraded");
  ASSERT_EQ(upgraded.size(), 1u) << EventsText(PodEvents());
  EXPECT_EQ(upgraded[0].value("type", ""), "Normal");
  EXPECT_THAT(upgraded[0].value("message", ""),
              ::testing::MatchesRegex("podvisor [^ ]+ -> [^ ]+ \\(pid " +
                                      std::to_string(run_pid()) + "\\), handed over in [0-9]+ ms"));
  for (const char* reason : {"Killing", "BackOff", "Unhealthy", "Adopted"}) {
    EXPECT_THAT(WithReason(PodEvents(), reason), ::testing::IsEmpty()) << reason;
  }
  auto events = HelperEvents();
  for (const char* c : {"side", "quiet"})
    EXPECT_EQ(CountOf(events, std::string(c) + " Started"), 1);

  StopAndWait();
  ExpectEveryLineOnce();
}

TEST_F(Handover, S15_2_AnotherVersionIsShownEverywhereAndTheUpgradeBackToo) {
  const std::string from = Version();
  ASSERT_FALSE(from.empty());
  // Another build, simulated: the first character changes ("0.1.0" ->
  // "9.1.0"), the same length, so no offset moves (CopyWithVersion).
  std::string to = from;
  to[0] = to[0] == '9' ? '8' : '9';
  const fs::path copy = dir_ / "podvisor-next";
  ASSERT_GE(CopyWithVersion(RequiredEnv("PODVISOR"), copy, from, to), 1)
      << "the version string " << from << " is not in the binary";
  auto check = testing::RunCommand({copy.string(), "handover-check"});
  ASSERT_EQ(check.exit_code, 0) << check.err;
  ASSERT_EQ(nlohmann::json::parse(check.out).value("version", ""), to) << check.out;

  WritePod(ChattyPod("vers"));
  StartRun();
  auto before = WaitUntilRunning();
  const auto pids = Pids();
  const std::string ready = ReadyAndSince(before);

  auto up = Upgrade({"--binary", copy.string()});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_EQ(up.out.substr(0, up.out.find(" (")), "pod vers: podvisor " + from + " -> " + to);
  auto summary = Summary();
  EXPECT_EQ(summary["supervisor"].value("version", ""), to)
      << summary.dump() << "\n(if the copy's own `version` says " << to
      << ", the compiler kept another copy of the version CopyWithVersion did not patch)";
  EXPECT_EQ(summary["supervisor"].value("upgrades", -1), 1);
  auto status = Status();
  ASSERT_TRUE(status);
  EXPECT_EQ((*status)["metadata"]["annotations"].value("podvisor.io/supervisor-version", ""), to);
  EXPECT_THAT(
      Client({"describe", pod_name_}).out,
      ::testing::ContainsRegex("Supervisor: +podvisor " + to + " \\(pid " +
                               std::to_string(run_pid()) + "\\), started .*upgraded 1 time"));
  auto upgraded = WithReason(PodEvents(), "Upgraded");
  ASSERT_EQ(upgraded.size(), 1u) << EventsText(PodEvents());
  EXPECT_THAT(upgraded[0].value("message", ""),
              HasSubstr("podvisor " + from + " -> " + to + " (pid " + std::to_string(run_pid())));
  WaitForMoreLines(30);

  // And back to the build's own binary.
  auto back = Upgrade({"--binary", RequiredEnv("PODVISOR")});
  ASSERT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(back.out.substr(0, back.out.find(" (")), "pod vers: podvisor " + to + " -> " + from);
  summary = Summary();
  EXPECT_EQ(summary["supervisor"].value("version", ""), from);
  EXPECT_EQ(summary["supervisor"].value("upgrades", -1), 2);
  status = Status();
  ASSERT_TRUE(status);
  EXPECT_EQ((*status)["metadata"]["annotations"].value("podvisor.io/supervisor-version", ""), from);
  upgraded = WithReason(PodEvents(), "Upgraded");
  ASSERT_EQ(upgraded.size(), 2u) << EventsText(PodEvents());
  EXPECT_THAT(upgraded[1].value("message", ""), HasSubstr("podvisor " + to + " -> " + from));
  EXPECT_EQ(Pids(), pids);
  EXPECT_EQ(ReadyAndSince(*status), ready);
  for (const char* c : {"side", "chat", "quiet"}) EXPECT_EQ(RestartCount(*status, c), 0) << c;
  WaitForMoreLines(30);
  StopAndWait();
  ExpectEveryLineOnce();
}

TEST_F(Handover, S15_2_ABinaryThatCannotReadTheFormatIsRefusedAndTheOldOneCarriesOn) {
  const fs::path script = dir_ / "podvisor-99";
  std::ofstream(script) << "#!/bin/sh\n"
                           "echo '{\"version\":\"9.9.9\",\"format\":99,\"oldestFormat\":99}'\n";
  ::chmod(script.c_str(), 0755);
  WritePod(ChattyPod("refuse"));
  StartRun();
  auto before = WaitUntilRunning();
  const auto pids = Pids();

  auto up = Upgrade({"--binary", script.string()});
  EXPECT_EQ(up.exit_code, 1) << up.out << up.err;
  EXPECT_THAT(up.err, HasSubstr("format"));
  EXPECT_EQ(up.out, "");
  auto refused = WithReason(PodEvents(), "UpgradeRefused");
  ASSERT_EQ(refused.size(), 1u) << EventsText(PodEvents());
  EXPECT_EQ(refused[0].value("type", ""), "Warning");
  EXPECT_THAT(WithReason(PodEvents(), "Upgraded"), ::testing::IsEmpty());

  EXPECT_TRUE(RunIsAlive());
  auto summary = Summary();
  EXPECT_EQ(summary["supervisor"].value("upgrades", -1), 0) << summary.dump();
  EXPECT_EQ(summary["supervisor"].value("pid", 0), run_pid());
  EXPECT_EQ(summary["supervisor"].value("version", ""), Version());
  EXPECT_EQ(Pids(), pids);
  auto after = Status();
  ASSERT_TRUE(after);
  EXPECT_EQ(ReadyAndSince(*after), ReadyAndSince(before));
  for (const char* c : {"side", "chat", "quiet"}) EXPECT_EQ(RestartCount(*after, c), 0) << c;
  // Still serving: a later upgrade to the real binary works.
  auto good = Upgrade();
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_EQ(Pids(), pids);
  StopAndWait();
  ExpectEveryLineOnce();
}

TEST_F(Handover, S15_2_AnUpgradeWhileThePodTerminatesIsRefused) {
  WritePod(Header("ending", "Always", 30) + "  containers:\n  - {name: app, image: img, command: " +
           HelperCmd("app", "trap-sigterm 0 0") + ", lifecycle: {preStop: {exec: {command: " +
           HelperCmd("prestop", "sleep 3000") + "}}}}\n");
  StartRun();
  WaitUntilRunning();
  const auto pids = Pids();
  auto stop = Client({"stop", "--no-wait"});
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  ASSERT_TRUE(WaitForHelperEvent("prestop Started"));

  auto up = Upgrade();
  EXPECT_EQ(up.exit_code, 1) << up.out << up.err;
  EXPECT_THAT(up.err, HasSubstr("terminating"));
  // S15.2 and INTERFACE.md: every refusal, "the pod terminating" among
  // them, records an UpgradeRefused Warning event.
  auto refused = WithReason(PodEvents(), "UpgradeRefused");
  EXPECT_EQ(refused.size(), 1u) << "no UpgradeRefused event for a terminating pod"
                                << EventsText(PodEvents());
  EXPECT_THAT(WithReason(PodEvents(), "Upgraded"), ::testing::IsEmpty());
  // The stop goes on as before: the hook ends, then the app is stopped.
  EXPECT_THAT(WaitRun(std::chrono::seconds(60)), AnyOf(0, 4)) << RunStderr();
  auto events = HelperEvents();
  EXPECT_EQ(CountOf(events, "prestop Started"), 1) << Describe(events);
  EXPECT_EQ(CountOf(events, "prestop Exiting"), 1) << Describe(events);
  EXPECT_LT(IndexOf(events, "prestop Exiting"), IndexOf(events, "app Exiting")) << Describe(events);
  EXPECT_EQ(CountOf(events, "app Started"), 1);
  EXPECT_FALSE(pids.empty());
}

TEST_F(Handover, S15_2_SighupUpgradesToTheBinaryAtTheStartPath) {
  WritePod(ChattyPod("hup"));
  StartRun();
  auto before = WaitUntilRunning();
  const auto pids = Pids();
  ASSERT_EQ(::kill(run_pid(), SIGHUP), 0);
  nlohmann::json summary;
  for (int i = 0; i < 1500; ++i) {
    summary = Summary();
    if (summary.is_object() && summary.contains("supervisor") &&
        summary["supervisor"].value("upgrades", -1) == 1) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_EQ(summary["supervisor"].value("upgrades", -1), 1) << summary.dump();
  EXPECT_EQ(summary["supervisor"].value("pid", 0), run_pid());
  auto upgraded = WithReason(PodEvents(), "Upgraded");
  ASSERT_EQ(upgraded.size(), 1u) << EventsText(PodEvents());
  EXPECT_EQ(Pids(), pids);
  auto after = Status();
  ASSERT_TRUE(after);
  EXPECT_EQ(ReadyAndSince(*after), ReadyAndSince(before));
  WaitForMoreLines(30);
  StopAndWait();
  ExpectEveryLineOnce();
}

// ------------------------------------------------------------------ adoption

class Adoption : public HandoverBase {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    // The holder that keeps the log pipes and pidfds (S15.4) is the
    // namespaces sandbox's.
    t.extra_run_args = {"--sandbox", "namespaces"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root: adoption needs the sandbox holder (--sandbox namespaces), "
                      "whose namespaces need CAP_SYS_ADMIN";
    }
    E2eTest::SetUp();
  }
  void TearDown() override {
    if (!dir_.empty() && !IsSkipped()) ExpectNoHolderLeft();
    E2eTest::TearDown();
  }

  void KillSupervisor() {
    ASSERT_EQ(::kill(run_pid(), SIGKILL), 0);
    EXPECT_EQ(WaitRun(), -1);
  }
  // The one Adopted event of the second run.
  std::string AdoptedMessage() {
    auto adopted = WithReason(PodEvents(), "Adopted");
    if (adopted.size() != 1) {
      ADD_FAILURE() << adopted.size() << " Adopted events:" << EventsText(PodEvents())
                    << "\nrun stderr:\n"
                    << RunStderr();
      return "";
    }
    return adopted[0].value("message", "");
  }
  // Live helper processes of this test logging as `name`.
  std::size_t Live(const std::string& name) {
    return ProcessesWith({"--log " + name + " ", dir_.string()}).size();
  }
};

TEST_F(Adoption, S15_5_SteadyStateKeepsPidsCountsReadinessAndLogs) {
  WritePod(ChattyPod("steady"));
  StartRun();
  auto before = WaitUntilRunning();
  WaitForMoreLines(50);
  const auto pids = Pids();
  ASSERT_EQ(pids.size(), 3u) << PidsText(pids);
  std::this_thread::sleep_for(milliseconds(300));  // the state file is written (100 ms)
  KillSupervisor();
  for (const auto& [id, pid] : pids) ASSERT_TRUE(Alive(pid)) << id << " died with its supervisor";
  std::this_thread::sleep_for(milliseconds(500));  // the app writes into the held pipe meanwhile

  StartRun();
  auto after = WaitUntilRunning();
  std::string message = AdoptedMessage();
  EXPECT_THAT(message, HasSubstr("3 running container(s) adopted"));
  EXPECT_THAT(message, HasSubstr("chat " + std::to_string(PidOf(pids, "chat"))));
  EXPECT_EQ(Pids(), pids) << PidsText(Pids());
  for (const char* c : {"side", "chat", "quiet"}) {
    EXPECT_EQ(RestartCount(after, c), 0) << c;
    EXPECT_EQ(StartedAt(after, c), StartedAt(before, c)) << c;
  }
  EXPECT_EQ(ReadyAndSince(after), ReadyAndSince(before)) << "the Ready condition flipped";
  EXPECT_EQ(after["metadata"]["uid"], before["metadata"]["uid"]);
  auto events = HelperEvents();
  for (const char* c : {"side", "quiet"}) {
    EXPECT_EQ(CountOf(events, std::string(c) + " Started"), 1) << Describe(events);
    EXPECT_EQ(CountOf(events, std::string(c) + " Exiting"), 0) << "signalled: " << Describe(events);
  }
  WaitForMoreLines(50);
  StopAndWait();
  ExpectEveryLineOnce();
}

TEST_F(Adoption, S15_5_MidStartWhileAnInitContainerRuns) {
  WritePod(Header("midinit") + "  initContainers:\n  - {name: init, image: img, command: " +
           HelperCmd("init", "sleep 1500") +
           "}\n  containers:\n  - {name: app, image: img, command: " +
           HelperCmd("app", "trap-sigterm 0 0") + "}\n");
  StartRun();
  ASSERT_TRUE(WaitForHelperEvent("init Started"));
  std::this_thread::sleep_for(milliseconds(300));
  const pid_t init = PidOf(Pids(), "init");
  ASSERT_TRUE(Alive(init));
  KillSupervisor();
  ASSERT_TRUE(Alive(init)) << "the init container died with its supervisor";

  StartRun();
  auto pod = WaitUntilRunning();
  auto events = HelperEvents();
  EXPECT_EQ(CountOf(events, "init Started"), 1)
      << "the init container ran again" << Describe(events);
  EXPECT_EQ(CountOf(events, "init Exiting"), 1) << Describe(events);
  EXPECT_EQ(CountOf(events, "app Started"), 1) << Describe(events);
  EXPECT_LT(IndexOf(events, "init Exiting"), IndexOf(events, "app Started")) << Describe(events);
  const nlohmann::json* s = FindContainerStatus(pod, "init");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ((*s)["state"]["terminated"].value("exitCode", -1), 0) << s->dump();
  EXPECT_EQ(RestartCount(pod, "app"), 0);
  EXPECT_EQ(Live("app"), 1u);
  StopAndWait();
}

TEST_F(Adoption, S15_5_RightAfterTheFirstContainerStartedNothingRunsTwice) {
  // Killed the moment the sidecar logs its start: the state file may
  // still say it is being created or started, or be from before the
  // pod's start; such an instance is deleted and created again (S15.5),
  // never left running beside a second one, and the pod goes on (once
  // it stayed Pending: a step the state never heard of was never
  // answered).
  WritePod(Header("midstart") +
           "  initContainers:\n  - {name: side, image: img, restartPolicy: Always, "
           "command: " +
           HelperCmd("side", "trap-sigterm 0 0") +
           "}\n  containers:\n  - {name: app, image: img, command: " +
           HelperCmd("app", "trap-sigterm 0 0") + "}\n");
  StartRun();
  ASSERT_TRUE(WaitForHelperEvent("side Started"));
  KillSupervisor();

  StartRun();
  auto pod = WaitUntilRunning();
  EXPECT_EQ(StateOf(pod, "side"), "running");
  EXPECT_EQ(StateOf(pod, "app"), "running");
  // One of each alive: a deleted instance is gone, an adopted one is it.
  for (int i = 0; i < 100 && (Live("side") != 1 || Live("app") != 1); ++i) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(Live("side"), 1u) << Describe(HelperEvents());
  EXPECT_EQ(Live("app"), 1u) << Describe(HelperEvents());
  EXPECT_EQ(Pids().size(), 2u) << PidsText(Pids());
  for (const auto& [id, pid] : Pids()) EXPECT_TRUE(Alive(pid)) << id;
  StopAndWait();
}

TEST_F(Adoption, S15_3_AProbeInFlightIsAbandonedAndReadinessDoesNotFlip) {
  WritePod(Header("probing") + "  containers:\n  - {name: app, image: img, command: " +
           HelperCmd("app", "trap-sigterm 0 0") + Readiness("sleep 1000", 2, 5) + "}\n");
  StartRun();
  auto before = WaitUntilRunning();
  ASSERT_THAT(ReadyAndSince(before), ::testing::StartsWith("True "));
  // A probe run has just begun (each one takes 1 s): kill now.
  int runs = CountOf(HelperEvents(), "probe Started");
  ASSERT_TRUE(WaitForHelperEvent("probe Started", runs + 1));
  const auto pids = Pids();
  KillSupervisor();

  StartRun();
  WaitForStatus([](const nlohmann::json& p) { return Phase(p) == "Running"; }, "Running");
  // Resumed at once from the carried result: the probe runs again, and
  // Ready stays what it was, with the same transition time.
  runs = CountOf(HelperEvents(), "probe Started");
  ASSERT_TRUE(WaitForHelperEvent("probe Started", runs + 2, std::chrono::seconds(20)));
  auto after = Status();
  ASSERT_TRUE(after);
  EXPECT_EQ(ReadyAndSince(*after), ReadyAndSince(before)) << "the Ready condition flipped";
  EXPECT_EQ(Pids(), pids);
  EXPECT_EQ(RestartCount(*after, "app"), 0);
  EXPECT_THAT(AdoptedMessage(), HasSubstr("1 running container(s) adopted"));
  StopAndWait();
}

TEST_F(Adoption, S15_6_MidStopTheNextRunFinishesTheStopThenStartsThePodAfresh) {
  WritePod(
      Header("midstop", "Always", 30) + "  containers:\n  - {name: app, image: img, command: " +
      HelperCmd("app", "trap-sigterm 0 0") +
      ", lifecycle: {preStop: {exec: {command: " + HelperCmd("prestop", "sleep 2000") + "}}}}\n");
  StartRun();
  WaitUntilRunning();
  const pid_t app = PidOf(Pids(), "app");
  ASSERT_EQ(Client({"stop", "--no-wait"}).exit_code, 0);
  ASSERT_TRUE(WaitForHelperEvent("prestop Started"));
  std::this_thread::sleep_for(milliseconds(300));
  KillSupervisor();
  EXPECT_TRUE(Alive(app)) << "the app was stopped by its dying supervisor";
  EXPECT_EQ(CountOf(HelperEvents(), "app Exiting"), 0);

  StartRun();
  // The old pod's stop goes on (the hook counts as ended; S15.5), the app
  // gets its SIGTERM, and the pod then starts afresh (S15.6).
  ASSERT_TRUE(WaitForHelperEvent("app Started", 2, std::chrono::seconds(40)));
  auto pod = WaitUntilRunning();
  auto events = HelperEvents();
  EXPECT_EQ(CountOf(events, "app Exiting"), 1) << Describe(events);
  EXPECT_LT(IndexOf(events, "app Exiting"), static_cast<int>(events.size()) - 1);
  auto starts = EventsNamed(events, "app", "Started");
  auto exits = EventsNamed(events, "app", "Exiting");
  ASSERT_EQ(starts.size(), 2u);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_LE(exits[0].time, starts[1].time) << Describe(events);
  EXPECT_EQ(CountOf(events, "prestop Started"), 1)
      << "the preStop hook ran again" << Describe(events);
  EXPECT_FALSE(Alive(app)) << "the old app still runs";
  EXPECT_NE(PidOf(Pids(), "app"), app);
  EXPECT_EQ(Live("app"), 1u);
  EXPECT_EQ(StateOf(pod, "app"), "running");
  StopAndWait();
}

TEST_F(Adoption, S15_5_DuringABackoffTheRestartCountAndTheDelayAreCarried) {
  WritePod(Header("backoff") + "  containers:\n  - {name: crash, image: img, command: " +
           HelperCmd("crash", "exit 1") + "}\n");
  // The first restart comes at once, the second after 4 s, the third
  // after 8 s (S4). Killed during the 4 s: a backoff lost across the
  // adoption would restart at once.
  const std::vector<std::string> args = {"--backoff-initial", "4s", "--backoff-max", "60s"};
  StartRun(args);
  ASSERT_TRUE(WaitForHelperEvent("crash Exiting", 2, std::chrono::seconds(30)));
  auto second_exit = EventsNamed(HelperEvents(), "crash", "Exiting").back().time;
  WaitForStatus([](const nlohmann::json& p) { return RestartCount(p, "crash") == 1; },
                "restartCount 1");
  std::this_thread::sleep_for(milliseconds(300));  // the state file is written
  ASSERT_EQ(CountOf(HelperEvents(), "crash Started"), 2) << Describe(HelperEvents());
  KillSupervisor();

  StartRun(args);
  auto adopted = WaitForStatus(
      [](const nlohmann::json& p) { return RestartCount(p, "crash") >= 1; }, "adopted");
  EXPECT_EQ(RestartCount(adopted, "crash"), 1) << "the restart count was not carried";
  ASSERT_TRUE(WaitForHelperEvent("crash Started", 3, std::chrono::seconds(30)));
  auto third_start = EventsNamed(HelperEvents(), "crash", "Started")[2].time;
  // A lower bound only (a loaded machine makes it later, never earlier).
  EXPECT_GE(MsBetween(second_exit, third_start), 3500)
      << "the restart came before the carried 4 s backoff" << Describe(HelperEvents());
  WaitForStatus([](const nlohmann::json& p) { return RestartCount(p, "crash") >= 2; },
                "restartCount 2");
  // The step is carried too: the next delay is 8 s, not the first 4 s again.
  for (int i = 0; i < 500 && RunStderr().find("Back-off 8s") == std::string::npos; ++i) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_THAT(RunStderr(), HasSubstr("Back-off 8s restarting failed container crash"));
  auto stop = Client({"stop", "--no-wait"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_THAT(WaitRun(std::chrono::seconds(60)), AnyOf(0, 1, 4));
}

TEST_F(Adoption, S15_5_AContainerThatEndedUnsupervisedIsReportedWithItsExitAndRestarted) {
  // killed: SIGKILLed by the test; seven: exits 7 when told to.
  WritePod(Header("unsup") + "  containers:\n  - {name: killed, image: img, command: " +
           HelperCmd("killed", "trap-sigterm 0 0") + "}\n  - {name: seven, image: img, command: " +
           ShCmd("while [ ! -e {{DIR}}/go ]; do sleep 0.05; done; exit 7") + "}\n");
  StartRun();
  WaitUntilRunning();
  const auto pids = Pids();
  std::this_thread::sleep_for(milliseconds(300));
  KillSupervisor();
  ASSERT_EQ(::kill(PidOf(pids, "killed"), SIGKILL), 0);
  std::ofstream(scratch_ / "go") << "";
  for (int i = 0; i < 500 && (Alive(PidOf(pids, "killed")) || Alive(PidOf(pids, "seven"))); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  fs::remove(scratch_ / "go");  // the restarted one waits again

  StartRun();
  auto pod = WaitForStatus(
      [](const nlohmann::json& p) {
        return RestartCount(p, "killed") == 1 && RestartCount(p, "seven") == 1 &&
               StateOf(p, "killed") == "running" && StateOf(p, "seven") == "running";
      },
      "both restarted once", std::chrono::seconds(40));
  const nlohmann::json* killed = FindContainerStatus(pod, "killed");
  const nlohmann::json* seven = FindContainerStatus(pod, "seven");
  ASSERT_TRUE(killed && seven);
  const auto& k = (*killed)["lastState"]["terminated"];
  const auto& s = (*seven)["lastState"]["terminated"];
  // PIDFD_INFO_EXIT (Linux 6.15) or the zombie's stat tells the real exit.
  EXPECT_EQ(k.value("exitCode", -1), 137) << killed->dump();
  EXPECT_EQ(k.value("signal", -1), 9) << killed->dump();
  EXPECT_NE(k.value("reason", ""), "ContainerStatusUnknown") << killed->dump();
  EXPECT_EQ(s.value("exitCode", -1), 7) << seven->dump();
  EXPECT_EQ(s.value("reason", ""), "Error") << seven->dump();
  EXPECT_NE(PidOf(Pids(), "killed"), PidOf(pids, "killed"));
  EXPECT_EQ(CountOf(HelperEvents(), "killed Started"), 2);
  StopAndWait();
}

TEST_F(Adoption, S15_6_AChangedManifestStopsTheOldPodGracefullyThenStartsTheNew) {
  auto pod = [](const std::string& version) {
    return Header("changed", "Always", 20) +
           "  volumes: [{name: scratch, emptyDir: {}}]\n  containers:\n  - {name: app, image: img, "
           "command: " +
           HelperCmd("app" + version, "trap-sigterm 0 0") +
           ", lifecycle: {preStop: {exec: {command: " +
           HelperCmd("prestop" + version, "write {{DIR}}/prestop-ran " + version) + "}}}}\n";
  };
  WritePod(pod("1"));
  StartRun();
  WaitUntilRunning();
  const pid_t old_app = PidOf(Pids(), "app");
  std::this_thread::sleep_for(milliseconds(300));
  KillSupervisor();
  ASSERT_TRUE(Alive(old_app));

  WritePod(pod("2"));
  StartRun();
  ASSERT_TRUE(WaitForHelperEvent("app2 Started", 1, std::chrono::seconds(40)));
  WaitUntilRunning();
  auto events = HelperEvents();
  EXPECT_EQ(ReadScratch("prestop-ran"), "1") << "the old pod's preStop did not run";
  EXPECT_EQ(CountOf(events, "prestop1 Started"), 1) << Describe(events);
  EXPECT_EQ(CountOf(events, "app1 Exiting"), 1) << "the old app got no SIGTERM" << Describe(events);
  EXPECT_LT(IndexOf(events, "prestop1 Exiting"), IndexOf(events, "app1 Exiting"))
      << Describe(events);
  EXPECT_LT(IndexOf(events, "app1 Exiting"), IndexOf(events, "app2 Started")) << Describe(events);
  EXPECT_FALSE(Alive(old_app));
  EXPECT_EQ(Live("app1"), 0u);
  EXPECT_EQ(Live("app2"), 1u);
  // The stop of the old pod belongs to the old pod's record; the new
  // pod's events start afresh, so the run's log tells it.
  EXPECT_THAT(RunStderr(), HasSubstr("pod Adopted: the supervisor before died; the pod it ran is "
                                     "stopped first (Update)"));
  EXPECT_THAT(RunStderr(), HasSubstr("Stopping pod (reason: Update)"));
  StopAndWait();
  EXPECT_EQ(ReadScratch("prestop-ran"), "2");
}

}  // namespace
}  // namespace podvisor::e2e
