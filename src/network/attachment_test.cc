// Tier 2: the ADD/DEL chain against fake plugins.
#include "network/attachment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "network/fake_plugins_test_util.h"

namespace podvisor::network {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class AttachmentTest : public ::testing::Test {
 protected:
  NetworkConfigList List(std::vector<std::string> types) {
    NetworkConfigList list;
    list.name = "fakenet";
    list.cni_version = "1.0.0";
    for (const auto& t : types) {
      nlohmann::json p{{"type", t}};
      if (t == "portmapper") p["capabilities"] = {{"portMappings", true}};
      list.plugins.push_back(std::move(p));
    }
    return list;
  }
  AttachParams Params() {
    AttachParams p;
    p.container_id = "c0ffee";
    p.netns = "/proc/1/ns/net";
    p.pod_namespace = "default";
    p.pod_name = "web";
    p.pod_uid = "uid-1";
    p.bin_dirs = {plugins_.dir()};
    return p;
  }
  std::filesystem::path StateFile() { return plugins_.dir() / "attachment.json"; }
  testing::FakePluginDir plugins_;
};

TEST_F(AttachmentTest, AddInOrderWithPrevResultDelInReverse) {
  plugins_.AddSucceeding("mainplugin", testing::BridgeResult());
  plugins_.AddPassingPrevResult("portmapper");
  plugins_.AddPassingPrevResult("fw");
  AttachParams params = Params();
  params.port_mappings = {{8080, 80, "tcp", "127.0.0.1"}};
  auto a = Attach(List({"mainplugin", "portmapper", "fw"}), params, StateFile());
  ASSERT_TRUE(a) << a.error().message();
  ASSERT_TRUE(a->result);
  EXPECT_THAT(a->result->PodIps(), ElementsAre("10.99.0.5"));

  auto first = nlohmann::json::parse(plugins_.Recorded(0, "stdin"));
  EXPECT_EQ(first["name"], "fakenet");
  EXPECT_EQ(first["cniVersion"], "1.0.0");
  EXPECT_FALSE(first.contains("prevResult"));
  EXPECT_FALSE(first.contains("runtimeConfig"));  // no capability asked for
  auto second = nlohmann::json::parse(plugins_.Recorded(1, "stdin"));
  EXPECT_EQ(second["prevResult"], nlohmann::json::parse(testing::BridgeResult()));
  EXPECT_EQ(second["runtimeConfig"]["portMappings"],
            nlohmann::json::parse(
                R"([{"hostPort":8080,"containerPort":80,"protocol":"tcp","hostIP":"127.0.0.1"}])"));
  EXPECT_THAT(plugins_.Recorded(1, "env"),
              HasSubstr("CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;"
                        "K8S_POD_INFRA_CONTAINER_ID=c0ffee;K8S_POD_UID=uid-1\n"));

  // The saved attachment can DEL after a restart.
  auto saved = LoadAttachment(StateFile());
  ASSERT_TRUE(saved) << saved.error().message();
  ASSERT_TRUE(saved->has_value());
  EXPECT_EQ((*saved)->params.port_mappings, params.port_mappings);
  ASSERT_TRUE((*saved)->result);
  EXPECT_THAT((*saved)->result->PodIps(), ElementsAre("10.99.0.5"));

  ASSERT_TRUE(Detach(**saved, StateFile()));
  EXPECT_THAT(plugins_.CallOrder(), ElementsAre("mainplugin-ADD", "portmapper-ADD", "fw-ADD",
                                                "fw-DEL", "portmapper-DEL", "mainplugin-DEL"));
  auto del = nlohmann::json::parse(plugins_.Recorded(3, "stdin"));
  EXPECT_EQ(del["prevResult"], nlohmann::json::parse(testing::BridgeResult()));
  EXPECT_THAT(plugins_.Recorded(3, "env"), HasSubstr("CNI_COMMAND=DEL\n"));
  EXPECT_FALSE(std::filesystem::exists(StateFile()));
  auto gone = LoadAttachment(StateFile());
  ASSERT_TRUE(gone);
  EXPECT_FALSE(gone->has_value());
}

TEST_F(AttachmentTest, AFailingPluginUndoesTheChainAndKeepsItsMessage) {
  plugins_.AddSucceeding("mainplugin", testing::BridgeResult());
  plugins_.Add("portmapper",
               "if [ \"$CNI_COMMAND\" = ADD ]; then "
               "echo '{\"code\":11,\"msg\":\"listen tcp :8080: address already in use\"}'; "
               "exit 1; fi");
  plugins_.AddPassingPrevResult("fw");
  auto a = Attach(List({"mainplugin", "portmapper", "fw"}), Params(), StateFile());
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message(),
            "network fakenet: plugin portmapper ADD: listen tcp :8080: address already in use "
            "(CNI error 11)");
  // fw never ran ADD; every plugin got its DEL, in reverse.
  EXPECT_THAT(plugins_.CallOrder(), ElementsAre("mainplugin-ADD", "portmapper-ADD", "fw-DEL",
                                                "portmapper-DEL", "mainplugin-DEL"));
  EXPECT_FALSE(std::filesystem::exists(StateFile()));
}

