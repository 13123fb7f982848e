// ValidatePod: one test per rule family, each asserting kubectl's exact
// lines. Pods are built in C++ (not parsed) so these tests stand alone.
#include "pod/validate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace podvisor::pod {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAreArray;

std::vector<std::string> Lines(const FieldErrors& errs) {
  std::vector<std::string> out;
  for (const auto& e : errs) out.push_back(e.ToString());
  return out;
}

std::vector<std::string> Check(const Pod& pod) {
  return Lines(ValidatePod(pod));
}

Container MakeContainer(std::string name, std::string image = "busybox") {
  Container c;
  c.name = std::move(name);
  c.image = std::move(image);
  return c;
}

// The smallest valid pod, as ApplyDefaults leaves it.
Pod MinimalPod() {
  Pod pod;
  pod.metadata.name = "web";
  pod.spec.termination_grace_period_seconds = 30;
  pod.spec.containers.push_back(MakeContainer("app"));
  return pod;
}

Handler Exec(std::vector<std::string> command) {
  Handler h;
  h.exec = ExecAction{std::move(command)};
  return h;
}

Handler HttpGet(IntOrString port) {
  Handler h;
  h.http_get = HttpGetAction{};
  h.http_get->path = "/healthz";
  h.http_get->port = std::move(port);
  return h;
}

Probe MakeProbe(Handler h) {
  Probe p;
  p.handler = std::move(h);
  return p;
}

LifecycleHandler Hook(Handler h) {
  return LifecycleHandler{std::move(h), std::nullopt};
}

const char* const kLabelMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

// --- Name helpers -----------------------------------------------------------

TEST(ValidateNames, Dns1123Label) {
  EXPECT_TRUE(IsDns1123Label("my-name"));
  EXPECT_TRUE(IsDns1123Label("123-abc"));
  EXPECT_TRUE(IsDns1123Label("a"));
  EXPECT_TRUE(IsDns1123Label(std::string(63, 'a')));
  EXPECT_FALSE(IsDns1123Label(std::string(64, 'a')));
  EXPECT_FALSE(IsDns1123Label(""));
  EXPECT_FALSE(IsDns1123Label("App_1"));
  EXPECT_FALSE(IsDns1123Label("-a"));
  EXPECT_FALSE(IsDns1123Label("a-"));
  EXPECT_FALSE(IsDns1123Label("a.b"));
}

TEST(ValidateNames, Dns1123Subdomain) {
  EXPECT_TRUE(IsDns1123Subdomain("example.com"));
  EXPECT_TRUE(IsDns1123Subdomain("web-1"));
  std::string long_name = std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                          std::string(63, 'c') + "." + std::string(61, 'd');
  ASSERT_EQ(long_name.size(), 253u);
  EXPECT_TRUE(IsDns1123Subdomain(long_name));
  EXPECT_FALSE(IsDns1123Subdomain(long_name + "d"));
  EXPECT_FALSE(IsDns1123Subdomain(""));
  EXPECT_FALSE(IsDns1123Subdomain(".a"));
  EXPECT_FALSE(IsDns1123Subdomain("a..b"));
  EXPECT_FALSE(IsDns1123Subdomain("a."));
  EXPECT_FALSE(IsDns1123Subdomain("Web"));
}

TEST(ValidateNames, CIdentifier) {
  EXPECT_TRUE(IsCIdentifier("KUBE_POD_TERM_REASON"));
  EXPECT_TRUE(IsCIdentifier("_x1"));
  EXPECT_FALSE(IsCIdentifier(""));
  EXPECT_FALSE(IsCIdentifier("1X"));
  EXPECT_FALSE(IsCIdentifier("MY-VAR"));
  EXPECT_FALSE(IsCIdentifier("my.var"));
}

