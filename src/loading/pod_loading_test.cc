// The loader as a library: it prints nothing, and what the CLI prints and
// the shim sends comes back as lines, in order, escaped for a terminal.
#include "loading/pod_loading.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace podvisor::loading {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

class PodLoading : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/podvisor-loading-XXXXXX";
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  void WritePod(const std::string& yaml) { std::ofstream(dir_ / "pod.yaml") << yaml; }

  std::filesystem::path dir_;
};

constexpr const char* kValid =
    "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
    "spec:\n  containers:\n  - name: app\n    image: busybox\n    command: [sleep, '1']\n";

TEST_F(PodLoading, ValidPodWithoutImageChecksLoadsSilently) {
  WritePod(kValid);
  LoadedPod loaded = LoadPod(dir_, /*check_images=*/false);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded.failure, LoadFailure::kNone);
  EXPECT_EQ(loaded.pod.metadata.name, "web");
  EXPECT_THAT(loaded.messages, IsEmpty());
  EXPECT_THAT(loaded.problems, IsEmpty());
}

TEST_F(PodLoading, InvalidPodReturnsEachProblemAndTheSummaryLast) {
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
      "spec:\n  restartPolicy: Sometimes\n  containers:\n  - name: App\n    image: busybox\n");
  LoadedPod loaded = LoadPod(dir_, /*check_images=*/false);
  EXPECT_EQ(loaded.failure, LoadFailure::kInvalid);
  ASSERT_EQ(loaded.problems.size(), 2u);
  EXPECT_THAT(loaded.problems, testing::Contains(HasSubstr("spec.restartPolicy")));
  EXPECT_THAT(loaded.problems, testing::Contains(HasSubstr("spec.containers[0].name")));
  ASSERT_EQ(loaded.messages.size(), 3u);
  EXPECT_EQ(loaded.messages.back(), "podvisor: pod \"web\" is invalid: 2 problems");
}

// S16.4: an image the bundle lacks is pulled by run; it must be a valid
// registry reference, which only the images' check looks at.
TEST_F(PodLoading, ImageNotInTheBundleIsARegistryReference) {
  WritePod(kValid);
  EXPECT_TRUE(LoadPod(dir_, /*check_images=*/false).ok());
  EXPECT_TRUE(LoadPod(dir_, /*check_images=*/true).ok());
  std::string invalid = kValid;
  const std::size_t at = invalid.find("image: busybox");
  ASSERT_NE(at, std::string::npos);
  invalid.replace(at, std::string("image: busybox").size(), "image: BusyBox");
  WritePod(invalid);
  EXPECT_TRUE(LoadPod(dir_, /*check_images=*/false).ok());
  LoadedPod loaded = LoadPod(dir_, /*check_images=*/true);
  EXPECT_EQ(loaded.failure, LoadFailure::kInvalid);
  EXPECT_THAT(loaded.problems,
              ElementsAre(AllOf(HasSubstr("spec.containers[0].image"), HasSubstr("lowercase"))));
}

TEST_F(PodLoading, NeverForAnImageTheBundleLacksIsAWarning) {
  std::string never = kValid;
  const std::size_t at = never.find("image: busybox");
  ASSERT_NE(at, std::string::npos);
  never.insert(at + std::string("image: busybox").size(), "\n    imagePullPolicy: Never");
  WritePod(never);
  LoadedPod loaded = LoadPod(dir_, /*check_images=*/true);
  EXPECT_TRUE(loaded.ok());
  EXPECT_THAT(loaded.messages,
              Contains(AllOf(StartsWith("Warning: "), HasSubstr("ErrImageNeverPull"))));
}

TEST_F(PodLoading, UnreadablePathIsTheHostsFailureNotTheUsers) {
  LoadedPod missing = LoadPod(dir_ / "nothing-here", /*check_images=*/false);
  EXPECT_EQ(missing.failure, LoadFailure::kUnreadable);
  EXPECT_THAT(missing.problems, IsEmpty());
  ASSERT_EQ(missing.messages.size(), 1u);
  EXPECT_THAT(missing.messages[0], StartsWith("podvisor: "));

  LoadedPod not_a_bundle = LoadPodForRun(dir_ / "nothing-here");
  EXPECT_EQ(not_a_bundle.failure, LoadFailure::kUnreadable);
  EXPECT_THAT(not_a_bundle.messages, ElementsAre(HasSubstr("is not a bundle directory")));
}

