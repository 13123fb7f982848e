// ValidatePod on the pod as a whole: the name helpers, metadata, container
// names, volumes and their mounts, the pod security context and pod-level
// fields, one test per rule family, each asserting kubectl's exact lines.
// Pods are built in C++ (not parsed) so these tests stand alone; the rules
// for a container's own fields are in validate_container_test.cc.
#include "pod/validate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pod/pod_test_util.h"

namespace podvisor::pod {
namespace {

using namespace test_util;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAreArray;

// --- Name helpers ------------------------------------------------------------

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

// --- Whole pods --------------------------------------------------------------

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

  Volume data{
      "data", EmptyDirVolumeSource{"Memory", Quantity::FromValue(64 << 20)}, {}, {}, {}, {}, {},
      {}};
  Volume host{"host-logs", {}, HostPathVolumeSource{"/var/log/shop", "DirectoryOrCreate"},
              {},          {}, {},
              {},          {}};
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
  app.env = {{"MODE", "prod", {}}, {"my.env-name", "x", {}}};
  app.ports = {{"http", 8080, 18080, "TCP", ""}, {"", 9000, std::nullopt, "UDP", ""}};
  app.resources.requests.cpu = Quantity::FromMilli(250);
  app.resources.limits.cpu = Quantity::FromValue(1);
  app.resources.requests.memory = Quantity::FromValue(128 << 20, Quantity::Format::kBinarySI);
  app.resources.limits.memory = Quantity::FromValue(256 << 20, Quantity::Format::kBinarySI);
  app.resources.limits.other = {{"example.com/gpu", Quantity::FromValue(1)}};
  app.resources.requests.other = {{"example.com/gpu", Quantity::FromValue(1)}};
  app.volume_mounts = {{"data", "/data", false, "", "", "", ""},
                       {"host-logs", "/logs", true, "shop/app", "", "", ""}};
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

// --- Volumes -----------------------------------------------------------------

TEST(ValidatePod, Volumes) {
  Pod pod = MinimalPod();
  Volume both{"both", EmptyDirVolumeSource{}, HostPathVolumeSource{"/srv", ""}, {}, {}, {}, {}, {}};
  Volume none{"none", {}, {}, {}, {}, {}, {}, {}};
  Volume config{"cfg", {}, {}, {}, {}, {}, {}, {"persistentVolumeClaim"}};
  Volume bad_dir{
      "Bad_Name", EmptyDirVolumeSource{"HugePages", Quantity::FromValue(-1)}, {}, {}, {}, {}, {},
      {}};
  Volume bad_host{"both", {}, HostPathVolumeSource{"var/../etc", "Pipe"}, {}, {}, {}, {}, {}};
  Volume no_path{"no-path", {}, HostPathVolumeSource{"", ""}, {}, {}, {}, {}, {}};
  pod.spec.volumes = {both, none, config, bad_dir, bad_host, no_path};
  const std::string v = "spec.volumes";
  EXPECT_THAT(
      Check(pod),
      ElementsAre(
          v + "[0].emptyDir: Forbidden: may not specify more than 1 volume type",
          v + "[1]: Required value: must specify a volume type",
          v + "[2].persistentVolumeClaim: Forbidden: podvisor supports only emptyDir, hostPath, "
              "configMap, secret, downwardAPI and projected volumes",
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
  pod.spec.volumes = {{"data", EmptyDirVolumeSource{}, {}, {}, {}, {}, {}, {}}};
  pod.spec.containers[0].volume_mounts = {
      {"data", "/data", false, "", "", "", ""},         {"missing", "/data", false, "", "", "", ""},
      {"", "relative", false, "", "", "", ""},          {"data", "", false, "/abs", "", "", ""},
      {"data", "/sub", false, "a/../../b", "", "", ""},
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

// --- Pod-level settings ------------------------------------------------------

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
  app.env = {{"", "", {}}};
  app.ports = {{"", 0, std::nullopt, "TCP", ""}};
  app.volume_mounts = {{"nowhere", "/x", false, "", "", "", ""}};
  app.readiness_probe = Probe{};
  app.resources.requests.cpu = Quantity::FromValue(2);
  app.resources.limits.cpu = Quantity::FromValue(1);
  pod.spec.containers = {app};
  pod.spec.volumes = {Volume{"v", {}, {}, {}, {}, {}, {}, {"nfs"}}};
  pod.spec.active_deadline_seconds = -1;

  std::vector<std::string> lines = Check(pod);
  EXPECT_THAT(
      lines,
      UnorderedElementsAreArray(std::vector<std::string>{
          "metadata.name: Invalid value: \"Bad Pod\": a lowercase RFC 1123 subdomain must "
          "consist of lower case alphanumeric characters, '-' or '.', and must start and end "
          "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
          "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
          "spec.volumes[0].nfs: Forbidden: podvisor supports only emptyDir, hostPath, configMap, "
          "secret, downwardAPI and projected volumes",
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

namespace podvisor::pod {
namespace {

using namespace test_util;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(ValidatePod, DnsFieldsDecodeAndRoundTrip) {
  Pod pod = ParseClean(R"(
  dnsPolicy: None
  dnsConfig:
    nameservers: [192.0.2.53]
    searches: [corp.example]
    options: [{name: ndots, value: "2"}, {name: edns0}]
  hostAliases: [{ip: 192.0.2.9, hostnames: [db, db.local]}]
  hostname: web
  subdomain: shop
  setHostnameAsFQDN: true
  containers: [{name: c, image: busybox}]
)");
  EXPECT_EQ(pod.spec.dns_policy, "None");
  ASSERT_TRUE(pod.spec.dns_config);
  EXPECT_THAT(pod.spec.dns_config->nameservers, ElementsAre("192.0.2.53"));
  ASSERT_EQ(pod.spec.dns_config->options.size(), 2u);
  EXPECT_EQ(pod.spec.dns_config->options[0].value, "2");
  EXPECT_EQ(pod.spec.dns_config->options[1].value, std::nullopt);
  ASSERT_EQ(pod.spec.host_aliases.size(), 1u);
  EXPECT_THAT(pod.spec.host_aliases[0].hostnames, ElementsAre("db", "db.local"));
  EXPECT_EQ(pod.spec.set_hostname_as_fqdn, true);
  EXPECT_THAT(Check(pod), IsEmpty());
}

TEST(ValidatePod, DnsRules) {
  Pod pod = MinimalPod();
  pod.spec.dns_policy = "Cluster";
  pod.spec.host_aliases = {{"not-an-ip", {"Bad_Name"}}};
  auto lines = Check(pod);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "spec.dnsPolicy: Unsupported value: \"Cluster\": supported values: \"ClusterFirst\", "
            "\"ClusterFirstWithHostNet\", \"Default\", \"None\"");
  EXPECT_EQ(lines[1],
            "spec.hostAliases[0].ip: Invalid value: \"not-an-ip\": must be valid IP address");
  EXPECT_THAT(lines[2], ::testing::StartsWith("spec.hostAliases[0].hostnames[0]: Invalid value: "
                                              "\"Bad_Name\": a lowercase RFC 1123 subdomain"));

  Pod none = MinimalPod();
  none.spec.dns_policy = "None";
  EXPECT_THAT(Check(none), ElementsAre("spec.dnsConfig: Required value: must provide `dnsConfig` "
                                       "when `dnsPolicy` is None"));
  none.spec.dns_config = PodDNSConfig{};
  none.spec.dns_config->options = {{"", std::nullopt}};
  EXPECT_THAT(Check(none),
              ElementsAre("spec.dnsConfig.nameservers: Required value: must provide at least one "
                          "DNS nameserver when `dnsPolicy` is None",
                          "spec.dnsConfig.options[0]: Required value: Option.Name must not be "
                          "empty"));
  none.spec.dns_config->options.clear();
  none.spec.dns_config->nameservers = {"1.1.1.1", "1.1.1.2", "1.1.1.3", "x"};
  EXPECT_THAT(Check(none),
              ElementsAre("spec.dnsConfig.nameservers: Invalid value: must not have more "
                          "than 3 nameservers",
                          "spec.dnsConfig.nameservers[3]: Invalid value: \"x\": must be a valid IP "
                          "address"));
}

TEST(ValidatePod, FqdnHostnameMustFit64) {
  Pod pod = MinimalPod();
  pod.spec.hostname = std::string(40, 'h');
  pod.spec.subdomain = "sub";
  pod.spec.set_hostname_as_fqdn = true;
  auto lines = Check(pod);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], ::testing::HasSubstr("spec.setHostnameAsFQDN: Invalid value: true: the "
                                             "pod's FQDN"));
}

}  // namespace
}  // namespace podvisor::pod