TEST(ValidateNames, EnvVarName) {
  EXPECT_TRUE(IsEnvVarName("my.env-name"));
  EXPECT_TRUE(IsEnvVarName("MY_ENV.NAME"));
  EXPECT_TRUE(IsEnvVarName("MyEnvName1"));
  EXPECT_TRUE(IsEnvVarName("-x"));
  EXPECT_FALSE(IsEnvVarName(""));
  EXPECT_FALSE(IsEnvVarName("1A"));
  EXPECT_FALSE(IsEnvVarName("A=B"));
  EXPECT_FALSE(IsEnvVarName("."));
  EXPECT_FALSE(IsEnvVarName(".."));
  EXPECT_FALSE(IsEnvVarName("..x"));
}

TEST(ValidateNames, HttpToken) {
  EXPECT_TRUE(IsHttpToken("KUBE-POD-TERM-REASON"));
  EXPECT_TRUE(IsHttpToken("x!#$%&'*+-.^_`|~9"));
  EXPECT_FALSE(IsHttpToken(""));
  EXPECT_FALSE(IsHttpToken("X Reason"));
  EXPECT_FALSE(IsHttpToken("X:Reason"));
  EXPECT_FALSE(IsHttpToken("X\"Y"));
  EXPECT_FALSE(
      IsHttpToken("R\xc3\xa9"
                  "ason"));
}

// --- Whole pods ---------------------------------------------------------------

TEST(ValidatePod, MinimalPodIsValid) {
  EXPECT_THAT(Check(MinimalPod()), IsEmpty());
}

