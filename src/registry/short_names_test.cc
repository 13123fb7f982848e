#include "registry/short_names.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace podvisor::registry {
namespace {

namespace fs = std::filesystem;

class ShortNames : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("podvisor-short-names-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "conf.d");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const fs::path& rel, const std::string& text) { std::ofstream(dir_ / rel) << text; }
  RegistriesConfLocation Location() {
    return {.main_file = dir_ / "registries.conf", .drop_in_dir = dir_ / "conf.d"};
  }
  fs::path dir_;
};

TEST_F(ShortNames, AliasReplacesAShortNameKeepingTheTag) {
  Write("registries.conf",
        "unqualified-search-registries = [\"quay.io\"]\n"
        "[aliases]\n\"fedora\" = \"registry.fedoraproject.org/fedora\"\n"
        "\"team/app\" = \"registry.example.com:5000/team/app\"\n");
  auto aliases = LoadShortNameAliases(Location());
  ASSERT_TRUE(aliases) << aliases.error().message();
  EXPECT_EQ(ResolveImageName("fedora:39", *aliases)->ToString(),
            "registry.fedoraproject.org/fedora:39");
  EXPECT_EQ(ResolveImageName("team/app", *aliases)->ToString(),
            "registry.example.com:5000/team/app:latest");
  // No alias: docker.io, never the search registries.
  EXPECT_EQ(ResolveImageName("nginx", *aliases)->ToString(), "docker.io/library/nginx:latest");
  // A qualified name is never aliased.
  EXPECT_EQ(ResolveImageName("docker.io/library/fedora", *aliases)->ToString(),
            "docker.io/library/fedora:latest");
}

TEST_F(ShortNames, DropInsInOrderLaterWins) {
  Write("registries.conf", "[aliases]\n\"app\" = \"one.example.com/app\"\n");
  Write("conf.d/20-b.conf", "[aliases]\n\"app\" = \"three.example.com/app\"\n");
  Write("conf.d/10-a.conf", "[aliases]\n\"app\" = \"two.example.com/app\"\n");
  Write("conf.d/30-c.txt", "[aliases]\n\"app\" = \"ignored.example.com/app\"\n");
  auto aliases = LoadShortNameAliases(Location());
  ASSERT_TRUE(aliases) << aliases.error().message();
  EXPECT_EQ(ResolveImageName("app:1", *aliases)->ToString(), "three.example.com/app:1");
  EXPECT_EQ(aliases->sources.at("app"), dir_ / "conf.d/20-b.conf");
}

TEST_F(ShortNames, BadFilesAreErrorsNamingThem) {
  Write("registries.conf", "[aliases\n");
  auto broken = LoadShortNameAliases(Location());
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message().find("registries.conf"), std::string::npos);
  Write("registries.conf", "[aliases]\n\"app\" = \"app:1\"\n");
  auto unqualified = LoadShortNameAliases(Location());
  ASSERT_FALSE(unqualified);
  EXPECT_NE(unqualified.error().message().find("not a fully qualified"), std::string::npos);
}

TEST_F(ShortNames, MissingFilesAreNoAliases) {
  auto aliases = LoadShortNameAliases({.main_file = dir_ / "none", .drop_in_dir = dir_ / "no"});
  ASSERT_TRUE(aliases);
  EXPECT_TRUE(aliases->aliases.empty());
}

TEST_F(ShortNames, EnvironmentNamesTheFile) {
  Write("registries.conf", "");
  ::setenv("CONTAINERS_REGISTRIES_CONF", (dir_ / "registries.conf").c_str(), 1);
  RegistriesConfLocation location = DefaultRegistriesConfLocation();
  ::unsetenv("CONTAINERS_REGISTRIES_CONF");
  EXPECT_EQ(location.main_file, dir_ / "registries.conf");
  EXPECT_TRUE(location.from_environment);
}

}  // namespace
}  // namespace podvisor::registry
