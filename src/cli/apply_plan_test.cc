// Tier 1: `apply`'s decisions (apply_plan.h, docs/SEMANTICS.md S18.2-S18.9)
// on pods parsed and defaulted as loading does, without files or processes.
#include "cli/apply_plan.h"

#include "cli/apply_watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pod/defaults.h"
#include "pod/parse.h"

namespace podvisor::cli::apply {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

pod::Pod Load(const std::string& yaml) {
  auto parsed = pod::ParseManifest(yaml, pod::ManifestFormat::kYaml);
  EXPECT_TRUE(parsed) << (parsed ? "" : parsed.error().message());
  if (!parsed) return {};
  EXPECT_TRUE(parsed->errors.empty());
  pod::ApplyDefaults(parsed->pod);
  return parsed->pod;
}

const char* kWeb = R"(apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers:
  - name: app
    image: busybox
    command: [sleep, "100"]
    resources: {requests: {cpu: 100m, memory: 32Mi}, limits: {cpu: 200m, memory: 64Mi}}
)";

std::string With(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(ApplyCompare, SameManifestIsNoChange) {
  EXPECT_EQ(Compare(Load(kWeb), Load(kWeb)).difference, Difference::kNone);
}

TEST(ApplyCompare, ADefaultWrittenOutIsNoChange) {
  // terminationGracePeriodSeconds 30 and restartPolicy Always are the
  // API server's defaults: spelling them is no change.
  std::string spelled = With(
      kWeb, "spec:\n", "spec:\n  terminationGracePeriodSeconds: 30\n  restartPolicy: Always\n");
  EXPECT_EQ(Compare(Load(kWeb), Load(spelled)).difference, Difference::kNone);
}

TEST(ApplyCompare, LabelsAndAnnotationsAreMetadataOnly) {
  std::string relabelled =
      With(kWeb, "labels: {app: web}", "labels: {app: web2}, annotations: {note: x}");
  EXPECT_EQ(Compare(Load(kWeb), Load(relabelled)).difference, Difference::kNone);
}

TEST(ApplyCompare, PodvisorAnnotationsChangeBehaviour) {
  std::string after = With(kWeb, "labels: {app: web}", "annotations: {podvisor.io/after: db}");
  Comparison c = Compare(Load(kWeb), Load(after));
  EXPECT_EQ(c.difference, Difference::kOther);
  EXPECT_THAT(c.what, HasSubstr("metadata.annotations"));
}

TEST(ApplyCompare, LabelsReachingContainersThroughTheDownwardApiAreAChange) {
  std::string env = With(kWeb, "    command: [sleep, \"100\"]\n",
                         "    command: [sleep, \"100\"]\n    env: [{name: APP, valueFrom: "
                         "{fieldRef: {fieldPath: \"metadata.labels['app']\"}}}]\n");
  std::string relabelled = With(env, "labels: {app: web}", "labels: {app: other}");
  EXPECT_EQ(Compare(Load(env), Load(relabelled)).difference, Difference::kOther);
}

TEST(ApplyCompare, CpuAndMemoryOnlyIsAResize) {
  std::string bigger =
      With(kWeb, "limits: {cpu: 200m, memory: 64Mi}", "limits: {cpu: 400m, memory: 128Mi}");
  Comparison c = Compare(Load(kWeb), Load(bigger));
  EXPECT_EQ(c.difference, Difference::kResources);
  EXPECT_EQ(c.what, "resources of app");
}

TEST(ApplyCompare, ResourcesWithAnyOtherChangeIsAReplace) {
  std::string both =
      With(With(kWeb, "memory: 64Mi", "memory: 128Mi"), "sleep, \"100\"", "sleep, \"200\"");
  Comparison c = Compare(Load(kWeb), Load(both));
  EXPECT_EQ(c.difference, Difference::kOther);
  EXPECT_EQ(c.what, "spec.containers[0].command[1]");
}

TEST(ApplyCompare, AnOrdinaryInitContainersResourcesAreAReplace) {
  std::string init = With(kWeb, "spec:\n",
                          "spec:\n  initContainers:\n  - {name: init, image: busybox, command: "
                          "[\"true\"], resources: {limits: {memory: 16Mi}}}\n");
  std::string bigger = With(init, "limits: {memory: 16Mi}", "limits: {memory: 32Mi}");
  EXPECT_EQ(Compare(Load(init), Load(bigger)).difference, Difference::kOther);
  // A sidecar's resize is in place, as KEP-1287 allows.
  std::string sidecar =
      With(init, "command: [\"true\"]", "restartPolicy: Always, command: [sleep, \"9\"]");
  std::string bigger_sidecar = With(sidecar, "limits: {memory: 16Mi}", "limits: {memory: 32Mi}");
  EXPECT_EQ(Compare(Load(sidecar), Load(bigger_sidecar)).difference, Difference::kResources);
}

TEST(ApplyCompare, AChangedConfigMapIsAReplaceNamingIt) {
  pod::Pod a = Load(kWeb);
  pod::Pod b = a;
  a.config.config_maps["conf"].data = {{"k", "1"}};
  b.config.config_maps["conf"].data = {{"k", "2"}};
  Comparison c = Compare(a, b);
  EXPECT_EQ(c.difference, Difference::kOther);
  EXPECT_EQ(c.what, "configmap/conf");
  b = a;
  b.config.secrets["token"] = {};
  EXPECT_EQ(Compare(a, b).what, "secret/token");
}

Desired Want(const std::string& yaml) {
  pod::Pod p = Load(yaml);
  return {p.metadata.name, p, {}};
}

Current Running(const std::string& yaml) {
  pod::Pod p = Load(yaml);
  return {p.metadata.name, true, true, p, "Running", std::nullopt};
}

TEST(ApplyPlan, EachCaseGetsItsChange) {
  std::string db = With(kWeb, "name: web", "name: db");
  std::string cache = With(kWeb, "name: web", "name: cache");
  std::string old = With(kWeb, "name: web", "name: old");
  std::string job = With(kWeb, "name: web", "name: job");
  std::vector<Desired> desired = {
      Want(kWeb),                                              // unchanged
      Want(With(db, "memory: 64Mi", "memory: 96Mi")),          // resized
      Want(With(cache, "image: busybox", "image: busybox2")),  // replaced
      {"bad", std::nullopt, {"spec.containers[0].image: Required value"}},
      Want(With(kWeb, "name: web", "name: new")),  // started
      Want(job),                                   // done
  };
  std::vector<Current> current = {Running(kWeb), Running(db), Running(cache), Running(old)};
  Current done = Running(job);
  done.running = false;
  done.phase = "Succeeded";
  current.push_back(done);
  Current stranger = Running(With(kWeb, "name: web", "name: bad"));
  current.push_back(stranger);

  auto plan = Plan(desired, current, /*prune=*/false);
  std::vector<std::string> got;
  for (const auto& d : plan) got.push_back(d.pod + " " + std::string(ChangeName(d.change)));
  EXPECT_THAT(got, ElementsAre("bad invalid", "cache replace", "db resize", "job keep", "new start",
                               "web keep"));
  // With --prune the pod apply started whose manifest is gone is pruned.
  got.clear();
  for (const auto& d : Plan(desired, current, /*prune=*/true)) {
    if (d.change == Change::kPrune) got.push_back(d.pod);
  }
  EXPECT_THAT(got, ElementsAre("old"));
}

TEST(ApplyPlan, APodApplyDidNotStartIsForeignAndNeverPruned) {
  Current by_hand = Running(kWeb);
  by_hand.applied = false;
  by_hand.kept.reset();
  auto plan = Plan({Want(kWeb)}, {by_hand}, /*prune=*/true);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].change, Change::kForeign);
  EXPECT_TRUE(Plan({}, {by_hand}, /*prune=*/true).empty());
}