// Everything podvisor supports at once: an init, a sidecar with probes and
// hooks (S1 vocabulary), volumes, resources and security settings.
TEST(ValidatePod, ComplexValidPodHasNoErrors) {
  Pod pod = MinimalPod();
  pod.metadata.name = "shop.example";
  pod.metadata.labels = {{"app.kubernetes.io/name", "shop"}, {"tier", ""}};
  pod.metadata.annotations = {{"example.com/Owner", "team a"}};
  pod.spec.restart_policy = RestartPolicy::kOnFailure;
  pod.spec.active_deadline_seconds = 3600;
  pod.spec.hostname = "shop";
  pod.spec.readiness_gates = {{"example.com/feature-ready"}};
  pod.spec.overhead.cpu = Quantity::FromMilli(100);
  pod.spec.security_context = PodSecurityContext{};
  pod.spec.security_context->run_as_user = 1000;
  pod.spec.security_context->run_as_non_root = true;
  pod.spec.security_context->supplemental_groups = {100, 2000};
  pod.spec.security_context->seccomp_profile = SeccompProfile{"RuntimeDefault", std::nullopt};

  Volume data{"data", EmptyDirVolumeSource{"Memory", Quantity::FromValue(64 << 20)}, {}, {}};
  Volume host{"host-logs", {}, HostPathVolumeSource{"/var/log/shop", "DirectoryOrCreate"}, {}};
  pod.spec.volumes = {data, host};

  Container init = MakeContainer("migrate", "registry.example/migrate:1.2");
  init.command = {"/bin/migrate"};
  init.resources.limits.cpu = Quantity::FromMilli(500);
  init.resources.requests.cpu = Quantity::FromMilli(500);

  Container proxy = MakeContainer("proxy", "/opt/images/envoy");
  proxy.restart_policy = RestartPolicy::kAlways;
  proxy.ports = {{"admin", 9901, std::nullopt, "TCP", ""}};
  proxy.startup_probe = MakeProbe(HttpGet(IntOrString::String("admin")));
  proxy.startup_probe->failure_threshold = 30;
  proxy.startup_probe->period_seconds = 1;
  proxy.readiness_probe = MakeProbe(HttpGet(IntOrString::Int(9901)));
  proxy.readiness_probe->handler.http_get->http_headers = {{"X-Probe", "1"}};
  proxy.liveness_probe = MakeProbe(Exec({"/bin/true"}));
  proxy.liveness_probe->termination_grace_period_seconds = 5;
  proxy.lifecycle = Lifecycle{};
  proxy.lifecycle->post_start = Hook(Exec({"/bin/wait-ready"}));
  Handler sleep;
  sleep.sleep = SleepAction{5};
  proxy.lifecycle->pre_stop = Hook(sleep);
  proxy.lifecycle->stop_signal = "SIGQUIT";
  proxy.security_context = SecurityContext{};
  proxy.security_context->capabilities = Capabilities{{"NET_ADMIN", "CAP_NET_RAW"}, {"ALL"}};
  proxy.security_context->allow_privilege_escalation = false;

  Container app = MakeContainer("app", "shop:2.0");
  app.working_dir = "/srv";
  app.env = {{"MODE", "prod", false}, {"my.env-name", "x", false}};
  app.ports = {{"http", 8080, 18080, "TCP", ""}, {"", 9000, std::nullopt, "UDP", ""}};
  app.resources.requests.cpu = Quantity::FromMilli(250);
  app.resources.limits.cpu = Quantity::FromValue(1);
  app.resources.requests.memory = Quantity::FromValue(128 << 20, Quantity::Format::kBinarySI);
  app.resources.limits.memory = Quantity::FromValue(256 << 20, Quantity::Format::kBinarySI);
  app.resources.limits.other = {{"example.com/gpu", Quantity::FromValue(1)}};
  app.resources.requests.other = {{"example.com/gpu", Quantity::FromValue(1)}};
  app.volume_mounts = {{"data", "/data", false, ""}, {"host-logs", "/logs", true, "shop/app"}};
  app.readiness_probe = MakeProbe(HttpGet(IntOrString::String("http")));
  app.readiness_probe->handler.http_get->scheme = "HTTPS";
  Handler grpc;
  grpc.grpc = GrpcAction{9000, "health"};
  app.liveness_probe = MakeProbe(grpc);
  app.lifecycle = Lifecycle{};
  app.lifecycle->pre_stop = Hook(Exec({"/bin/drain", "--reason=$(WHY)"}));
  app.lifecycle->pre_stop->reason_delivery = ReasonDelivery{"WHY", std::nullopt};
  app.security_context = SecurityContext{};
  app.security_context->run_as_user = 1001;
  app.security_context->read_only_root_filesystem = true;
  app.security_context->seccomp_profile = SeccompProfile{"Localhost", "profiles/shop.json"};

  Container web = MakeContainer("web", "nginx");
  Handler http_hook = HttpGet(IntOrString::Int(80));
  web.lifecycle = Lifecycle{};
  web.lifecycle->pre_stop = Hook(http_hook);
  web.lifecycle->pre_stop->reason_delivery = ReasonDelivery{std::nullopt, "X-Stop-Reason"};
  Handler tcp;
  tcp.tcp_socket = TcpSocketAction{IntOrString::Int(80), ""};
  web.readiness_probe = MakeProbe(tcp);

  pod.spec.init_containers = {init, proxy};
  pod.spec.containers = {app, web};
  EXPECT_THAT(Check(pod), IsEmpty());
}

TEST(ValidatePod, MetadataNameAndLabels) {
  Pod pod = MinimalPod();
  pod.metadata.name = "";
  EXPECT_THAT(Check(pod),
              ElementsAre("metadata.name: Required value: name or generateName is required"));

  pod.metadata.name = "Web_1";
  EXPECT_THAT(
      Check(pod),
      ElementsAre(
          "metadata.name: Invalid value: \"Web_1\": a lowercase RFC 1123 subdomain must consist "
          "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
          "alphanumeric character (e.g. 'example.com', regex used for validation is "
          "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"));

  pod.metadata.name = std::string(254, 'a');
  EXPECT_THAT(Check(pod), ElementsAre("metadata.name: Invalid value: \"" + std::string(254, 'a') +
                                      "\": must be no more than 253 characters"));

  pod = MinimalPod();
  pod.metadata.namespace_name = "Team";
  pod.metadata.labels = {{"/x", "ok"}, {"app", "-bad"}};
  EXPECT_THAT(
      Check(pod),
      ElementsAre(std::string("metadata.namespace: Invalid value: \"Team\": ") + kLabelMsg,
                  "metadata.labels: Invalid value: \"/x\": prefix part must be non-empty",
                  "metadata.labels: Invalid value: \"-bad\": a valid label must be an empty "
                  "string or consist of alphanumeric characters, '-', '_' or '.', and must start "
                  "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
                  "'12345', regex used for validation is "
                  "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"));
}

