// Test tier 3 (docs/TESTING.md "Pulling from a registry"), issue 31 point 1
// and 2 with a real registry, skopeo and runc: each imagePullPolicy (a
// present image proven unpulled by the registry's access log and by the
// registry being dead), a pull secret and REGISTRY_AUTH_FILE, a wrong
// secret giving ErrImagePull, then ImagePullBackOff with the kubelet's
// image backoff (10 s, then 20 s) and no restart, a multi-platform index
// (the host's entry picked, the others never fetched), a digest
// reference, a short-name alias, the repository digest as imageID, the
// Pulling and Pulled events, a slow pull showing the pod Pending with
// ContainerCreating, and credentials appearing in no output. Needs root,
// runc and the registry tools (each skip says which).
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runc_pull_fixture.h"

namespace podvisor::e2e {
namespace {

using std::chrono::seconds;
using std::chrono::steady_clock;
using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(RuncPull, IfNotPresentPullsOnceThenRunsWithTheRegistryGone) {
  Push(images_->app_a, "team/app-a:v1");
  const std::string ref = registry_->Ref("team/app-a:v1");
  UseAuthFile(registry_->user(), registry_->password());
  // No policy with a tag other than latest: IfNotPresent.
  WritePod(PodYaml("ifnp", Container("app", ref, CatAppName("app"))));
  EXPECT_EQ(Run({}, {}, seconds(120)), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("out-app"), "app-a");
  auto pod = Status();
  ASSERT_TRUE(pod.has_value());
  // The repository digest: the manifest the tag named.
  EXPECT_EQ(ImageId(*pod, "app"), registry_->Ref("team/app-a@" + images_->app_a.manifest_digest));

  auto pulling = EventsWithReason("Pulling");
  ASSERT_EQ(pulling.size(), 1u);
  EXPECT_EQ(pulling[0].value("message", ""), "Pulling image \"" + ref + "\"");
  auto pulled = EventsWithReason("Pulled");
  ASSERT_EQ(pulled.size(), 1u);
  // The kubelet's words (pkg/kubelet/images/image_manager.go).
  EXPECT_TRUE(std::regex_match(
      pulled[0].value("message", ""),
      std::regex("Successfully pulled image \"" +
                 std::regex_replace(ref, std::regex(R"([.])"), R"(\.)") +
                 "\" in [0-9.]+m?s \\([0-9.]+m?s including waiting\\)\\. Image size: [1-9][0-9]* "
                 "bytes\\.")))
      << pulled[0].dump();
  EXPECT_GE(registry_->CountRequests(
                {"GET /v2/team/app-a/blobs/" + images_->app_a.layer_digests[0], "\" 200 "}),
            1);

  // Present: the second run asks the registry nothing. First with the
  // registry alive (its access log), then dead (no way to pull at all).
  const std::size_t mark = registry_->LogMark();
  EXPECT_EQ(Run({}, {}, seconds(60)), 0) << RunStderr();
  EXPECT_EQ(registry_->CountRequests({"/v2/"}, mark), 0) << registry_->Log().substr(mark);
  EXPECT_TRUE(EventsWithReason("Pulling").empty());
  registry_->Kill();
  fs::remove(scratch_ / "out-app");
  EXPECT_EQ(Run({}, {}, seconds(60)), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("out-app"), "app-a");
}

TEST_F(RuncPull, AlwaysPullsAgainAndLatestDefaultsToAlways) {
  Push(images_->app_a, "team/app-a:v1");
  Push(images_->app_b, "team/app-b:latest");
  UseAuthFile(registry_->user(), registry_->password());
  WritePod(PodYaml(
      "always",
      Container("explicit", registry_->Ref("team/app-a:v1"), CatAppName("explicit"), "Always") +
          Container("latest", registry_->Ref("team/app-b:latest"), CatAppName("latest")) +
          Container("notag", registry_->Ref("team/app-b"), CatAppName("notag"))));
  EXPECT_EQ(Run({}, {}, seconds(120)), 0) << RunStderr();
  const std::size_t mark = registry_->LogMark();
  EXPECT_EQ(Run({}, {}, seconds(120)), 0) << RunStderr();
  // Each image's manifest asked for again (a HEAD or a GET), its layers not
  // downloaded again: they are in the store.
  EXPECT_GE(registry_->CountRequests({"/v2/team/app-a/manifests/v1"}, mark), 1);
  EXPECT_GE(registry_->CountRequests({"/v2/team/app-b/manifests/latest"}, mark), 1);
  EXPECT_EQ(registry_->CountRequests(
                {"GET /v2/team/app-a/blobs/" + images_->app_a.layer_digests[0]}, mark),
            0);
  EXPECT_EQ(EventsWithReason("Pulling").size(), 3u) << "one per container, as the kubelet";
  EXPECT_EQ(ReadScratch("out-explicit"), "app-a");
  EXPECT_EQ(ReadScratch("out-latest"), "app-b");
  EXPECT_EQ(ReadScratch("out-notag"), "app-b");
}

TEST_F(RuncPull, NeverWithTheImageMissingIsErrImageNeverPull) {
  Push(images_->app_a, "team/app-a:v1");
  const std::size_t mark = registry_->LogMark();
  WritePod(PodYaml("never",
                   Container("app", registry_->Ref("team/app-a:v1"), CatAppName("app"), "Never")));
  StartRun();
  auto pod = WaitForStatus(
      [&](const nlohmann::json& p) { return WaitingReason(p, "app") == "ErrImageNeverPull"; },
      "app waiting with ErrImageNeverPull", seconds(30));
  EXPECT_EQ(Phase(pod), "Pending");
  EXPECT_THAT(WaitingMessage(pod, "app"), HasSubstr("team/app-a:v1"));
  // Still so a while later: never pulled, never started.
  std::this_thread::sleep_for(seconds(2));
  pod = Status().value_or(nlohmann::json());
  EXPECT_EQ(WaitingReason(pod, "app"), "ErrImageNeverPull");
  EXPECT_EQ(registry_->CountRequests({"/v2/"}, mark), 0);
  EXPECT_FALSE(fs::exists(scratch_ / "out-app"));
  StopPod();
}

TEST_F(RuncPull, PullSecretAuthenticates) {
  Push(images_->app_a, "team/app-a:v1");
  WritePod(PullSecret("regcred", registry_->user(), registry_->password()) +
           PodYaml("secret", Container("app", registry_->Ref("team/app-a:v1"), CatAppName("app")),
                   "Never", "  imagePullSecrets: [{name: regcred}]\n"));
  EXPECT_EQ(Run({}, {}, seconds(120)), 0) << RunStderr();
  // The registry answers nobody without credentials (RegistryHarness.
  // PushThenInspectOverTlsWithAuth) and REGISTRY_AUTH_FILE is empty: the
  // secret's credentials were used.
  EXPECT_EQ(ReadScratch("out-app"), "app-a");
  EXPECT_GE(registry_->CountRequests({"/v2/team/app-a/manifests/v1", "\" 200 "}), 1);
}

TEST_F(RuncPull, AuthFileFromTheEnvironmentAuthenticates) {
  Push(images_->app_b, "team/app-b:v1");
  UseAuthFile(registry_->user(), registry_->password());
  WritePod(
      PodYaml("authfile", Container("app", registry_->Ref("team/app-b:v1"), CatAppName("app"))));
  EXPECT_EQ(Run({}, {}, seconds(120)), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("out-app"), "app-b");
}

// The attempts of a failing pull, as bursts of requests in the registry's
// access log (seconds apart; one attempt is a few requests within
// milliseconds): the times the test saw each burst begin.
class AttemptWatcher {
 public:
  explicit AttemptWatcher(const TestRegistry& r) : registry_(r) {}
  void Poll() {
    int n = registry_.CountRequests({"/v2/"});
    auto now = steady_clock::now();
    if (n > seen_) {
      if (starts_.empty() || now - last_request_ > std::chrono::milliseconds(2500)) {
        starts_.push_back(now);
      }
      last_request_ = now;
      seen_ = n;
    }
  }
  const std::vector<steady_clock::time_point>& starts() const { return starts_; }

