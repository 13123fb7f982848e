// subPaths resolved beneath their volume and bound from the resolved
// descriptor (volumes.h BindSubPaths, S14.1-S14.3). The refusals need no
// privileges; binding needs root (mount), and those tests skip without it.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "common/mounts.h"
#include "hostfs/volumes.h"
#include "image/image.h"
#include "oci/spec.h"

namespace podvisor::hostfs {
namespace {

namespace fs = std::filesystem;

class SubPathBind : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/podvisor-subpath-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    volumes_ = dir_ / "volumes";
    mount_dir_ = SubPathMountDir(dir_ / "instance");
    fs::create_directories(dir_ / "instance");
    fs::create_directories(dir_ / "outside");
    std::ofstream(dir_ / "outside/host-secret") << "host";
    pod_.spec.volumes = {{"data", pod::EmptyDirVolumeSource{}, std::nullopt, {}, {}, {}, {}, {}}};
    ASSERT_TRUE(PreparePodVolumes(pod_, volumes_));
  }
  void TearDown() override {
    // Never remove_all through a mount: it would empty what is bound.
    if (Status s = UnmountAllUnder(dir_); !s) {
      ADD_FAILURE() << "left mounted: " << s.error().message();
      return;
    }
    fs::remove_all(dir_);
  }
  static bool IsRoot() { return ::geteuid() == 0; }
  Result<SubPathSources> Bind(std::vector<std::string> sub_paths) {
    container_.volume_mounts.clear();
    for (std::size_t i = 0; i < sub_paths.size(); ++i) {
      container_.volume_mounts.push_back(
          {"data", "/m" + std::to_string(i), false, sub_paths[i], "", "", ""});
    }
    return BindSubPaths(pod_, container_, volumes_, mount_dir_);
  }
  fs::path Volume() const { return volumes_ / "data"; }
  bool OutsideHoldsOnlyTheSecret() const {
    return std::distance(fs::directory_iterator(dir_ / "outside"), fs::directory_iterator()) == 1;
  }

  fs::path dir_, volumes_, mount_dir_;
  pod::Pod pod_;
  pod::Container container_;
};

TEST_F(SubPathBind, S14_1_ParentSymlinkedOutsideIsRefusedAndNothingIsMadeThere) {
  fs::create_symlink(dir_ / "outside", Volume() / "absolute");
  fs::create_symlink("../../outside", Volume() / "relative");
  for (const char* sub_path : {"absolute/new/deeper", "relative/new", "absolute"}) {
    auto bound = Bind({sub_path});
    ASSERT_FALSE(bound) << sub_path;
    EXPECT_EQ(bound.error().message(), "volume \"data\": subPath \"" + std::string(sub_path) +
                                           "\": resolves outside the volume");
    EXPECT_TRUE(OutsideHoldsOnlyTheSecret()) << sub_path << ": a directory was made on the host";
    EXPECT_FALSE(fs::exists(mount_dir_)) << "nothing bound, nothing left";
  }
  for (const char* sub_path : {"../x", "/etc"}) {
    auto bound = Bind({sub_path});
    ASSERT_FALSE(bound) << sub_path;
    EXPECT_NE(bound.error().message().find("subPath \"" + std::string(sub_path)),
              std::string::npos);
  }
}

TEST_F(SubPathBind, S14_1_SymlinkInsideTheVolumeStillWorks) {
  if (!IsRoot()) GTEST_SKIP() << "needs root (binding is a mount)";
  fs::create_directories(Volume() / "real/dir");
  fs::create_symlink("real/dir", Volume() / "link");
  std::ofstream(Volume() / "real/dir/app.conf") << "listen=8080";
  auto bound = Bind({"link/made", "link/app.conf"});
  ASSERT_TRUE(bound) << bound.error().message();
  ASSERT_EQ(bound->size(), 2u);
  EXPECT_TRUE(fs::is_directory(Volume() / "real/dir/made")) << "made where the link leads";
  const fs::path& dir_source = bound->at(0);
  const fs::path& file_source = bound->at(1);
  EXPECT_EQ(dir_source, mount_dir_ / "0");
  EXPECT_TRUE(IsMountPoint(dir_source));
  std::ofstream(Volume() / "real/dir/made/seen") << "x";
  EXPECT_TRUE(fs::exists(dir_source / "seen")) << "the bind shows the volume's directory";
  std::ifstream conf(file_source);
  std::string line;
  std::getline(conf, line);
  EXPECT_EQ(line, "listen=8080") << "a file subPath is bound as that file";
  ASSERT_TRUE(UnbindSubPaths(mount_dir_));
  EXPECT_FALSE(fs::exists(mount_dir_));
  EXPECT_TRUE(fs::exists(Volume() / "real/dir/made/seen")) << "unbinding keeps the volume's data";
  EXPECT_TRUE(UnbindSubPaths(mount_dir_)) << "idempotent";
}

