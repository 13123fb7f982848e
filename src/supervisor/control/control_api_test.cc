// ControlApi against a fake PodControl: every request kind reaches the pod
// as the interface describes, and every bad request is answered with its
// code (control_error.h) without anything being asked of the pod.
#include "supervisor/control/control_api.h"

#include <csignal>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace podvisor::supervisor::control {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Answers from fixed facts and records what the API made the pod do.
class FakePod final : public PodControl {
 public:
  ControlReply StatusReply() override { return json{{"kind", "Pod"}}; }
  std::optional<std::string> StatusText(bool wide) override {
    if (!renders_text) return std::nullopt;
    return wide ? "WIDE" : "TABLE";
  }
  json Summary() override { return {{"name", "web"}}; }
  std::optional<json> FinalStatus() override {
    if (!ended) return std::nullopt;
    return json{{"kind", "Pod"}, {"final", true}};
  }
  void RequestStop(StopOrder order, ControlServer::Responder on_end) override {
    actions.push_back("stop");
    stops.push_back(std::move(order));
    stop_waiter = std::move(on_end);
  }
  ContainerRun RunOf(const std::string& container) override {
    auto it = runs.find(container);
    return it == runs.end() ? ContainerRun::kUnknown : it->second;
  }
  Status SignalContainer(const std::string& container, int signo) override {
    actions.push_back("signal " + container + " " + std::to_string(signo));
    if (signal_fails) return Error("pidfd_send_signal: ESRCH");
    return Ok();
  }
  Result<ExecPlan> PrepareExec(const ExecOrder& order) override {
    actions.push_back("exec " + order.container);
    execs.push_back(order);
    if (exec_fails) return Error("writing the process file: ENOSPC");
    return ExecPlan{{"runc", "exec", "--process", "/p.json", "id"}, "/p.json"};
  }
  std::string NetnsPath() override { return "/proc/7/ns/net"; }
  void RequestUpgrade(UpgradeOrder order, ControlServer::Responder respond) override {
    actions.push_back("upgrade");
    upgrades.push_back(std::move(order));
    upgrade_waiter = std::move(respond);
  }
  ControlReply Resize(const std::vector<pod::ContainerResizePatch>& patch) override {
    std::string line = "resize";
    for (const auto& p : patch) line += " " + p.name;
    actions.push_back(line);
    resizes.push_back(patch);
    return json{{"kind", "Pod"}, {"resized", true}};
  }

  bool renders_text = true;
  bool ended = false;
  bool signal_fails = false;
  bool exec_fails = false;
  std::map<std::string, ContainerRun> runs = {{"app", ContainerRun::kRunning},
                                              {"warming", ContainerRun::kStarting},
                                              {"done", ContainerRun::kNotRunning}};
  std::vector<std::string> actions;
  std::vector<StopOrder> stops;
  std::vector<ExecOrder> execs;
  ControlServer::Responder stop_waiter;
  std::vector<UpgradeOrder> upgrades;
  ControlServer::Responder upgrade_waiter;
  std::vector<std::vector<pod::ContainerResizePatch>> resizes;
};

class ControlApiTest : public ::testing::Test {
 protected:
  // The replies to `request`, in the order the API sent them.
  std::vector<json> Replies(const json& request) {
    std::vector<json> replies;
    api_.Handle(request, [&replies](const ControlReply& reply) {
      replies.push_back(json::parse(reply.line()));
    });
    return replies;
  }
  // The one reply `request` gets at once.
  json Ask(const json& request) {
    std::vector<json> replies = Replies(request);
    EXPECT_EQ(replies.size(), 1u) << request.dump();
    return replies.empty() ? json() : replies.front();
  }
  // `request` is refused with `code` and the pod is asked to do nothing.
  void ExpectRefused(const json& request, ControlCode code) {
    json reply = Ask(request);
    auto error = ControlErrorOf(reply);
    ASSERT_TRUE(error) << request.dump() << " -> " << reply.dump();
    EXPECT_EQ(error->code, code) << request.dump() << " -> " << reply.dump();
    EXPECT_THAT(pod_.actions, IsEmpty()) << request.dump();
  }