TEST(ValidatePod, ContainerNamesRequiredValidAndUnique) {
  Pod pod = MinimalPod();
  pod.spec.init_containers = {MakeContainer("app"), MakeContainer("")};
  pod.spec.containers = {MakeContainer("App_1"), MakeContainer("app"), MakeContainer("a.b"),
                         MakeContainer(std::string(64, 'x'))};
  EXPECT_THAT(
      Check(pod),
      ElementsAre("spec.initContainers[1].name: Required value",
                  std::string("spec.containers[0].name: Invalid value: \"App_1\": ") + kLabelMsg,
                  "spec.containers[1].name: Duplicate value: \"app\"",
                  "spec.containers[2].name: Invalid value: \"a.b\": must not contain dots",
                  "spec.containers[3].name: Invalid value: \"" + std::string(64, 'x') +
                      "\": must be no more than 63 characters"));
}

TEST(ValidatePod, AtLeastOneRegularContainer) {
  Pod pod = MinimalPod();
  pod.spec.containers.clear();
  pod.spec.init_containers = {MakeContainer("setup")};
  EXPECT_THAT(Check(pod), ElementsAre("spec.containers: Required value"));
}

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
  app.lifecycle = Lifecycle{Hook(grpc), Hook(long_sleep), std::nullopt};
  Container other = MakeContainer("other");
  Handler negative;
  negative.sleep = SleepAction{-1};
  Handler tcp;  // accepted (S8.1: ignored with a warning at run time)
  tcp.tcp_socket = TcpSocketAction{IntOrString::Int(80), ""};
  other.lifecycle = Lifecycle{Hook(tcp), Hook(negative), std::nullopt};
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
  pod.spec.containers[0].lifecycle = Lifecycle{std::nullopt, std::nullopt, "TERM"};
  Container ok = MakeContainer("ok");
  ok.lifecycle = Lifecycle{std::nullopt, std::nullopt, "SIGRTMIN+1"};
  pod.spec.containers.push_back(ok);
  EXPECT_THAT(Check(pod), ElementsAre("spec.containers[0].lifecycle.stopSignal: Invalid value: "
                                      "\"TERM\": must be a Linux signal name such as "
                                      "\"SIGTERM\", \"SIGUSR1\" or \"SIGRTMIN+1\""));
}

