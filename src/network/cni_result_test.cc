#include "network/cni_result.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "network/fake_plugins_test_util.h"

namespace podvisor::network {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(CniResult, Version100) {
  auto r = ParseCniResult(testing::BridgeResult());
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->cni_version, "1.0.0");
  ASSERT_EQ(r->interfaces.size(), 3u);
  EXPECT_EQ(r->interfaces[2].sandbox, "/proc/1/ns/net");
  ASSERT_EQ(r->ips.size(), 1u);
  EXPECT_EQ(r->ips[0].gateway, "10.99.0.1");
  EXPECT_THAT(r->PodIps(), ElementsAre("10.99.0.5"));
}

TEST(CniResult, Version040WithIpVersionAndDualStack) {
  auto r = ParseCniResult(R"({"cniVersion":"0.4.0",
    "interfaces":[{"name":"cni0"},{"name":"eth0","sandbox":"/var/run/netns/x"}],
    "ips":[{"version":"6","address":"fd00::5/64","interface":1},
           {"version":"4","address":"10.1.2.3/24","gateway":"10.1.2.1","interface":1},
           {"version":"4","address":"10.9.9.9/24","interface":0}]})");
  ASSERT_TRUE(r) << r.error().message();
  // IPv4 first (the kubelet's podIP is the first), the host-side address left out.
  EXPECT_THAT(r->PodIps(), ElementsAre("10.1.2.3", "fd00::5"));
}

TEST(CniResult, IpamOnlyResultWithoutInterfaces) {
  auto r =
      ParseCniResult(R"({"cniVersion":"0.3.1","ips":[{"version":"4","address":"10.0.0.2/8"}]})");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_THAT(r->PodIps(), ElementsAre("10.0.0.2"));
}

TEST(CniResult, Errors) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"nope", "result: not valid JSON"},
      {"[]", "result: must be a JSON object"},
      {R"({"ips":{}})", "\"ips\" must be an array"},
      {R"({"ips":[{"address":"10.0.0.1"}]})", "ips[0]: \"address\" is not an IP address in CIDR"},
      {R"({"ips":[{"address":"banana/24"}]})", "ips[0]: \"address\" is not an IP address"},
      {R"({"ips":[{"address":"10.0.0.1/24","interface":3}]})", "not an index into"},
  };
  for (const auto& c : cases) {
    auto r = ParseCniResult(c.text);
    ASSERT_FALSE(r) << c.text;
    EXPECT_THAT(r.error().message(), HasSubstr(c.message)) << c.text;
  }
}

}  // namespace
}  // namespace podvisor::network
