// The puller against a real registry through the real skopeo, when the
// environment names one (a docker-registry on loopback, see the report of
// this folder's first commit): PODVISOR_TEST_REGISTRY=127.0.0.1:PORT,
// PODVISOR_TEST_IMAGE=team/app:tag, and CONTAINERS_REGISTRIES_CONF for an
// insecure one. Skipped loudly otherwise. The sink checks each blob's
// digest and size, as the store would, without unpacking.
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include <gtest/gtest.h>

#include "image/digest.h"
#include "registry/puller.h"

namespace podvisor::registry {
namespace {

class DigestSink : public LayerSink {
 public:
  bool HasLayer(const image::Digest& diff_id) const override {
    std::lock_guard lock(mutex_);
    return layers_.count(diff_id.ToString()) > 0;
  }
  Status IngestLayer(int fd, const image::LayerDescriptor& layer, image::LayerBudget&) override {
    auto hasher = image::DigestHasher::Create(layer.blob.digest.algorithm);
    if (!hasher) return hasher.take_error();
    uint64_t size = 0;
    char buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) {
      hasher->Update(buf, static_cast<std::size_t>(n));
      size += static_cast<uint64_t>(n);
    }
    if (Status s = image::CheckBlob(layer.blob.digest, layer.blob.size, hasher->FinishHex(), size);
        !s) {
      return s;
    }
    std::lock_guard lock(mutex_);
    layers_[layer.diff_id->ToString()] = size;
    return Ok();
  }
  Status PutImage(const image::ImageRecord& record) override {
    record_ = record;
    return Ok();
  }
  std::optional<image::ImageRecord> FindByName(std::string_view) const override { return {}; }
  std::optional<image::ImageRecord> FindByManifest(std::string_view) const override { return {}; }
  std::optional<image::ImageRecord> record_;
  std::size_t layer_count() const { return layers_.size(); }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, uint64_t> layers_;
};

TEST(RealRegistry, PullsThroughSkopeo) {
  const char* registry = std::getenv("PODVISOR_TEST_REGISTRY");
  const char* image = std::getenv("PODVISOR_TEST_IMAGE");
  if (registry == nullptr || image == nullptr) {
    GTEST_SKIP() << "needs PODVISOR_TEST_REGISTRY and PODVISOR_TEST_IMAGE (a registry on loopback)";
  }
  PullRequest request{.image = std::string(registry) + "/" + image,
                      .policy = PullPolicy::kAlways,
                      .auth_files = DefaultAuthFiles(),
                      .registries_conf = DefaultRegistriesConfLocation()};
  DigestSink sink;
  std::vector<std::string> lines;
  PullOutcome out = PullImage(
      request, sink, [&](const ProgressEvent& e) { lines.push_back(FormatProgressLine(e)); });
  for (const std::string& line : lines) std::fputs(line.c_str(), stdout);
  ASSERT_TRUE(out.ok) << out.event.message;
  ASSERT_TRUE(sink.record_);
  EXPECT_EQ(sink.layer_count(), sink.record_->diff_ids.size());
}

}  // namespace
}  // namespace podvisor::registry