 private:
  const TestRegistry& registry_;
  int seen_ = 0;
  steady_clock::time_point last_request_;
  std::vector<steady_clock::time_point> starts_;
};

TEST_F(RuncPull, WrongSecretIsErrImagePullThenImagePullBackOffWithTheKubeletsBackoff) {
  Push(images_->app_a, "team/app-a:v1");
  const std::string ref = registry_->Ref("team/app-a:v1");
  WritePod(PullSecret("regcred", registry_->user(), "not-the-password") +
           PodYaml("badcred", Container("app", ref, CatAppName("app")), "Always",
                   "  imagePullSecrets: [{name: regcred}]\n"));
  AttemptWatcher attempts(*registry_);
  StartRun();
  bool saw_err_image_pull = false, saw_backoff = false;
  nlohmann::json pod;
  // 10 s, then 20 s: three attempts within about 30 s (allowing for load).
  auto deadline = steady_clock::now() + seconds(60);
  while (steady_clock::now() < deadline && attempts.starts().size() < 3 && RunIsAlive()) {
    attempts.Poll();
    if (auto s = Status()) {
      pod = *s;
      const std::string reason = WaitingReason(pod, "app");
      saw_err_image_pull |= reason == "ErrImagePull";
      saw_backoff |= reason == "ImagePullBackOff";
      EXPECT_THAT(reason,
                  ::testing::AnyOf("", "ContainerCreating", "ErrImagePull", "ImagePullBackOff"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(saw_err_image_pull) << pod.dump(2);
  EXPECT_TRUE(saw_backoff) << pod.dump(2);
  ASSERT_GE(attempts.starts().size(), 3u) << registry_->Log();
  const auto& t = attempts.starts();
  auto gap = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  // The kubelet's image backoff: 10 s doubling (pkg/kubelet/kubelet.go,
  // backOffPeriod / MaxContainerBackOff); bounds generous for a loaded host.
  EXPECT_GE(gap(t[0], t[1]), 8.0);
  EXPECT_LE(gap(t[0], t[1]), 16.0);
  EXPECT_GE(gap(t[1], t[2]), 17.0);
  EXPECT_LE(gap(t[1], t[2]), 30.0);
  EXPECT_EQ(Phase(pod), "Pending");
  const nlohmann::json* c = FindContainerStatus(pod, "app");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->value("restartCount", -1), 0) << "a failed pull is not a restart";

  bool failed = false, backoff = false;
  for (const auto& e : EventsWithReason("Failed")) {
    failed |= e.value("message", "").find(ref) != std::string::npos;
  }
  for (const auto& e : EventsWithReason("BackOff")) {
    backoff |= e.value("message", "") == "Back-off pulling image \"" + ref + "\"";
  }
  EXPECT_TRUE(failed) << "a Failed event naming the image";
  EXPECT_TRUE(backoff) << "the kubelet's BackOff event";
  EXPECT_FALSE(fs::exists(scratch_ / "out-app"));
  StopPod();
  EXPECT_TRUE(StoredLayers().empty());
}

TEST_F(RuncPull, IndexWithSeveralPlatformsPicksTheHosts) {
  auto push = registry_->Push(images_->index, "multi:v1", /*all=*/true);
  ASSERT_EQ(push.exit_code, 0) << push.err;
  UseAuthFile(registry_->user(), registry_->password());
  WritePod(PodYaml("multi", Container("app", registry_->Ref("multi:v1"), CatAppName("app"))));
  EXPECT_EQ(Run({}, {}, seconds(120)), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("out-app"), "app-a") << "the " << images_->host_arch << " entry";
  auto pod = Status();
  ASSERT_TRUE(pod.has_value());
  // The repository digest is what the tag names: the index.
  EXPECT_EQ(ImageId(*pod, "app"), registry_->Ref("multi@" + images_->index_digest));
  for (const auto& foreign : images_->foreign_digests) {
    EXPECT_EQ(registry_->CountRequests({"GET /v2/multi/manifests/" + foreign}), 0)
        << "another platform's manifest was fetched";
  }
  std::set<std::string> want;
  for (const auto& d : images_->app_a.diff_ids) want.insert(Hex(d));
  EXPECT_EQ(StoredLayers(), want);
}

TEST_F(RuncPull, DigestReferencePullsThatManifest) {
  Push(images_->app_b, "team/app-b:v1");
  UseAuthFile(registry_->user(), registry_->password());
  const std::string ref = registry_->Ref("team/app-b@" + images_->app_b.manifest_digest);
  WritePod(PodYaml("bydigest", Container("app", ref, CatAppName("app"))));
  EXPECT_EQ(Run({}, {}, seconds(120)), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("out-app"), "app-b");
  auto pod = Status();
  ASSERT_TRUE(pod.has_value());
  EXPECT_EQ(ImageId(*pod, "app"), ref);
  EXPECT_GE(
      registry_->CountRequests({"/v2/team/app-b/manifests/" + images_->app_b.manifest_digest}), 1);
  // The push wrote the tag; the pull never asked for it.
  EXPECT_EQ(registry_->CountRequests({"GET /v2/team/app-b/manifests/v1"}), 0);
  EXPECT_EQ(registry_->CountRequests({"HEAD /v2/team/app-b/manifests/v1"}), 0);
}

TEST_F(RuncPull, ShortNameAliasFromRegistriesConf) {
  Push(images_->app_a, "team/app-a:v1");
  UseAuthFile(registry_->user(), registry_->password());
  WritePod(PodYaml("alias", Container("app", "pvtest-app:v1", CatAppName("app"))));
  EXPECT_EQ(Run({}, {}, seconds(120)), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("out-app"), "app-a");
  auto pod = Status();
  ASSERT_TRUE(pod.has_value());
  EXPECT_EQ(ImageId(*pod, "app"), registry_->Ref("team/app-a@" + images_->app_a.manifest_digest));
}

TEST_F(RuncPull, SlowPullShowsThePodPendingWithContainerCreating) {
  Push(images_->big, "big:v1");
  LoopbackProxy& proxy = StartProxy();
  UseAuthFile(registry_->user(), registry_->password(), proxy.host());
  // About 27 MB at 2 MiB/s: more than ten seconds of pulling.
  proxy.SetRate(2 << 20);
  const std::string ref = proxy.host() + "/big:v1";
  WritePod(PodYaml("slow", Container("app", ref, HelperCmd("app", "sleep 100000"))));
  const auto t0 = steady_clock::now();
  StartRun();
  // The pod answers from the moment run starts, long before the pull ends.
  auto pod = WaitForStatus(
      [&](const nlohmann::json& p) { return WaitingReason(p, "app") == "ContainerCreating"; },
      "app waiting with ContainerCreating", seconds(5));
  EXPECT_LT(steady_clock::now() - t0, seconds(5));
  EXPECT_EQ(Phase(pod), "Pending");
  EXPECT_LT(proxy.bytes_down(), uint64_t{20} << 20) << "the pull is still running";
  auto list = Client({"list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("slow"));
  // kubectl get pods' STATUS: the waiting reason of a Pending pod.
  EXPECT_THAT(list.out, HasSubstr("ContainerCreating"));
  auto describe = Client({"describe"});
  EXPECT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_THAT(describe.out, HasSubstr("Pending"));
  EXPECT_THAT(describe.out, HasSubstr("ContainerCreating"));
  EXPECT_THAT(describe.out, HasSubstr("Pulling"));
  // The supervisor's log says what it fetches, with sizes.
  EXPECT_THAT(RunStderr(), HasSubstr("big:v1"));
  EXPECT_FALSE(EventsWithReason("Pulling").empty());
  proxy.SetRate(0);
  WaitUntilRunning();
  EXPECT_EQ(EventsWithReason("Pulled").size(), 1u);
  StopPod();
}

// Everything a user or another local user can see: nothing holds the
// password, nor the base64 of user:password a docker config carries.
TEST_F(RuncPull, CredentialsAppearInNoOutput) {
  Push(images_->big, "big:v1");
  LoopbackProxy& proxy = StartProxy();
  proxy.SetRate(4 << 20);  // a pull that lasts seconds, to look at `ps`
  const std::string ref = proxy.host() + "/big:v1";
  const std::string secret =
      PullSecret("regcred", registry_->user(), registry_->password(), proxy.host());
  const std::string basic = nlohmann::json::parse(registry_->DockerConfigJson(
      registry_->user(), registry_->password()))["auths"][registry_->host()]["auth"]
                                .get<std::string>();
  WritePod(secret + PodYaml("creds", Container("app", ref, HelperCmd("app", "sleep 100000")),
                            "Never", "  imagePullSecrets: [{name: regcred}]\n"));
  auto clean = [&](const std::string& what, const std::string& text) {
    EXPECT_THAT(text, Not(HasSubstr(registry_->password()))) << what;
    EXPECT_THAT(text, Not(HasSubstr(basic))) << what;
  };
  StartRun();
  // While the pull runs: every process's command line (`ps -ef`).
  int ps_rounds = 0;
  auto deadline = steady_clock::now() + seconds(60);
  while (steady_clock::now() < deadline && RunIsAlive()) {
    auto ps = testing::RunCommand({"/bin/ps", "-eo", "pid,args", "--width", "100000"});
    clean("ps", ps.out);
    ++ps_rounds;
    auto s = Status();
    if (s && StateOf(*s, "app") == "running") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(ps_rounds, 5) << "the pull was too fast to look at ps while it ran";
  WaitUntilRunning();
  clean("status -o json", Client({"status", "-o", "json"}).out);
  clean("status -o yaml", Client({"status", "-o", "yaml"}).out);
  clean("describe", Client({"describe"}).out);
  clean("events", Client({"events"}).out);
  clean("events -o json", Client({"events", "-o", "json"}).out);
  clean("logs", Client({"logs", "--all-containers"}, true).out);
  clean("list", Client({"list"}).out);
  for (const auto& e : PodEvents()) clean("events.jsonl", e.dump());
  StopPod();
  clean("supervisor log", RunStderr());
  clean("status after the end", Client({"status", "-o", "json"}).out);
}

}  // namespace
}  // namespace podvisor::e2e