TEST_F(SubPathBind, S14_3_AFailedBindLeavesNoMountBehind) {
  if (!IsRoot()) GTEST_SKIP() << "needs root (binding is a mount)";
  fs::create_symlink(dir_ / "outside", Volume() / "escape");
  auto bound = Bind({"fine", "escape/x"});
  ASSERT_FALSE(bound);
  EXPECT_NE(bound.error().message().find("resolves outside the volume"), std::string::npos);
  auto left = MountPointsUnder(dir_);
  ASSERT_TRUE(left);
  EXPECT_TRUE(left->empty()) << "the first subPath's bind was undone";
  EXPECT_FALSE(fs::exists(mount_dir_));
}

// The attack of CVE-2017-1002101's class: whoever shares the volume swaps
// a component between a directory and a symlink to the host while the
// subPath is prepared. Whatever the timing, what is bound must be what
// was resolved beneath the volume: never the host directory.
TEST_F(SubPathBind, S14_2_SwappingForASymlinkNeverBindsTheHost) {
  if (!IsRoot()) GTEST_SKIP() << "needs root (binding is a mount)";
  fs::create_directories(Volume() / "swap/inner");
  std::ofstream(Volume() / "swap/volume-file") << "volume";
  fs::create_symlink(dir_ / "outside", Volume() / "spare");
  fs::create_directories(dir_ / "outside/inner");
  std::ofstream(dir_ / "outside/inner/host-secret") << "host";
  std::atomic<bool> stop{false};
  std::atomic<long> exchanges{0};
  std::thread swapper([&] {
    int volume = ::open(Volume().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    while (!stop.load(std::memory_order_relaxed)) {
      if (::renameat2(volume, "swap", volume, "spare", RENAME_EXCHANGE) == 0) ++exchanges;
    }
    ::close(volume);
  });
  int bound_count = 0, refused = 0, host_bound = 0;
  for (int i = 0; i < 300; ++i) {
    // On a loaded machine the swapper may not run for a while: each
    // attempt starts only once it has swapped again, so every attempt
    // races a swapper that is running.
    long seen = exchanges.load();
    while (exchanges.load() < seen + 1 + i % 3) std::this_thread::yield();
    auto bound = Bind({i % 2 == 0 ? "swap" : "swap/inner"});
    if (!bound) {
      // The only acceptable failure: the symlink was there when resolved.
      EXPECT_NE(bound.error().message().find("resolves outside the volume"), std::string::npos)
          << bound.error().message();
      ++refused;
      continue;
    }
    ++bound_count;
    const fs::path& source = bound->at(0);
    if (fs::exists(source / "host-secret")) ++host_bound;
    if (Status s = UnbindSubPaths(mount_dir_); !s) {
      ADD_FAILURE() << s.error().message();
      break;
    }
  }
  stop = true;
  swapper.join();
  EXPECT_EQ(host_bound, 0) << "the host directory was bound " << host_bound << " times";
  EXPECT_GT(bound_count, 0) << "no attempt got through: the test proves nothing";
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "outside"), fs::directory_iterator()), 2)
      << "nothing made on the host beside the test's own host-secret and inner/";
  RecordProperty("refused", refused);
  RecordProperty("bound", bound_count);
}

// The config hands the runtime the bind, and the joined path only where
// there is none (validate, oci-config).
TEST(SubPathConfig, S14_2_TheRuntimeGetsTheBoundSourceNotTheJoinedPath) {
  const char* testdata = std::getenv("PODVISOR_OCI_TESTDATA");
  fs::path bundle = (testdata ? fs::path(testdata) : fs::path("src/oci/testdata")) / "bundle";
  pod::Pod pod;
  pod.metadata.name = "p";
  pod.spec.volumes = {{"data", pod::EmptyDirVolumeSource{}, std::nullopt, {}, {}, {}, {}, {}}};
  pod::Container c;
  c.name = "c";
  c.image = "busybox";
  c.command = {"/bin/true"};
  c.volume_mounts = {{"data", "/all", false, "", "", "", ""},
                     {"data", "/sub", true, "a/b", "", "", ""},
                     {"data", "/other", false, "c", "", "", ""}};
  pod.spec.containers = {c};
  oci::ContainerConfigInput input;
  input.bundle = bundle;
  input.root_path = "/r";
  input.volumes_dir = "/state/p/volumes";
  input.node_memory_bytes = 1LL << 33;
  input.sub_path_sources = {{1, "/state/p/containers/c/id/subpaths/1"}};
  auto image = image::LoadImage(bundle, "busybox");
  ASSERT_TRUE(image) << image.error().message();
  auto config = oci::GenerateConfig(pod, pod.spec.containers[0], *image, input);
  ASSERT_TRUE(config) << config.error().message();
  std::map<std::string, nlohmann::json> by_destination;
  for (const auto& m : (*config)["mounts"]) by_destination[m["destination"]] = m;
  EXPECT_EQ(by_destination["/all"]["source"], "/state/p/volumes/data");
  EXPECT_EQ(by_destination["/sub"]["source"], "/state/p/containers/c/id/subpaths/1");
  EXPECT_EQ(by_destination["/sub"]["options"], nlohmann::json({"rbind", "rprivate", "ro"}));
  EXPECT_EQ(by_destination["/other"]["source"], "/state/p/volumes/data/c")
      << "no bind given: the lexical path, for display";
}

}  // namespace
}  // namespace podvisor::hostfs
