#include "network/hosts.h"

#include <gtest/gtest.h>

namespace podvisor::network {
namespace {

constexpr const char* kHeader =
    "# Kubernetes-managed hosts file.\n"
    "127.0.0.1\tlocalhost\n"
    "::1\tlocalhost ip6-localhost ip6-loopback\n"
    "fe00::0\tip6-localnet\n"
    "fe00::0\tip6-mcastprefix\n"
    "fe00::1\tip6-allnodes\n"
    "fe00::2\tip6-allrouters\n";

TEST(Hosts, PodIpWithHostname) {
  PodNames names = FormPodNames("web", "default", "", "", false);
  EXPECT_EQ(names.hostname, "web");
  EXPECT_EQ(names.uts_hostname, "web");
  EXPECT_EQ(ManagedHostsFile({"10.89.0.7"}, names, {}), std::string(kHeader) + "10.89.0.7\tweb\n");
}

TEST(Hosts, SubdomainGivesTheFqdnFirst) {
  PodNames names = FormPodNames("web-0", "shop", "front", "nginx", false);
  EXPECT_EQ(names.Fqdn(), "front.nginx.shop.svc.cluster.local");
  EXPECT_EQ(names.uts_hostname, "front");
  EXPECT_EQ(ManagedHostsFile({"10.89.0.7", "fd00::7"}, names, {}),
            std::string(kHeader) +
                "10.89.0.7\tfront.nginx.shop.svc.cluster.local\tfront\n"
                "fd00::7\tfront.nginx.shop.svc.cluster.local\tfront\n");
  PodNames fqdn = FormPodNames("web-0", "shop", "front", "nginx", true);
  EXPECT_EQ(fqdn.uts_hostname, "front.nginx.shop.svc.cluster.local");
}

TEST(Hosts, NoAddressUsesDebiansConventionAndAliasesFollow) {
  PodNames names = FormPodNames("web", "default", "", "", false);
  std::vector<HostAlias> aliases{{"192.0.2.9", {"db", "db.local"}}, {"192.0.2.10", {"cache"}}};
  EXPECT_EQ(ManagedHostsFile({}, names, aliases), std::string(kHeader) +
                                                      "127.0.1.1\tweb\n"
                                                      "\n# Entries added by HostAliases.\n"
                                                      "192.0.2.9\tdb\tdb.local\n"
                                                      "192.0.2.10\tcache\n");
  EXPECT_EQ(HostNetworkHostsFile("127.0.0.1 localhost", aliases),
            "127.0.0.1 localhost\n"
            "\n# Entries added by HostAliases.\n"
            "192.0.2.9\tdb\tdb.local\n"
            "192.0.2.10\tcache\n");
  EXPECT_EQ(HostNetworkHostsFile("127.0.0.1 localhost\n", {}), "127.0.0.1 localhost\n");
}

TEST(Hosts, LongPodNameIsCutTo63) {
  std::string name = std::string(62, 'a') + "-bcd";
  PodNames names = FormPodNames(name, "default", "", "", false);
  EXPECT_EQ(names.hostname, std::string(62, 'a'));  // cut at 63 = "a...a-", then the '-' goes
}

}  // namespace
}  // namespace podvisor::network
