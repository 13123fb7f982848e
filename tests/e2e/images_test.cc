// Test tier 2 (docs/TESTING.md), issue 7 point 1 end to end against the fake
// runtime: a pod whose image is an OCI image layout runs with the image
// config's Entrypoint, Cmd and Env, the layout unpacked once into the
// state dir's layer store and reused by the next run. (The fake runtime runs
// processes on the host, so the rootfs itself is checked in tier 3.)
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

class Images : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
};

TEST_F(Images, OciLayoutConfigDrivesTheProcessAndTheUnpackIsCached) {
  fs::path layer = dir_ / "layer";
  fs::create_directories(layer / "etc");
  std::ofstream(layer / "etc" / "motd") << "hello\n";
  std::string config = R"({"Entrypoint":["/bin/sh","-c"],"Cmd":["echo \"$FROM_IMAGE\" > )" +
                       (scratch_ / "out").string() +
                       R"("],"Env":["PATH=/bin:/usr/bin","FROM_IMAGE=layout-env"]})";
  auto made = testing::RunCommand(
      {"/bin/bash", RequiredEnv("PODVISOR_SOURCE_ROOT") + "/scripts/make-oci-layout.sh",
       (bundle_ / "images" / "layout").string(), config, layer.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::string digest = made.out.substr(0, made.out.find('\n'));
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: layout}\nspec:\n  restartPolicy: Never\n"
      "  containers:\n  - {name: app, image: layout}\n");
  EXPECT_EQ(Run(), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("out"), "layout-env");
  // S16.1: recorded by manifest digest, the layer stored once by its diff
  // id; without an overlay of its own (--sandbox none) the container's
  // root is the image's layers merged into one tree of the store.
  EXPECT_TRUE(
      fs::exists(state_dir_ / ".images" / "images" / "sha256" / (digest.substr(7) + ".json")));
  auto dirs = [](const fs::path& parent) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(parent, ec)) {
      if (e.is_directory()) out.push_back(e.path());
    }
    return out;
  };
  auto layers = dirs(state_dir_ / ".images" / "layers" / "sha256");
  ASSERT_EQ(layers.size(), 1u);
  auto trees = dirs(state_dir_ / ".images" / "trees" / "sha256");
  ASSERT_EQ(trees.size(), 1u);
  for (const fs::path& root : {layers[0], trees[0]}) {
    std::ifstream motd(root / "etc" / "motd");
    std::string line;
    std::getline(motd, line);
    EXPECT_EQ(line, "hello") << root;
  }
  // A second run reuses both: the layer blob is no longer needed.
  std::ofstream(trees[0] / "marker") << "kept";
  for (const auto& b : fs::directory_iterator(bundle_ / "images" / "layout" / "blobs" / "sha256")) {
    std::ifstream in(b.path(), std::ios::binary);
    if (in.get() == 0x1f && in.get() == 0x8b) fs::remove(b.path());  // the gzip layer, not the JSON
  }
  fs::remove(scratch_ / "out");
  EXPECT_EQ(Run(), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("out"), "layout-env");
  EXPECT_TRUE(fs::exists(trees[0] / "marker"));
}

}  // namespace
}  // namespace podvisor::e2e
