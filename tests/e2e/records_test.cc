// Tier 2 (fake runtime), issue 16 points 1 and 2: a pod's kept record
// (status.json) outlives it, and status, list, events and logs read it;
// rm, prune and images prune remove what outlives pods on purpose; the
// pod's end is explained by run's last lines and by truthful events; a
// command without a pod picks the only running pod, else the only pod,
// and never the image cache.
#include <fstream>
#include <regex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::AllOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

class Records : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }

  static std::string Pod(const std::string& name, const std::string& containers) {
    return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
           "}\nspec:\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 5\n"
           "  containers:\n" +
           containers;
  }

  const nlohmann::json* FindEvent(const std::vector<nlohmann::json>& events,
                                  const std::string& reason, const std::string& object) {
    for (const auto& e : events) {
      if (e.value("reason", "") == reason && e.value("object", "") == object) return &e;
    }
    return nullptr;
  }
};

TEST_F(Records, FailedPodIsExplainedAndItsRecordOutlivesIt) {
  WritePod(Pod("ended",
               "  - {name: app, image: img, terminationMessagePolicy: FallbackToLogsOnError,"
               " command: " +
                   ShCmd("echo disk full; exit 3") +
                   "}\n"
                   "  - {name: fine, image: img, command: " +
                   ShCmd("exit 0") + "}\n"));
  ASSERT_EQ(Run(), 1) << RunStderr();
  // run's last lines name the failed container with code, reason, message.
  EXPECT_THAT(
      RunStderr(),
      HasSubstr("container app failed: exit code 3, reason Error, message \"disk full\\n\""));
  EXPECT_THAT(RunStderr(), Not(HasSubstr("container fine failed")));

  // Events: the exit with its code, a Warning PodFailed, no PodCompleted.
  auto events = PodEvents();
  const auto* exited = FindEvent(events, "Exited", "container/app");
  ASSERT_NE(exited, nullptr);
  EXPECT_EQ((*exited)["type"], "Warning");
  EXPECT_EQ((*exited)["message"], "Container app exited with code 3, reason Error: disk full");
  const auto* fine = FindEvent(events, "Exited", "container/fine");
  ASSERT_NE(fine, nullptr);
  EXPECT_EQ((*fine)["type"], "Normal");
  const auto* failed = FindEvent(events, "PodFailed", "pod");
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ((*failed)["type"], "Warning");
  EXPECT_EQ(FindEvent(events, "PodCompleted", "pod"), nullptr);

  // The record stays, the runtime's state does not.
  const fs::path dir = state_dir_ / "ended";
  EXPECT_TRUE(fs::exists(dir / "status.json"));
  EXPECT_FALSE(fs::exists(dir / "control.sock"));
  EXPECT_FALSE(fs::exists(dir / "runtime"));

  auto status = Client({"status"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, ContainsRegex("ended +0/2 +Error +0 +[0-9]+s"));
  EXPECT_THAT(status.out, ContainsRegex("app +container +false +Terminated: Error \\(exit 3,"));
  EXPECT_THAT(status.out,
              ContainsRegex("fine +container +false +Terminated: Completed \\(exit 0,"));
  auto json = Client({"status", "-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto pod = nlohmann::json::parse(json.out);
  EXPECT_EQ(Phase(pod), "Failed");
  const auto* app = FindContainerStatus(pod, "app");
  ASSERT_NE(app, nullptr);
  EXPECT_EQ((*app)["state"]["terminated"]["exitCode"], 3);
  EXPECT_EQ((*app)["state"]["terminated"]["message"], "disk full\n");
  EXPECT_EQ(pod["metadata"]["name"], "ended");

  auto list = Client({"list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, ContainsRegex("ended +0/2 +Error +0"));
  auto ev = Client({"events"});
  ASSERT_EQ(ev.exit_code, 0) << ev.err;
  EXPECT_THAT(ev.out, AllOf(HasSubstr("PodFailed"), HasSubstr("Exited")));
  auto logs = Client({"logs", "app"}, true);
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "disk full\n");

  // stop and kill say the pod has ended; rm removes record and logs.
  auto stop = Client({"stop", "ended"});
  EXPECT_EQ(stop.exit_code, 1);
  EXPECT_THAT(stop.err, HasSubstr("pod ended is not running (phase Failed)"));
  auto rm = Client({"rm", "ended"}, true);
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(rm.out, "pod/ended removed\n");
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_FALSE(fs::exists(log_dir_ / "ended"));
  auto gone = Client({"status", "ended"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_THAT(gone.err, HasSubstr("no pod named ended"));
}

TEST_F(Records, PodSelectionSkipsNonPodsAndNamesCandidatesWithTheirPhase) {
  // Not pods: the image cache, a stray directory, one without records.
  fs::create_directories(state_dir_ / ".images" / "sha256");
  fs::create_directories(state_dir_ / "lost+found");
  fs::create_directories(state_dir_ / "empty");
  WritePod(Pod("first", "  - {name: app, image: img, command: " + ShCmd("echo one") + "}\n"));
  ASSERT_EQ(Run(), 0) << RunStderr();
  // With one pod, ended, a command without a pod name picks it.
  auto only = Client({"status"});
  ASSERT_EQ(only.exit_code, 0) << only.err;
  EXPECT_THAT(only.out, ContainsRegex("first +0/1 +Completed +0"));
  auto only_logs = Client({"logs", "app"}, true);
  EXPECT_EQ(only_logs.out, "one\n") << only_logs.err;

  WritePod(Pod("second", "  - {name: app, image: img, command: " + ShCmd("exit 1") + "}\n"));
  ASSERT_EQ(Run(), 1) << RunStderr();
  for (const char* cmd : {"status", "events"}) {
    auto r = Client({cmd});
    EXPECT_EQ(r.exit_code, 1) << cmd;
    EXPECT_THAT(r.err, HasSubstr("several pods under " + state_dir_.string() +
                                 ": first (Succeeded), second (Failed); name one"))
        << cmd;
    EXPECT_THAT(r.err, Not(HasSubstr(".images"))) << cmd;
  }
  auto logs = Client({"logs", "app"}, true);
  EXPECT_EQ(logs.exit_code, 1);
  EXPECT_THAT(logs.err, HasSubstr("first (Succeeded), second (Failed)"));

  // A running pod is the one chosen among ended ones.
  WritePod(Pod("third",
               "  - {name: app, image: img, command: " + HelperCmd("app", "sleep 100000") + "}\n"));
  StartRun();
  WaitUntilRunning();
  auto chosen = Client({"status", "-o", "json"});
  ASSERT_EQ(chosen.exit_code, 0) << chosen.err;
  EXPECT_EQ(nlohmann::json::parse(chosen.out)["metadata"]["name"], "third");
  auto list = Client({"list"});
  EXPECT_THAT(list.out, ContainsRegex("first +0/1 +Completed"));
  EXPECT_THAT(list.out, ContainsRegex("second +0/1 +Error"));
  EXPECT_THAT(list.out, ContainsRegex("third +1/1 +Running"));
  EXPECT_THAT(list.out, Not(HasSubstr("images")));

  // rm refuses a running pod; prune removes the ended ones only.
  auto rm = Client({"rm", "third"}, true);
  EXPECT_EQ(rm.exit_code, 1);
  EXPECT_THAT(rm.err, HasSubstr("pod third is running"));
  auto prune = Client({"prune"}, true);
  EXPECT_EQ(prune.exit_code, 0) << prune.err;
  EXPECT_EQ(prune.out, "pod/first removed\npod/second removed\n");
  EXPECT_FALSE(fs::exists(state_dir_ / "first"));
  EXPECT_FALSE(fs::exists(log_dir_ / "second"));
  EXPECT_TRUE(fs::exists(state_dir_ / "third" / "control.sock"));
  EXPECT_TRUE(fs::exists(state_dir_ / ".images"));
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 4);
}

TEST_F(Records, ImagesPruneKeepsWhatARunningPodUses) {
  fs::path layer = dir_ / "layer";
  fs::create_directories(layer / "etc");
  std::ofstream(layer / "etc" / "motd") << "hello\n";
  auto made = testing::RunCommand(
      {"/bin/bash", RequiredEnv("PODVISOR_SOURCE_ROOT") + "/scripts/make-oci-layout.sh",
       (bundle_ / "images" / "layout").string(), "{}", layer.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string digest = made.out.substr(0, made.out.find('\n'));
  const fs::path used = state_dir_ / ".images" / "images" / "sha256" / (digest.substr(7) + ".json");
  // An entry of the whole-image cache the layer store replaced, which
  // nothing uses now.
  const fs::path stale = state_dir_ / ".images" / "sha256" / std::string(64, 'a');
  fs::create_directories(stale / "rootfs");
  WritePod(Pod("uses", "  - {name: app, image: layout, command: " +
                           HelperCmd("app", "sleep 100000") + "}\n"));
  StartRun();
  auto running = WaitUntilRunning();
  // imageID is the digest of the image (the layout's manifest).
  const auto* app = FindContainerStatus(running, "app");
  ASSERT_NE(app, nullptr);
  EXPECT_EQ((*app)["imageID"], digest);
  EXPECT_NE(running["spec"].value("nodeName", ""), "");  // bound to this host

  auto prune = Client({"images", "prune"});
  ASSERT_EQ(prune.exit_code, 0) << prune.err;
  EXPECT_EQ(prune.out, "image sha256:" + std::string(64, 'a') + " removed\n");
  EXPECT_THAT(prune.err, HasSubstr("1 images and 0 layers removed"));
  EXPECT_THAT(prune.err, HasSubstr("1 images in use"));
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(used));
  auto ls = Client({"images", "ls"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_THAT(ls.out, ::testing::ContainsRegex("<none> +" + digest.substr(7, 12) + " +1 +"));

  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 4);
  // Once the pod has ended nothing holds the entry.
  auto after = Client({"images", "prune"});
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_THAT(after.out, ::testing::StartsWith("image " + digest + " removed\nlayer sha256:"));
  EXPECT_FALSE(fs::exists(used));
  EXPECT_TRUE(fs::is_empty(state_dir_ / ".images" / "layers" / "sha256"));
}

TEST_F(Records, StopSignalEventsShowTheRealStopOrder) {
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: order}\nspec:\n"
      "  terminationGracePeriodSeconds: 5\n  initContainers:\n"
      "  - {name: proxy, image: img, restartPolicy: Always, command: " +
      HelperCmd("proxy", "trap-sigterm 10 0") +
      "}\n  containers:\n"
      "  - {name: app, image: img, command: " +
      HelperCmd("app", "trap-sigterm 300 0") + "}\n");
  StartRun();
  WaitUntilRunning();
  // Running says the processes exist, not that their handlers are in
  // place: a SIGTERM before that would end them with 143, not 0.
  ASSERT_TRUE(WaitForHelperEvent("proxy Started")) << RunStderr();
  ASSERT_TRUE(WaitForHelperEvent("app Started")) << RunStderr();
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  std::vector<std::string> order;
  for (const auto& e : PodEvents()) {
    std::string reason = e.value("reason", "");
    if (reason == "StopSignal" || reason == "Exited") {
      order.push_back(reason + " " + e.value("object", ""));
    }
  }
  // The sidecar gets its signal only after the app has exited (S5.4).
  EXPECT_THAT(order,
              ::testing::ElementsAre("StopSignal container/app", "Exited container/app",
                                     "StopSignal container/proxy", "Exited container/proxy"));
  for (const auto& e : PodEvents()) {
    if (e.value("reason", "") == "StopSignal") {
      EXPECT_THAT(e.value("message", ""), HasSubstr("Sent SIGTERM to container"));
    }
  }
}

// kubectl's `-f FILE`: a manifest of any name, its images beside it.
TEST_F(Records, RunFileRunsAManifestWithItsImagesBesideIt) {
  WritePod(
      Pod("byfile", "  - {name: app, image: img, command: " + ShCmd("echo from-file") + "}\n"));
  fs::rename(bundle_ / "pod.yaml", bundle_ / "web.yaml");
  auto run =
      testing::RunCommand({RequiredEnv("PODVISOR"), "run", "-f", (bundle_ / "web.yaml").string(),
                           "--state-dir", state_dir_.string(), "--log-dir", log_dir_.string(),
                           "--runtime", RequiredEnv("PODVISOR_FAKE_RUNTIME"), "--sandbox", "none"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(Client({"logs", "app"}, true).out, "from-file\n");
  auto both = testing::RunCommand(
      {RequiredEnv("PODVISOR"), "run", "-f", (bundle_ / "web.yaml").string(), bundle_.string()});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.err, HasSubstr("run takes a BUNDLE directory or -f MANIFEST, not both"));
  auto missing =
      testing::RunCommand({RequiredEnv("PODVISOR"), "run", "-f", (bundle_ / "nope.yaml").string()});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_THAT(missing.err, HasSubstr("no such manifest file"));
}

}  // namespace
}  // namespace podvisor::e2e