  FakePod pod_;
  ControlApi api_{pod_};
};

TEST_F(ControlApiTest, StatusRepliesThePodsStatus) {
  EXPECT_EQ(Ask({{"op", "status"}}), (json{{"kind", "Pod"}}));
  EXPECT_EQ(Ask({{"op", "status"}, {"output", nullptr}}), (json{{"kind", "Pod"}}));
}

TEST_F(ControlApiTest, StatusTextIsTableOrWide) {
  EXPECT_EQ(Ask({{"op", "status"}, {"output", "table"}}), (json{{"text", "TABLE"}}));
  EXPECT_EQ(Ask({{"op", "status"}, {"output", "wide"}}), (json{{"text", "WIDE"}}));
  ExpectRefused({{"op", "status"}, {"output", "yaml"}}, ControlCode::kInvalidArgument);
  ExpectRefused({{"op", "status"}, {"output", 1}}, ControlCode::kInvalidArgument);
}

TEST_F(ControlApiTest, StatusTextFromASupervisorThatRendersNoneIsUnimplemented) {
  pod_.renders_text = false;
  ExpectRefused({{"op", "status"}, {"output", "table"}}, ControlCode::kUnimplemented);
}

TEST_F(ControlApiTest, SummaryRepliesThePodsSummary) {
  EXPECT_EQ(Ask({{"op", "summary"}}), (json{{"name", "web"}}));
}

TEST_F(ControlApiTest, NetnsRepliesThePodsNamespace) {
  EXPECT_EQ(Ask({{"op", "netns"}}), (json{{"path", "/proc/7/ns/net"}}));
}

TEST_F(ControlApiTest, StopWaitsForTheEndByDefault) {
  EXPECT_THAT(Replies({{"op", "stop"}, {"reason", "upgrade"}, {"grace", 2.5}}), IsEmpty());
  ASSERT_THAT(pod_.actions, ElementsAre("stop"));
  EXPECT_EQ(pod_.stops[0].reason, "upgrade");
  EXPECT_EQ(pod_.stops[0].grace, std::optional<Duration>(2500ms));
  EXPECT_TRUE(pod_.stop_waiter);
}

TEST_F(ControlApiTest, StopWithoutReasonOrGraceLeavesThemUnset) {
  EXPECT_THAT(Replies({{"op", "stop"}, {"reason", nullptr}, {"grace", nullptr}}), IsEmpty());
  ASSERT_THAT(pod_.actions, ElementsAre("stop"));
  EXPECT_EQ(pod_.stops[0].reason, std::nullopt);
  EXPECT_EQ(pod_.stops[0].grace, std::nullopt);
}

TEST_F(ControlApiTest, StopWithoutWaitAnswersAtOnceAndLeavesNoWaiter) {
  EXPECT_EQ(Ask({{"op", "stop"}, {"wait", false}}), (json{{"stopping", true}}));
  ASSERT_THAT(pod_.actions, ElementsAre("stop"));
  EXPECT_FALSE(pod_.stop_waiter);
}

TEST_F(ControlApiTest, StopAfterTheEndRepliesTheFinalStatusAndStopsNothing) {
  pod_.ended = true;
  EXPECT_EQ(Ask({{"op", "stop"}, {"wait", false}}), (json{{"kind", "Pod"}, {"final", true}}));
  EXPECT_THAT(pod_.actions, IsEmpty());
}

TEST_F(ControlApiTest, StopWithABadReasonOrGraceIsInvalidArgument) {
  for (const json& reason : {json(""), json(std::string(257, 'a')), json("tab\there"), json(7)}) {
    ExpectRefused({{"op", "stop"}, {"reason", reason}}, ControlCode::kInvalidArgument);
  }
  for (const json& grace : {json(-1), json("5"), json(2e9)}) {
    ExpectRefused({{"op", "stop"}, {"grace", grace}}, ControlCode::kInvalidArgument);
  }
  EXPECT_THAT(Replies({{"op", "stop"}, {"reason", std::string(256, 'a')}}), IsEmpty());
}

