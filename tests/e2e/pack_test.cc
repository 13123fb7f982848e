// Test tier 2 (docs/TESTING.md), issue 18 point 1: `podvisor pack` writes
// a bundle as an OCI image layout, the same bundle packs to the same
// digest, and `run` and `validate` take the layout as BUNDLE: unpacked
// into STATE/.bundles, run from there, gone when the pod ends. An ordinary
// image layout is refused as a bundle (exit 2). Also `--cgroup-parent=self`
// on a host without cgroup v2, and `--runtime crun` on hybrid cgroups:
// refused before anything starts, and said by `validate --runtime`.
#include <linux/magic.h>
#include <sys/statfs.h>

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;

class Pack : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }

  void WriteSimplePod() {
    WritePod(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: packed}\nspec:\n  restartPolicy: Never\n"
        "  containers:\n  - name: app\n    image: img\n    command: " +
        ShCmd("echo \"$GREETING\" > {{DIR}}/out") +
        "\n    env: [{name: GREETING, valueFrom: {configMapKeyRef: {name: cfg, key: "
        "greeting}}}]\n");
    fs::create_directories(bundle_ / "config");
    std::ofstream(bundle_ / "config" / "cfg.yaml")
        << "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {greeting: "
           "from-config}\n";
  }
  testing::CommandResult Podvisor(std::vector<std::string> args) {
    args.insert(args.begin(), RequiredEnv("PODVISOR"));
    return testing::RunCommand(args);
  }
  // The manifest digest `pack` printed.
  static std::string ManifestDigest(const std::string& out) {
    auto at = out.find("manifest sha256:");
    return at == std::string::npos ? "" : out.substr(at + 9, 71);
  }
};

TEST_F(Pack, PackedBundleRunsFromTheLayoutAndLeavesNothing) {
  WriteSimplePod();
  auto first = Podvisor({"pack", bundle_.string(), (dir_ / "image").string()});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto second = Podvisor({"pack", bundle_.string(), (dir_ / "image2").string()});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  ASSERT_THAT(ManifestDigest(first.out), ::testing::StartsWith("sha256:"));
  EXPECT_EQ(ManifestDigest(first.out), ManifestDigest(second.out));
  // A second pack onto an existing OUT is refused.
  auto again = Podvisor({"pack", bundle_.string(), (dir_ / "image").string()});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_THAT(again.err, HasSubstr("already exists"));

  // The layout takes the bundle's place: `run BUNDLE` gets the image.
  fs::rename(bundle_, dir_ / "source");
  fs::rename(dir_ / "image", bundle_);
  auto validated = Podvisor({"validate", bundle_.string()});
  EXPECT_EQ(validated.exit_code, 0) << validated.err;
  EXPECT_THAT(validated.out, HasSubstr("pod/packed is valid"));
  EXPECT_EQ(Run(), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("out"), "from-config");
  EXPECT_THAT(RunStderr(), HasSubstr("unpacked into " + (state_dir_ / ".bundles").string()));
  EXPECT_FALSE(fs::exists(state_dir_ / ".bundles")) << "the unpacked bundle outlived the pod";
}

TEST_F(Pack, PruneRemovesTheBundleASigkilledSupervisorLeftUnpacked) {
  // What a SIGKILLed `run` of a bundle image leaves: its unpacked bundle,
  // named by the manifest digest and its (now dead) pid, unlocked. pid_max
  // is at most 2^22, so this pid is nobody's.
  fs::create_directories(state_dir_ / ".bundles" / "0123456789ab-99999999" / "images");
  std::ofstream(state_dir_ / ".bundles" / "0123456789ab-99999999" / "pod.yaml") << "kind: Pod\n";
  auto pruned = Podvisor({"prune", "--state-dir", state_dir_.string()});
  EXPECT_EQ(pruned.exit_code, 0) << pruned.err;
  EXPECT_THAT(pruned.out, HasSubstr("1 unpacked bundle image removed"));
  EXPECT_FALSE(fs::exists(state_dir_ / ".bundles"));
  // Nothing to sweep: nothing said.
  auto again = Podvisor({"prune", "--state-dir", state_dir_.string()});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "");
}

