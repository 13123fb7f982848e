// The puller against a fake registry source and a fake store: policies,
// credential attempts, index resolution, missing layers only, failures
// that publish nothing.
#include "registry/puller.h"

#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "image/digest.h"

namespace podvisor::registry {
namespace {

using Json = nlohmann::json;

std::string Sha(const std::string& data) {
  return "sha256:" + image::HashHex("sha256", data);
}

// Uncompressed layers: the blob digest is the diff id.
struct FakeImage {
  std::vector<std::string> layers;
  std::string config{}, manifest{}, index{};
  std::string ManifestDigest() const { return Sha(manifest); }
};

FakeImage MakeImage(std::vector<std::string> layers, std::string_view arch = "amd64") {
  FakeImage img{.layers = std::move(layers)};
  Json diff_ids = Json::array();
  Json descs = Json::array();
  for (const auto& l : img.layers) {
    diff_ids.push_back(Sha(l));
    descs.push_back({{"mediaType", "application/vnd.oci.image.layer.v1.tar"},
                     {"digest", Sha(l)},
                     {"size", l.size()}});
  }
  img.config = Json{{"architecture", arch},
                    {"os", "linux"},
                    {"rootfs", {{"type", "layers"}, {"diff_ids", diff_ids}}}}
                   .dump();
  img.manifest = Json{
      {"schemaVersion", 2},
      {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
      {"config",
       {{"mediaType", "application/vnd.oci.image.config.v1+json"},
        {"digest", Sha(img.config)},
        {"size", img.config.size()}}},
      {"layers",
       descs}}.dump();
  return img;
}

struct FakeRegistry {
  std::map<std::string, std::string> top;        // reference -> top manifest
  std::map<std::string, std::string> manifests;  // digest -> manifest
  std::map<std::string, std::string> blobs;
  std::string accepted_user;        // "" = anonymous works
  std::set<std::string> truncated;  // blobs that die mid-way
  std::mutex mutex;
  std::vector<std::string> attempts;  // the user of each source made
  int blob_opens = 0;
};

class FakeSource : public RegistrySource {
 public:
  FakeSource(FakeRegistry& reg, std::string user) : reg_(reg), user_(std::move(user)) {}
  Result<std::string> TopManifest(const std::string& reference) override {
    if (user_ != reg_.accepted_user) return Error("unauthorized: authentication required");
    auto it = reg_.top.find(reference);
    if (it == reg_.top.end()) return Error("manifest unknown: manifest unknown");
    return it->second;
  }
  Result<ProxyManifest> OpenManifest(const std::string& reference) override {
    std::string digest = reference.substr(reference.find('@') + 1);
    auto it = reg_.manifests.find(digest);
    if (it == reg_.manifests.end()) return Error("manifest unknown");
    return ProxyManifest{.digest = digest, .manifest = it->second};
  }
  Result<BlobStream> OpenBlob(const image::Descriptor& blob) override {
    std::lock_guard lock(reg_.mutex);
    ++reg_.blob_opens;
    auto it = reg_.blobs.find(blob.digest.ToString());
    if (it == reg_.blobs.end()) return Error("blob unknown");
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return Error::FromErrno("pipe");
    std::string data = it->second;
    bool dies = reg_.truncated.count(it->first) > 0;
    if (dies) data.resize(data.size() / 2);
    uint32_t id = next_id_++;
    writers_[id] = {Fd(p[1]), {}, dies};
    Writer& w = writers_[id];
    w.thread = std::thread([fd = p[1], data] { (void)!::write(fd, data.data(), data.size()); });
    return BlobStream{.fd = Fd(p[0]), .pipe_id = id};
  }
  Status FinishBlob(uint32_t pipe_id) override {
    Writer* w;
    {
      std::lock_guard lock(reg_.mutex);
      w = &writers_[pipe_id];
    }
    w->thread.join();
    w->fd.Reset();
    if (w->dies) return Error("reading blob: unexpected EOF");
    return Ok();
  }

 private:
  struct Writer {
    Fd fd;
    std::thread thread;
    bool dies = false;
  };
  FakeRegistry& reg_;
  std::string user_;
  std::map<uint32_t, Writer> writers_;
  uint32_t next_id_ = 1;
};

class FakeSink : public LayerSink {
 public:
  bool HasLayer(const image::Digest& diff_id) const override {
    std::lock_guard lock(mutex_);
    return layers.count(diff_id.ToString()) > 0;
  }
  Status IngestLayer(int fd, const image::LayerDescriptor& layer,
                     image::LayerBudget& budget) override {
    std::string data;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) data.append(buf, n);
    if (Sha(data) != layer.diff_id->ToString()) return Error("diff id mismatch");
    budget.bytes += data.size();
    std::lock_guard lock(mutex_);
    layers[layer.diff_id->ToString()] = data;
    ++ingests;
    return Ok();
  }
  Status PutImage(const image::ImageRecord& record) override {
    images[record.manifest_digest] = record;
    for (const auto& n : record.names) names[n] = record.manifest_digest;
    return Ok();
  }
  std::optional<image::ImageRecord> FindByName(std::string_view name) const override {
    auto it = names.find(std::string(name));
    if (it == names.end()) return std::nullopt;
    return images.at(it->second);
  }
  std::optional<image::ImageRecord> FindByManifest(std::string_view digest) const override {
    auto it = images.find(std::string(digest));
    if (it == images.end()) return std::nullopt;
    return it->second;
  }
  mutable std::mutex mutex_;
  std::map<std::string, std::string> layers;
  std::map<std::string, image::ImageRecord> images;
  std::map<std::string, std::string> names;
  int ingests = 0;
};

class Puller : public ::testing::Test {
 protected:
  void Publish(const FakeImage& img, const std::string& reference) {
    reg_.top[reference] = img.index.empty() ? img.manifest : img.index;
    reg_.manifests[img.ManifestDigest()] = img.manifest;
    reg_.blobs[Sha(img.config)] = img.config;
    for (const auto& l : img.layers) reg_.blobs[Sha(l)] = l;
  }
  PullOutcome Pull(PullRequest request) {
    request.registries_conf = {.main_file = "/nonexistent", .drop_in_dir = "/nonexistent"};
    request.platform = {.os = "linux", .architecture = "amd64", .variant = ""};
    SourceFactory factory =
        [this](const RegistryCredential* c) -> Result<std::unique_ptr<RegistrySource>> {
      std::string user = c ? c->username : "";
      reg_.attempts.push_back(c ? user : "<anonymous>");
      return std::unique_ptr<RegistrySource>(new FakeSource(reg_, user));
    };
    events_.clear();
    return PullImage(
        request, sink_, [this](const ProgressEvent& e) { events_.push_back(e); }, factory);
  }
  FakeRegistry reg_;
  FakeSink sink_;
  std::vector<ProgressEvent> events_;
};

TEST_F(Puller, PullsEveryLayerAndRecordsTheImage) {
  FakeImage img = MakeImage({std::string(100000, 'a'), "bb", "ccc", "dddd", "eeeee"});
  Publish(img, "r.example.com/team/app:1");
  PullOutcome out = Pull({.image = "r.example.com/team/app:1"});
  ASSERT_TRUE(out.ok) << out.event.message;
  EXPECT_EQ(sink_.ingests, 5);
  ASSERT_TRUE(out.record);
  EXPECT_EQ(out.record->manifest_digest, img.ManifestDigest());
  EXPECT_EQ(out.record->names, (std::vector<std::string>{"r.example.com/team/app:1"}));
  EXPECT_EQ(out.record->repo_digests,
            (std::vector<std::string>{"r.example.com/team/app@" + img.ManifestDigest()}));
  EXPECT_EQ(out.record->diff_ids.size(), 5u);
  EXPECT_EQ(out.record->config_json, img.config);
  EXPECT_EQ(out.event.kind, ProgressKind::kPulled);
  EXPECT_EQ(out.event.image_id, Sha(img.config));
  EXPECT_EQ(out.event.size, 100000u + 2 + 3 + 4 + 5);
  EXPECT_EQ(events_.front().kind, ProgressKind::kResolving);
  EXPECT_EQ(events_[1].kind, ProgressKind::kPulling);
  int unpacked = 0;
  for (const auto& e : events_) unpacked += e.kind == ProgressKind::kLayer && e.unpacked;
  EXPECT_EQ(unpacked, 5);
}

TEST_F(Puller, OnlyMissingLayersAreFetched) {
  FakeImage first = MakeImage({"base", "one"});
  FakeImage second = MakeImage({"base", "two"});
  Publish(first, "r.example.com/app:1");
  Publish(second, "r.example.com/app:2");
  ASSERT_TRUE(Pull({.image = "r.example.com/app:1"}).ok);
  int before = reg_.blob_opens;
  ASSERT_TRUE(Pull({.image = "r.example.com/app:2"}).ok);
  EXPECT_EQ(reg_.blob_opens - before, 2);  // the config and "two"
  EXPECT_EQ(sink_.ingests, 3);
}

TEST_F(Puller, IndexResolvesToThisPlatformAndTheRepoDigestIsTheIndex) {
  FakeImage amd = MakeImage({"amd-layer"});
  FakeImage arm = MakeImage({"arm-layer"}, "arm64");
  Json index = {{"schemaVersion", 2},
                {"mediaType", "application/vnd.oci.image.index.v1+json"},
                {"manifests",
                 {{{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                   {"digest", arm.ManifestDigest()},
                   {"size", arm.manifest.size()},
                   {"platform", {{"os", "linux"}, {"architecture", "arm64"}}}},
                  {{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                   {"digest", amd.ManifestDigest()},
                   {"size", amd.manifest.size()},
                   {"platform", {{"os", "linux"}, {"architecture", "amd64"}}}}}}};
  amd.index = index.dump();
  Publish(amd, "docker.io/library/nginx:1.25");
  PullOutcome out = Pull({.image = "nginx:1.25"});
  ASSERT_TRUE(out.ok) << out.event.message;
  EXPECT_EQ(out.record->manifest_digest, amd.ManifestDigest());
  EXPECT_EQ(out.event.repo_digest, "docker.io/library/nginx@" + Sha(amd.index));
  EXPECT_EQ(out.record->names, (std::vector<std::string>{"docker.io/library/nginx:1.25"}));
  EXPECT_EQ(sink_.layers.count(Sha("arm-layer")), 0u);
}

TEST_F(Puller, PoliciesNeverIfNotPresentAlways) {
  FakeImage img = MakeImage({"x"});
  Publish(img, "r.example.com/app:1");
  PullOutcome never = Pull({.image = "r.example.com/app:1", .policy = PullPolicy::kNever});
  EXPECT_FALSE(never.ok);
  EXPECT_EQ(never.event.reason, kReasonErrImageNeverPull);
  EXPECT_EQ(never.event.message,
            "Container image \"r.example.com/app:1\" is not present with pull policy of Never");
  EXPECT_TRUE(reg_.attempts.empty());

  ASSERT_TRUE(Pull({.image = "r.example.com/app:1"}).ok);
  std::size_t attempts = reg_.attempts.size();
  PullOutcome present = Pull({.image = "r.example.com/app:1", .policy = PullPolicy::kIfNotPresent});
  EXPECT_TRUE(present.ok);
  EXPECT_TRUE(present.event.already_present);
  EXPECT_EQ(reg_.attempts.size(), attempts);  // no network
  EXPECT_TRUE(Pull({.image = "r.example.com/app:1", .policy = PullPolicy::kNever}).ok);

  // Always asks the registry, and stops at the manifest it already has.
  int opens = reg_.blob_opens;
  PullOutcome always = Pull({.image = "r.example.com/app:1", .policy = PullPolicy::kAlways});
  EXPECT_TRUE(always.ok);
  EXPECT_FALSE(always.event.already_present);
  EXPECT_EQ(reg_.attempts.size(), attempts + 1);
  EXPECT_EQ(reg_.blob_opens, opens);
}

TEST_F(Puller, CredentialsAreTriedInTurnAnonymousWhenNoneMatch) {
  FakeImage img = MakeImage({"x"});
  Publish(img, "r.example.com/team/app:1");
  reg_.accepted_user = "right";
  PullRequest request{.image = "r.example.com/team/app:1"};
  request.pull_secret_credentials = {
      {.key = "r.example.com", .source = "s1", .username = "wrong", .password = "p1"},
      {.key = "r.example.com/team", .source = "s2", .username = "wrong2", .password = "p2"},
      {.key = "other.example.com", .source = "s3", .username = "right", .password = "p3"},
      {.key = "*.example.com", .source = "s4", .username = "right", .password = "p4"}};
  PullOutcome out = Pull(request);
  ASSERT_TRUE(out.ok) << out.event.message;
  EXPECT_EQ(reg_.attempts, (std::vector<std::string>{"wrong2", "wrong", "right"}));

  reg_.attempts.clear();
  reg_.accepted_user = "";
  ASSERT_TRUE(Pull({.image = "r.example.com/team/app:1", .policy = PullPolicy::kAlways}).ok);
  EXPECT_EQ(reg_.attempts, (std::vector<std::string>{"<anonymous>"}));
}

TEST_F(Puller, FailuresNameTheImageAndPublishNothing) {
  PullOutcome missing = Pull({.image = "r.example.com/app:nope"});
  EXPECT_FALSE(missing.ok);
  EXPECT_EQ(missing.event.reason, kReasonErrImagePull);
  EXPECT_EQ(missing.event.message,
            "failed to pull and unpack image \"r.example.com/app:nope\": manifest unknown: "
            "manifest unknown");

  reg_.accepted_user = "someone";
  PullOutcome unauthorized = Pull({.image = "r.example.com/app:nope"});
  EXPECT_NE(unauthorized.event.message.find("unauthorized"), std::string::npos);
  reg_.accepted_user = "";

  FakeImage img = MakeImage({std::string(300000, 'q'), "small"});
  Publish(img, "r.example.com/app:1");
  reg_.truncated.insert(Sha(img.layers[0]));
  PullOutcome died = Pull({.image = "r.example.com/app:1"});
  EXPECT_FALSE(died.ok);
  EXPECT_NE(died.event.message.find("unexpected EOF"), std::string::npos) << died.event.message;
  EXPECT_TRUE(sink_.images.empty());
  EXPECT_EQ(sink_.layers.count(Sha(img.layers[0])), 0u);

  const std::string digest = Sha("something else");
  PullOutcome mismatch = Pull({.image = "r.example.com/app@" + digest});
  EXPECT_FALSE(mismatch.ok);

  PullOutcome invalid = Pull({.image = "Bad/Name"});
  EXPECT_EQ(invalid.event.reason, kReasonInvalidImageName);
  EXPECT_EQ(events_.back().kind, ProgressKind::kFailed);
}

TEST_F(Puller, ADigestReferenceIsVerified) {
  FakeImage img = MakeImage({"x"});
  const std::string ref = "r.example.com/app@" + img.ManifestDigest();
  Publish(img, ref);
  PullOutcome out = Pull({.image = ref});
  ASSERT_TRUE(out.ok) << out.event.message;
  reg_.top[ref] = img.manifest + " ";
  sink_.images.clear();
  sink_.names.clear();
  PullOutcome bad = Pull({.image = ref});
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.event.message.find("digest mismatch"), std::string::npos);
}

TEST(PickPlatform, ExactVariantThenLooseThenTheListOfWhatThereIs) {
  std::string index =
      Json{{"manifests",
            {{{"digest", Sha("v7")},
              {"size", 1},
              {"platform", {{"os", "linux"}, {"architecture", "arm"}, {"variant", "v7"}}}},
             {{"digest", Sha("v6")},
              {"size", 1},
              {"platform", {{"os", "linux"}, {"architecture", "arm"}, {"variant", "v6"}}}},
             {{"digest", Sha("x86")},
              {"size", 1},
              {"platform", {{"os", "linux"}, {"architecture", "amd64"}}}}}}}
          .dump();
  EXPECT_EQ(*PickPlatformManifest(index, {.os = "linux", .architecture = "arm", .variant = "v6"}),
            Sha("v6"));
  EXPECT_EQ(*PickPlatformManifest(index, {.os = "linux", .architecture = "amd64", .variant = "v2"}),
            Sha("x86"));
  auto none = PickPlatformManifest(index, {.os = "linux", .architecture = "s390x", .variant = ""});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message().find("linux/arm/v7"), std::string::npos);
}

}  // namespace
}  // namespace podvisor::registry
