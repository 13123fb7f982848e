// ValidatePod on each container's own fields: image and restart policy,
// probes and lifecycle hooks (S6.3, S7.1), stop signals, env, ports,
// resources and the container security context, each test asserting
// kubectl's exact lines. Pods are built in C++ (not parsed).
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pod/pod_test_util.h"
#include "pod/validate.h"

namespace podvisor::pod {
namespace {

using namespace test_util;
using ::testing::ElementsAre;

// --- Image and restart policy ------------------------------------------------

TEST(ValidatePod, ImageRequiredAndTrimmed) {
  Pod pod = MinimalPod();
  pod.spec.init_containers = {MakeContainer("setup", "")};
  pod.spec.containers[0].image = " busybox";
  EXPECT_THAT(Check(pod), ElementsAre("spec.initContainers[0].image: Required value",
                                      "spec.containers[0].image: Invalid value: \" busybox\": "
                                      "must not have leading or trailing whitespace"));
}

// S1 vocabulary: restartPolicy on an init-list entry may only be Always.
TEST(ValidatePod, ContainerRestartPolicy) {
  Pod pod = MinimalPod();
  Container sidecar = MakeContainer("sidecar");
  sidecar.restart_policy = RestartPolicy::kAlways;
  Container init = MakeContainer("init");
  init.restart_policy = RestartPolicy::kNever;
  pod.spec.init_containers = {sidecar, init};
  pod.spec.containers[0].restart_policy = RestartPolicy::kAlways;
  EXPECT_THAT(Check(pod),
              ElementsAre("spec.initContainers[1].restartPolicy: Unsupported value: \"Never\": "
                          "supported values: \"Always\"",
                          "spec.containers[0].restartPolicy: Forbidden: may not be set for "
                          "non-init containers"));
}

// --- Probes and hooks --------------------------------------------------------

// S7.1: probes and hooks are forbidden on init containers, allowed on
// sidecars and regular containers.
TEST(ValidatePod, S7_1_ProbesAndHooksForbiddenOnInitContainers) {
  Pod pod = MinimalPod();
  Container init = MakeContainer("init");
  init.lifecycle = Lifecycle{};
  init.lifecycle->post_start = Hook(Exec({"true"}));
  init.liveness_probe = MakeProbe(Exec({"true"}));
  init.readiness_probe = MakeProbe(Exec({"true"}));
  init.startup_probe = MakeProbe(Exec({"true"}));
  Container sidecar = init;
  sidecar.name = "sidecar";
  sidecar.restart_policy = RestartPolicy::kAlways;
  Container& app = pod.spec.containers[0];
  app.lifecycle = init.lifecycle;
  app.liveness_probe = init.liveness_probe;
  app.readiness_probe = init.readiness_probe;
  app.startup_probe = init.startup_probe;
  pod.spec.init_containers = {init, sidecar};
  const std::string why =
      ": Forbidden: may not be set for init containers without "
      "restartPolicy=Always";
  EXPECT_THAT(Check(pod), ElementsAre("spec.initContainers[0].lifecycle" + why,
                                      "spec.initContainers[0].livenessProbe" + why,
                                      "spec.initContainers[0].readinessProbe" + why,
                                      "spec.initContainers[0].startupProbe" + why));
}

TEST(ValidatePod, S7_1_ProbeNumbers) {
  Pod pod = MinimalPod();
  Container& app = pod.spec.containers[0];
  app.liveness_probe = MakeProbe(Exec({"true"}));
  app.liveness_probe->initial_delay_seconds = -1;
  app.liveness_probe->timeout_seconds = 0;
  app.liveness_probe->period_seconds = -5;
  app.liveness_probe->success_threshold = 2;
  app.liveness_probe->failure_threshold = 0;
  app.liveness_probe->termination_grace_period_seconds = 0;
  app.startup_probe = MakeProbe(Exec({"true"}));
  app.startup_probe->success_threshold = 3;
  app.readiness_probe = MakeProbe(Exec({"true"}));
  app.readiness_probe->success_threshold = 3;  // allowed for readiness
  app.readiness_probe->termination_grace_period_seconds = 10;
  const std::string lp = "spec.containers[0].livenessProbe";
  EXPECT_THAT(
      Check(pod),
      ElementsAre(
          lp + ".initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0",
          lp + ".timeoutSeconds: Invalid value: 0: must be greater than or equal to 1",
          lp + ".periodSeconds: Invalid value: -5: must be greater than or equal to 0",
          lp + ".failureThreshold: Invalid value: 0: must be greater than or equal to 1",
          lp + ".terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0",
          lp + ".successThreshold: Invalid value: 2: must be 1",
          "spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 10: "
          "must not be set for readinessProbes",
          "spec.containers[0].startupProbe.successThreshold: Invalid value: 3: must be 1"));
}

TEST(ValidatePod, S7_1_ProbeHandlers) {
  Pod pod = MinimalPod();
  Container& app = pod.spec.containers[0];
  app.ports = {{"http", 8080, std::nullopt, "TCP", ""}};
  Probe none;  // no handler at all
  app.startup_probe = none;
  Handler two = Exec({});
  two.tcp_socket = TcpSocketAction{IntOrString::Int(80), ""};
  two.sleep = SleepAction{1};
  app.liveness_probe = MakeProbe(two);
  Handler http = HttpGet(IntOrString::String("metrics"));
  http.http_get->scheme = "FTP";
  http.http_get->http_headers = {{"X Bad", "1"}, {"X-Good", "2"}};
  app.readiness_probe = MakeProbe(http);

  Container second = MakeContainer("second");
  Handler grpc;
  grpc.grpc = GrpcAction{0, std::nullopt};
  second.liveness_probe = MakeProbe(grpc);
  second.readiness_probe = MakeProbe(HttpGet(IntOrString::Int(70000)));
  Handler tcp;
  tcp.tcp_socket = TcpSocketAction{IntOrString::String("Web--1"), ""};
  second.startup_probe = MakeProbe(tcp);
  pod.spec.containers.push_back(second);

  const std::string c0 = "spec.containers[0]", c1 = "spec.containers[1]";
  EXPECT_THAT(
      Check(pod),
      ElementsAre(
          c0 + ".livenessProbe.exec.command: Required value",
          c0 + ".livenessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type",
          c0 + ".livenessProbe.sleep: Forbidden: may not be used in probes",
          c0 + ".readinessProbe.httpGet.port: Not found: \"metrics\": must name one of the "
               "container's ports",
          c0 + ".readinessProbe.httpGet.scheme: Unsupported value: \"FTP\": supported values: "
               "\"HTTP\", \"HTTPS\"",
          c0 + ".readinessProbe.httpGet.httpHeaders: Invalid value: \"X Bad\": a valid HTTP "
               "header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', "
               "regex used for validation is '[-A-Za-z0-9]+')",
          c0 + ".startupProbe: Required value: must specify a handler type",
          c1 + ".livenessProbe.grpc.port: Invalid value: 0: must be between 1 and 65535, "
               "inclusive",
          c1 + ".readinessProbe.httpGet.port: Invalid value: 70000: must be between 1 and 65535, "
               "inclusive",
          c1 + ".startupProbe.tcpSocket.port: Invalid value: \"Web--1\": must contain only "
               "alpha-numeric characters (a-z, 0-9), and hyphens (-)",
          c1 + ".startupProbe.tcpSocket.port: Invalid value: \"Web--1\": must not contain "
               "consecutive hyphens"));
}

TEST(ValidatePod, HookHandlersAndSleep) {
  Pod pod = MinimalPod();
  pod.spec.termination_grace_period_seconds = 20;
  Container& app = pod.spec.containers[0];
  Handler grpc;
  grpc.grpc = GrpcAction{9000, std::nullopt};
  Handler long_sleep;
  long_sleep.sleep = SleepAction{21};
  app.lifecycle = Lifecycle{Hook(grpc), Hook(long_sleep), std::nullopt, std::nullopt};
  Container other = MakeContainer("other");
  Handler negative;
  negative.sleep = SleepAction{-1};
  Handler tcp;  // accepted (S8.1: ignored with a warning at run time)
  tcp.tcp_socket = TcpSocketAction{IntOrString::Int(80), ""};
  other.lifecycle = Lifecycle{Hook(tcp), Hook(negative), std::nullopt, std::nullopt};
  pod.spec.containers.push_back(other);
  EXPECT_THAT(
      Check(pod),
      ElementsAre("spec.containers[0].lifecycle.postStart.grpc: Forbidden: may not be used in "
                  "lifecycle hooks",
                  "spec.containers[0].lifecycle.preStop.sleep: Invalid value: 21: must be "
                  "non-negative and less than terminationGracePeriodSeconds (20)",
                  "spec.containers[1].lifecycle.preStop.sleep: Invalid value: -1: must be "
                  "non-negative and less than terminationGracePeriodSeconds (20)"));

  // Without a grace period the default of 30 s bounds the sleep.
  pod.spec.termination_grace_period_seconds.reset();
  pod.spec.containers[0].lifecycle->post_start.reset();  // push_back moved `app`
  EXPECT_THAT(Check(pod), ElementsAre("spec.containers[1].lifecycle.preStop.sleep: Invalid value: "
                                      "-1: must be non-negative and less than "
                                      "terminationGracePeriodSeconds (30)"));
}

// S6.3: reasonDelivery belongs to preStop, env to exec, header to httpGet.
TEST(ValidatePod, S6_3_ReasonDelivery) {
  Pod pod = MinimalPod();
  auto with = [](Handler h, std::optional<std::string> env, std::optional<std::string> header,
                 bool post_start = false) {
    Container c = MakeContainer("c");
    c.lifecycle = Lifecycle{};
    LifecycleHandler lh = Hook(std::move(h));
    lh.reason_delivery = ReasonDelivery{std::move(env), std::move(header)};
    (post_start ? c.lifecycle->post_start : c.lifecycle->pre_stop) = lh;
    return c;
  };
  Handler sleep;
  sleep.sleep = SleepAction{1};
  Handler http = HttpGet(IntOrString::Int(80));
  pod.spec.containers = {
      with(Exec({"x"}), "REASON", std::nullopt, /*post_start=*/true),
      with(Exec({"x"}), std::nullopt, "X-Reason"),
      with(http, "REASON", std::nullopt),
      with(Exec({"x"}), "REASON", "X-Reason"),
      with(sleep, "REASON", std::nullopt),
      with(Exec({"x"}), "MY-REASON", std::nullopt),
      with(http, std::nullopt, "X Reason:"),
      with(http, std::nullopt, std::string(257, 'X')),
      with(Exec({"x"}), "", std::nullopt),
  };
  for (std::size_t i = 0; i < pod.spec.containers.size(); ++i) {
    pod.spec.containers[i].name = "c" + std::to_string(i);
  }
  auto rd = [](int i, const char* hook = "preStop") {
    return "spec.containers[" + std::to_string(i) + "].lifecycle." + hook + ".reasonDelivery";
  };
  EXPECT_THAT(
      Check(pod),
      ElementsAre(
          rd(0, "postStart") + ": Forbidden: may only be set on preStop hooks",
          rd(1) + ".header: Forbidden: may only be set for httpGet handlers",
          rd(2) + ".env: Forbidden: may only be set for exec handlers",
          rd(3) + ": Forbidden: may not set both env and header",
          rd(3) + ".header: Forbidden: may only be set for httpGet handlers",
          rd(4) + ": Forbidden: may only be set for exec and httpGet handlers",
          rd(5) + ".env: Invalid value: \"MY-REASON\": a valid C identifier must start with "
                  "alphabetic character or '_', followed by a string of alphanumeric "
                  "characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used "
                  "for validation is '[A-Za-z_][A-Za-z0-9_]*')",
          rd(6) + ".header: Invalid value: \"X Reason:\": a valid HTTP header name must be an "
                  "RFC 7230 token: alphanumeric characters or any of !#$%&'*+-.^_`|~",
          rd(7) + ".header: Invalid value: \"" + std::string(257, 'X') +
              "\": must be no more than 256 characters",
          rd(8) + ".env: Required value"));
}

TEST(ValidatePod, StopSignal) {
  Pod pod = MinimalPod();
  pod.spec.containers[0].lifecycle = Lifecycle{std::nullopt, std::nullopt, "TERM", std::nullopt};
  Container ok = MakeContainer("ok");
  ok.lifecycle = Lifecycle{std::nullopt, std::nullopt, "SIGRTMIN+1", std::nullopt};
  pod.spec.containers.push_back(ok);
  EXPECT_THAT(Check(pod), ElementsAre("spec.containers[0].lifecycle.stopSignal: Invalid value: "
                                      "\"TERM\": must be a Linux signal name such as "
                                      "\"SIGTERM\", \"SIGUSR1\" or \"SIGRTMIN+1\""));
}

// --- Env, ports and resources ------------------------------------------------

TEST(ValidatePod, EnvNamesAndValueFrom) {
  Pod pod = MinimalPod();
  pod.spec.containers[0].env = {
      {"", "x", {}},
      {"1ABC", "x", {}},
      {"..dots", "x", {}},
      {"TOKEN", "", EnvVarSource{{}, {}, {}, KeySelector{"db", "token", std::nullopt}}}};
  const std::string e = "spec.containers[0].env";
  const std::string msg =
      "a valid environment variable name must consist of alphabetic characters, digits, '_', "
      "'-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or "
      "'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')";
  EXPECT_THAT(
      Check(pod),
      ElementsAre(e + "[0].name: Required value", e + "[1].name: Invalid value: \"1ABC\": " + msg,
                  e + "[2].name: Invalid value: \"..dots\": must not start with '..'",
                  e + "[3].valueFrom.secretKeyRef.name: Invalid value: \"db\": no secret of "
                      "this name in the bundle (or mark the reference optional: true)"));
}

TEST(ValidatePod, ContainerPorts) {
  Pod pod = MinimalPod();
  pod.spec.containers[0].ports = {
      {"http", 8080, std::nullopt, "TCP", ""},
      {"http", 8081, 70000, "TCP", ""},
      {"-x", 0, std::nullopt, "ICMP", ""},
      {"", 65536, std::nullopt, "", ""},
      {"much-too-long-name", 9000, std::nullopt, "UDP", ""},
  };
  const std::string p = "spec.containers[0].ports";
  EXPECT_THAT(
      Check(pod),
      ElementsAre(
          p + "[1].name: Duplicate value: \"http\"",
          p + "[1].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
          p + "[2].name: Invalid value: \"-x\": must not begin or end with a hyphen",
          p + "[2].containerPort: Required value",
          p + "[2].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", "
              "\"UDP\"",
          p + "[3].containerPort: Invalid value: 65536: must be between 1 and 65535, inclusive",
          p + "[3].protocol: Required value",
          p + "[4].name: Invalid value: \"much-too-long-name\": must be no more than 15 "
              "characters"));
}

TEST(ValidatePod, HostPortsUniqueAndMatchingUnderHostNetwork) {
  Pod pod = MinimalPod();
  pod.spec.containers[0].ports = {{"", 80, 8080, "TCP", ""}};
  Container other = MakeContainer("other");
  other.ports = {{"", 81, 8080, "TCP", ""}, {"", 82, 8080, "UDP", ""}};
  pod.spec.containers.push_back(other);
  EXPECT_THAT(Check(pod),
              ElementsAre("spec.containers[1].ports[0].hostPort: Duplicate value: \"/TCP/8080\""));

  pod = MinimalPod();
  pod.spec.host_network = true;
  pod.spec.containers[0].ports = {{"", 80, std::nullopt, "TCP", ""}, {"", 81, 8081, "TCP", ""}};
  EXPECT_THAT(Check(pod), ElementsAre("spec.containers[0].ports[1].hostPort: Invalid value: 8081: "
                                      "must match `containerPort` when `hostNetwork` is true"));
}

TEST(ValidatePod, Resources) {
  Pod pod = MinimalPod();
  ResourceRequirements& r = pod.spec.containers[0].resources;
  r.requests.cpu = Quantity::FromValue(2);
  r.limits.cpu = Quantity::FromValue(1);
  r.requests.memory = Quantity::FromValue(-1);
  r.limits.other = {
      {"gpu", Quantity::FromValue(1)},
      {"example.com/dev", Quantity::FromMilli(1500)},
      {"ephemeral-storage", Quantity::FromValue(1 << 30, Quantity::Format::kBinarySI)}};
  r.requests.other = {
      {"example.com/dev", Quantity::FromValue(1)},
      {"example.com/fpga", Quantity::FromValue(1)},
      {"ephemeral-storage", Quantity::FromValue(int64_t{2} << 30, Quantity::Format::kBinarySI)}};
  const std::string res = "spec.containers[0].resources";
  EXPECT_THAT(
      Check(pod),
      ElementsAre(
          res + ".limits[example.com/dev]: Invalid value: \"1500m\": must be an integer",
          res + ".limits[gpu]: Invalid value: \"gpu\": must be a standard resource type or "
                "fully qualified",
          res + ".requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1",
          res + ".requests[memory]: Invalid value: \"-1\": must be greater than or equal to 0",
          res + ".requests: Invalid value: \"2Gi\": must be less than or equal to "
                "ephemeral-storage limit of 1Gi",
          res + ".requests: Invalid value: \"1\": must be equal to example.com/dev limit of "
                "1500m",
          res + ".limits: Required value: Limit must be set for non overcommitable resources"));
}

TEST(ValidatePod, HugePagesNeedCpuOrMemoryAndOverhead) {
  Pod pod = MinimalPod();
  pod.spec.containers[0].resources.limits.other = {{"hugepages-2Mi", Quantity::FromValue(2 << 20)}};
  pod.spec.overhead.memory = Quantity::FromValue(-5);
  pod.spec.overhead.other = {{"pods", Quantity::FromValue(1)}};
  EXPECT_THAT(
      Check(pod),
      ElementsAre("spec.containers[0].resources: Forbidden: HugePages require cpu or memory",
                  "spec.overhead[memory]: Invalid value: \"-5\": must be greater than or equal "
                  "to 0",
                  "spec.overhead[pods]: Invalid value: \"pods\": must be a standard resource "
                  "type or fully qualified"));
}

// --- Security ----------------------------------------------------------------

TEST(ValidatePod, ContainerSecurityContext) {
  Pod pod = MinimalPod();
  SecurityContext sc;
  sc.run_as_user = -1;
  sc.run_as_group = 2147483648;
  sc.privileged = true;
  sc.allow_privilege_escalation = false;
  sc.capabilities = Capabilities{{"NET_ADMINN", "CAP_SYS_ADMIN", "net_raw"}, {"ALL", "CAP_BPF"}};
  sc.seccomp_profile = SeccompProfile{"Strict", "profile.json"};
  pod.spec.containers[0].security_context = sc;

  Container local = MakeContainer("local");
  local.security_context = SecurityContext{};
  local.security_context->seccomp_profile = SeccompProfile{"Localhost", std::nullopt};
  Container escape = MakeContainer("escape");
  escape.security_context = SecurityContext{};
  escape.security_context->seccomp_profile = SeccompProfile{"Localhost", "/etc/../x.json"};
  Container root = MakeContainer("root");
  root.security_context = SecurityContext{};
  root.security_context->run_as_non_root = true;
  root.security_context->run_as_user = 0;
  Container no_type = MakeContainer("no-type");
  no_type.security_context = SecurityContext{};
  no_type.security_context->seccomp_profile = SeccompProfile{};
  pod.spec.containers.insert(pod.spec.containers.end(), {local, escape, root, no_type});

  const std::string s0 = "spec.containers[0].securityContext";
  const std::string cap_msg =
      "must be a Linux capability name such as 'NET_ADMIN' or 'CAP_NET_ADMIN', or 'ALL'";
  EXPECT_THAT(
      Check(pod),
      ElementsAre(
          s0 + ".runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
          s0 + ".runAsGroup: Invalid value: 2147483648: must be between 0 and 2147483647, "
               "inclusive",
          s0 + ".seccompProfile.type: Unsupported value: \"Strict\": supported values: "
               "\"Localhost\", \"RuntimeDefault\", \"Unconfined\"",
          s0 + ".seccompProfile.localhostProfile: Invalid value: \"profile.json\": can only be "
               "set when seccomp type is Localhost",
          s0 + ".capabilities.add[0]: Invalid value: \"NET_ADMINN\": " + cap_msg,
          s0 + ".capabilities.add[2]: Invalid value: \"net_raw\": " + cap_msg,
          s0 + ": Invalid value: cannot set `allowPrivilegeEscalation` to false and "
               "`privileged` to true",
          s0 + ": Invalid value: cannot set `allowPrivilegeEscalation` to false and "
               "`capabilities.Add` CAP_SYS_ADMIN",
          "spec.containers[1].securityContext.seccompProfile.localhostProfile: Required value: "
          "must be set when seccomp type is Localhost",
          "spec.containers[2].securityContext.seccompProfile.localhostProfile: Invalid value: "
          "\"/etc/../x.json\": must be a relative path",
          "spec.containers[2].securityContext.seccompProfile.localhostProfile: Invalid value: "
          "\"/etc/../x.json\": must not contain '..'",
          "spec.containers[3].securityContext.runAsUser: Invalid value: 0: must not be 0 when "
          "runAsNonRoot is true",
          "spec.containers[4].securityContext.seccompProfile.type: Required value: type is "
          "required when seccompProfile is set"));
}

}  // namespace
}  // namespace podvisor::pod
