// Tests for decoding a manifest into the model (parse.cc, decode_model.cc):
// every field of the testdata manifests, the handler kinds, IntOrString and
// quantity forms, and what null and empty strings mean. Type errors and
// warnings are in parse_errors_test.cc.
#include <string>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pod/defaults.h"
#include "pod/parse.h"
#include "pod/pod_test_util.h"
#include "pod/serialize.h"
#include "pod/validate.h"

namespace podvisor::pod {
namespace {

using namespace test_util;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

// ---------------------------------------------------------------------------
// Whole manifests

TEST(ParseManifest, TopLevelMustBeAMapping) {
  for (auto [text, format] :
       {std::pair{"[1, 2]", ManifestFormat::kJson}, std::pair{"- a\n- b\n", ManifestFormat::kYaml},
        std::pair{"just a string\n", ManifestFormat::kYaml},
        std::pair{"42", ManifestFormat::kJson}}) {
    Result<ParseOutput> r = ParseManifest(text, format);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_THAT(r.error().message(), StartsWith("the manifest must be a mapping")) << text;
  }
  EXPECT_EQ(ParseManifest("null", ManifestFormat::kJson).error().message(), "manifest is empty");
}

TEST(ParseManifest, YamlAndJsonOfTheSamePodDecodeIdentically) {
  ParseOutput yaml = Parse(ReadFile(TestData("every-field.yaml")), ManifestFormat::kYaml);
  ParseOutput json_out = Parse(ReadFile(TestData("every-field.json")), ManifestFormat::kJson);
  EXPECT_THAT(ErrorLines(yaml), IsEmpty());
  EXPECT_THAT(WarningLines(yaml), IsEmpty());
  EXPECT_THAT(ErrorLines(json_out), IsEmpty());
  EXPECT_TRUE(yaml.pod == json_out.pod);
  EXPECT_EQ(ToJson(yaml.pod), ToJson(json_out.pod));
}

TEST(ParseManifest, EveryFieldIsDecoded) {
  Pod pod = ParseTestData("every-field.yaml");
  EXPECT_EQ(pod.api_version, "v1");
  EXPECT_EQ(pod.kind, "Pod");
  EXPECT_EQ(pod.metadata.name, "every-field");
  EXPECT_EQ(pod.metadata.namespace_name, "tests");
  EXPECT_EQ(pod.metadata.uid, "5f0c2a1e-2b7d-4c55-9d6e-0a4b1c2d3e4f");
  EXPECT_EQ(pod.metadata.labels.at("version"), "1.0");
  EXPECT_EQ(pod.metadata.annotations.at("example.com/note"), "all fields set");

  const PodSpec& spec = pod.spec;
  EXPECT_EQ(spec.restart_policy, RestartPolicy::kOnFailure);
  EXPECT_EQ(spec.termination_grace_period_seconds, 45);
  EXPECT_EQ(spec.active_deadline_seconds, 3600);
  EXPECT_FALSE(spec.host_network || spec.host_ipc || spec.host_pid);
  EXPECT_EQ(spec.share_process_namespace, true);
  EXPECT_EQ(spec.hostname, "every");
  EXPECT_EQ(spec.subdomain, "fields");
  EXPECT_EQ(spec.overhead.cpu, Q("10m"));
  EXPECT_EQ(spec.overhead.memory, Q("16Mi"));
  ASSERT_EQ(spec.readiness_gates.size(), 1u);
  EXPECT_EQ(spec.readiness_gates[0].condition_type, "example.com/LoadBalancerReady");
  ASSERT_TRUE(spec.security_context);
  EXPECT_EQ(spec.security_context->run_as_user, 1000);
  EXPECT_EQ(spec.security_context->run_as_group, 1000);
  EXPECT_EQ(spec.security_context->run_as_non_root, true);
  EXPECT_THAT(spec.security_context->supplemental_groups, ElementsAre(2000, 3000));
  EXPECT_EQ(spec.security_context->seccomp_profile->type, "RuntimeDefault");

  ASSERT_EQ(spec.volumes.size(), 3u);
  EXPECT_EQ(spec.volumes[0].empty_dir->medium, "Memory");
  EXPECT_EQ(spec.volumes[0].empty_dir->size_limit, Q("64Mi"));
  EXPECT_EQ(spec.volumes[1].host_path->path, "/srv/data");
  EXPECT_EQ(spec.volumes[1].host_path->type, "DirectoryOrCreate");
  EXPECT_TRUE(spec.volumes[2].empty_dir);
  EXPECT_FALSE(spec.volumes[2].empty_dir->size_limit);

  ASSERT_EQ(spec.init_containers.size(), 2u);
  EXPECT_FALSE(IsSidecar(spec.init_containers[0]));
  const Container& mesh = spec.init_containers[1];
  EXPECT_TRUE(IsSidecar(mesh));
  const Probe& startup = *mesh.startup_probe;
  EXPECT_EQ(startup.handler.tcp_socket->port, IntOrString::String("mesh-admin"));
  EXPECT_EQ(startup.handler.tcp_socket->host, "127.0.0.1");
  EXPECT_EQ(startup.initial_delay_seconds, 1);
  EXPECT_EQ(startup.timeout_seconds, 2);
  EXPECT_EQ(startup.period_seconds, 1);
  EXPECT_EQ(startup.success_threshold, 1);
  EXPECT_EQ(startup.failure_threshold, 60);
  EXPECT_EQ(mesh.readiness_probe->handler.grpc->port, 15010);
  EXPECT_EQ(mesh.readiness_probe->handler.grpc->service, "mesh.health");
  EXPECT_EQ(mesh.lifecycle->post_start->handler.sleep->seconds, 1);
  const LifecycleHandler& mesh_stop = *mesh.lifecycle->pre_stop;
  EXPECT_EQ(mesh_stop.handler.http_get->path, "/drain");
  EXPECT_EQ(mesh_stop.handler.http_get->port, IntOrString::Int(15000));
  ASSERT_EQ(mesh_stop.handler.http_get->http_headers.size(), 1u);
  EXPECT_EQ(mesh_stop.handler.http_get->http_headers[0].name, "X-Drain");
  EXPECT_EQ(mesh_stop.handler.http_get->http_headers[0].value, "yes");
  EXPECT_EQ(mesh_stop.reason_delivery->header, "X-Termination-Reason");
  EXPECT_FALSE(mesh_stop.reason_delivery->env);

  ASSERT_EQ(spec.containers.size(), 2u);
  const Container& app = spec.containers[0];
  EXPECT_EQ(app.name, "app");
  EXPECT_EQ(app.image, "registry.example/app:1.2");
  EXPECT_THAT(app.command, ElementsAre("/app/server"));
  EXPECT_THAT(app.args, ElementsAre("--port=$(PORT)", "--verbose"));
  EXPECT_EQ(app.working_dir, "/app");
  ASSERT_EQ(app.env.size(), 2u);
  EXPECT_EQ(app.env[0].name, "PORT");
  EXPECT_EQ(app.env[0].value, "8080");
  EXPECT_EQ(app.env[1].value, "");
  ASSERT_EQ(app.ports.size(), 2u);
  EXPECT_EQ(app.ports[0].name, "http");
  EXPECT_EQ(app.ports[0].container_port, 8080);
  EXPECT_EQ(app.ports[0].host_port, 18080);
  EXPECT_EQ(app.ports[0].host_ip, "127.0.0.1");
  EXPECT_EQ(app.ports[1].protocol, "UDP");
  EXPECT_FALSE(app.ports[1].host_port);
  EXPECT_EQ(app.resources.requests.cpu, Q("250m"));
  EXPECT_EQ(app.resources.requests.memory, Q("256Mi"));
  EXPECT_EQ(app.resources.requests.other.at("ephemeral-storage"), Q("1Gi"));
  EXPECT_EQ(app.resources.limits.cpu, Q("1"));
  EXPECT_EQ(app.resources.limits.memory, Q("1Gi"));
  EXPECT_EQ(app.resources.limits.other.at("example.com/widget"), Q("1"));
  ASSERT_EQ(app.volume_mounts.size(), 2u);
  EXPECT_EQ(app.volume_mounts[1].mount_path, "/data");
  EXPECT_TRUE(app.volume_mounts[1].read_only);
  EXPECT_EQ(app.volume_mounts[1].sub_path, "app");
  EXPECT_FALSE(app.restart_policy);
  EXPECT_THAT(app.lifecycle->post_start->handler.exec->command,
              ElementsAre("sh", "-c", "echo started > /scratch/started"));
  EXPECT_EQ(app.lifecycle->pre_stop->reason_delivery->env, "STOP_REASON");
  EXPECT_EQ(app.lifecycle->stop_signal, "SIGINT");
  EXPECT_THAT(app.startup_probe->handler.exec->command,
              ElementsAre("test", "-f", "/scratch/started"));
  const Probe& ready = *app.readiness_probe;
  EXPECT_EQ(ready.handler.http_get->path, "/healthz");
  EXPECT_EQ(ready.handler.http_get->port, IntOrString::String("http"));
  EXPECT_EQ(ready.handler.http_get->host, "127.0.0.1");
  EXPECT_EQ(ready.handler.http_get->scheme, "HTTPS");
  EXPECT_EQ(ready.initial_delay_seconds, 3);
  EXPECT_EQ(ready.timeout_seconds, 2);
  EXPECT_EQ(ready.period_seconds, 5);
  EXPECT_EQ(ready.success_threshold, 2);
  EXPECT_EQ(ready.failure_threshold, 4);
  EXPECT_EQ(app.liveness_probe->handler.tcp_socket->port, IntOrString::Int(8080));
  EXPECT_EQ(app.liveness_probe->termination_grace_period_seconds, 5);
  EXPECT_EQ(app.liveness_probe->timeout_seconds, 1);  // S7.1 default kept
  const SecurityContext& sc = *app.security_context;
  EXPECT_EQ(sc.run_as_user, 1001);
  EXPECT_EQ(sc.run_as_group, 1001);
  EXPECT_EQ(sc.run_as_non_root, true);
  EXPECT_EQ(sc.privileged, false);
  EXPECT_EQ(sc.read_only_root_filesystem, true);
  EXPECT_EQ(sc.allow_privilege_escalation, false);
  EXPECT_THAT(sc.capabilities->add, ElementsAre("NET_BIND_SERVICE"));
  EXPECT_THAT(sc.capabilities->drop, ElementsAre("ALL"));
  EXPECT_EQ(sc.seccomp_profile->type, "Localhost");
  EXPECT_EQ(sc.seccomp_profile->localhost_profile, "profiles/app.json");
  EXPECT_EQ(app.termination_message_path, "/tmp/termination");
  EXPECT_EQ(app.termination_message_policy, TerminationMessagePolicy::kFallbackToLogsOnError);
  EXPECT_EQ(app.image_pull_policy, "IfNotPresent");
  EXPECT_FALSE(app.stdin);  // true is refused by validation
  EXPECT_FALSE(app.tty);

  const Container& worker = spec.containers[1];
  EXPECT_EQ(worker.liveness_probe->handler.http_get->port, IntOrString::Int(8081));
  EXPECT_EQ(worker.lifecycle->pre_stop->handler.sleep->seconds, 2);
}

TEST(ParseManifest, JobWithTwoSidecars) {
  Pod pod = ParseTestData("job-with-sidecars.yaml");
  EXPECT_EQ(pod.spec.restart_policy, RestartPolicy::kNever);
  ASSERT_EQ(pod.spec.init_containers.size(), 3u);
  EXPECT_FALSE(IsSidecar(pod.spec.init_containers[0]));
  EXPECT_TRUE(IsSidecar(pod.spec.init_containers[1]));
  EXPECT_TRUE(IsSidecar(pod.spec.init_containers[2]));
  ASSERT_EQ(pod.spec.containers.size(), 1u);
  EXPECT_EQ(pod.spec.containers[0].args[0],
            "echo \"building report\" >> /var/log/job/out.log\nsleep 5\n");
  EXPECT_EQ(pod.spec.containers[0].resources.limits.cpu, Q("1"));
  EXPECT_EQ(pod.spec.init_containers[2].startup_probe->handler.http_get->port,
            IntOrString::String("admin"));
}

// Other folders' tests use these manifests as valid pods.
TEST(ParseManifest, TestdataManifestsPassValidation) {
  for (const char* name : {"every-field.yaml", "every-field.json", "job-with-sidecars.yaml"}) {
    Pod pod = ParseTestData(name);
    ApplyDefaults(pod);
    std::vector<std::string> problems;
    for (const FieldError& e : ValidatePod(pod)) problems.push_back(e.ToString());
    EXPECT_THAT(problems, IsEmpty()) << name;
  }
}

// ---------------------------------------------------------------------------
// Fields

TEST(ParseManifest, EveryHandlerKindInProbesAndHooks) {
  Pod pod = ParseClean(R"(  containers:
    - name: c
      image: busybox
      startupProbe: {exec: {command: [/bin/true]}}
      readinessProbe: {httpGet: {port: 80, path: /r, httpHeaders: [{name: A, value: b}]}}
      livenessProbe: {grpc: {port: 9000}}
      lifecycle:
        postStart: {tcpSocket: {port: 81, host: localhost}}
        preStop: {sleep: {seconds: 7}}
)");
  const Container& c = pod.spec.containers.at(0);
  EXPECT_THAT(c.startup_probe->handler.exec->command, ElementsAre("/bin/true"));
  EXPECT_EQ(c.readiness_probe->handler.http_get->path, "/r");
  EXPECT_EQ(c.readiness_probe->handler.http_get->port, IntOrString::Int(80));
  EXPECT_EQ(c.readiness_probe->handler.http_get->http_headers.at(0).value, "b");
  EXPECT_EQ(c.liveness_probe->handler.grpc->port, 9000);
  EXPECT_FALSE(c.liveness_probe->handler.grpc->service);
  EXPECT_EQ(c.lifecycle->post_start->handler.tcp_socket->port, IntOrString::Int(81));
  EXPECT_EQ(c.lifecycle->post_start->handler.tcp_socket->host, "localhost");
  EXPECT_EQ(c.lifecycle->pre_stop->handler.sleep->seconds, 7);
  // Only the kind that was given is set.
  EXPECT_FALSE(c.startup_probe->handler.http_get || c.startup_probe->handler.tcp_socket ||
               c.startup_probe->handler.grpc || c.startup_probe->handler.sleep);
}

TEST(ParseManifest, SeveralHandlerKindsAreAllKeptForValidation) {
  Pod pod = ParseClean(R"(  containers:
    - name: c
      livenessProbe: {exec: {command: [x]}, tcpSocket: {port: 1}}
)");
  const Handler& h = pod.spec.containers[0].liveness_probe->handler;
  EXPECT_TRUE(h.exec && h.tcp_socket);
}

TEST(ParseManifest, IntOrStringPortsAcceptNumbersAndStrings) {
  Pod pod = ParseClean(R"(  containers:
    - name: c
      readinessProbe: {tcpSocket: {port: 8080}}
      livenessProbe: {tcpSocket: {port: http}}
      startupProbe: {tcpSocket: {port: "8081"}}
      lifecycle:
        postStart: {httpGet: {port: 8082.0}}
)");
  const Container& c = pod.spec.containers[0];
  EXPECT_EQ(c.readiness_probe->handler.tcp_socket->port, IntOrString::Int(8080));
  EXPECT_EQ(c.liveness_probe->handler.tcp_socket->port, IntOrString::String("http"));
  // A quoted number is a string, as with the API's IntOrString.
  EXPECT_EQ(c.startup_probe->handler.tcp_socket->port, IntOrString::String("8081"));
  EXPECT_EQ(c.lifecycle->post_start->handler.http_get->port, IntOrString::Int(8082));
}

TEST(ParseManifest, QuantitiesMayBeStringsOrNumbers) {
  Pod pod = ParseClean(R"(  overhead: {cpu: 0.1}
  containers:
    - name: c
      resources:
        requests: {cpu: 1, memory: 1.5, ephemeral-storage: 1e3}
        limits: {cpu: "2", memory: 128Mi, nvidia.com/gpu: 1}
)");
  const ResourceRequirements& r = pod.spec.containers[0].resources;
  EXPECT_EQ(r.requests.cpu->milli(), 1000);
  EXPECT_EQ(r.requests.memory->milli(), 1500);
  EXPECT_EQ(r.requests.other.at("ephemeral-storage"), Q("1000"));
  EXPECT_EQ(r.limits.cpu, Q("2"));
  EXPECT_EQ(r.limits.memory->value(), 128 * 1024 * 1024);
  EXPECT_EQ(r.limits.other.at("nvidia.com/gpu"), Q("1"));
  EXPECT_EQ(pod.spec.overhead.cpu, Q("100m"));
}

TEST(ParseManifest, EnvValueFromIsRecorded) {
  Pod pod = ParseClean(R"(  containers:
    - name: c
      env:
        - name: NODE
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
)");
  ASSERT_TRUE(pod.spec.containers[0].env[0].value_from);
  ASSERT_TRUE(pod.spec.containers[0].env[0].value_from->field_ref);
  EXPECT_EQ(pod.spec.containers[0].env[0].value_from->field_ref->field_path, "spec.nodeName");
  EXPECT_EQ(pod.spec.containers[0].env[0].value_from->field_ref->api_version, "v1");
  EXPECT_EQ(pod.spec.containers[0].env[0].value, "");
}

TEST(ParseManifest, NullMeansAbsent) {
  Pod pod = ParseClean(R"(  restartPolicy:
  securityContext: ~
  volumes:
  containers:
    - name: c
      env:
      command: null
      livenessProbe:
      resources: {limits: {cpu: null}}
)");
  EXPECT_EQ(pod.spec.restart_policy, RestartPolicy::kAlways);
  EXPECT_FALSE(pod.spec.security_context);
  const Container& c = pod.spec.containers[0];
  EXPECT_TRUE(c.env.empty() && c.command.empty());
  EXPECT_FALSE(c.liveness_probe);
  EXPECT_TRUE(c.resources.limits.empty());
}

TEST(ParseManifest, EmptyStringsTakeTheApiDefaultForEnums) {
  Pod pod = ParseClean(R"(  restartPolicy: ""
  containers:
    - name: c
      terminationMessagePolicy: ""
)");
  EXPECT_EQ(pod.spec.restart_policy, RestartPolicy::kAlways);
  EXPECT_EQ(pod.spec.containers[0].termination_message_policy, TerminationMessagePolicy::kFile);
}

TEST(ParseManifest, UnsupportedVolumeKindsAreRecordedForValidation) {
  Pod pod = ParseClean(R"(  containers: [{name: c}]
  volumes:
    - name: cfg
      configMap: {name: app-config}
    - name: both
      secret: {secretName: s}
      persistentVolumeClaim: {claimName: data}
    - name: ok
      emptyDir: {}
)");
  EXPECT_THAT(pod.spec.volumes[0].unsupported_sources, IsEmpty());
  ASSERT_TRUE(pod.spec.volumes[0].config_map);
  EXPECT_EQ(pod.spec.volumes[0].config_map->name, "app-config");
  EXPECT_THAT(pod.spec.volumes[1].unsupported_sources, ElementsAre("persistentVolumeClaim"));
  ASSERT_TRUE(pod.spec.volumes[1].secret);
  EXPECT_EQ(pod.spec.volumes[1].secret->secret_name, "s");
  EXPECT_THAT(pod.spec.volumes[2].unsupported_sources, IsEmpty());
  EXPECT_FALSE(pod.spec.volumes[0].empty_dir);
}

TEST(ParseManifest, ContainerRestartPolicyMarksSidecars) {
  Pod pod = ParseClean(R"(  initContainers:
    - {name: sc, restartPolicy: Always}
    - {name: init}
    - {name: odd, restartPolicy: OnFailure}
  containers: [{name: c}]
)");
  EXPECT_TRUE(IsSidecar(pod.spec.init_containers[0]));
  EXPECT_FALSE(pod.spec.init_containers[1].restart_policy);
  // Decoded as given; validation rejects anything but Always.
  EXPECT_EQ(pod.spec.init_containers[2].restart_policy, RestartPolicy::kOnFailure);
}

}  // namespace
}  // namespace podvisor::pod
