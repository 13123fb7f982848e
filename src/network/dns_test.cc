#include "network/dns.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "network/fake_plugins_test_util.h"

namespace podvisor::network {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

ResolvConf Host() {
  return ParseResolvConf(
      "# generated\n"
      "nameserver 192.0.2.1\n"
      "nameserver 192.0.2.2\n"
      "search old.example\n"
      "search corp.example. example.net\n"
      "options edns0 ndots:2\n");
}

TEST(ResolvConf, ParsesAsTheKubeletDoes) {
  ResolvConf c = Host();
  EXPECT_THAT(c.nameservers, ElementsAre("192.0.2.1", "192.0.2.2"));
  EXPECT_THAT(c.searches, ElementsAre("corp.example", "example.net"));  // last line wins, no dot
  EXPECT_THAT(c.options, ElementsAre("edns0", "ndots:2"));
  EXPECT_EQ(c.Render(),
            "nameserver 192.0.2.1\nnameserver 192.0.2.2\n"
            "search corp.example example.net\noptions edns0 ndots:2\n");
}

TEST(PodDns, DefaultIsTheHosts) {
  PodDns dns = FormPodDns(DnsPolicy::kDefault, false, std::nullopt, Host());
  EXPECT_EQ(dns.conf.Render(), Host().Render());
  EXPECT_THAT(dns.warnings, IsEmpty());
}

TEST(PodDns, ClusterFirstFallsBackToDefaultWithOneWarning) {
  PodDns dns = FormPodDns(DnsPolicy::kClusterFirst, false, std::nullopt, Host());
  EXPECT_EQ(dns.conf.Render(), Host().Render());
  ASSERT_EQ(dns.warnings.size(), 1u);
  EXPECT_THAT(dns.warnings[0], HasSubstr("no cluster DNS"));
  EXPECT_THAT(dns.warnings[0], HasSubstr("ClusterFirst"));
  // On the host's network ClusterFirst simply is Default.
  PodDns host = FormPodDns(DnsPolicy::kClusterFirst, true, std::nullopt, Host());
  EXPECT_THAT(host.warnings, IsEmpty());
  // ClusterFirstWithHostNet wants cluster DNS even there.
  PodDns with = FormPodDns(DnsPolicy::kClusterFirstWithHostNet, true, std::nullopt, Host());
  EXPECT_EQ(with.warnings.size(), 1u);
}

TEST(PodDns, NoneIsOnlyDnsConfig) {
  PodDnsConfig config{{"198.51.100.1"}, {"my.example"}, {{"ndots", "1"}, {"rotate", std::nullopt}}};
  PodDns dns = FormPodDns(DnsPolicy::kNone, false, config, Host());
  EXPECT_EQ(dns.conf.Render(),
            "nameserver 198.51.100.1\nsearch my.example\noptions ndots:1 rotate\n");
  PodDns empty = FormPodDns(DnsPolicy::kNone, false, std::nullopt, Host());
  EXPECT_EQ(empty.conf.Render(), "");
}

TEST(PodDns, DnsConfigMergesWithoutDuplicatesAndOverridesOptions) {
  PodDnsConfig config{{"192.0.2.2", "198.51.100.1"},
                      {"example.net", "pod.example"},
                      {{"ndots", "5"}, {"timeout", "1"}}};
  PodDns dns = FormPodDns(DnsPolicy::kDefault, false, config, Host());
  EXPECT_THAT(dns.conf.nameservers, ElementsAre("192.0.2.1", "192.0.2.2", "198.51.100.1"));
  EXPECT_THAT(dns.conf.searches, ElementsAre("corp.example", "example.net", "pod.example"));
  EXPECT_THAT(dns.conf.options, ElementsAre("edns0", "ndots:5", "timeout:1"));
  EXPECT_THAT(dns.warnings, IsEmpty());
}

TEST(PodDns, LimitsCutWithAWarning) {
  PodDnsConfig config;
  config.nameservers = {"198.51.100.1", "198.51.100.2"};
  for (int i = 0; i < 40; ++i) config.searches.push_back("d" + std::to_string(i) + ".example");
  config.searches.push_back(std::string(254, 'x'));
  PodDns dns = FormPodDns(DnsPolicy::kNone, false, config, {});
  EXPECT_EQ(dns.conf.nameservers.size(), 2u);
  EXPECT_EQ(dns.conf.searches.size(), 32u);
  ASSERT_EQ(dns.warnings.size(), 1u);
  EXPECT_THAT(dns.warnings[0], HasSubstr("Search Line limits were exceeded"));

  config.nameservers = {"1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"};
  config.searches.clear();
  for (int i = 0; i < 20; ++i) config.searches.push_back(std::string(150, 'a' + i));
  dns = FormPodDns(DnsPolicy::kNone, false, config, {});
  EXPECT_THAT(dns.conf.nameservers, ElementsAre("1.1.1.1", "1.1.1.2", "1.1.1.3"));
  size_t line = 0;
  for (const auto& s : dns.conf.searches) line += s.size() + 1;
  EXPECT_LE(line - 1, 2048u);
  EXPECT_EQ(dns.conf.searches.size(), 13u);  // 13 * 151 - 1 = 1962; 14 would be 2113
  EXPECT_EQ(dns.warnings.size(), 2u);
}

TEST(HostResolv, SystemdResolvedStubIsReplacedByTheUpstreamFile) {
  testing::FakePluginDir tmp;
  HostResolvFiles files{tmp.dir() / "resolv.conf", tmp.dir() / "upstream.conf"};
  std::ofstream(files.resolv_conf) << "nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch lan\n";
  auto stub_alone = HostResolvConf(files);
  ASSERT_TRUE(stub_alone) << stub_alone.error().message();
  EXPECT_THAT(stub_alone->nameservers, ElementsAre("127.0.0.53"));  // resolved not running
  std::ofstream(files.resolved_upstream) << "nameserver 192.0.2.53\nsearch lan\n";
  auto replaced = HostResolvConf(files);
  ASSERT_TRUE(replaced) << replaced.error().message();
  EXPECT_THAT(replaced->nameservers, ElementsAre("192.0.2.53"));
  EXPECT_THAT(replaced->searches, ElementsAre("lan"));

  std::ofstream(files.resolv_conf) << "nameserver 192.0.2.1\n";
  auto plain = HostResolvConf(files);
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_THAT(plain->nameservers, ElementsAre("192.0.2.1"));

  auto missing = HostResolvConf({tmp.dir() / "nope", tmp.dir() / "nope2"});
  ASSERT_TRUE(missing) << missing.error().message();
  EXPECT_EQ(missing->Render(), "");
}

TEST(DnsPolicyWords, RoundTrip) {
  for (auto p : {DnsPolicy::kClusterFirst, DnsPolicy::kClusterFirstWithHostNet, DnsPolicy::kDefault,
                 DnsPolicy::kNone}) {
    EXPECT_EQ(ParseDnsPolicy(DnsPolicyName(p)), p);
  }
  EXPECT_EQ(ParseDnsPolicy("clusterfirst"), std::nullopt);
}

}  // namespace
}  // namespace podvisor::network
