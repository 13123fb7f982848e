#include "network/host_ports.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include "common/fd.h"

namespace podvisor::network {
namespace {

namespace fs = std::filesystem;

// A socket of `type` on 127.0.0.1 and a port the kernel picks; listening
// when TCP. Returns the port.
int BindLoopback(Fd& fd, int type) {
  fd = Fd(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  if (type == SOCK_STREAM) {
    EXPECT_EQ(::listen(fd.get(), 1), 0);
  }
  socklen_t len = sizeof a;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

TEST(HostPorts, AHostListenerIsSeenOnTheWildcardAndItsOwnAddress) {
  Fd tcp;
  const int port = BindLoopback(tcp, SOCK_STREAM);
  EXPECT_TRUE(HostProcessListens({port, 80, "tcp", ""}));
  EXPECT_TRUE(HostProcessListens({port, 80, "tcp", "127.0.0.1"}));
  EXPECT_FALSE(HostProcessListens({port, 80, "udp", ""}));
  tcp.Reset();
  EXPECT_FALSE(HostProcessListens({port, 80, "tcp", ""}));

  Fd udp;
  const int udp_port = BindLoopback(udp, SOCK_DGRAM);
  EXPECT_TRUE(HostProcessListens({udp_port, 53, "udp", ""}));
}

TEST(HostPorts, ARefusedPodHoldsNoPort) {
  const fs::path dir =
      fs::temp_directory_path() / ("host-ports-test-" + std::to_string(::getpid()));
  fs::create_directories(dir / "a" / "web");
  Fd tcp;
  const int busy = BindLoopback(tcp, SOCK_STREAM);
  Fd free_probe;
  const int free_port = BindLoopback(free_probe, SOCK_STREAM);
  free_probe.Reset();  // free again (a race with the host is harmless here)
  const ClaimOwner a{dir / "a", "web"};
  auto refused =
      ClaimHostPorts(dir / "claims", a, {{free_port, 80, "tcp", ""}, {busy, 81, "tcp", ""}});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message().rfind("hostPort " + std::to_string(busy) +
                                                "/TCP: a host "
                                                "process listens on it",
                                            0),
            0u)
      << refused.error().message();
  EXPECT_TRUE(fs::is_empty(dir / "claims" / kHostPortClaims));

  auto held = ClaimHostPorts(dir / "claims", a, {{free_port, 80, "tcp", ""}});
  ASSERT_TRUE(held) << held.error().message();
  auto other = ClaimHostPorts(dir / "claims", {dir / "b", "web"}, {{free_port, 90, "tcp", ""}});
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().message(), "hostPort " + std::to_string(free_port) +
                                         "/TCP is held by pod web of state directory " +
                                         (dir / "a").string() + " (running)");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace podvisor::network