TEST_F(Pack, AnOrdinaryImageIsNotABundle) {
  fs::path layer = dir_ / "layer";
  fs::create_directories(layer);
  std::ofstream(layer / "file") << "x";
  fs::remove_all(bundle_);
  auto made = testing::RunCommand(
      {"/bin/bash", RequiredEnv("PODVISOR_SOURCE_ROOT") + "/scripts/make-oci-layout.sh",
       bundle_.string(), R"({"Cmd":["/bin/true"]})", layer.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto validated = Podvisor({"validate", bundle_.string()});
  EXPECT_EQ(validated.exit_code, 2);
  EXPECT_THAT(validated.err, HasSubstr("not a podvisor bundle"));
  EXPECT_EQ(Run(), 2);
  EXPECT_THAT(RunStderr(), HasSubstr("no label io.podvisor.bundle=1"));
  EXPECT_FALSE(fs::exists(state_dir_ / ".bundles"));
}

TEST_F(Pack, PackRefusesAnImageOutsideTheBundle) {
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: abs}\nspec:\n  containers:\n"
      "  - {name: app, image: \"" +
      (bundle_ / "images" / "img").string() + "\", command: [\"/bin/true\"]}\n");
  auto packed = Podvisor({"pack", bundle_.string(), (dir_ / "image").string()});
  EXPECT_EQ(packed.exit_code, 2);
  EXPECT_THAT(packed.err, HasSubstr("spec.containers[0].image"));
  EXPECT_FALSE(fs::exists(dir_ / "image"));
}

// The README's skopeo form: `skopeo copy ... oci:BUNDLE/images/tools:1.0`
// writes the layout images/tools/ with the tag 1.0 in index.json, and
// `image: tools:1.0` names it. run took it, pack refused it (it looked for
// images/tools:1.0/rootfs); now the bundle packs, and the packed bundle
// validates and runs.
TEST_F(Pack, SkopeoTaggedLayoutPacksAndRuns) {
  fs::path layer = dir_ / "layer";
  fs::create_directories(layer);
  std::ofstream(layer / "file") << "x";
  fs::path layout = bundle_ / "images" / "tools";
  auto made = testing::RunCommand(
      {"/bin/bash", RequiredEnv("PODVISOR_SOURCE_ROOT") + "/scripts/make-oci-layout.sh",
       layout.string(), R"({"Cmd":["/bin/true"]})", layer.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  // skopeo's tag in index.json, where the script writes "latest".
  nlohmann::json index = nlohmann::json::parse(std::ifstream(layout / "index.json"));
  index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"] = "1.0";
  std::ofstream(layout / "index.json") << index.dump();
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: tagged}\nspec:\n  restartPolicy: Never\n"
      "  containers:\n  - name: app\n    image: tools:1.0\n    command: " +
      ShCmd("echo packed > {{DIR}}/out") + "\n");
  ASSERT_EQ(Podvisor({"validate", bundle_.string()}).exit_code, 0);

  auto packed = Podvisor({"pack", bundle_.string(), (dir_ / "image").string()});
  ASSERT_EQ(packed.exit_code, 0) << packed.err;
  EXPECT_THAT(packed.out, HasSubstr("pod/tagged packed into"));

  fs::rename(bundle_, dir_ / "source");
  fs::rename(dir_ / "image", bundle_);
  auto validated = Podvisor({"validate", bundle_.string()});
  EXPECT_EQ(validated.exit_code, 0) << validated.err;
  EXPECT_THAT(validated.out, HasSubstr("pod/tagged is valid"));
  EXPECT_EQ(Run(), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("out"), "packed");
}

// A bundle image is registry content (S14.5): a layer holding pod.yaml and
// a symlink out of the bundle, made with the image script as an attacker
// would push it. `validate` and `run` refuse it naming the link, nothing
// of the host is read, nothing is left in STATE/.bundles.
class PackedAttack : public Pack {
 protected:
  // Replaces BUNDLE by a bundle image of `layer` (a directory).
  void MakeBundleImage(const fs::path& layer) {
    std::ofstream(layer / "pod.yaml") << Expand(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: evil}\nspec:\n  restartPolicy: Never\n"
        "  containers:\n  - name: app\n    image: img\n    command: " +
        ShCmd("echo \"$STOLEN\" > {{DIR}}/out") +
        "\n    env: [{name: STOLEN, valueFrom: {configMapKeyRef: {name: host, key: secret, "
        "optional: true}}}]\n");
    fs::remove_all(bundle_);
    auto made = testing::RunCommand(
        {"/bin/bash", RequiredEnv("PODVISOR_SOURCE_ROOT") + "/scripts/make-oci-layout.sh",
         bundle_.string(), R"({"Labels":{"io.podvisor.bundle":"1"}})", layer.string()});
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
  void ExpectRefused(const std::string& message) {
    auto validated = Podvisor({"validate", bundle_.string()});
    EXPECT_EQ(validated.exit_code, 2) << validated.err;
    EXPECT_THAT(validated.err, HasSubstr(message));
    EXPECT_EQ(Run(), 2) << RunStderr();
    EXPECT_THAT(RunStderr(), HasSubstr(message));
    EXPECT_FALSE(fs::exists(scratch_ / "out")) << "the pod ran";
    EXPECT_FALSE(fs::exists(state_dir_ / ".bundles")) << "the unpacked bundle was left";
  }
};