TEST(ValidatePod, EnvNamesAndValueFrom) {
  Pod pod = MinimalPod();
  pod.spec.containers[0].env = {
      {"", "x", false}, {"1ABC", "x", false}, {"..dots", "x", false}, {"TOKEN", "", true}};
  const std::string e = "spec.containers[0].env";
  const std::string msg =
      "a valid environment variable name must consist of alphabetic characters, digits, '_', "
      "'-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or "
      "'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')";
  EXPECT_THAT(
      Check(pod),
      ElementsAre(e + "[0].name: Required value", e + "[1].name: Invalid value: \"1ABC\": " + msg,
                  e + "[2].name: Invalid value: \"..dots\": must not start with '..'",
                  e + "[3].valueFrom: Forbidden: podvisor has no API server to resolve "
                      "valueFrom; use value"));
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

TEST(ValidatePod, Volumes) {
  Pod pod = MinimalPod();
  Volume both{"both", EmptyDirVolumeSource{}, HostPathVolumeSource{"/srv", ""}, {}};
  Volume none{"none", {}, {}, {}};
  Volume config{"cfg", {}, {}, {"configMap"}};
  Volume bad_dir{"Bad_Name", EmptyDirVolumeSource{"HugePages", Quantity::FromValue(-1)}, {}, {}};
  Volume bad_host{"both", {}, HostPathVolumeSource{"var/../etc", "Pipe"}, {}};
  Volume no_path{"no-path", {}, HostPathVolumeSource{"", ""}, {}};
  pod.spec.volumes = {both, none, config, bad_dir, bad_host, no_path};
  const std::string v = "spec.volumes";
  EXPECT_THAT(
      Check(pod),
      ElementsAre(
          v + "[0].emptyDir: Forbidden: may not specify more than 1 volume type",
          v + "[1]: Required value: must specify a volume type",
          v + "[2].configMap: Forbidden: podvisor supports only emptyDir and hostPath volumes",
          v + "[3].emptyDir.medium: Unsupported value: \"HugePages\": supported values: \"\", "
              "\"Memory\"",
          v + "[3].emptyDir.sizeLimit: Forbidden: SizeLimit field must be a valid resource "
              "quantity",
          v + "[3].name: Invalid value: \"Bad_Name\": " + kLabelMsg,
          v + "[4].hostPath.path: Invalid value: \"var/../etc\": must not contain '..'",
          v + "[4].hostPath.path: Invalid value: \"var/../etc\": must be an absolute path",
          v + "[4].hostPath.type: Unsupported value: \"Pipe\": supported values: \"\", "
              "\"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", \"File\", "
              "\"FileOrCreate\", \"Socket\"",
          v + "[4].name: Duplicate value: \"both\"", v + "[5].hostPath.path: Required value"));
}

TEST(ValidatePod, VolumeMounts) {
  Pod pod = MinimalPod();
  pod.spec.volumes = {{"data", EmptyDirVolumeSource{}, {}, {}}};
  pod.spec.containers[0].volume_mounts = {
      {"data", "/data", false, ""},         {"missing", "/data", false, ""},
      {"", "relative", false, ""},          {"data", "", false, "/abs"},
      {"data", "/sub", false, "a/../../b"},
  };
  const std::string m = "spec.containers[0].volumeMounts";
  EXPECT_THAT(
      Check(pod),
      ElementsAre(m + "[1].name: Not found: \"missing\"",
                  m + "[1].mountPath: Invalid value: \"/data\": must be unique",
                  m + "[2].name: Required value",
                  m + "[2].mountPath: Invalid value: \"relative\": must be an absolute path",
                  m + "[3].mountPath: Required value",
                  m + "[3].subPath: Invalid value: \"/abs\": must be a relative path",
                  m + "[4].subPath: Invalid value: \"a/../../b\": must not contain '..'"));
}

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

TEST(ValidatePod, PodSecurityContext) {
  Pod pod = MinimalPod();
  pod.spec.security_context = PodSecurityContext{};
  pod.spec.security_context->run_as_user = 0;
  pod.spec.security_context->run_as_non_root = true;
  pod.spec.security_context->run_as_group = -3;
  pod.spec.security_context->supplemental_groups = {10, -1};
  pod.spec.security_context->seccomp_profile = SeccompProfile{"unconfined", std::nullopt};
  // The container inherits runAsUser 0 and itself asks for a non-root user.
  pod.spec.containers[0].security_context = SecurityContext{};
  pod.spec.containers[0].security_context->run_as_non_root = true;
  EXPECT_THAT(
      Check(pod),
      ElementsAre("spec.containers[0].securityContext.runAsNonRoot: Invalid value: true: cannot "
                  "be true when runAsUser is 0",
                  "spec.securityContext.runAsGroup: Invalid value: -3: must be between 0 and "
                  "2147483647, inclusive",
                  "spec.securityContext.supplementalGroups[1]: Invalid value: -1: must be "
                  "between 0 and 2147483647, inclusive",
                  "spec.securityContext.seccompProfile.type: Unsupported value: \"unconfined\": "
                  "supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"",
                  "spec.securityContext.runAsUser: Invalid value: 0: must not be 0 when "
                  "runAsNonRoot is true"));
}

TEST(ValidatePod, PodLevelFields) {
  Pod pod = MinimalPod();
  pod.spec.termination_grace_period_seconds = -1;
  pod.spec.active_deadline_seconds = 0;
  pod.spec.hostname = "My_Host";
  pod.spec.subdomain = "ok";
  pod.spec.readiness_gates = {{""}, {"example.com/ready!"}};
  pod.spec.share_process_namespace = true;
  pod.spec.host_pid = true;
  Container& app = pod.spec.containers[0];
  app.working_dir = "srv";
  app.termination_message_path = "termination-log";
  EXPECT_THAT(
      Check(pod),
      ElementsAre(
          "spec.containers[0].workingDir: Invalid value: \"srv\": must be an absolute path",
          "spec.containers[0].terminationMessagePath: Invalid value: \"termination-log\": must "
          "be an absolute path",
          "spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal "
          "to 0",
          "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, "
          "inclusive",
          std::string("spec.hostname: Invalid value: \"My_Host\": ") + kLabelMsg,
          "spec.readinessGates[0].conditionType: Required value",
          "spec.readinessGates[1].conditionType: Invalid value: \"example.com/ready!\": name "
          "part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
          "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
          "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
          "spec.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID "
          "cannot both be enabled"));
}

// Validation never stops at the first problem: one error per fault, all of
// them, in field order.
TEST(ValidatePod, ReportsEveryProblem) {
  Pod pod;
  pod.metadata.name = "Bad Pod";
  Container init = MakeContainer("init", "");
  init.restart_policy = RestartPolicy::kOnFailure;
  init.liveness_probe = MakeProbe(Exec({"true"}));
  pod.spec.init_containers = {init};
  Container app = MakeContainer("init");
  app.env = {{"", "", false}};
  app.ports = {{"", 0, std::nullopt, "TCP", ""}};
  app.volume_mounts = {{"nowhere", "/x", false, ""}};
  app.readiness_probe = Probe{};
  app.resources.requests.cpu = Quantity::FromValue(2);
  app.resources.limits.cpu = Quantity::FromValue(1);
  pod.spec.containers = {app};
  pod.spec.volumes = {{"v", {}, {}, {"secret"}}};
  pod.spec.active_deadline_seconds = -1;

  std::vector<std::string> lines = Check(pod);
  EXPECT_THAT(
      lines,
      UnorderedElementsAreArray(std::vector<std::string>{
          "metadata.name: Invalid value: \"Bad Pod\": a lowercase RFC 1123 subdomain must "
          "consist of lower case alphanumeric characters, '-' or '.', and must start and end "
          "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
          "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
          "spec.volumes[0].secret: Forbidden: podvisor supports only emptyDir and hostPath "
          "volumes",
          "spec.initContainers[0].image: Required value",
          "spec.initContainers[0].restartPolicy: Unsupported value: \"OnFailure\": supported "
          "values: \"Always\"",
          "spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers "
          "without restartPolicy=Always",
          "spec.containers[0].name: Duplicate value: \"init\"",
          "spec.containers[0].env[0].name: Required value",
          "spec.containers[0].ports[0].containerPort: Required value",
          "spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or "
          "equal to cpu limit of 1",
          "spec.containers[0].volumeMounts[0].name: Not found: \"nowhere\"",
          "spec.containers[0].readinessProbe: Required value: must specify a handler type",
          "spec.activeDeadlineSeconds: Invalid value: -1: must be between 1 and 2147483647, "
          "inclusive",
      }));
}

}  // namespace
}  // namespace podvisor::pod
