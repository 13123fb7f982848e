// Tier 2: the plugin executor against fake plugins.
#include "network/plugin.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "network/fake_plugins_test_util.h"

namespace podvisor::network {
namespace {

using ::testing::HasSubstr;

class PluginTest : public ::testing::Test {
 protected:
  PluginCall Call(const std::string& type, CniCommand command = CniCommand::kAdd) {
    return PluginCall{
        .command = command,
        .type = type,
        .bin_dirs = {plugins_.dir() / "empty", plugins_.dir()},
        .container_id = "pod-1234",
        .netns = "/proc/1/ns/net",
        .ifname = "eth0",
        .args = "IgnoreUnknown=1;K8S_POD_NAME=web",
        .stdin_config = R"({"cniVersion":"1.0.0","name":"t","type":")" + type + "\"}"};
  }
  testing::FakePluginDir plugins_;
};

TEST_F(PluginTest, PassesEnvironmentAndStdinAndReturnsStdout) {
  plugins_.AddSucceeding("good", testing::BridgeResult());
  auto outcome = RunPlugin(Call("good"));
  ASSERT_TRUE(outcome) << outcome.error().message();
  ASSERT_TRUE(outcome->ok) << outcome->error->ToString();
  EXPECT_THAT(outcome->stdout_text, HasSubstr("10.99.0.5/16"));
  EXPECT_EQ(plugins_.Recorded(0, "stdin"), R"({"cniVersion":"1.0.0","name":"t","type":"good"})");
  std::string env = plugins_.Recorded(0, "env");
  EXPECT_THAT(env, HasSubstr("CNI_COMMAND=ADD\n"));
  EXPECT_THAT(env, HasSubstr("CNI_CONTAINERID=pod-1234\n"));
  EXPECT_THAT(env, HasSubstr("CNI_NETNS=/proc/1/ns/net\n"));
  EXPECT_THAT(env, HasSubstr("CNI_IFNAME=eth0\n"));
  EXPECT_THAT(env, HasSubstr("CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAME=web\n"));
  EXPECT_THAT(env, HasSubstr("CNI_PATH=" + (plugins_.dir() / "empty").string() + ":" +
                             plugins_.dir().string() + "\n"));
}

TEST_F(PluginTest, DecodesTheSpecErrorObject) {
  plugins_.Add("failing",
               R"(echo '{"cniVersion":"1.0.0","code":7,"msg":"no IP addresses available",)"
               R"("details":"range 10.99.0.0/30"}'; exit 1)");
  auto outcome = RunPlugin(Call("failing"));
  ASSERT_TRUE(outcome) << outcome.error().message();
  ASSERT_FALSE(outcome->ok);
  EXPECT_EQ(outcome->error->code, 7u);
  EXPECT_EQ(outcome->error->msg, "no IP addresses available");
  EXPECT_EQ(outcome->error->details, "range 10.99.0.0/30");
  EXPECT_EQ(outcome->error->ToString(),
            "no IP addresses available: range 10.99.0.0/30 (CNI error 7)");
}

TEST_F(PluginTest, APluginThatSaysSomethingElseIsQuoted) {
  plugins_.Add("crashing", "echo 'panic: runtime error' >&2; exit 2");
  auto outcome = RunPlugin(Call("crashing"));
  ASSERT_TRUE(outcome) << outcome.error().message();
  ASSERT_FALSE(outcome->ok);
  EXPECT_EQ(outcome->error->code, 0u);
  EXPECT_EQ(outcome->error->ToString(), "exited with status 2: panic: runtime error");
}

TEST_F(PluginTest, AHangingPluginIsKilledAtItsTimeout) {
  plugins_.Add("hanging", "exec sleep 60");
  PluginCall call = Call("hanging");
  call.timeout = std::chrono::milliseconds(300);
  auto start = std::chrono::steady_clock::now();
  auto outcome = RunPlugin(call);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(outcome) << outcome.error().message();
  ASSERT_FALSE(outcome->ok);
  EXPECT_EQ(outcome->error->ToString(), "did not finish within 300ms: killed");
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_LT(took, std::chrono::seconds(20));
}

TEST_F(PluginTest, AKilledPluginSaysBySignal) {
  plugins_.Add("suicidal", "kill -9 $$");
  auto outcome = RunPlugin(Call("suicidal"));
  ASSERT_TRUE(outcome) << outcome.error().message();
  ASSERT_FALSE(outcome->ok);
  EXPECT_EQ(outcome->error->ToString(), "killed by SIGKILL");
}

TEST_F(PluginTest, MissingBinaryNamesEveryDirectorySearched) {
  auto outcome = RunPlugin(Call("nonexistent"));
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code(), ENOENT);
  EXPECT_EQ(outcome.error().message(), "plugin binary nonexistent not found in " +
                                           (plugins_.dir() / "empty").string() + ":" +
                                           plugins_.dir().string());
}

TEST_F(PluginTest, LargeStdinDoesNotBlock) {
  plugins_.Add("echoing", "cat \"$calls/$n-echoing-ADD.stdin\"");
  PluginCall call = Call("echoing");
  call.stdin_config = std::string(300'000, 'x');  // far beyond a pipe's buffer
  auto outcome = RunPlugin(call);
  ASSERT_TRUE(outcome) << outcome.error().message();
  ASSERT_TRUE(outcome->ok);
  EXPECT_EQ(outcome->stdout_text.size(), 300'000u);
}

}  // namespace
}  // namespace podvisor::network