TEST_F(ControlApiTest, KillDeliversANamedOrNumberedSignal) {
  EXPECT_EQ(Ask({{"op", "kill"}, {"container", "app"}, {"signal", "TERM"}}),
            (json{{"container", "app"}, {"signal", "SIGTERM"}}));
  EXPECT_EQ(Ask({{"op", "kill"}, {"container", "app"}, {"signal", SIGHUP}}),
            (json{{"container", "app"}, {"signal", "SIGHUP"}}));
  EXPECT_THAT(pod_.actions, ElementsAre("signal app " + std::to_string(SIGTERM),
                                        "signal app " + std::to_string(SIGHUP)));
}

TEST_F(ControlApiTest, KillWithoutSignalIsSigkill) {
  EXPECT_EQ(Ask({{"op", "kill"}, {"container", "app"}}),
            (json{{"container", "app"}, {"signal", "SIGKILL"}}));
  EXPECT_THAT(pod_.actions, ElementsAre("signal app " + std::to_string(SIGKILL)));
}

TEST_F(ControlApiTest, KillReachesAStartingContainer) {
  EXPECT_EQ(Ask({{"op", "kill"}, {"container", "warming"}, {"signal", "INT"}}),
            (json{{"container", "warming"}, {"signal", "SIGINT"}}));
}

TEST_F(ControlApiTest, KillWithABadContainerOrSignalIsInvalidArgument) {
  ExpectRefused({{"op", "kill"}}, ControlCode::kInvalidArgument);
  ExpectRefused({{"op", "kill"}, {"container", 3}}, ControlCode::kInvalidArgument);
  ExpectRefused({{"op", "kill"}, {"container", "app"}, {"signal", "SIGNOPE"}},
                ControlCode::kInvalidArgument);
  ExpectRefused({{"op", "kill"}, {"container", "app"}, {"signal", 0}},
                ControlCode::kInvalidArgument);
  ExpectRefused({{"op", "kill"}, {"container", "app"}, {"signal", SIGRTMAX + 1}},
                ControlCode::kInvalidArgument);
  ExpectRefused({{"op", "kill"}, {"container", "app"}, {"signal", 9.5}},
                ControlCode::kInvalidArgument);
  ExpectRefused({{"op", "kill"}, {"container", "app"}, {"signal", json::array()}},
                ControlCode::kInvalidArgument);
}

TEST_F(ControlApiTest, KillOfAnUnknownContainerIsNotFound) {
  ExpectRefused({{"op", "kill"}, {"container", "ghost"}, {"signal", "TERM"}},
                ControlCode::kNotFound);
}

TEST_F(ControlApiTest, KillOfAContainerNotRunningIsFailedPrecondition) {
  ExpectRefused({{"op", "kill"}, {"container", "done"}}, ControlCode::kFailedPrecondition);
}

TEST_F(ControlApiTest, KillThatCannotBeDeliveredIsInternal) {
  pod_.signal_fails = true;
  json reply = Ask({{"op", "kill"}, {"container", "app"}});
  ASSERT_TRUE(ControlErrorOf(reply));
  EXPECT_EQ(ControlErrorOf(reply)->code, ControlCode::kInternal);
  EXPECT_EQ(ControlErrorOf(reply)->message, "pidfd_send_signal: ESRCH");
}

TEST_F(ControlApiTest, ExecRepliesTheCommandLineAndProcessFile) {
  EXPECT_EQ(
      Ask({{"op", "exec"}, {"container", "app"}, {"args", {"sh", "-c", "id"}}}),
      (json{{"argv", {"runc", "exec", "--process", "/p.json", "id"}}, {"processFile", "/p.json"}}));
  ASSERT_EQ(pod_.execs.size(), 1u);
  EXPECT_EQ(pod_.execs[0].container, "app");
  EXPECT_THAT(pod_.execs[0].args, ElementsAre("sh", "-c", "id"));
  EXPECT_FALSE(pod_.execs[0].tty);
  EXPECT_EQ(pod_.execs[0].console_size, std::nullopt);
}

