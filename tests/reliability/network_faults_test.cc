// Reliability: a pod network that fails is a clear error before any
// container starts, with nothing left behind (docs/INTERFACE.md
// "Networking", exit 3), and what a pod attached is released even when
// the DEL fails once or the supervisor is SIGKILLed:
//   plugin binary missing              exit 3, the binary and directories named
//   invalid configuration list         exit 3, the file and field named
//   a plugin's error                   exit 3, its message and code; every plugin DELed
//   DEL failing at the end             warning; the next run DELs again
//   supervisor SIGKILLed               the next run DELs, in the pinned namespace
// The plugins are fake (shell scripts the test writes, which record their
// calls), the runtime the fake one: nothing touches the host's network.
// The pod's own network namespace needs root.
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tiers.h"

namespace podvisor::e2e {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A meta plugin's ADD: the prevResult it was given is its result.
const std::string kEchoPrevResult =
    "python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)[\"prevResult\"]))'";

class NetworkFaults : public FakeRuntimeTier {
 protected:
  TierConfig Tier() const override {
    TierConfig t = FakeRuntimeTier::Tier();
    t.extra_run_args = {"--sandbox", "namespaces"};  // the pod's own network namespace
    return t;
  }
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (the pod's own network namespace)";
    FakeRuntimeTier::SetUp();
    conf_dir_ = dir_ / "net.d";
    bin_dir_ = dir_ / "cni-bin";
    fs::create_directories(conf_dir_);
    fs::create_directories(bin_dir_);
    WriteList({"fakebr", "fakepm"});
    // Records "COMMAND NETNS" per call; ADD answers a 1.0.0 result.
    AddPlugin("fakebr",
              "if [ \"$CNI_COMMAND\" = ADD ]; then echo '{\"cniVersion\":\"1.0.0\","
              "\"interfaces\":[{\"name\":\"eth0\",\"sandbox\":\"'$CNI_NETNS'\"}],"
              "\"ips\":[{\"address\":\"10.250.0.5/24\",\"interface\":0}]}'; fi");
    AddPlugin("fakepm", "if [ \"$CNI_COMMAND\" = ADD ]; then " + kEchoPrevResult +
                            "; "
                            "fi");
  }

  void WriteList(const std::vector<std::string>& types) {
    std::string plugins;
    for (const auto& t : types) {
      plugins += std::string(plugins.empty() ? "" : ",") + "{\"type\":\"" + t + "\"}";
    }
    std::ofstream(conf_dir_ / "10-fake.conflist")
        << R"({"cniVersion":"1.0.0","name":"fakenet","plugins":[)" << plugins << "]}";
  }

  void AddPlugin(const std::string& type, const std::string& body) {
    fs::path file = bin_dir_ / type;
    std::ofstream(file) << "#!/bin/sh\necho \"" << type << " $CNI_COMMAND $CNI_NETNS\" >> "
                        << (dir_ / "calls.log").string() << "\n"
                        << body << "\nexit 0\n";
    ::chmod(file.c_str(), 0755);
  }

  // "fakebr ADD", ... (the namespace path left out).
  std::vector<std::string> Calls() {
    std::ifstream in(dir_ / "calls.log");
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) {
      std::istringstream f(line);
      std::string type, cmd;
      f >> type >> cmd;
      out.push_back(type + " " + cmd);
    }
    return out;
  }
  std::vector<std::string> CallNetns() {
    std::ifstream in(dir_ / "calls.log");
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) {
      std::istringstream f(line);
      std::string type, cmd, netns;
      f >> type >> cmd >> netns;
      out.push_back(netns);
    }
    return out;
  }

  std::vector<std::string> NetArgs() {
    return {"--network",        "cni",           "--cni-conf-dir",
            conf_dir_.string(), "--cni-bin-dir", bin_dir_.string()};
  }

  void ExpectNothingStarted(const std::string& pod) {
    EXPECT_FALSE(fs::exists(state_dir_ / pod)) << "a pod that cannot run leaves no state";
    EXPECT_TRUE(HelperEvents().empty()) << Describe(HelperEvents());
  }

  fs::path conf_dir_, bin_dir_;
};

std::string App(const std::string& name) {
  return PodHeader(name, "Always", 1) + "  containers:\n" +
         PodEntry("app", HelperCmd("app", "trap-sigterm 0 0"));
}

TEST_F(NetworkFaults, MissingPluginBinaryExitsThreeNamingIt) {
  WriteList({"fakebr", "nosuchplugin"});
  WritePod(App("net-missing"));
  EXPECT_EQ(Run(NetArgs()), 3) << RunStderr();
  EXPECT_THAT(RunStderr(), HasSubstr("network fakenet: plugin nosuchplugin ADD: plugin binary "
                                     "nosuchplugin not found in " +
                                     bin_dir_.string()));
  // fakebr's ADD is undone; the missing one cannot be called at all.
  EXPECT_THAT(Calls(), ElementsAre("fakebr ADD", "fakebr DEL"));
  ExpectNothingStarted("net-missing");
}

TEST_F(NetworkFaults, InvalidConfigurationExitsThreeNamingFileAndField) {
  std::ofstream(conf_dir_ / "10-fake.conflist") << R"({"cniVersion":"1.0.0","name":"fakenet",
    "plugins":[{"type":"fakebr"},{"bridge":"x"}]})";
  WritePod(App("net-badconf"));
  EXPECT_EQ(Run(NetArgs()), 3) << RunStderr();
  EXPECT_THAT(RunStderr(), HasSubstr("10-fake.conflist: plugins[1]: \"type\" must be a non-empty "
                                     "string"));
  EXPECT_TRUE(Calls().empty());
  ExpectNothingStarted("net-badconf");
}

