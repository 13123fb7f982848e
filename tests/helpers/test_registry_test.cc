// The registry harness's own tests (tests/helpers/test_registry.h): what
// the pull tests of tier 3 rely on, checked with skopeo alone, so that
// a pull test failing is podvisor's failure and not the harness's. A push
// then `skopeo inspect` through TLS (the CA from certs.d) and htpasswd
// auth, plain HTTP, the multi-platform index, a corrupt blob refused by
// skopeo, the proxy's cut and slow modes, a SIGKILLed registry restarted
// on its storage, and Stop removing everything it made. Needs the
// registry tools; TLS needs root (certs.d under /etc); each case skips
// saying why.
#include "test_registry.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The busybox rootfs with the test helper, as the e2e harness builds it.
class RegistryHarness : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    rootfs_dir_ =
        fs::temp_directory_path() / ("podvisor-registry-test-" + std::to_string(getpid()));
    fs::remove_all(rootfs_dir_);
    const char* root = std::getenv("PODVISOR_SOURCE_ROOT");
    const char* helper = std::getenv("PODVISOR_TEST_HELPER");
    if (!root || !helper) return;
    auto r = testing::RunCommand(
        {"/bin/bash", std::string(root) + "/scripts/make-rootfs.sh", rootfs_dir_.string()});
    if (r.exit_code == 0) {
      fs::copy_file(helper, rootfs_dir_ / "rootfs" / "podvisor-test-helper");
    }
  }
  static void TearDownTestSuite() { fs::remove_all(rootfs_dir_); }

  // Starts a registry, or skips saying why.
  std::unique_ptr<TestRegistry> StartOrSkip(RegistryOptions options = {}) {
    std::string why = TestRegistry::Missing(options.tls);
    if (!why.empty()) return nullptr;
    std::string error;
    auto r = TestRegistry::Start(options, &error);
    EXPECT_NE(r, nullptr) << error;
    return r;
  }
  const TestImages* Images() {
    std::string error;
    const TestImages* t = TestImages::Get(rootfs_dir_ / "rootfs", &error);
    EXPECT_NE(t, nullptr) << error;
    return t;
  }
  static fs::path rootfs_dir_;
};
fs::path RegistryHarness::rootfs_dir_;