TEST(ApplyPlan, AManifestRolledBackBeforeIsHeldUntilEdited) {
  std::string bad = With(kWeb, "image: busybox", "image: broken");
  Current c = Running(kWeb);
  c.failed = Load(bad);
  auto plan = Plan({Want(bad)}, {c}, false);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].change, Change::kHeld);
  // Not running any more: started on it again.
  Current stopped = c;
  stopped.running = false;
  stopped.phase = "Failed";
  EXPECT_EQ(Plan({Want(bad)}, {stopped}, false)[0].change, Change::kStart);
  // Edited again: tried again.
  plan = Plan({Want(With(bad, "image: broken", "image: fixed"))}, {c}, false);
  EXPECT_EQ(plan[0].change, Change::kReplace);
}

TEST(ApplyPlan, APodThatEndedIsStartedAgainUnlessItSucceededOnThisManifest) {
  Current ended = Running(kWeb);
  ended.running = false;
  ended.phase = "Failed";
  EXPECT_EQ(Plan({Want(kWeb)}, {ended}, false)[0].change, Change::kStart);
  ended.phase = "Succeeded";
  EXPECT_EQ(Plan({Want(kWeb)}, {ended}, false)[0].change, Change::kKeep);
  EXPECT_EQ(Plan({Want(With(kWeb, "\"100\"", "\"200\""))}, {ended}, false)[0].change,
            Change::kStart);
}

