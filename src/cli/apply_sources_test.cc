// Tier 1: what `apply` reads from a manifest directory and the bundles it
// writes (apply_sources.h, docs/SEMANTICS.md S18.1, S18.2), in a temp dir.
#include "cli/apply_sources.h"

#include <stdlib.h>

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "loading/pod_loading.h"

namespace podvisor::cli::apply {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ApplySources : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/podvisor-apply-sources-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    fs::create_directories(dir_ / "manifests" / "images" / "busybox" / "rootfs");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / "manifests" / name) << text;
  }
  fs::path dir_;
};

const char* kPod = R"(apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec:
  containers:
  - name: app
    image: busybox
    command: [sleep, "1"]
    envFrom: [{configMapRef: {name: used}}]
)";

std::string PodNamed(const std::string& name) {
  std::string text = kPod;
  text.replace(text.find("NAME"), 4, name);
  return text;
}

std::vector<std::string> Names(const ManifestSet& set) {
  std::vector<std::string> out;
  for (const auto& p : set.pods) out.push_back(p.name);
  return out;
}

TEST_F(ApplySources, ReadsEveryManifestDocumentAndSkipsEditorFiles) {
  Write("a.yaml", PodNamed("web") +
                      "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: used}\ndata: {k: v}\n"
                      "---\napiVersion: v1\nkind: Service\nmetadata: {name: svc}\n");
  Write("b.json", R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"job"},
      "spec":{"template":{"spec":{"restartPolicy":"Never",
      "containers":[{"name":"app","image":"busybox","command":["true"]}]}}}})");
  for (const char* ignored :
       {".a.yaml.swp", ".hidden.yaml", "a.yaml~", "4913", ".#a.yaml", "notes.txt"}) {
    Write(ignored, PodNamed("ignored"));
  }
  auto set = ReadManifests(dir_ / "manifests");
  ASSERT_TRUE(set) << set.error().message();
  EXPECT_THAT(Names(*set), ElementsAre("web", "job"));
  EXPECT_EQ(set->config_objects.size(), 1u);
  EXPECT_TRUE(set->errors.empty());
  ASSERT_EQ(set->warnings.size(), 1u);
  EXPECT_THAT(set->warnings[0], HasSubstr("kind Service skipped"));
  EXPECT_EQ(set->images, dir_ / "manifests" / "images");
}

TEST_F(ApplySources, OneFileAlone) {
  Write("a.yaml", PodNamed("web"));
  Write("b.yaml", PodNamed("db"));
  auto set = ReadManifests(dir_ / "manifests" / "b.yaml");
  ASSERT_TRUE(set);
  EXPECT_THAT(Names(*set), ElementsAre("db"));
}

TEST_F(ApplySources, APodNamedTwiceIsNobodysAndUnparsableFilesAreErrors) {
  Write("a.yaml", PodNamed("web"));
  Write("b.yaml", PodNamed("web"));
  Write("c.yaml", "kind: Pod\nmetadata: {name: [\n");
  Write("d.yaml", "apiVersion: v1\nkind: Pod\nspec: {}\n");
  auto set = ReadManifests(dir_ / "manifests");
  ASSERT_TRUE(set);
  EXPECT_TRUE(set->pods.empty());
  EXPECT_THAT(set->invalid_pods, ElementsAre("web"));
  ASSERT_EQ(set->errors.size(), 3u);
  EXPECT_THAT(set->errors[0], HasSubstr("pod web is also in"));
  EXPECT_THAT(set->errors[1], HasSubstr("c.yaml"));
  EXPECT_THAT(set->errors[2], HasSubstr("d.yaml: metadata.name: Required value"));
  EXPECT_FALSE(ReadManifests(dir_ / "nothing-here"));
}

TEST_F(ApplySources, TheBundleHasThePodTheConfigItUsesAndTheImages) {
  Write("a.yaml",
        PodNamed("web") +
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: used}\ndata: {k: v}\n"
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {k: v}\n"
            "---\napiVersion: v1\nkind: Secret\nmetadata: {name: unused}\n");
  auto set = ReadManifests(dir_ / "manifests");
  ASSERT_TRUE(set);
  const fs::path bundle = dir_ / "bundle";
  ASSERT_TRUE(WriteBundle(bundle, set->pods[0], *set));
  EXPECT_TRUE(fs::is_regular_file(bundle / "pod.json"));
  std::vector<std::string> config;
  for (const auto& e : fs::directory_iterator(bundle / "config")) {
    config.push_back(e.path().filename().string());
    EXPECT_EQ(fs::status(e.path()).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write);
  }
  EXPECT_THAT(config, ElementsAre("000-configmap-used.json"));
  EXPECT_TRUE(fs::is_symlink(bundle / "images"));
  EXPECT_EQ(fs::read_symlink(bundle / "images"), dir_ / "manifests" / "images");
  // What `validate` would say of it: a valid pod with its ConfigMap.
  loading::LoadedPod loaded = loading::LoadPod(bundle, /*check_images=*/false);
  ASSERT_TRUE(loaded.ok()) << ::testing::PrintToString(loaded.messages);
  EXPECT_EQ(loaded.pod.metadata.name, "web");
  EXPECT_EQ(loaded.pod.config.config_maps.size(), 1u);
  EXPECT_TRUE(loaded.pod.config.config_maps.contains("used"));
}

TEST_F(ApplySources, CopyAndReplaceKeepSymlinks) {
  Write("a.yaml", PodNamed("web"));
  auto set = ReadManifests(dir_ / "manifests");
  ASSERT_TRUE(set);
  ASSERT_TRUE(WriteBundle(dir_ / "one", set->pods[0], *set));
  ASSERT_TRUE(CopyBundle(dir_ / "one", dir_ / "two"));
  EXPECT_TRUE(fs::is_symlink(dir_ / "two" / "images"));
  ASSERT_TRUE(ReplaceDir(dir_ / "one", dir_ / "two"));
  EXPECT_FALSE(fs::exists(dir_ / "one"));
  EXPECT_TRUE(fs::exists(dir_ / "two" / "pod.json"));
  EXPECT_FALSE(fs::exists(dir_ / "two.old"));
}

}  // namespace
}  // namespace podvisor::cli::apply
