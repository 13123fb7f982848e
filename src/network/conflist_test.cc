#include "network/conflist.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "network/default_network.h"
#include "network/fake_plugins_test_util.h"

namespace podvisor::network {
namespace {

using ::testing::HasSubstr;

constexpr const char* kList = R"({
  "cniVersion": "1.0.0", "name": "pvtest",
  "plugins": [
    {"type": "bridge", "bridge": "pvtest0", "ipam": {"type": "host-local"}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]})";

TEST(ConfList, ParsesAList) {
  auto list = ParseConfList(kList, "10-pvtest.conflist");
  ASSERT_TRUE(list) << list.error().message();
  EXPECT_EQ(list->name, "pvtest");
  EXPECT_EQ(list->cni_version, "1.0.0");
  ASSERT_EQ(list->plugins.size(), 2u);
  EXPECT_EQ(list->plugins[0]["bridge"], "pvtest0");
  EXPECT_EQ(list->plugins[1]["type"], "portmap");
}

TEST(ConfList, SingleConfIsAOnePluginList) {
  auto list = ParseConfList(R"({"cniVersion":"0.4.0","name":"one","type":"bridge","bridge":"x0"})",
                            "one.conf", true);
  ASSERT_TRUE(list) << list.error().message();
  ASSERT_EQ(list->plugins.size(), 1u);
  EXPECT_EQ(list->plugins[0]["type"], "bridge");
  EXPECT_EQ(list->plugins[0]["bridge"], "x0");
  EXPECT_FALSE(list->plugins[0].contains("name"));
}

TEST(ConfList, ErrorsNameFileAndField) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"{", "bad.conflist: not valid JSON"},
      {"[]", "bad.conflist: must be a JSON object"},
      {R"({"cniVersion":"1.0.0","plugins":[{"type":"bridge"}]})", "\"name\" must be"},
      {R"({"name":"n","plugins":[{"type":"bridge"}]})", "\"cniVersion\" must be"},
      {R"({"name":"n","cniVersion":"0.1.0","plugins":[{"type":"bridge"}]})",
       "\"cniVersion\" 0.1.0 is not supported"},
      {R"({"name":"n","cniVersion":"1.0.0","plugins":[]})",
       "\"plugins\" must be a non-empty array"},
      {R"({"name":"n","cniVersion":"1.0.0","plugins":[{"type":"bridge"},{"x":1}]})",
       "plugins[1]: \"type\" must be a non-empty string"},
      {R"({"name":"n","cniVersion":"1.0.0","plugins":[{"type":"../../bin/sh"}]})",
       "is not a plugin name"},
      {R"({"name":"n","cniVersion":"1.0.0","plugins":[{"type":"p","capabilities":[]}]})",
       "\"capabilities\" must be an object"},
  };
  for (const auto& c : cases) {
    auto list = ParseConfList(c.text, "bad.conflist");
    ASSERT_FALSE(list) << c.text;
    EXPECT_THAT(list.error().message(), HasSubstr(c.message)) << c.text;
  }
}

class ConfDirTest : public ::testing::Test {
 protected:
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(plugins_.dir() / name) << text;
  }
  testing::FakePluginDir plugins_;  // used only as a temporary directory
};

TEST_F(ConfDirTest, FirstValidByFileNameOrByName) {
  Write("20-b.conflist", R"({"cniVersion":"1.0.0","name":"b","plugins":[{"type":"bridge"}]})");
  Write("10-a.conflist", R"({"cniVersion":"1.0.0","name":"a","plugins":[{"type":"bridge"}]})");
  Write("05-broken.conflist", "{");
  Write("README", "not a configuration");
  auto first = SelectNetwork(plugins_.dir(), std::nullopt);
  ASSERT_TRUE(first) << first.error().message();
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->name, "a");
  auto named = SelectNetwork(plugins_.dir(), std::string("b"));
  ASSERT_TRUE(named) << named.error().message();
  EXPECT_EQ((*named)->name, "b");
  auto missing = SelectNetwork(plugins_.dir(), std::string("nope"));
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message(), HasSubstr("no CNI network named nope"));
  EXPECT_THAT(missing.error().message(), HasSubstr("05-broken.conflist: not valid JSON"));
}

TEST_F(ConfDirTest, EmptyOrMissingDirectoryMeansNoConfiguration) {
  auto none = SelectNetwork(plugins_.dir(), std::nullopt);
  ASSERT_TRUE(none) << none.error().message();
  EXPECT_FALSE(none->has_value());
  auto missing = SelectNetwork(plugins_.dir() / "nope", std::nullopt);
  ASSERT_TRUE(missing) << missing.error().message();
  EXPECT_FALSE(missing->has_value());
}

TEST_F(ConfDirTest, OnlyInvalidFilesIsAnError) {
  Write("10-bad.conflist", R"({"name":"x"})");
  auto list = SelectNetwork(plugins_.dir(), std::nullopt);
  ASSERT_FALSE(list);
  EXPECT_THAT(list.error().message(), HasSubstr("no valid CNI network configuration"));
  EXPECT_THAT(list.error().message(), HasSubstr("10-bad.conflist: \"cniVersion\" must be"));
}

TEST_F(ConfDirTest, DefaultNetworkIsWrittenAndReadBack) {
  DefaultNetworkOptions options;
  options.ipam_data_dir = plugins_.dir() / "ipam";
  auto list = WriteDefaultNetwork(options, plugins_.dir() / "net.d");
  ASSERT_TRUE(list) << list.error().message();
  EXPECT_EQ(list->name, "podvisor");
  ASSERT_EQ(list->plugins.size(), 3u);
  EXPECT_EQ(list->plugins[0]["bridge"], "podvisor0");
  EXPECT_EQ(list->plugins[0]["ipMasq"], true);
  EXPECT_EQ(list->plugins[0]["ipam"]["ranges"][0][0]["subnet"], "10.89.0.0/16");
  EXPECT_EQ(list->plugins[0]["ipam"]["dataDir"], (plugins_.dir() / "ipam").string());
  EXPECT_EQ(list->plugins[1]["type"], "portmap");
  EXPECT_EQ(list->plugins[1]["capabilities"]["portMappings"], true);
  EXPECT_EQ(list->plugins[2]["type"], "firewall");
  // Idempotent: a second write finds the same content.
  auto again = WriteDefaultNetwork(options, plugins_.dir() / "net.d");
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(again->ToJson(), list->ToJson());
}

}  // namespace
}  // namespace podvisor::network