TEST(ApplyResize, TheRequestNamesTheChangedContainersWithCpuAndMemory) {
  std::string two =
      With(kWeb, "  containers:\n",
           "  containers:\n  - {name: side, image: busybox, command: [sleep, \"1\"]}\n");
  std::string bigger =
      With(two, "limits: {cpu: 200m, memory: 64Mi}", "limits: {cpu: 400m, memory: 128Mi}");
  nlohmann::json req = ResizeRequest(Load(two), Load(bigger));
  EXPECT_EQ(req, nlohmann::json::parse(R"({"op":"resize","containers":[{"name":"app",
      "resources":{"requests":{"cpu":"100m","memory":"32Mi"},
                   "limits":{"cpu":"400m","memory":"128Mi"}}}]})"));
}

TEST(ApplyConfigNames, EveryPlaceAPodNamesAConfigMapOrSecret) {
  pod::Pod p =
      Load(With(kWeb, "    command: [sleep, \"100\"]\n",
                "    command: [sleep, \"100\"]\n"
                "    env: [{name: A, valueFrom: {configMapKeyRef: {name: env-cm, key: a}}},\n"
                "          {name: B, valueFrom: {secretKeyRef: {name: env-s, key: b}}}]\n"
                "    envFrom: [{configMapRef: {name: from-cm}}, {secretRef: {name: from-s}}]\n") +
           "  imagePullSecrets: [{name: pull}]\n"
           "  volumes:\n"
           "  - {name: v1, configMap: {name: vol-cm}}\n"
           "  - {name: v2, secret: {secretName: vol-s}}\n"
           "  - {name: v3, projected: {sources: [{configMap: {name: proj-cm}}, "
           "{secret: {name: proj-s}}]}}\n");
  ConfigNames names = UsedConfigNames(p.spec);
  EXPECT_THAT(names.config_maps, ElementsAre("env-cm", "from-cm", "proj-cm", "vol-cm"));
  EXPECT_THAT(names.secrets, ElementsAre("env-s", "from-s", "proj-s", "pull", "vol-s"));
}

TEST(ApplyBudget, TimeoutElseStartupProbesElseFiveMinutes) {
  pod::Pod p = Load(kWeb);
  EXPECT_EQ(ReadyBudget(p, std::nullopt), kDefaultReadyTimeout);
  EXPECT_EQ(ReadyBudget(p, std::chrono::seconds(7)), std::chrono::seconds(7));
  p.spec.containers[0].startup_probe = pod::Probe{};
  p.spec.containers[0].startup_probe->initial_delay_seconds = 5;
  p.spec.containers[0].startup_probe->period_seconds = 10;
  p.spec.containers[0].startup_probe->failure_threshold = 30;
  EXPECT_EQ(ReadyBudget(p, std::nullopt), std::chrono::seconds(5 + 300 + 60));
}

TEST(ApplyFiles, ManifestsAreReadEditorFilesAndDotFilesAreNot) {
  for (const char* name : {"web.yaml", "web.yml", "db.json", "a.b.yaml"}) {
    EXPECT_TRUE(IsManifestFileName(name)) << name;
  }
  for (const char* name : {".web.yaml.swp", ".web.yaml", "web.yaml~", ".#web.yaml", "#web.yaml#",
                           "4913", "web.yaml.swp", "README.md", ".yaml", "images"}) {
    EXPECT_FALSE(IsManifestFileName(name)) << name;
  }
}

TEST(ApplyWatchFilter, ADirectorysManifestsOrTheOneFileGiven) {
  EXPECT_TRUE(IsRelevantChange("", "web.yaml"));
  EXPECT_FALSE(IsRelevantChange("", ".web.yaml.swp"));
  EXPECT_FALSE(IsRelevantChange("", "4913"));
  // -f FILE: its directory is watched, and only its own name counts.
  EXPECT_TRUE(IsRelevantChange("/etc/pods/web.yaml", "web.yaml"));
  EXPECT_FALSE(IsRelevantChange("/etc/pods/web.yaml", "db.yaml"));
  EXPECT_FALSE(IsRelevantChange("/etc/pods/web.yaml", ".web.yaml.swp"));
}

}  // namespace
}  // namespace podvisor::cli::apply
