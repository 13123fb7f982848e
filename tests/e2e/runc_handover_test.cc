// Test tier 3 (TESTING.md), real runc and CNI plugins: a pod that outlives
// its supervisor (docs/SEMANTICS.md S15). An upgrade in place and an
// adoption after SIGKILL keep the pod's IP and its CNI attachment (never
// ADDed again: network.json and the IPAM reservation unchanged), the
// containers' pids, and every log line; the stop afterwards leaves no veth,
// iptables rule, reservation or sandbox holder (RuncNetwork's leftovers
// check and E2eTest's).
#include <signal.h>

#include <thread>

#include "handover_support.h"
#include "runc_network_fixture.h"

namespace podvisor::e2e {
namespace {

using namespace handover;  // NOLINT(google-build-using-namespace)

class RuncHandover : public RuncNetwork {
 protected:
  std::map<std::string, pid_t> Pids() {
    return RuncPids(FindInPath("runc"), state_dir_ / pod_name_ / "runtime");
  }
  std::string NetworkJson() { return Slurp(state_dir_ / pod_name_ / "network.json"); }

  void WritePodWithChat(const std::string& name) {
    WritePod(PodYaml(
        name, "",
        "  containers:\n" + Web() + "  - {name: chat, image: img, command: " + ChattyCmd() + "}\n",
        "Always"));
  }
  void WaitForLines(long n) {
    for (int i = 0; i < 1500; ++i) {
      if (ReadNumberedLines(log_dir_, pod_name_, "chat").last >= n) return;
      std::this_thread::sleep_for(milliseconds(10));
    }
    ADD_FAILURE() << "the chatty container printed fewer than " << n << " lines";
  }
  void ExpectEveryLineOnce() {
    NumberedLines lines = ReadNumberedLines(log_dir_, pod_name_, "chat");
    EXPECT_GT(lines.count, 0);
    EXPECT_TRUE(lines.problems.empty()) << lines.count << " lines, n " << lines.first << " to n "
                                        << lines.last << ":" << lines.Problems();
  }
  void ExpectNoHolder() {
    EXPECT_THAT(ProcessesWith({"sandbox-init", dir_.string()}), ::testing::IsEmpty())
        << "a sandbox holder is left";
  }
};

TEST_F(RuncHandover, S15_2_AnUpgradeKeepsTheIpTheAttachmentThePidsAndEveryLogLine) {
  WritePodWithChat("up-net");
  StartRun(NetArgs());
  const std::string ip = RunningPodIp();
  ASSERT_FALSE(ip.empty());
  EXPECT_THAT(HttpGetEventually(ip, 8080, "hello-from-up-net"), ::testing::HasSubstr("hello"));
  WaitForLines(50);
  const auto pids = Pids();
  ASSERT_EQ(pids.size(), 2u) << PidsText(pids);
  const std::string network = NetworkJson();
  ASSERT_FALSE(network.empty());
  const auto reserved = Reservations();
  ASSERT_EQ(reserved.size(), 1u);

  for (int i = 0; i < 3; ++i) {
    auto up = Client({"upgrade", pod_name_});
    ASSERT_EQ(up.exit_code, 0) << "upgrade " << i << ": " << up.err;
  }
  auto pod = Status();
  ASSERT_TRUE(pod);
  EXPECT_EQ((*pod)["status"].value("podIP", ""), ip);
  EXPECT_EQ(NetworkJson(), network) << "the attachment was made again";
  EXPECT_EQ(Reservations(), reserved);
  EXPECT_EQ(Pids(), pids);
  for (const char* c : {"web", "chat"}) EXPECT_EQ(RestartCount(*pod, c), 0) << c;
  EXPECT_THAT(HttpGet(ip, 8080), ::testing::HasSubstr("hello-from-up-net"));
  EXPECT_EQ(WithReason(PodEvents(), "Upgraded").size(), 3u) << EventsText(PodEvents());
  WaitForLines(ReadNumberedLines(log_dir_, pod_name_, "chat").last + 50);
  StopPod();
  ExpectEveryLineOnce();
  ExpectNoHolder();
}

TEST_F(RuncHandover, S15_5_ASigkilledSupervisorsPodIsAdoptedWithItsIpAndPids) {
  WritePodWithChat("adopt-net");
  StartRun(NetArgs());
  const std::string ip = RunningPodIp();
  ASSERT_FALSE(ip.empty());
  WaitForLines(50);
  const auto pids = Pids();
  ASSERT_EQ(pids.size(), 2u) << PidsText(pids);
  const std::string network = NetworkJson();
  std::this_thread::sleep_for(milliseconds(300));  // the state file is written
  ASSERT_EQ(::kill(run_pid(), SIGKILL), 0);
  EXPECT_EQ(WaitRun(), -1);
  for (const auto& [id, pid] : pids) ASSERT_TRUE(Alive(pid)) << id;
  // Unsupervised, the pod still serves.
  EXPECT_THAT(HttpGet(ip, 8080), ::testing::HasSubstr("hello-from-adopt-net"));

  StartRun(NetArgs());
  auto pod = WaitUntilRunning();
  auto adopted = WithReason(PodEvents(), "Adopted");
  ASSERT_EQ(adopted.size(), 1u) << EventsText(PodEvents()) << RunStderr();
  EXPECT_THAT(adopted[0].value("message", ""),
              ::testing::HasSubstr("2 running container(s) adopted"));
  EXPECT_EQ(pod["status"].value("podIP", ""), ip);
  EXPECT_EQ(NetworkJson(), network) << "the attachment was made again";
  EXPECT_EQ(Reservations().size(), 1u);
  EXPECT_EQ(Pids(), pids);
  for (const char* c : {"web", "chat"}) EXPECT_EQ(RestartCount(pod, c), 0) << c;
  EXPECT_THAT(HttpGet(ip, 8080), ::testing::HasSubstr("hello-from-adopt-net"));
  WaitForLines(ReadNumberedLines(log_dir_, pod_name_, "chat").last + 50);
  StopPod();
  ExpectEveryLineOnce();
  ExpectNoHolder();
}

}  // namespace
}  // namespace podvisor::e2e