TEST_F(NetworkFaults, PluginErrorKeepsItsMessageAndCodeAndEveryPluginIsDeleted) {
  AddPlugin("fakepm",
            "if [ \"$CNI_COMMAND\" = ADD ]; then echo '{\"cniVersion\":\"1.0.0\",\"code\":7,"
            "\"msg\":\"no IP addresses available in range set\",\"details\":\"10.250.0.0/30\"}'; "
            "exit 1; fi");
  WritePod(App("net-plugin-error"));
  EXPECT_EQ(Run(NetArgs()), 3) << RunStderr();
  EXPECT_THAT(RunStderr(), HasSubstr("network fakenet: plugin fakepm ADD: no IP addresses "
                                     "available in range set: 10.250.0.0/30 (CNI error 7)"));
  EXPECT_THAT(Calls(), ElementsAre("fakebr ADD", "fakepm ADD", "fakepm DEL", "fakebr DEL"));
  ExpectNothingStarted("net-plugin-error");
}

TEST_F(NetworkFaults, AFailedDelIsRetriedByTheNextRun) {
  // fakepm's first DEL fails; later ones succeed.
  std::string marker = (dir_ / "del-failed").string();
  AddPlugin("fakepm", "if [ \"$CNI_COMMAND\" = ADD ]; then " + kEchoPrevResult +
                          "; "
                          "fi\nif [ \"$CNI_COMMAND\" = DEL ] && [ ! -e " +
                          marker + " ]; then touch " + marker +
                          "; echo '{\"code\":11,\"msg\":\"iptables is locked\"}'; exit 1; fi");
  WritePod(App("net-del"));
  StartRun(NetArgs());
  auto pod = WaitUntilRunning();
  EXPECT_EQ(pod["status"].value("podIP", ""), "10.250.0.5");
  // S14.30: stop says what the supervisor could not remove, and fails.
  auto stop = Client({"stop"});
  EXPECT_EQ(stop.exit_code, 1);
  EXPECT_THAT(stop.err, HasSubstr("left its network attachment"));
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  EXPECT_THAT(RunStderr(), HasSubstr("iptables is locked (CNI error 11)"));
  EXPECT_TRUE(fs::exists(state_dir_ / "net-del" / "network.json")) << "kept for the next try";

  StartRun(NetArgs());
  WaitUntilRunning();
  EXPECT_THAT(RunStderr(), HasSubstr("network detached"));
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  EXPECT_THAT(Calls(), ElementsAre("fakebr ADD", "fakepm ADD", "fakepm DEL", "fakebr DEL",
                                   "fakepm DEL", "fakebr DEL",  // recovery
                                   "fakebr ADD", "fakepm ADD", "fakepm DEL", "fakebr DEL"));
  EXPECT_FALSE(fs::exists(state_dir_ / "net-del" / "network.json"));
}

// The holder is killed too: a pod that cannot be adopted (S15.6).
TEST_F(NetworkFaults, ASigkilledSupervisorsAttachmentIsDeletedInItsPinnedNamespace) {
  WritePod(App("net-kill"));
  StartRun(NetArgs());
  WaitUntilRunning();
  ::kill(run_pid(), SIGKILL);
  WaitRun();
  ASSERT_NE(EndKeptHolder(state_dir_ / "net-kill"), 0) << "no sandbox holder was kept";
  ASSERT_TRUE(fs::exists(state_dir_ / "net-kill" / "network.json"));
  StartRun(NetArgs());
  WaitUntilRunning();
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  auto calls = Calls();
  auto netns = CallNetns();
  ASSERT_THAT(calls, ElementsAre("fakebr ADD", "fakepm ADD", "fakepm DEL", "fakebr DEL",
                                 "fakebr ADD", "fakepm ADD", "fakepm DEL", "fakebr DEL"));
  // The plugins always get the pin under the pod's directory, which
  // outlived the killed supervisor; it is gone once the pod ended.
  std::string pin = (state_dir_ / "net-kill" / "ns" / "net").string();
  for (const auto& path : netns) EXPECT_EQ(path, pin);
  EXPECT_FALSE(fs::exists(pin));
}

// S15.5: an adopted pod's attachment is taken over, never ADDed again, and
// DELeted once when the pod ends.
TEST_F(NetworkFaults, AnAdoptedPodsAttachmentIsNeverAddedAgain) {
  WritePod(App("net-adopt"));
  StartRun(NetArgs());
  auto before = WaitUntilRunning();
  ::kill(run_pid(), SIGKILL);
  WaitRun();
  StartRun(NetArgs());
  auto after = WaitUntilRunning();
  EXPECT_THAT(RunStderr(), HasSubstr("Adopted"));
  EXPECT_EQ(after["status"].value("podIP", "?"), before["status"].value("podIP", "-"));
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  EXPECT_THAT(Calls(), ElementsAre("fakebr ADD", "fakepm ADD", "fakepm DEL", "fakebr DEL"));
  EXPECT_FALSE(fs::exists(state_dir_ / "net-adopt" / "network.json"));
}

}  // namespace
}  // namespace podvisor::e2e