#define START_OR_SKIP(var, tls_on, auth_on)                                       \
  RegistryOptions var##_options;                                                  \
  var##_options.tls = tls_on;                                                     \
  var##_options.auth = auth_on;                                                   \
  if (std::string why = TestRegistry::Missing(var##_options.tls); !why.empty()) { \
    GTEST_SKIP() << why;                                                          \
  }                                                                               \
  auto var = StartOrSkip(var##_options);                                          \
  ASSERT_NE(var, nullptr)

std::string DigestOf(const testing::CommandResult& inspect) {
  auto j = nlohmann::json::parse(inspect.out, nullptr, false);
  return j.is_object() ? j.value("Digest", "") : "";
}

TEST_F(RegistryHarness, PushThenInspectOverTlsWithAuth) {
  START_OR_SKIP(reg, true, true);
  const TestImages* images = Images();
  ASSERT_NE(images, nullptr);
  // The CA reached containers/image's per-port place, and only that.
  EXPECT_TRUE(fs::exists("/etc/containers/certs.d/" + reg->host() + "/ca.crt"));

  auto push = reg->Push(images->app_a.layout, "team/app-a:v1");
  ASSERT_EQ(push.exit_code, 0) << push.out << push.err;
  // The password went by auth file, never on skopeo's command line.
  EXPECT_THAT(push.out + push.err, Not(HasSubstr(reg->password())));

  std::size_t mark = reg->LogMark();
  auto ok = reg->Inspect(reg->Ref("team/app-a:v1"), false, reg->user() + ":" + reg->password());
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(DigestOf(ok), images->app_a.manifest_digest);
  EXPECT_GE(reg->CountRequests({"GET /v2/team/app-a/manifests/v1", "\" 200 "}, mark), 1)
      << reg->Log();

  auto no_creds = reg->Inspect(reg->Ref("team/app-a:v1"), false, "");
  EXPECT_NE(no_creds.exit_code, 0);
  EXPECT_THAT(no_creds.err, HasSubstr("authentication required"));
  auto wrong = reg->Inspect(reg->Ref("team/app-a:v1"), false, reg->user() + ":wrong");
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_THAT(wrong.err, HasSubstr("unauthorized"));

  // The shared base layer is stored once in the registry too.
  auto push_b = reg->Push(images->app_b.layout, "team/app-b:v1");
  ASSERT_EQ(push_b.exit_code, 0) << push_b.err;
  EXPECT_EQ(images->app_a.layer_digests[0], images->app_b.layer_digests[0]);
  EXPECT_NE(images->app_a.layer_digests[1], images->app_b.layer_digests[1]);
  EXPECT_TRUE(fs::exists(reg->BlobPath(images->app_b.layer_digests[1])));
}

TEST_F(RegistryHarness, PlainHttpWithoutAuth) {
  START_OR_SKIP(reg, false, false);
  const TestImages* images = Images();
  ASSERT_NE(images, nullptr);
  EXPECT_FALSE(fs::exists("/etc/containers/certs.d/" + reg->host()));
  auto push = reg->Push(images->app_b.layout, "app-b:v2");
  ASSERT_EQ(push.exit_code, 0) << push.err;
  auto ok = reg->Inspect(reg->Ref("app-b:v2"), false, "");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(DigestOf(ok), images->app_b.manifest_digest);
}

TEST_F(RegistryHarness, IndexWithSeveralPlatforms) {
  START_OR_SKIP(reg, true, true);
  const TestImages* images = Images();
  ASSERT_NE(images, nullptr);
  auto push = reg->Push(images->index, "multi:v1", /*all=*/true);
  ASSERT_EQ(push.exit_code, 0) << push.err;
  const std::string creds = reg->user() + ":" + reg->password();
  auto raw = reg->Inspect(reg->Ref("multi:v1"), true, creds);
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  auto index = nlohmann::json::parse(raw.out);
  ASSERT_EQ(index["manifests"].size(), 3u) << raw.out;
  std::set<std::string> arches;
  for (const auto& m : index["manifests"]) {
    arches.insert(m["platform"]["architecture"].get<std::string>());
  }
  EXPECT_TRUE(arches.count(images->host_arch) && arches.count("s390x")) << raw.out;
  // skopeo resolves the host's entry, and another one when asked
  // (its "Digest" is the index's, what the tag names).
  auto host = reg->Inspect(reg->Ref("multi:v1"), false, creds);
  ASSERT_EQ(host.exit_code, 0) << host.err;
  auto host_json = nlohmann::json::parse(host.out);
  EXPECT_EQ(DigestOf(host), images->index_digest);
  EXPECT_EQ(host_json.value("Architecture", ""), images->host_arch);
  EXPECT_EQ(host_json["Layers"].get<std::vector<std::string>>(), images->app_a.layer_digests);
  auto s390x = reg->Inspect(reg->Ref("multi:v1"), false, creds, {"--override-arch", "s390x"});
  ASSERT_EQ(s390x.exit_code, 0) << s390x.err;
  auto s390x_json = nlohmann::json::parse(s390x.out);
  EXPECT_EQ(s390x_json.value("Architecture", ""), "s390x");
  EXPECT_EQ(s390x_json["Layers"].size(), 1u);
  auto s390x_raw = reg->Inspect(reg->Ref("multi@" + images->foreign_digests[1]), true, creds);
  ASSERT_EQ(s390x_raw.exit_code, 0) << s390x_raw.err;
  EXPECT_EQ(nlohmann::json::parse(s390x_raw.out)["layers"][0]["digest"], s390x_json["Layers"][0]);
  // By digest: the index itself.
  auto by_digest = reg->Inspect(reg->Ref("multi@" + images->index_digest), true, creds);
  EXPECT_EQ(by_digest.exit_code, 0) << by_digest.err;
}

TEST_F(RegistryHarness, CorruptBlobIsRefusedNamingItsDigest) {
  START_OR_SKIP(reg, true, true);
  const TestImages* images = Images();
  ASSERT_NE(images, nullptr);
  ASSERT_EQ(reg->Push(images->app_a.layout, "corrupt:v1").exit_code, 0);
  const std::string layer = images->app_a.layer_digests[0];
  ASSERT_TRUE(reg->CorruptBlob(layer));
  fs::path out = reg->dir() / "copy";
  auto copy =
      testing::RunCommand({"/usr/bin/skopeo", "--insecure-policy", "copy", "--src-authfile",
                           (reg->dir() / "auth.json").string(),
                           "docker://" + reg->Ref("corrupt:v1"), "oci:" + out.string() + ":x"});
  EXPECT_NE(copy.exit_code, 0);
  EXPECT_THAT(copy.err, HasSubstr(layer.substr(7))) << "skopeo's error names the blob";
  EXPECT_THAT(copy.err, HasSubstr("Digest did not match"));
}

TEST_F(RegistryHarness, ProxyCutsThePullAfterNBytesAndHeals) {
  START_OR_SKIP(reg, true, true);
  const TestImages* images = Images();
  ASSERT_NE(images, nullptr);
  ASSERT_EQ(reg->Push(images->big.layout, "big:v1").exit_code, 0);
  std::string error;
  auto proxy = LoopbackProxy::Start(reg->port(), &error);
  ASSERT_NE(proxy, nullptr) << error;
  ASSERT_TRUE(reg->TrustPort(proxy->port()));
  const std::string auth = (reg->dir() / "proxy-auth.json").string();
  std::ofstream(auth) << reg->DockerConfigJson(reg->user(), reg->password(), proxy->host());
  auto pull = [&](const std::string& to) {
    return testing::RunCommand({"/usr/bin/skopeo", "--insecure-policy", "copy", "--src-authfile",
                                auth, "docker://" + proxy->host() + "/big:v1",
                                "oci:" + (reg->dir() / to).string() + ":x"});
  };
  proxy->CutAfter(8 << 20);
  auto cut = pull("cut");
  EXPECT_NE(cut.exit_code, 0) << "the copy went through a proxy that cut it";
  EXPECT_TRUE(proxy->has_cut());
  EXPECT_GE(proxy->bytes_down(), uint64_t{8} << 20);
  EXPECT_LT(proxy->bytes_down(), uint64_t{9} << 20) << "nothing passes once cut";
  proxy->Heal();
  // Slowed to 16 MiB/s: the 27 MiB image takes more than a second.
  proxy->SetRate(16 << 20);
  auto t0 = std::chrono::steady_clock::now();
  auto healed = pull("healed");
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(healed.exit_code, 0) << healed.err;
  EXPECT_GT(took, std::chrono::milliseconds(1200));
  EXPECT_EQ(ReadLayoutImage(reg->dir() / "healed").layer_digests, images->big.layer_digests);
}

TEST_F(RegistryHarness, KilledRegistryRestartsOnItsStorage) {
  START_OR_SKIP(reg, true, true);
  const TestImages* images = Images();
  ASSERT_NE(images, nullptr);
  ASSERT_EQ(reg->Push(images->app_a.layout, "app-a:v1").exit_code, 0);
  const pid_t pid = reg->pid();
  reg->Kill();
  EXPECT_NE(::kill(pid, 0), 0) << "killed and reaped";
  EXPECT_FALSE(PortAcceptsConnections(reg->port()));
  EXPECT_NE(
      reg->Inspect(reg->Ref("app-a:v1"), false, reg->user() + ":" + reg->password()).exit_code, 0);
  std::string error;
  ASSERT_TRUE(reg->Restart(&error)) << error;
  auto ok = reg->Inspect(reg->Ref("app-a:v1"), false, reg->user() + ":" + reg->password());
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(DigestOf(ok), images->app_a.manifest_digest);
}

TEST_F(RegistryHarness, StopRemovesEverythingItMade) {
  START_OR_SKIP(reg, true, true);
  const pid_t pid = reg->pid();
  const fs::path dir = reg->dir();
  const fs::path certs = "/etc/containers/certs.d/" + reg->host();
  const uint16_t port = reg->port();
  ASSERT_TRUE(fs::exists(certs));
  reg->Stop();
  EXPECT_NE(::kill(pid, 0), 0);
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_FALSE(fs::exists(certs));
  EXPECT_FALSE(PortAcceptsConnections(port));
}

}  // namespace
}  // namespace podvisor::e2e