TEST_F(ControlApiTest, ExecWithATerminalCarriesItsSocketAndWindowSize) {
  Ask({{"op", "exec"},
       {"container", "app"},
       {"args", {"sh"}},
       {"tty", true},
       {"console_socket", "/run/x/console.sock"},
       {"console_size", {{"height", 40}, {"width", 120}}}});
  ASSERT_EQ(pod_.execs.size(), 1u);
  EXPECT_TRUE(pod_.execs[0].tty);
  EXPECT_EQ(pod_.execs[0].console_socket, "/run/x/console.sock");
  EXPECT_EQ(pod_.execs[0].console_size, (std::optional<std::pair<int, int>>({40, 120})));
}

TEST_F(ControlApiTest, ExecLeavesOutAWindowSizeOutOfRangeOrWithoutTerminal) {
  Ask({{"op", "exec"},
       {"container", "app"},
       {"args", {"sh"}},
       {"tty", true},
       {"console_socket", "/s"},
       {"console_size", {{"height", 0}, {"width", 120}}}});
  Ask({{"op", "exec"},
       {"container", "app"},
       {"args", {"sh"}},
       {"console_size", {{"height", 40}, {"width", 120}}}});
  ASSERT_EQ(pod_.execs.size(), 2u);
  EXPECT_EQ(pod_.execs[0].console_size, std::nullopt);
  EXPECT_EQ(pod_.execs[1].console_size, std::nullopt);
}

TEST_F(ControlApiTest, ExecWithBadArgumentsIsInvalidArgument) {
  ExpectRefused({{"op", "exec"}, {"args", {"sh"}}}, ControlCode::kInvalidArgument);
  ExpectRefused({{"op", "exec"}, {"container", "app"}}, ControlCode::kInvalidArgument);
  ExpectRefused({{"op", "exec"}, {"container", "app"}, {"args", json::array()}},
                ControlCode::kInvalidArgument);
  ExpectRefused({{"op", "exec"}, {"container", "app"}, {"args", "sh"}},
                ControlCode::kInvalidArgument);
  ExpectRefused({{"op", "exec"}, {"container", "app"}, {"args", json::array({"sh", 1})}},
                ControlCode::kInvalidArgument);
  ExpectRefused({{"op", "exec"}, {"container", "app"}, {"args", {"sh"}}, {"tty", true}},
                ControlCode::kInvalidArgument);
}

TEST_F(ControlApiTest, ExecInAnUnknownContainerIsNotFound) {
  ExpectRefused({{"op", "exec"}, {"container", "ghost"}, {"args", {"sh"}}}, ControlCode::kNotFound);
}

TEST_F(ControlApiTest, ExecInAContainerNotRunningOrStartingIsFailedPrecondition) {
  ExpectRefused({{"op", "exec"}, {"container", "done"}, {"args", {"sh"}}},
                ControlCode::kFailedPrecondition);
  ExpectRefused({{"op", "exec"}, {"container", "warming"}, {"args", {"sh"}}},
                ControlCode::kFailedPrecondition);
}

TEST_F(ControlApiTest, ExecWhoseProcessFileCannotBeWrittenIsInternal) {
  pod_.exec_fails = true;
  json reply = Ask({{"op", "exec"}, {"container", "app"}, {"args", {"sh"}}});
  ASSERT_TRUE(ControlErrorOf(reply));
  EXPECT_EQ(ControlErrorOf(reply)->code, ControlCode::kInternal);
}

TEST_F(ControlApiTest, S15_2_UpgradeReachesThePodWithItsBinaryAndTimeout) {
  EXPECT_THAT(Replies({{"op", "upgrade"}, {"binary", "/usr/bin/podvisor"}, {"timeout_ms", 5000}}),
              IsEmpty())
      << "the executor answers, not the API";
  ASSERT_EQ(pod_.upgrades.size(), 1u);
  EXPECT_EQ(pod_.upgrades[0].binary, "/usr/bin/podvisor");
  EXPECT_EQ(pod_.upgrades[0].timeout, 5000ms);
  ASSERT_TRUE(pod_.upgrade_waiter);
  // The executor's reply goes to the client as it is.
  std::vector<json> replies;
  api_.Handle({{"op", "upgrade"}}, [&replies](const ControlReply& reply) {
    replies.push_back(json::parse(reply.line()));
  });
  pod_.upgrade_waiter(json{{"upgrading", true}, {"pid", 7}});
  EXPECT_THAT(replies, ElementsAre(json{{"upgrading", true}, {"pid", 7}}));
}

