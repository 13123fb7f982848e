// Test tier 2 (docs/TESTING.md) for probes, hooks and the termination reason
// (SEMANTICS S5.2, S5.3, S6, S7, S8): `podvisor run` against the fake
// runtime, no root. The containers are host processes here, so every
// server listens on a port picked free by the test.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class Probes : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
};

std::string Header(const std::string& name, const std::string& restart_policy, int grace = 5) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         "}\nspec:\n  restartPolicy: " + restart_policy +
         "\n  terminationGracePeriodSeconds: " + std::to_string(grace) + "\n";
}

std::string Entry(const std::string& name, const std::string& command,
                  const std::string& extra = "") {
  return "  - {name: " + name + ", image: img, command: " + command + extra + "}\n";
}
std::string Sidecar(const std::string& name, const std::string& command,
                    const std::string& extra = "") {
  return Entry(name, command, ", restartPolicy: Always" + extra);
}

// A TCP port nothing listens on right now (the kernel's pick).
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A readiness probe checked every second that decides on its first result.
std::string Readiness(const std::string& handler) {
  return ", readinessProbe: {" + handler + ", periodSeconds: 1, failureThreshold: 1}";
}

bool ContainerReady(const nlohmann::json& pod, const std::string& name) {
  const nlohmann::json* s = FindContainerStatus(pod, name);
  return s && s->value("ready", false);
}

// The messages of pod events with this reason about this container.
std::vector<std::string> EventMessages(const std::vector<nlohmann::json>& events,
                                       const std::string& reason, const std::string& container) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    if (e.value("reason", "") == reason && e.value("object", "") == "container/" + container) {
      out.push_back(e.value("message", ""));
    }
  }
  return out;
}

std::string Joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += "\n  " + s;
  return out;
}

TEST_F(Probes, S7_1_GrpcHealthProbeSucceedsOnServingOnly) {
  int ok = FreePort(), down = FreePort(), other = FreePort();
  auto grpc = [](int port, const std::string& service) {
    return "grpc: {port: " + std::to_string(port) +
           (service.empty() ? "" : ", service: " + service) + "}";
  };
  WritePod(Header("grpc", "Always", 2) + "  containers:\n" +
           Entry("ok", HelperCmd("ok", "serve-grpc " + std::to_string(ok) + " 1 mesh.health"),
                 Readiness(grpc(ok, "mesh.health"))) +
           Entry("down", HelperCmd("down", "serve-grpc " + std::to_string(down) + " 2"),
                 Readiness(grpc(down, ""))) +
           Entry("other",
                 HelperCmd("other", "serve-grpc " + std::to_string(other) + " 1 mesh.health"),
                 Readiness(grpc(other, "billing"))));
  StartRun();
  auto pod = WaitForStatus([](const nlohmann::json& p) { return ContainerReady(p, "ok"); },
                           "the SERVING container ready");
  // Both others have had their first probe by now or soon: wait for their
  // Unhealthy events rather than for a time.
  // (A probe may also have run before its server listened: look for the
  // answers, not for the first event.)
  const std::string down_msg =
      "Readiness probe failed: service unhealthy (responded with \"NOT_SERVING\")";
  const std::string other_msg =
      "Readiness probe failed: rpc error: code = NotFound desc = unknown service";
  WaitForStatus(
      [&](const nlohmann::json&) {
        auto events = PodEvents();
        auto down_msgs = EventMessages(events, "Unhealthy", "down");
        auto other_msgs = EventMessages(events, "Unhealthy", "other");
        return std::count(down_msgs.begin(), down_msgs.end(), down_msg) > 0 &&
               std::count(other_msgs.begin(), other_msgs.end(), other_msg) > 0;
      },
      "Unhealthy events for the NOT_SERVING and the unknown service");
  pod = *Status();
  EXPECT_FALSE(ContainerReady(pod, "down")) << pod.dump(2);
  EXPECT_FALSE(ContainerReady(pod, "other")) << pod.dump(2);
  EXPECT_EQ(ConditionStatus(pod, "Ready"), "False");
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  WaitRun();  // the servers die of SIGTERM: the phase is Failed
}