TEST_F(PodLoading, ForRunTcpSocketHookIsAWarningAndAHostNameAProblem) {
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
      "spec:\n  containers:\n  - name: app\n    image: busybox\n    command: [sleep, '1']\n"
      "    lifecycle:\n      preStop:\n        tcpSocket: {port: 80}\n"
      "    readinessProbe:\n      httpGet: {host: example.invalid, port: 80}\n");
  LoadedPod loaded = LoadPodForRun(dir_);
  EXPECT_EQ(loaded.failure, LoadFailure::kInvalid);
  EXPECT_THAT(loaded.messages,
              testing::Contains(AllOf(StartsWith("Warning: "), HasSubstr("tcpSocket hooks"))));
  EXPECT_THAT(loaded.problems, testing::Contains(AllOf(HasSubstr("readinessProbe.httpGet.host"),
                                                       HasSubstr("needs an IP address"))));
}

// validate never passes what run refuses: the same host-name problem
// comes from LoadPod, with or without the image checks.
TEST_F(PodLoading, ValidateRefusesAProbeHostNameAsRunDoes) {
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
      "spec:\n  containers:\n  - name: app\n    image: busybox\n    command: [sleep, '1']\n"
      "    livenessProbe:\n      httpGet: {host: web.local, port: 80}\n"
      "    lifecycle:\n      postStart:\n        tcpSocket: {host: db.local, port: 5432}\n");
  LoadedPod loaded = LoadPod(dir_, /*check_images=*/false);
  EXPECT_EQ(loaded.failure, LoadFailure::kInvalid);
  EXPECT_THAT(loaded.problems, testing::Contains(AllOf(HasSubstr("livenessProbe.httpGet.host"),
                                                       HasSubstr("needs an IP address"))));
  EXPECT_THAT(loaded.problems, testing::Contains(HasSubstr("lifecycle.postStart.tcpSocket.host")));
}

TEST_F(PodLoading, ProblemsQuotingPodTextAreEscapedForATerminal) {
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
      "spec:\n  restartPolicy: \"\\e[31mred\"\n  containers:\n  - name: app\n"
      "    image: busybox\n");
  LoadedPod loaded = LoadPod(dir_, /*check_images=*/false);
  ASSERT_EQ(loaded.failure, LoadFailure::kInvalid);
  for (const std::string& line : loaded.messages) {
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  }
}

TEST(PodNetworkRules, HostPortNeedsANetworkAndCniNeedsTheSandbox) {
  pod::Pod pod;
  pod.spec.containers.emplace_back();
  pod.spec.containers[0].name = "app";
  pod.spec.containers[0].ports.emplace_back();
  pod.spec.containers[0].ports[0].container_port = 80;
  pod.spec.containers[0].ports[0].host_port = 8080;
  EXPECT_THAT(CheckPodNetwork(pod, network::NetworkMode::kNone, true).value_or(""),
              HasSubstr("hostPort 8080 needs a pod network"));
  EXPECT_THAT(CheckPodNetwork(pod, network::NetworkMode::kHost, true).value_or(""),
              HasSubstr("differs from containerPort 80"));
  EXPECT_FALSE(CheckPodNetwork(pod, network::NetworkMode::kCni, true));
  EXPECT_THAT(CheckPodNetwork(pod, network::NetworkMode::kCni, false).value_or(""),
              HasSubstr("needs the pod's own network namespace"));
}

TEST(PodNetworkRules, S22_1_UserModeNetworksNeedTheSandboxAndForwardTcpAndUdpOnly) {
  pod::Pod pod;
  pod.spec.containers.emplace_back();
  pod.spec.containers[0].name = "app";
  pod.spec.containers[0].ports.emplace_back();
  pod.spec.containers[0].ports[0].container_port = 80;
  pod.spec.containers[0].ports[0].host_port = 8080;
  pod.spec.containers[0].ports[0].protocol = "UDP";
  for (auto mode : {network::NetworkMode::kSlirp4netns, network::NetworkMode::kPasta}) {
    EXPECT_FALSE(CheckPodNetwork(pod, mode, true)) << network::NetworkModeName(mode);
    EXPECT_THAT(CheckPodNetwork(pod, mode, false).value_or(""),
                HasSubstr(std::string("--network ") + network::NetworkModeName(mode) +
                          " needs the pod's own network namespace"));
  }
  pod.spec.containers[0].ports[0].protocol = "SCTP";
  EXPECT_THAT(CheckPodNetwork(pod, network::NetworkMode::kPasta, true).value_or(""),
              HasSubstr("container app: hostPort 8080/SCTP: --network pasta forwards only TCP "
                        "and UDP"));
  pod.spec.containers[0].ports[0].protocol = "TCP";
  pod.spec.containers[0].ports[0].host_ip = "::1";
  EXPECT_FALSE(CheckPodNetwork(pod, network::NetworkMode::kPasta, true));
  EXPECT_THAT(CheckPodNetwork(pod, network::NetworkMode::kSlirp4netns, true).value_or(""),
              HasSubstr("only to IPv4 host addresses"));
}

}  // namespace
}  // namespace podvisor::loading
