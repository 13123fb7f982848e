#include "oci/runtime_locator.h"

#include <sys/stat.h>

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
  auto rt = LocateRuntime(script.string(), true);
  ASSERT_TRUE(rt.ok());
  EXPECT_EQ(rt->name, "my-runtime");
  auto missing = LocateRuntime((dir_ / "nope").string(), true);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("is not an executable file"), std::string::npos);
}

TEST_F(RuntimeLocatorTest, UnknownNamesAreRejected) {
  auto rt = LocateRuntime("docker", true);
  ASSERT_FALSE(rt.ok());
  EXPECT_EQ(rt.error().message(),
            "--runtime: unknown runtime \"docker\": use crun, runc or a path to an OCI runtime");
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