TEST_F(Probes, S7_2_HttpsProbeSkipsCertificateVerification) {
  if (::access("/usr/bin/openssl", X_OK) != 0) GTEST_SKIP() << "needs the openssl command";
  // A self-signed certificate made now: no verification means it passes.
  std::string cert = (dir_ / "cert.pem").string(), key = (dir_ / "key.pem").string();
  auto made = testing::RunCommand({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                                   "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                                   "/CN=not-this-host", "-keyout", key, "-out", cert});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  int tls = FreePort(), plain = FreePort();
  std::string tls_server =
      "[\"/usr/bin/openssl\", \"s_server\", \"-quiet\", \"-www\", \"-accept\", \"" +
      std::to_string(tls) + "\", \"-cert\", \"" + cert + "\", \"-key\", \"" + key + "\"]";
  WritePod(
      Header("https", "Always", 2) + "  containers:\n" +
      Entry("tls", tls_server,
            Readiness("httpGet: {port: " + std::to_string(tls) + ", path: /, scheme: HTTPS}")) +
      // HTTPS against a plain HTTP server fails: the handshake does.
      Entry("plain", HelperCmd("plain", "serve-http " + std::to_string(plain)),
            Readiness("httpGet: {port: " + std::to_string(plain) + ", scheme: HTTPS}")));
  StartRun();
  WaitForStatus([](const nlohmann::json& p) { return ContainerReady(p, "tls"); },
                "the HTTPS container ready");
  WaitForStatus(
      [&](const nlohmann::json&) {
        return !EventMessages(PodEvents(), "Unhealthy", "plain").empty();
      },
      "an Unhealthy event for HTTPS against plain HTTP");
  EXPECT_FALSE(ContainerReady(*Status(), "plain"));
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  WaitRun();
}

TEST_F(Probes, S7_2_SameHostRedirectsFollowedUpToTenOffHostNotFollowed) {
  int port = FreePort();
  std::string p = std::to_string(port);
  std::string idle = HelperCmd("idle", "trap-sigterm 20 0");
  WritePod(Header("redirects", "Always", 2) + "  containers:\n" +
           Entry("web", HelperCmd("web", "serve-http " + p + " 200 {{DIR}}/requests"),
                 Readiness("httpGet: {port: " + p + ", path: /redirect/10}")) +
           Entry("eleven", idle, Readiness("httpGet: {port: " + p + ", path: /redirect/11}")) +
           Entry("away", HelperCmd("away", "trap-sigterm 20 0"),
                 Readiness("httpGet: {port: " + p + ", path: /offhost}")));
  StartRun();
  WaitForStatus(
      [](const nlohmann::json& pod) {
        return ContainerReady(pod, "web") && ContainerReady(pod, "away");
      },
      "ready after 10 redirects, and with an off-host redirect");
  WaitForStatus(
      [&](const nlohmann::json&) {
        for (const auto& m : EventMessages(PodEvents(), "Unhealthy", "eleven")) {
          if (m.find("stopped after 10 redirects") != std::string::npos) return true;
        }
        return false;
      },
      "an Unhealthy event after 11 redirects");
  EXPECT_FALSE(ContainerReady(*Status(), "eleven"));
  // The off-host redirect is an answer with a warning, as the kubelet's.
  auto warnings = EventMessages(PodEvents(), "ProbeWarning", "away");
  ASSERT_FALSE(warnings.empty());
  EXPECT_THAT(warnings[0], HasSubstr("Readiness probe warning: Probe terminated redirects"));
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  WaitRun();
  std::string requests = ReadScratch("requests");
  EXPECT_THAT(requests, HasSubstr("GET /redirect/0 HTTP/1.1"));
  EXPECT_THAT(requests, Not(HasSubstr("/never")));
}

TEST_F(Probes, S8_2_PostStartFailureRecordsOutputKillsAndRestarts) {
  // The hook says why, then pads its output far past the 1 KiB an event keeps.
  std::string hook = ShCmd("echo hook-said-no; printf '%03000d' 0; exit 3");
  WritePod(Header("poststart", "Always", 2) + "  containers:\n" +
           Entry("app", HelperCmd("app", "trap-sigterm 20 0"),
                 ", lifecycle: {postStart: {exec: {command: " + hook + "}}}"));
  StartRun({"--backoff-initial", "100ms"});
  ASSERT_TRUE(WaitForHelperEvent("app Started", 2)) << Describe(HelperEvents());
  auto events = PodEvents();
  auto failed = EventMessages(events, "FailedPostStartHook", "app");
  ASSERT_FALSE(failed.empty());
  EXPECT_EQ(failed[0].rfind("hook-said-no", 0), 0u) << failed[0].substr(0, 80);
  EXPECT_LE(failed[0].size(), 1024u);  // S8.4
  EXPECT_FALSE(EventMessages(events, "Killing", "app").empty());
  // The first instance got its stop signal (S5.3) before the second started.
  auto starts = EventsNamed(HelperEvents(), "app", "Started");
  auto exits = EventsNamed(HelperEvents(), "app", "Exiting");
  ASSERT_GE(starts.size(), 2u);
  ASSERT_GE(exits.size(), 1u);
  EXPECT_LE(exits[0].time, starts[1].time);
  WaitForStatus(
      [](const nlohmann::json& p) {
        const nlohmann::json* s = FindContainerStatus(p, "app");
        return s && s->value("restartCount", 0) >= 1;
      },
      "restartCount >= 1");
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  WaitRun();
}

TEST_F(Probes, S8_FailedPreStopHookCarriesItsOutputAndTcpSocketHooksOnlyWarn) {
  int port = FreePort();
  WritePod(Header("prestop", "Never", 3) + "  containers:\n" +
           Entry("app", HelperCmd("app", "trap-sigterm 20 0"),
                 ", lifecycle: {preStop: {exec: {command: " +
                     ShCmd("echo drain-failed >&2; exit 7") + "}}}") +
           Entry("tcp", HelperCmd("tcp", "trap-sigterm 20 0"),
                 ", lifecycle: {postStart: {tcpSocket: {port: " + std::to_string(port) + "}}}"));
  StartRun();
  WaitUntilRunning();
  EXPECT_THAT(
      RunStderr(),
      HasSubstr("spec.containers[1].lifecycle.postStart.tcpSocket: tcpSocket hooks are not run"));
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  auto events = PodEvents();
  auto failed = EventMessages(events, "FailedPreStopHook", "app");
  ASSERT_EQ(failed.size(), 1u) << Joined(failed);
  EXPECT_THAT(failed[0], HasSubstr("drain-failed"));
  // The ignored tcpSocket hook is a warning, and the container ran.
  auto warned = EventMessages(events, "InvalidHook", "tcp");
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_THAT(warned[0], HasSubstr("tcpSocket"));
  EXPECT_TRUE(EventMessages(events, "FailedPostStartHook", "tcp").empty());
  EXPECT_EQ(CountOf(HelperEvents(), "tcp Started"), 1);
}

TEST_F(Probes, S5_2_PreStopsRunConcurrentlyAcrossSidecarsAndRegulars) {
  auto pre_stop = [](const std::string& name) {
    return ", lifecycle: {preStop: {exec: {command: " + HelperCmd(name, "sleep 2000") + "}}}";
  };
  WritePod(Header("concurrent", "Never", 10) + "  initContainers:\n" +
           Sidecar("side", HelperCmd("side", "trap-sigterm 20 0"), pre_stop("side-prestop")) +
           "  containers:\n" +
           Entry("a", HelperCmd("a", "trap-sigterm 20 0"), pre_stop("a-prestop")) +
           Entry("b", HelperCmd("b", "trap-sigterm 20 0"), pre_stop("b-prestop")));
  StartRun();
  WaitUntilRunning();
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  auto events = HelperEvents();
  // Every preStop began before any of them ended: they ran at once (S5.2),
  // the sidecar's included, and each container was signalled after its own.
  int last_start = -1, first_end = static_cast<int>(events.size());
  for (const std::string name : {"side-prestop", "a-prestop", "b-prestop"}) {
    int started = IndexOf(events, name + " Started");
    int ended = IndexOf(events, name + " Exiting");
    ASSERT_GE(started, 0) << Describe(events);
    ASSERT_GE(ended, 0) << Describe(events);
    last_start = std::max(last_start, started);
    first_end = std::min(first_end, ended);
  }
  EXPECT_LT(last_start, first_end) << Describe(events);
  EXPECT_GT(IndexOf(events, "a Exiting"), IndexOf(events, "a-prestop Exiting")) << Describe(events);
  EXPECT_GT(IndexOf(events, "b Exiting"), IndexOf(events, "b-prestop Exiting")) << Describe(events);
  // S5.4: the sidecar last, after the regular containers exited.
  EXPECT_GT(IndexOf(events, "side Exiting"), IndexOf(events, "a Exiting")) << Describe(events);
  EXPECT_GT(IndexOf(events, "side Exiting"), IndexOf(events, "b Exiting")) << Describe(events);
}

TEST_F(Probes, S5_3_HungPreStopIsBoundedByTheGrace) {
  // The hook outlasts the 2 s grace. (Here the fake runtime's exec leaves
  // it behind when podvisor ends it, so it ends by itself soon after; with
  // runc it dies with the container.)
  WritePod(
      Header("hung", "Never", 2) + "  containers:\n" +
      Entry("app", HelperCmd("app", "trap-sigterm 20 0"),
            ", lifecycle: {preStop: {exec: {command: [\"/bin/sh\", \"-c\", \"exec sleep 5\"]}}}"));
  StartRun();
  WaitUntilRunning();
  auto stop_at = Clock::now();
  EXPECT_EQ(Client({"stop", "--no-wait"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  auto events = HelperEvents();
  int exit_at = IndexOf(events, "app Exiting");
  ASSERT_GE(exit_at, 0) << Describe(events);
  // The stop signal came when the 2 s grace ran out, not after the hook.
  long long after = MsBetween(stop_at, events[exit_at].time);
  EXPECT_GE(after, 1800) << Describe(events);
  EXPECT_LE(after, 2000 + 2500) << Describe(events);
  EXPECT_LE(MsBetween(stop_at, Clock::now()), 2000 + 2000 + 3000);
}

TEST_F(Probes, S6_2_CustomEnvNameExpandsInArguments) {
  std::string pre_stop = ", lifecycle: {preStop: {exec: {command: " +
                         ShCmd("echo \"$WHY $1\" > {{DIR}}/custom", {"sh", "$(WHY)"}) +
                         "}, reasonDelivery: {env: WHY}}}";
  WritePod(Header("custom-env", "Never") + "  containers:\n" +
           Entry("app", HelperCmd("app", "trap-sigterm 20 0"), pre_stop));
  StartRun();
  WaitUntilRunning();
  EXPECT_EQ(Client({"stop", "--reason", "Update"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  EXPECT_EQ(ReadScratch("custom"), "Update Update");
}

TEST_F(Probes, S6_2_NoReasonMeansNoVariableAndNoHeader) {
  int port = FreePort();
  std::string p = std::to_string(port);
  std::string exec_pre_stop = ", lifecycle: {preStop: {exec: {command: " +
                              ShCmd("echo \"${KUBE_POD_TERM_REASON-unset} $1\" > {{DIR}}/exec",
                                    {"sh", "$(KUBE_POD_TERM_REASON)"}) +
                              "}}}";
  WritePod(Header("no-reason", "Never") + "  initContainers:\n" +
           Sidecar("srv", HelperCmd("srv", "serve-http " + p + " 200 {{DIR}}/requests"),
                   ", startupProbe: {tcpSocket: {port: " + p + "}, periodSeconds: 1}") +
           "  containers:\n" + Entry("app", HelperCmd("app", "trap-sigterm 20 0"), exec_pre_stop) +
           Entry("api", HelperCmd("api", "trap-sigterm 20 0"),
                 ", lifecycle: {preStop: {httpGet: {port: " + p + ", path: /drain}}}"));
  StartRun();
  WaitUntilRunning();
  EXPECT_EQ(Client({"stop"}).exit_code, 0);
  EXPECT_EQ(WaitRun(), 0) << RunStderr();
  // No variable; $(NAME) of an undefined variable stays as written.
  EXPECT_EQ(ReadScratch("exec"), "unset $(KUBE_POD_TERM_REASON)");
  std::string requests = ReadScratch("requests");
  EXPECT_THAT(requests, HasSubstr("GET /drain HTTP/1.1"));
  EXPECT_THAT(requests, HasSubstr("User-Agent: kube-lifecycle/1.33"));
  EXPECT_THAT(requests, Not(HasSubstr("KUBE-POD-TERM-REASON")));
  for (const auto& e : PodEvents()) {
    if (e.value("reason", "") == "PodStopping") {
      EXPECT_THAT(e.value("message", ""), Not(HasSubstr("reason:")));
    }
  }
}

}  // namespace
}  // namespace podvisor::e2e
