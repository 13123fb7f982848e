// Test tier 3 (docs/TESTING.md), issue 18 point 1 with real tools: a
// packed busybox bundle runs with runc from its layout; `skopeo copy
// oci:A oci:B` keeps its digest and label and B runs too; containerd (its
// own root, state and socket under the test's directory) imports the
// layout with `ctr image import`, and the rootfs `ctr image mount` gives
// is a bundle `podvisor validate` accepts: the contract the containerd
// shim relies on. Needs root; each tool's test skips without the tool.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;

class RuncPack : public RuncE2eTest {
 protected:
  // A pod writing a line into the shared directory, packed into `out`.
  void PackPod(const fs::path& out) {
    WritePod(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: shipped}\nspec:\n  restartPolicy: Never\n"
        "  volumes: [{name: shared, hostPath: {path: \"{{HOSTDIR}}\", type: DirectoryOrCreate}}]\n"
        "  containers:\n  - {name: app, image: img, command: [/bin/sh, -c, \"echo shipped > "
        "/shared/out\"], volumeMounts: [{name: shared, mountPath: /shared}]}\n");
    auto packed = Podvisor({"pack", bundle_.string(), out.string()});
    ASSERT_EQ(packed.exit_code, 0) << packed.err;
  }
  testing::CommandResult Podvisor(std::vector<std::string> args) {
    args.insert(args.begin(), RequiredEnv("PODVISOR"));
    return testing::RunCommand(args);
  }
  static std::string IndexDigest(const fs::path& layout) {
    std::ifstream in(layout / "index.json");
    auto index = nlohmann::json::parse(in);
    return index["manifests"][0]["digest"];
  }
  // The layout takes the bundle's place, as `run BUNDLE` then gets it.
  void UseAsBundle(const fs::path& layout) {
    fs::rename(bundle_, dir_ / "source");
    fs::rename(layout, bundle_);
  }
};

TEST_F(RuncPack, PackedBundleRunsWithRunc) {
  PackPod(dir_ / "image");
  UseAsBundle(dir_ / "image");
  EXPECT_EQ(Run(), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("out"), "shipped");
  EXPECT_FALSE(fs::exists(state_dir_ / ".bundles"));
}

TEST_F(RuncPack, SkopeoCopyKeepsDigestAndLabel) {
  std::string skopeo = FindInPath("skopeo");
  if (skopeo.empty()) GTEST_SKIP() << "skopeo not installed (apt-get install skopeo)";
  PackPod(dir_ / "image");
  auto copied = testing::RunCommand(
      {skopeo, "copy", "oci:" + (dir_ / "image").string(), "oci:" + (dir_ / "copy").string()});
  ASSERT_EQ(copied.exit_code, 0) << copied.err;
  EXPECT_EQ(IndexDigest(dir_ / "copy"), IndexDigest(dir_ / "image"));
  auto inspected = testing::RunCommand({skopeo, "inspect", "oci:" + (dir_ / "copy").string()});
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  EXPECT_THAT(inspected.out, HasSubstr("\"io.podvisor.bundle\": \"1\""));
  UseAsBundle(dir_ / "copy");
  EXPECT_EQ(Run(), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("out"), "shipped");
}

// containerd for one test: its own root, state, socket and opt directory
// under `dir`, stopped (SIGTERM, then waited for) when the object goes.
class Containerd {
 public:
  explicit Containerd(const fs::path& dir) : dir_(dir) {
    fs::create_directories(dir_);
    std::ofstream(dir_ / "config.toml")
        << "version = 2\nroot = \"" << (dir_ / "root").string() << "\"\nstate = \""
        << (dir_ / "state").string() << "\"\n"
        << "disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n"
        << "[grpc]\n  address = \"" << socket().string() << "\"\n"
        << "[ttrpc]\n  address = \"" << socket().string() << ".ttrpc\"\n"
        << "[plugins.\"io.containerd.internal.v1.opt\"]\n  path = \"" << (dir_ / "opt").string()
        << "\"\n";
    // Nothing is allocated between fork and exec.
    const std::string log = (dir_ / "containerd.log").string();
    const std::string config = (dir_ / "config.toml").string();
    const std::string binary = FindInPath("containerd");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setsid();
      if (std::freopen(log.c_str(), "w", stderr) == nullptr) ::_exit(126);
      ::execl(binary.c_str(), "containerd", "--config", config.c_str(), nullptr);
      ::_exit(127);
    }
  }
  ~Containerd() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  Containerd(const Containerd&) = delete;
  Containerd& operator=(const Containerd&) = delete;

  fs::path socket() const { return dir_ / "containerd.sock"; }
  testing::CommandResult Ctr(std::vector<std::string> args) const {
    args.insert(args.begin(),
                {FindInPath("ctr"), "--address", socket().string(), "-n", "podvisor-test"});
    return testing::RunCommand(args);
  }
  // Polls `ctr version` until the daemon answers (it starts in about a
  // second on an idle machine).
  bool WaitReady() const {
    for (int i = 0; i < 200; ++i) {
      if (Ctr({"version"}).exit_code == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

 private:
  fs::path dir_;
  pid_t pid_ = -1;
};

TEST_F(RuncPack, ContainerdImportsItAndItsMountedRootfsIsABundle) {
  if (FindInPath("containerd").empty() || FindInPath("ctr").empty()) {
    GTEST_SKIP() << "containerd not installed (apt-get install containerd)";
  }
  PackPod(dir_ / "image");
  auto tarred = testing::RunCommand({FindInPath("tar"), "-C", (dir_ / "image").string(), "-cf",
                                     (dir_ / "image.tar").string(), "."});
  ASSERT_EQ(tarred.exit_code, 0) << tarred.err;
  Containerd containerd(dir_ / "ctrd");
  ASSERT_TRUE(containerd.WaitReady()) << "containerd did not answer";
  auto imported = containerd.Ctr({"image", "import", "--base-name", "example.test/pods/shipped",
                                  (dir_ / "image.tar").string()});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  std::string ref = "example.test/pods/shipped:latest";
  auto listed = containerd.Ctr({"image", "ls", "-q"});
  EXPECT_THAT(listed.out, HasSubstr(ref));
  fs::path mnt = dir_ / "mnt";
  fs::create_directories(mnt);
  auto mounted = containerd.Ctr({"image", "mount", ref, mnt.string()});
  ASSERT_EQ(mounted.exit_code, 0) << mounted.err;
  EXPECT_TRUE(fs::exists(mnt / "pod.yaml"));
  EXPECT_TRUE(fs::exists(mnt / "images" / "img" / "oci-layout"));
  auto validated = Podvisor({"validate", mnt.string()});
  EXPECT_EQ(validated.exit_code, 0) << validated.err;
  EXPECT_THAT(validated.out, HasSubstr("pod/shipped is valid"));
  auto unmounted = containerd.Ctr({"image", "unmount", mnt.string()});
  EXPECT_EQ(unmounted.exit_code, 0) << unmounted.err;
  containerd.Ctr({"image", "rm", ref});
}

}  // namespace
}  // namespace podvisor::e2e