TEST_F(AttachmentTest, AConfigurationThatCannotDelDoesNotKeepItsStateAfterAFailedAdd) {
  plugins_.Add("broken", "echo '{\"code\":7,\"msg\":\"no IP ranges\"}'; exit 1");
  auto a = Attach(List({"broken"}), Params(), StateFile());
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message(),
            "network fakenet: plugin broken ADD: no IP ranges (CNI error 7); cleaning up: "
            "network fakenet: plugin broken DEL: no IP ranges (CNI error 7)");
  EXPECT_FALSE(std::filesystem::exists(StateFile()));
}

TEST_F(AttachmentTest, AHangingPluginFailsTheAddAfterItsTimeout) {
  plugins_.AddSucceeding("mainplugin", testing::BridgeResult());
  plugins_.Add("hanger", "if [ \"$CNI_COMMAND\" = ADD ]; then exec sleep 60; fi");
  AttachParams params = Params();
  // Every call of the chain has this bound, the three that finish too: on
  // a loaded machine a shell script's start alone can take 200 ms.
  params.timeout = std::chrono::milliseconds(1500);
  auto a = Attach(List({"mainplugin", "hanger"}), params, StateFile());
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message(),
            "network fakenet: plugin hanger ADD: did not finish within 1500ms: killed");
  EXPECT_THAT(plugins_.CallOrder(),
              ElementsAre("mainplugin-ADD", "hanger-ADD", "hanger-DEL", "mainplugin-DEL"));
}

TEST_F(AttachmentTest, AMissingBinaryAndABadResultAreChainErrors) {
  auto missing = Attach(List({"absent"}), Params(), {});
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message(),
              HasSubstr("network fakenet: plugin absent ADD: plugin binary absent not found in"));

  plugins_.AddSucceeding("liar", R"({"ips":[{"address":"not-an-ip/8"}]})");
  auto bad = Attach(List({"liar"}), Params(), {});
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message(),
              HasSubstr("network fakenet: plugin liar ADD: result: ips[0]: \"address\""));
}

TEST_F(AttachmentTest, DelCallsEveryPluginAndReportsEachFailure) {
  plugins_.Add(
      "a",
      "if [ \"$CNI_COMMAND\" = DEL ]; then echo '{\"code\":5,\"msg\":\"a broke\"}'; exit 1; fi");
  plugins_.Add("b", "exit 0");
  plugins_.Add(
      "c",
      "if [ \"$CNI_COMMAND\" = DEL ]; then echo '{\"code\":6,\"msg\":\"c broke\"}'; exit 1; fi");
  Attachment a{List({"a", "b", "c"}), Params(), std::nullopt};
  ASSERT_TRUE(SaveAttachment(a, StateFile()));
  Status s = Detach(a, StateFile());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message(),
            "network fakenet: plugin c DEL: c broke (CNI error 6); "
            "network fakenet: plugin a DEL: a broke (CNI error 5)");
  EXPECT_THAT(plugins_.CallOrder(), ElementsAre("c-DEL", "b-DEL", "a-DEL"));
  // Kept for the next try.
  EXPECT_TRUE(std::filesystem::exists(StateFile()));
}

TEST_F(AttachmentTest, RuntimeConfigOnlyForDeclaredCapabilities) {
  AttachParams params = Params();
  params.port_mappings = {{80, 8080, "udp", ""}};
  NetworkConfigList list = List({"plain", "portmapper"});
  list.plugins[0]["runtimeConfig"] = {{"smuggled", true}};
  auto plain = PluginConfig(list, 0, params, nullptr);
  EXPECT_FALSE(plain.contains("runtimeConfig"));
  auto pm = PluginConfig(list, 1, params, nullptr);
  EXPECT_EQ(pm["runtimeConfig"]["portMappings"],
            nlohmann::json::parse(R"([{"hostPort":80,"containerPort":8080,"protocol":"udp"}])"));
}

}  // namespace
}  // namespace podvisor::network
