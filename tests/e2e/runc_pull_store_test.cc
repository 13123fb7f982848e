// Test tier 3 (docs/TESTING.md "Pulling from a registry"), issue 31 points
// 1 and 3 with a real registry and runc: what a pull leaves in the layer
// store (STATE/.images/layers/sha256/<diff id>). Two images sharing a base
// keep it once; `images prune` under a running pod keeps its layers and
// removes them after it ended; a registry that dies mid-pull (a proxy
// cutting the connection after 8 MiB) leaves no layer of the cut blob and
// the next attempt pulls it; a corrupt blob is refused naming its digest,
// nothing published; `podvisor pull IMAGE` ahead of a pod whose policy
// is Never, and `pull --into BUNDLE` making the bundle run with the
// registry gone. Needs root, runc and the registry tools.
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runc_pull_fixture.h"

namespace podvisor::e2e {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(RuncPull, ImagesSharingABaseStoreItOnce) {
  Push(images_->app_a, "team/app-a:v1");
  Push(images_->app_b, "team/app-b:v1");
  UseAuthFile(registry_->user(), registry_->password());
  ASSERT_EQ(images_->app_a.diff_ids[0], images_->app_b.diff_ids[0]);
  WritePod(PodYaml("shared", Container("a", registry_->Ref("team/app-a:v1"), CatAppName("a")) +
                                 Container("b", registry_->Ref("team/app-b:v1"), CatAppName("b"))));
  EXPECT_EQ(Run({}, {}, seconds(120)), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("out-a"), "app-a");
  EXPECT_EQ(ReadScratch("out-b"), "app-b");
  // Three layers, not four: the base once, each image's own layer.
  std::set<std::string> want = {Hex(images_->app_a.diff_ids[0]), Hex(images_->app_a.diff_ids[1]),
                                Hex(images_->app_b.diff_ids[1])};
  EXPECT_EQ(StoredLayers(), want);
  // The base's tree is there once: its busybox binary is one file.
  const fs::path layers = state_dir_ / ".images" / "layers" / "sha256";
  EXPECT_TRUE(fs::exists(layers / Hex(images_->app_a.diff_ids[0]) / "bin" / "busybox"));
  EXPECT_FALSE(fs::exists(layers / Hex(images_->app_a.diff_ids[1]) / "bin"));
  auto ls = Client({"images", "ls"});
  EXPECT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_THAT(ls.out, HasSubstr("team/app-a"));
  EXPECT_THAT(ls.out, HasSubstr("team/app-b"));
}

TEST_F(RuncPull, PruneKeepsARunningPodsLayersAndRemovesThemAfterItEnds) {
  Push(images_->app_a, "team/app-a:v1");
  Push(images_->app_b, "team/app-b:v1");
  UseAuthFile(registry_->user(), registry_->password());
  // b only in the store, a used by the running pod.
  auto pulled = Client({"pull", registry_->Ref("team/app-b:v1")});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.out << pulled.err;
  WritePod(PodYaml(
      "held", Container("app", registry_->Ref("team/app-a:v1"), HelperCmd("app", "sleep 100000"))));
  StartRun();
  WaitUntilRunning();
  ASSERT_EQ(StoredLayers().size(), 3u);
  auto prune = Client({"images", "prune"});
  EXPECT_EQ(prune.exit_code, 0) << prune.out << prune.err;
  std::set<std::string> used = {Hex(images_->app_a.diff_ids[0]), Hex(images_->app_a.diff_ids[1])};
  EXPECT_EQ(StoredLayers(), used) << "b's own layer removed, a's kept (the base is a's too)";
  // The running container still reads its image.
  // The state directory goes before "--": Client() would append it after.
  auto exec = testing::RunCommand({RequiredEnv("PODVISOR"), "exec", "--state-dir",
                                   state_dir_.string(), "app", "--", "/bin/cat", "/app-name"});
  EXPECT_EQ(exec.exit_code, 0) << exec.err;
  EXPECT_EQ(exec.out, "app-a\n");
  StopPod();
  prune = Client({"images", "prune"});
  EXPECT_EQ(prune.exit_code, 0) << prune.out << prune.err;
  EXPECT_TRUE(StoredLayers().empty());
  auto ls = Client({"images", "ls"});
  EXPECT_THAT(ls.out, Not(HasSubstr("team/app-a")));
}

TEST_F(RuncPull, RegistryDyingMidPullStoresNothingAndTheNextPullWorks) {
  Push(images_->big, "big:v1");
  LoopbackProxy& proxy = StartProxy();
  UseAuthFile(registry_->user(), registry_->password(), proxy.host());
  // The base is about 3 MB, the random layer 24 MiB: cut inside the latter.
  proxy.CutAfter(8 << 20);
  WritePod(PodYaml(
      "dies", Container("app", proxy.host() + "/big:v1", ShCmd("wc -c < /noise > /shared/out-app")),
      "Never"));
  StartRun();
  auto pod = WaitForStatus(
      [&](const nlohmann::json& p) {
        const std::string r = WaitingReason(p, "app");
        return r == "ErrImagePull" || r == "ImagePullBackOff";
      },
      "the pull failing", seconds(60));
  EXPECT_TRUE(proxy.has_cut());
  const std::string big_layer = Hex(images_->big.diff_ids[1]);
  EXPECT_EQ(StoredLayers().count(big_layer), 0u) << "a cut layer was published";
  // Nothing else beside finished layers under layers/sha256: no partial
  // tree under a layer's name. (Scratch entries live elsewhere.)
  for (const auto& l : StoredLayers()) {
    EXPECT_TRUE(l == Hex(images_->big.diff_ids[0])) << "unexpected layer " << l;
  }
  EXPECT_FALSE(fs::exists(scratch_ / "out-app"));
  // The registry comes back: the next attempt (after the 10 s backoff)
  // pulls the whole image and the container runs.
  proxy.Heal();
  EXPECT_EQ(WaitRun(seconds(90)), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("out-app"), std::to_string(24 << 20));
  ASSERT_EQ(StoredLayers().count(big_layer), 1u);
  EXPECT_EQ(fs::file_size(state_dir_ / ".images" / "layers" / "sha256" / big_layer / "noise"),
            24u << 20);
}

TEST_F(RuncPull, CorruptBlobIsRefusedNamingItsDigestAndNothingIsPublished) {
  Push(images_->app_a, "team/app-a:v1");
  UseAuthFile(registry_->user(), registry_->password());
  const std::string blob = images_->app_a.layer_digests[1];  // the image's own small layer
  ASSERT_TRUE(registry_->CorruptBlob(blob));
  const std::string ref = registry_->Ref("team/app-a:v1");
  WritePod(PodYaml("corrupt", Container("app", ref, CatAppName("app")), "Never"));
  StartRun();
  auto pod = WaitForStatus(
      [&](const nlohmann::json& p) { return WaitingReason(p, "app") == "ErrImagePull"; },
      "ErrImagePull", seconds(60));
  bool named = WaitingMessage(pod, "app").find(Hex(blob)) != std::string::npos;
  for (const auto& e : EventsWithReason("Failed")) {
    named |= e.value("message", "").find(Hex(blob)) != std::string::npos;
  }
  EXPECT_TRUE(named) << "neither the waiting message nor a Failed event names " << blob << "\n"
                     << pod.dump(2);
  EXPECT_EQ(StoredLayers().count(Hex(images_->app_a.diff_ids[1])), 0u);
  auto ls = Client({"images", "ls"});
  EXPECT_THAT(ls.out, Not(HasSubstr("team/app-a"))) << "an image record without its layer";
  EXPECT_FALSE(fs::exists(scratch_ / "out-app"));
  StopPod();
}

TEST_F(RuncPull, PullAheadThenNeverRunsWithTheRegistryGone) {
  Push(images_->app_b, "team/app-b:v1");
  UseAuthFile(registry_->user(), registry_->password());
  const std::string ref = registry_->Ref("team/app-b:v1");
  auto pulled = Client({"pull", ref});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.out << pulled.err;
  std::set<std::string> want = {Hex(images_->app_b.diff_ids[0]), Hex(images_->app_b.diff_ids[1])};
  EXPECT_EQ(StoredLayers(), want);
  registry_->Kill();
  WritePod(PodYaml("ahead", Container("app", ref, CatAppName("app"), "Never")));
  EXPECT_EQ(Run({}, {}, seconds(60)), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("out-app"), "app-b");
  auto pod = Status();
  ASSERT_TRUE(pod.has_value());
  EXPECT_EQ(ImageId(*pod, "app"), registry_->Ref("team/app-b@" + images_->app_b.manifest_digest));
}

TEST_F(RuncPull, PullIntoBundleMakesItRunWithTheRegistryGone) {
  Push(images_->app_a, "team/app-a:v1");
  Push(images_->app_b, "team/app-b:v1");
  // Credentials from the bundle's own pull secret; the environment's auth
  // file stays empty.
  WritePod(PullSecret("regcred", registry_->user(), registry_->password()) +
           PodYaml("into",
                   Container("a", registry_->Ref("team/app-a:v1"), CatAppName("a")) +
                       Container("b", registry_->Ref("team/app-b:v1"), CatAppName("b")),
                   "Never", "  imagePullSecrets: [{name: regcred}]\n"));
  std::set<fs::path> before;
  for (const auto& e : fs::directory_iterator(bundle_ / "images")) before.insert(e.path());
  // Its own store: the test's state dir must stay empty until `run`.
  auto pulled = testing::RunCommand({RequiredEnv("PODVISOR"), "pull", "--state-dir",
                                     (dir_ / "pull-state").string(), "--into", bundle_.string(),
                                     bundle_.string()});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.out << pulled.err;
  int added = 0;
  for (const auto& e : fs::directory_iterator(bundle_ / "images")) added += !before.count(e.path());
  EXPECT_GE(added, 1) << "nothing new in BUNDLE/images";
  registry_->Stop();
  EXPECT_EQ(Run({}, {}, seconds(60)), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("out-a"), "app-a");
  EXPECT_EQ(ReadScratch("out-b"), "app-b");
  EXPECT_TRUE(EventsWithReason("Pulling").empty());
  // And the bundle validates as self-contained.
  auto validate = testing::RunCommand({RequiredEnv("PODVISOR"), "validate", bundle_.string()});
  EXPECT_EQ(validate.exit_code, 0) << validate.out << validate.err;
  std::error_code ec;
  fs::remove_all(dir_ / "pull-state", ec);
}

}  // namespace
}  // namespace podvisor::e2e
