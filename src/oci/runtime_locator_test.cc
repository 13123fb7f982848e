#include "oci/runtime_locator.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

namespace podvisor::oci {
namespace {

std::filesystem::path MakeScript(const std::filesystem::path& dir, const std::string& name,
                                 const std::string& body) {
  std::filesystem::create_directories(dir);
  auto p = dir / name;
  std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
  ::chmod(p.c_str(), 0755);
  return p;
}

class RuntimeLocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("runtime-locator-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(RuntimeLocatorTest, FindsExecutablesInASearchPath) {
  MakeScript(dir_ / "bin", "fake-rt", "exit 0");
  auto found = FindInPath("fake-rt", (dir_ / "empty").string() + ":" + (dir_ / "bin").string());
  ASSERT_TRUE(found.ok()) << found.error().message();
  EXPECT_EQ(*found, dir_ / "bin" / "fake-rt");
  EXPECT_FALSE(FindInPath("absent-rt", (dir_ / "bin").string()).ok());
}

TEST_F(RuntimeLocatorTest, AnExplicitPathMustBeExecutable) {
  auto script = MakeScript(dir_, "my-runtime", "exit 0");
  auto rt = LocateRuntime(script.string(), "");
  ASSERT_TRUE(rt.ok());
  EXPECT_EQ(rt->name, "my-runtime");
  auto missing = LocateRuntime((dir_ / "nope").string(), "");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("is not an executable file"), std::string::npos);
}

TEST_F(RuntimeLocatorTest, UnknownNamesAreRejected) {
  auto rt = LocateRuntime("docker", "");
  ASSERT_FALSE(rt.ok());
  EXPECT_EQ(rt.error().message(),
            "--runtime: unknown runtime \"docker\": use crun, runc or a path to an OCI runtime");
}

// crun refuses a v1/v2 hybrid hierarchy; run crash-looped when told
// --runtime crun there. An explicit crun, by name or by a path that is
// crun, is refused up front with the host's reason; runc is not.
TEST_F(RuntimeLocatorTest, AnExplicitCrunIsRefusedWhereCrunCannotRun) {
  const std::string hybrid = "this host's hybrid cgroups (cgroup v1/v2 hybrid)";
  auto crun = MakeScript(dir_ / "bin", "crun", "exit 0");
  MakeScript(dir_ / "bin", "runc", "exit 0");
  std::filesystem::create_symlink(crun, dir_ / "oci-runtime");

  auto by_path = LocateRuntime(crun.string(), hybrid);
  ASSERT_FALSE(by_path.ok());
  EXPECT_EQ(by_path.error().message(), "--runtime " + crun.string() +
                                           ": crun cannot run on this host's hybrid cgroups "
                                           "(cgroup v1/v2 hybrid); use runc");
  EXPECT_FALSE(LocateRuntime((dir_ / "oci-runtime").string(), hybrid).ok());
  EXPECT_TRUE(LocateRuntime(crun.string(), "").ok());

  const char* old_path = std::getenv("PATH");
  std::string saved = old_path ? old_path : "";
  ::setenv("PATH", (dir_ / "bin").c_str(), 1);
  auto by_name = LocateRuntime("crun", hybrid);
  auto runc = LocateRuntime("runc", hybrid);
  auto automatic = LocateRuntime("", hybrid);
  auto usable = LocateRuntime("crun", "");
  ::setenv("PATH", saved.c_str(), 1);
  ASSERT_FALSE(by_name.ok());
  EXPECT_EQ(by_name.error().message(),
            "--runtime crun: crun cannot run on this host's hybrid cgroups (cgroup v1/v2 "
            "hybrid); use runc");
  ASSERT_TRUE(runc.ok());
  EXPECT_EQ(runc->name, "runc");
  ASSERT_TRUE(automatic.ok());
  EXPECT_EQ(automatic->name, "runc");
  ASSERT_TRUE(usable.ok());
  EXPECT_EQ(usable->name, "crun");
}

TEST_F(RuntimeLocatorTest, ReadsTheFirstVersionLine) {
  auto script = MakeScript(dir_, "rt", "echo 'fake-rt version 9.9'; echo 'spec: 1.0.2'");
  auto v = RuntimeVersion(script);
  ASSERT_TRUE(v.ok()) << v.error().message();
  EXPECT_EQ(*v, "fake-rt version 9.9");
  auto failing = MakeScript(dir_, "bad", "exit 3");
  EXPECT_FALSE(RuntimeVersion(failing).ok());
}

}  // namespace
}  // namespace podvisor::oci