TEST_F(PackedAttack, S14_5_RootfsSymlinkToTheHostRootIsRefused) {
  fs::path layer = dir_ / "layer";
  fs::create_directories(layer / "images" / "img");
  fs::create_directory_symlink("/", layer / "images" / "img" / "rootfs");
  MakeBundleImage(layer);
  ExpectRefused("images/img/rootfs: a symlink leaving the bundle");
}

TEST_F(PackedAttack, S14_5_ImageSymlinkToAHostDirectoryIsRefused) {
  fs::path host_image = dir_ / "host-image";
  fs::create_directories(host_image / "rootfs");
  fs::path layer = dir_ / "layer";
  fs::create_directories(layer / "images");
  fs::create_directory_symlink(host_image, layer / "images" / "img");
  MakeBundleImage(layer);
  ExpectRefused("images/img: a symlink leaving the bundle");
}

TEST_F(PackedAttack, S14_5_ConfigSymlinkToAHostFileIsRefused) {
  fs::path host_file = dir_ / "host-secret.yaml";
  std::ofstream(host_file)
      << "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: host}\ndata: {secret: hunter2}\n";
  fs::path layer = dir_ / "layer";
  fs::create_directories(layer / "config");
  fs::create_directories(layer / "images" / "img" / "rootfs");
  fs::create_symlink(host_file, layer / "config" / "x.yaml");
  MakeBundleImage(layer);
  ExpectRefused("config/x.yaml: a symlink leaving the bundle");
}

TEST_F(Pack, CgroupParentSelfNeedsCgroupV2) {
  std::error_code ec;
  if (fs::exists("/sys/fs/cgroup/cgroup.controllers", ec)) {
    GTEST_SKIP() << "this host has cgroup v2: tier 4 runs --cgroup-parent=self for real";
  }
  WriteSimplePod();
  EXPECT_EQ(Run({"--cgroup-parent=self"}), 3);
  EXPECT_THAT(RunStderr(), HasSubstr("--cgroup-parent=self needs cgroup v2"));
  EXPECT_FALSE(fs::exists(scratch_ / "out")) << "the pod ran";
}

bool HybridCgroups() {
  struct statfs root {
  }, unified{};
  return ::statfs("/sys/fs/cgroup", &root) == 0 && root.f_type == TMPFS_MAGIC &&
         ::statfs("/sys/fs/cgroup/unified", &unified) == 0 && unified.f_type == CGROUP2_SUPER_MAGIC;
}

// crun refuses a v1/v2 hybrid hierarchy: `run --runtime crun` there used
// to start the pod and crash-loop. It is refused up front (exit 3, the
// host cannot run the pod), by name or by path, leaving nothing in the
// state directory; `validate --runtime crun` says the same.
TEST_F(Pack, ExplicitCrunIsRefusedOnHybridCgroups) {
  if (!HybridCgroups()) GTEST_SKIP() << "this host's cgroups are not hybrid: crun can run here";
  std::string crun = FindInPath("crun");
  if (crun.empty()) GTEST_SKIP() << "crun not installed (scripts/install-deps.sh installs it)";
  WriteSimplePod();
  const std::string refusal =
      "crun cannot run on this host's hybrid cgroups (cgroup v1/v2 hybrid); use runc";
  for (const std::string& choice : {std::string("crun"), crun}) {
    SCOPED_TRACE(choice);
    auto ran = Podvisor({"run", "--state-dir", state_dir_.string(), "--log-dir", log_dir_.string(),
                         "--sandbox", "none", "--runtime", choice, bundle_.string()});
    EXPECT_EQ(ran.exit_code, 3) << ran.err;
    EXPECT_THAT(ran.err, HasSubstr("--runtime " + choice + ": " + refusal));
    EXPECT_FALSE(fs::exists(scratch_ / "out")) << "the pod ran";
    std::error_code ec;
    EXPECT_TRUE(!fs::exists(state_dir_, ec) || fs::is_empty(state_dir_, ec))
        << "run left something under " << state_dir_;

    auto validated = Podvisor({"validate", "--runtime", choice, bundle_.string()});
    EXPECT_EQ(validated.exit_code, 3) << validated.err;
    EXPECT_THAT(validated.err, HasSubstr("--runtime " + choice + ": " + refusal));
  }
  // runc can: validate passes with it.
  auto with_runc = Podvisor({"validate", "--runtime", "runc", bundle_.string()});
  EXPECT_EQ(with_runc.exit_code, 0) << with_runc.err;
  EXPECT_THAT(with_runc.out, HasSubstr("pod/packed is valid"));
}

}  // namespace
}  // namespace podvisor::e2e
