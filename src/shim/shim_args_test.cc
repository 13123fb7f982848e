#include "shim/shim_args.h"

#include <gtest/gtest.h>

namespace podvisor::shim {
namespace {

TEST(ShimArgs, ContainerdStartCommandLine) {
  auto args =
      ParseShimArgs({"-namespace", "default", "-address", "/run/containerd/containerd.sock",
                     "-publish-binary", "/usr/bin/containerd", "-id", "web", "-debug", "start"});
  ASSERT_TRUE(args) << args.error().message();
  EXPECT_EQ(args->ns, "default");
  EXPECT_EQ(args->address, "/run/containerd/containerd.sock");
  EXPECT_EQ(args->publish_binary, "/usr/bin/containerd");
  EXPECT_EQ(args->id, "web");
  EXPECT_TRUE(args->debug);
  EXPECT_EQ(args->action, "start");
}

TEST(ShimArgs, GoFlagForms) {
  auto args = ParseShimArgs({"--namespace=k8s.io", "-id=a", "-bundle", "/b", "delete"});
  ASSERT_TRUE(args) << args.error().message();
  EXPECT_EQ(args->ns, "k8s.io");
  EXPECT_EQ(args->id, "a");
  EXPECT_EQ(args->bundle, "/b");
  EXPECT_EQ(args->publish_binary, "containerd");
  EXPECT_EQ(args->action, "delete");
}

TEST(ShimArgs, Refusals) {
  EXPECT_EQ(
      ParseShimArgs({"-namespace", "n", "-id", "i", "-bogus", "x", "start"}).error().message(),
      "flag provided but not defined: -bogus");
  EXPECT_FALSE(ParseShimArgs({"-namespace", "n", "-id"}));
  EXPECT_FALSE(ParseShimArgs({"-namespace", "n", "-id", "i", "run"}));
  EXPECT_FALSE(ParseShimArgs({"-namespace", "n", "-id", "i", "start", "extra"}));
  EXPECT_FALSE(ParseShimArgs({"-id", "i", "start"}));  // no namespace
  EXPECT_TRUE(ParseShimArgs({"-v"}));
}

TEST(ShimArgs, ChosenByArgv0AndAFlag) {
  char shim[] = "/usr/bin/containerd-shim-podvisor-v1";
  char flag[] = "-namespace";
  char run[] = "run";
  char other[] = "/usr/bin/podvisor";
  char* as_shim[] = {shim, flag};
  char* as_run[] = {shim, run};
  char* as_podvisor[] = {other, flag};
  EXPECT_TRUE(IsShimInvocation(2, as_shim));
  EXPECT_FALSE(IsShimInvocation(2, as_run));
  EXPECT_FALSE(IsShimInvocation(2, as_podvisor));
}

TEST(ShimArgs, SocketAddressIsShortAndPerTask) {
  ShimArgs a;
  a.address = "/run/containerd/containerd.sock";
  a.ns = "default";
  a.id = std::string(76, 'x');
  ShimArgs b = a;
  b.ns = "other";
  std::string address = ShimSocketAddress(a);
  EXPECT_EQ(address.rfind("unix:///run/containerd/s/", 0), 0u);
  EXPECT_EQ(SocketPath(address).size(), std::string("/run/containerd/s/").size() + 64);
  EXPECT_NE(address, ShimSocketAddress(b));
}

}  // namespace
}  // namespace podvisor::shim