TEST_F(ControlApiTest, S15_2_UpgradeWithoutFieldsTakesTheOriginalBinaryAnd30Seconds) {
  (void)Replies({{"op", "upgrade"}});
  (void)Replies({{"op", "upgrade"}, {"binary", nullptr}, {"timeout_ms", nullptr}});
  ASSERT_EQ(pod_.upgrades.size(), 2u);
  for (const UpgradeOrder& order : pod_.upgrades) {
    EXPECT_EQ(order.binary, std::nullopt);
    EXPECT_EQ(order.timeout, 30s);
  }
}

TEST_F(ControlApiTest, S15_2_UpgradeTakesTheLongestTimeout) {
  (void)Replies({{"op", "upgrade"}, {"timeout_ms", 600000}});
  ASSERT_EQ(pod_.upgrades.size(), 1u);
  EXPECT_EQ(pod_.upgrades[0].timeout, 600s);
}

TEST_F(ControlApiTest, S15_2_UpgradeWithABadBinaryOrTimeoutIsInvalidArgumentNamingIt) {
  for (const json& binary : {json("podvisor"), json("./podvisor"), json(""), json(7),
                             json::array({"/usr/bin/podvisor"}), json(std::string("/a\0b", 4))}) {
    const json request = {{"op", "upgrade"}, {"binary", binary}};
    ExpectRefused(request, ControlCode::kInvalidArgument);
    EXPECT_EQ(ControlErrorOf(Ask(request))->message, "\"binary\" must be an absolute path")
        << binary.dump();
  }
  for (const json& timeout :
       {json(0), json(-1), json(600001), json(1.5), json("30s"), json(true), json::object()}) {
    const json request = {{"op", "upgrade"}, {"timeout_ms", timeout}};
    ExpectRefused(request, ControlCode::kInvalidArgument);
    EXPECT_EQ(ControlErrorOf(Ask(request))->message,
              "\"timeout_ms\" must be an integer from 1 to 600000")
        << timeout.dump();
  }
}

TEST_F(ControlApiTest, S17_1_ResizeReachesThePodAndRepliesItsStatus) {
  json reply = Ask(json::parse(
      R"({"op":"resize","containers":[{"name":"app","resources":{"limits":{"cpu":"500m"}}}]})"));
  EXPECT_EQ(reply, (json{{"kind", "Pod"}, {"resized", true}}));
  EXPECT_THAT(pod_.actions, ElementsAre("resize app"));
  ASSERT_EQ(pod_.resizes.size(), 1u);
  EXPECT_EQ(pod_.resizes[0][0].limits.at("cpu"), pod::Quantity::FromMilli(500));
}

TEST_F(ControlApiTest, S17_1_ResizeWithABadRequestIsRefusedBeforeThePod) {
  ExpectRefused({{"op", "resize"}}, ControlCode::kInvalidArgument);
  ExpectRefused(json::parse(R"({"op":"resize","containers":[{"name":"app","resources":
                  {"limits":{"cpu":"fast"}}}]})"),
                ControlCode::kInvalidArgument);
  ExpectRefused(json::parse(R"({"op":"resize","containers":[{"name":"app","image":"x"}]})"),
                ControlCode::kInvalidArgument);
  ExpectRefused(json::parse(R"({"op":"resize","containers":[{"name":"nope","resources":{}}]})"),
                ControlCode::kNotFound);
}

TEST_F(ControlApiTest, RequestWithoutAStringOpIsInvalidArgument) {
  ExpectRefused(json::object(), ControlCode::kInvalidArgument);
  ExpectRefused({{"op", 1}}, ControlCode::kInvalidArgument);
  ExpectRefused({{"op", nullptr}}, ControlCode::kInvalidArgument);
}

TEST_F(ControlApiTest, UnknownOpIsUnimplemented) {
  ExpectRefused({{"op", "reboot"}}, ControlCode::kUnimplemented);
  EXPECT_EQ(ControlErrorOf(Ask({{"op", "reboot"}}))->message, "unknown op \"reboot\"");
}

}  // namespace
}  // namespace podvisor::supervisor::control
