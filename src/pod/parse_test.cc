// Tests for manifest reading: YAML/JSON to documents (yaml_to_json.cc),
// decoding into the model (parse.cc), defaults (defaults.cc) and the JSON
// the model serializes back to (serialize.cc).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pod/defaults.h"
#include "pod/parse.h"
#include "pod/serialize.h"
#include "pod/validate.h"

namespace podvisor::pod {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

std::filesystem::path TestData(const std::string& name) {
  const char* dir = std::getenv("PODVISOR_TESTDATA");
  return std::filesystem::path(dir ? dir : "src/pod/testdata") / name;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

void WriteFile(const std::filesystem::path& path, std::string_view content) {
  std::ofstream out(path);
  out << content;
}

// A fresh directory under the system temp dir, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "parse_test.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp: " << std::strerror(errno);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// "apiVersion: v1 / kind: Pod / metadata.name p", then SPEC under "spec:".
std::string PodYaml(std::string_view spec) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n" + std::string(spec);
}

ParseOutput Parse(std::string_view text, ManifestFormat format = ManifestFormat::kYaml) {
  Result<ParseOutput> r = ParseManifest(text, format);
  if (!r) {
    ADD_FAILURE() << "unexpected syntax error: " << r.error().message() << "\n" << text;
    return {};
  }
  return std::move(r).value();
}

std::vector<std::string> ErrorLines(const ParseOutput& out) {
  std::vector<std::string> lines;
  for (const FieldError& e : out.errors) lines.push_back(e.ToString());
  return lines;
}

std::vector<std::string> WarningLines(const ParseOutput& out) {
  std::vector<std::string> lines;
  for (const FieldWarning& w : out.warnings) lines.push_back(w.ToString());
  return lines;
}

// Parses SPEC (see PodYaml) and expects no errors and no warnings.
Pod ParseClean(std::string_view spec) {
  ParseOutput out = Parse(PodYaml(spec));
  EXPECT_THAT(ErrorLines(out), IsEmpty());
  EXPECT_THAT(WarningLines(out), IsEmpty());
  return out.pod;
}

Pod ParseTestData(const std::string& name) {
  Result<ParseOutput> r = ParseManifestFile(TestData(name));
  if (!r) {
    ADD_FAILURE() << r.error().message();
    return {};
  }
  EXPECT_THAT(ErrorLines(*r), IsEmpty()) << name;
  EXPECT_THAT(WarningLines(*r), IsEmpty()) << name;
  return r->pod;
}

json Yaml(std::string_view text) {
  Result<json> r = YamlToJson(text);
  if (!r) {
    ADD_FAILURE() << r.error().message();
    return nullptr;
  }
  return *r;
}

std::string YamlError(std::string_view text) {
  Result<json> r = YamlToJson(text);
  if (r) {
    ADD_FAILURE() << "expected an error for:\n" << text << "\ngot " << r->dump();
    return {};
  }
  return r.error().message();
}

Quantity Q(std::string_view text) {
  return Quantity::Parse(text).value();
}

// ---------------------------------------------------------------------------
// YAML to JSON

TEST(YamlToJson, PlainScalarsFollowTheYaml12CoreSchema) {
  json doc = Yaml(R"(
nulls: [~, null, Null, NULL, ]
empty:
bools: [true, True, TRUE, false, False, FALSE]
ints: [0, -17, +42, 012, 0x1F, 0o17]
floats: [1.5, -0.25, .5, 1., 1e3, 2.5E-1]
yaml11_words: [yes, no, on, off, y, n]
not_numbers: [0x, 0o8, 1_000, 1.2.3, "0x1F", 12abc]
)");
  EXPECT_EQ(doc["nulls"], json::parse("[null, null, null, null]"));
  EXPECT_TRUE(doc["empty"].is_null());
  EXPECT_EQ(doc["bools"], json::parse("[true, true, true, false, false, false]"));
  EXPECT_EQ(doc["ints"], json::parse("[0, -17, 42, 12, 31, 15]"));
  for (const json& v : doc["ints"]) EXPECT_TRUE(v.is_number_integer()) << v;
  EXPECT_EQ(doc["floats"], json::parse("[1.5, -0.25, 0.5, 1.0, 1000.0, 0.25]"));
  for (const json& v : doc["floats"]) EXPECT_TRUE(v.is_number_float()) << v;
  EXPECT_EQ(doc["yaml11_words"], json::parse(R"(["yes", "no", "on", "off", "y", "n"])"));
  EXPECT_EQ(doc["not_numbers"], json::parse(R"(["0x", "0o8", "1_000", "1.2.3", "0x1F", "12abc"])"));
}

TEST(YamlToJson, InfinityAndNanAreFloats) {
  json doc = Yaml("a: [.inf, -.Inf, +.INF, .nan, .NaN]\n");
  ASSERT_EQ(doc["a"].size(), 5u);
  EXPECT_TRUE(std::isinf(doc["a"][0].get<double>()) && doc["a"][0].get<double>() > 0);
  EXPECT_TRUE(std::isinf(doc["a"][1].get<double>()) && doc["a"][1].get<double>() < 0);
  EXPECT_TRUE(std::isinf(doc["a"][2].get<double>()));
  EXPECT_TRUE(std::isnan(doc["a"][3].get<double>()));
  EXPECT_TRUE(std::isnan(doc["a"][4].get<double>()));
}

TEST(YamlToJson, QuotedAndBlockScalarsStayStrings) {
  json doc = Yaml(R"(
double: "123"
single: 'true'
null_word: "null"
literal: |
  42
folded: >
  3.5
tagged: !!str 99
)");
  EXPECT_EQ(doc["double"], "123");
  EXPECT_EQ(doc["single"], "true");
  EXPECT_EQ(doc["null_word"], "null");
  EXPECT_EQ(doc["literal"], "42\n");
  EXPECT_EQ(doc["folded"], "3.5\n");
  EXPECT_EQ(doc["tagged"], "99");
}

TEST(YamlToJson, IntegersBeyond64BitsBecomeFloatsNotWrapped) {
  json doc = Yaml(
      "a: 9223372036854775807\nb: 18446744073709551615\nc: 99999999999999999999\n"
      "d: -9223372036854775808\n");
  EXPECT_EQ(doc["a"].get<int64_t>(), INT64_MAX);
  EXPECT_TRUE(doc["b"].is_number_unsigned());
  EXPECT_EQ(doc["b"].get<uint64_t>(), UINT64_MAX);
  EXPECT_TRUE(doc["c"].is_number_float());
  EXPECT_EQ(doc["d"].get<int64_t>(), INT64_MIN);
}

TEST(YamlToJson, AliasesAndMergeKeysResolve) {
  json doc = Yaml(R"(
base: &base {cpu: 100m, memory: 64Mi}
copy: *base
merged:
  <<: *base
  memory: 128Mi
merged_list:
  <<: [{a: 1}, {a: 2, b: 2}]
)");
  EXPECT_EQ(doc["copy"], json::parse(R"({"cpu": "100m", "memory": "64Mi"})"));
  EXPECT_EQ(doc["merged"], json::parse(R"({"cpu": "100m", "memory": "128Mi"})"));
  EXPECT_EQ(doc["merged_list"], json::parse(R"({"a": 1, "b": 2})"));
}

TEST(YamlToJson, EmptyDocumentIsAnError) {
  EXPECT_EQ(YamlError(""), "manifest is empty");
  EXPECT_EQ(YamlError("---\n"), "manifest is empty");
  EXPECT_EQ(YamlError("# only a comment\n"), "manifest is empty");
  EXPECT_EQ(YamlError("~\n"), "manifest is empty");
}

TEST(YamlToJson, SeveralDocumentsAreAnError) {
  EXPECT_EQ(YamlError("a: 1\n---\nb: 2\n"),
            "line 2, column 1: the manifest holds more than one YAML document; podvisor runs "
            "exactly one pod");
  // Separators around a single document are common and fine.
  EXPECT_EQ(Yaml("---\na: 1\n---\n"), json::parse(R"({"a": 1})"));
}

TEST(YamlToJson, SyntaxErrorNamesLineAndColumn) {
  EXPECT_THAT(YamlError("a: 1\nb: [1, 2\nc: 3\n"), StartsWith("line "));
  EXPECT_THAT(YamlError("a: 1\n  b: 2\n"), StartsWith("line 2, column "));
  EXPECT_THAT(YamlError("a: b: c\n"), StartsWith("line 1, column "));
}

// yaml-cpp 0.7's LoadAll loops forever on these (yaml-cpp issue #1040).
TEST(YamlToJson, StreamStartingWithACommaIsAnErrorNotAHang) {
  EXPECT_EQ(YamlError(","), "line 1, column 1: unexpected \",\"");
  EXPECT_EQ(YamlError("\n,'x'\n"), "line 2, column 1: unexpected \",\"");
  EXPECT_THAT(YamlError("a: b\n---\n, \"\"\n"), HasSubstr("unexpected \",\""));
}

TEST(YamlToJson, SyntaxErrorsWinOverLaterBuildProblems) {
  // An unclosed "{" makes the next lines look like a complex key; the
  // parser's own error names the real cause.
  EXPECT_EQ(YamlError("spec:\n  containers:\n    - {name: c, image: x\n    - name: d\n"),
            "line 4, column 11: end of map flow not found");
}

TEST(YamlToJson, EscapesYamlCppDecodesToLatin1AreRejected) {
  EXPECT_EQ(YamlError("a: \"x\\_y\"\n"),
            "line 1, column 4: the escapes \\_ and \\N are not supported; write the character");
  EXPECT_EQ(Yaml("a: \"\\u00e9\\U0001F600\\t\"\n")["a"], "\xc3\xa9\xf0\x9f\x98\x80\t");
}

TEST(YamlToJson, DuplicateKeysAreAnError) {
  EXPECT_EQ(YamlError("a: 1\nb: 2\na: 3\n"), "line 3, column 1: duplicate key \"a\"");
}

TEST(YamlToJson, NonScalarKeysAreAnError) {
  EXPECT_THAT(YamlError("? [1, 2]\n: x\n"), HasSubstr("mapping keys must be scalars"));
}

TEST(YamlToJson, InvalidUtf8IsAnError) {
  EXPECT_EQ(YamlError("a: ok\nb: \xff\xfe\n"), "line 2, column 4: invalid UTF-8");
  EXPECT_EQ(YamlError("a: \xc0\xaf\n"), "line 1, column 4: invalid UTF-8");  // overlong "/"
  EXPECT_EQ(Yaml("a: \xc3\xa9t\xc3\xa9\n")["a"], "\xc3\xa9t\xc3\xa9");
}

std::string NestedFlow(int depth) {
  return "a: " + std::string(static_cast<std::size_t>(depth), '[') +
         std::string(static_cast<std::size_t>(depth), ']') + "\n";
}

TEST(YamlToJson, NestingUpToTheLimitIsAccepted) {
  // The root mapping is one level.
  EXPECT_TRUE(YamlToJson(NestedFlow(kMaxManifestDepth - 1)).ok());
}

TEST(YamlToJson, DeepNestingIsRejectedCleanly) {
  EXPECT_THAT(YamlError(NestedFlow(kMaxManifestDepth)), HasSubstr("nesting deeper than 64 levels"));
  // Far past the limit: yaml-cpp's own recursion guard must answer first.
  EXPECT_THAT(YamlError(NestedFlow(100000)), StartsWith("line 1, column "));
  std::string block;
  for (int i = 0; i < 100; ++i) block += std::string(static_cast<std::size_t>(i), ' ') + "k:\n";
  EXPECT_THAT(YamlError(block), HasSubstr("nesting deeper than 64 levels"));
}

TEST(YamlToJson, AliasExpansionIsBounded) {
  // "Billion laughs": nine levels of ten aliases each.
  std::string text = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; ++i) {
    std::string prev = "*l" + std::to_string(i - 1);
    text += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", " : "") + prev;
    text += "]\n";
  }
  EXPECT_THAT(YamlError(text), HasSubstr("expands to too many values"));
}

TEST(YamlToJson, SelfReferentialAliasDoesNotLoop) {
  Result<json> r = YamlToJson("a: &a [1, *a]\n");
  if (!r) SUCCEED() << r.error().message();  // either answer is fine, as long as it ends
}

// ---------------------------------------------------------------------------
// JSON text

TEST(ParseJsonText, SyntaxErrorNamesLineAndColumn) {
  Result<json> r = ParseJsonText("{\n  \"a\": 1,\n  \"b\": ]\n}");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), StartsWith("line 3, column 8: syntax error"));
}

TEST(ParseJsonText, DuplicateKeysAreAnError) {
  Result<json> r = ParseJsonText(R"({"a": {"x": 1, "y": 2}, "b": {"x": 1, "x": 2}})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "duplicate key \"x\"");
}

TEST(ParseJsonText, DeepNestingIsRejected) {
  auto nested = [](int depth) {
    return std::string(static_cast<std::size_t>(depth), '[') +
           std::string(static_cast<std::size_t>(depth), ']');
  };
  EXPECT_TRUE(ParseJsonText(nested(kMaxManifestDepth)).ok());
  Result<json> r = ParseJsonText(nested(1000000));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "nesting deeper than 64 levels");
}

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
  EXPECT_TRUE(app.stdin);
  EXPECT_TRUE(app.tty);

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

TEST(ParseManifest, IntOrStringRejectsOtherTypes) {
  ParseOutput out = Parse(PodYaml(R"(  containers:
    - name: c
      readinessProbe: {tcpSocket: {port: 80.5}}
      livenessProbe: {tcpSocket: {port: [80]}}
)"));
  EXPECT_THAT(
      ErrorLines(out),
      UnorderedElementsAre("spec.containers[0].readinessProbe.tcpSocket.port: Invalid value: 80.5: "
                           "must be an integer",
                           "spec.containers[0].livenessProbe.tcpSocket.port: Invalid value: [80]: "
                           "must be an integer or a string"));
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

TEST(ParseManifest, MalformedQuantityNamesTheResourceWithBrackets) {
  ParseOutput out = Parse(PodYaml(R"(  containers:
    - name: c
      resources:
        limits: {memory: 12Q, cpu: true}
  volumes:
    - name: v
      emptyDir: {sizeLimit: lots}
)"));
  EXPECT_THAT(
      ErrorLines(out),
      UnorderedElementsAre(
          "spec.containers[0].resources.limits[memory]: Invalid value: \"12Q\": quantities must "
          "match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
          "spec.containers[0].resources.limits[cpu]: Invalid value: true: must be a quantity: a "
          "string such as \"500m\" or \"128Mi\", or a number",
          "spec.volumes[0].emptyDir.sizeLimit: Invalid value: \"lots\": quantities must match the "
          "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"));
  EXPECT_EQ(out.errors[0].type == FieldErrorType::kInvalid ||
                out.errors[0].type == FieldErrorType::kTypeInvalid,
            true);
}

TEST(ParseManifest, QuotedNumberIsATypeErrorForContainerPort) {
  ParseOutput out = Parse(PodYaml(R"(  containers:
    - name: c
      ports:
        - containerPort: "8080"
        - containerPort: abc
)"));
  EXPECT_THAT(ErrorLines(out),
              ElementsAre("spec.containers[0].ports[0].containerPort: Invalid value: \"8080\": "
                          "must be an integer",
                          "spec.containers[0].ports[1].containerPort: Invalid value: \"abc\": "
                          "must be an integer"));
  EXPECT_EQ(out.errors[0].type, FieldErrorType::kTypeInvalid);
}

TEST(ParseManifest, EnvValuesMustBeStrings) {
  // `value: "true"` is the string; unquoted true is a boolean, which the
  // API server rejects for an env var.
  Pod pod = ParseClean(R"(  containers:
    - name: c
      env:
        - {name: A, value: "true"}
        - {name: B, value: "8080"}
)");
  EXPECT_EQ(pod.spec.containers[0].env[0].value, "true");
  EXPECT_EQ(pod.spec.containers[0].env[1].value, "8080");

  ParseOutput out = Parse(PodYaml(R"(  containers:
    - name: c
      env:
        - {name: A, value: true}
        - {name: B, value: 8080}
)"));
  EXPECT_THAT(
      ErrorLines(out),
      ElementsAre("spec.containers[0].env[0].value: Invalid value: true: must be a string",
                  "spec.containers[0].env[1].value: Invalid value: 8080: must be a string"));
}

TEST(ParseManifest, EnvValueFromIsRecorded) {
  Pod pod = ParseClean(R"(  containers:
    - name: c
      env:
        - name: NODE
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
)");
  EXPECT_TRUE(pod.spec.containers[0].env[0].has_value_from);
  EXPECT_EQ(pod.spec.containers[0].env[0].value, "");
}

TEST(ParseManifest, IntegersOutOfRangeAreErrors) {
  ParseOutput out = Parse(PodYaml(R"(  terminationGracePeriodSeconds: 99999999999999999999
  containers:
    - name: c
      ports: [{containerPort: 2147483648}, {containerPort: -2147483649}]
      livenessProbe: {exec: {command: [x]}, periodSeconds: 2147483647}
)"));
  EXPECT_THAT(
      ErrorLines(out),
      UnorderedElementsAre(
          "spec.terminationGracePeriodSeconds: Invalid value: 1e+20: must be an integer between "
          "-9223372036854775808 and 9223372036854775807",
          "spec.containers[0].ports[0].containerPort: Invalid value: 2147483648: must be an "
          "integer between -2147483648 and 2147483647",
          "spec.containers[0].ports[1].containerPort: Invalid value: -2147483649: must be an "
          "integer between -2147483648 and 2147483647"));
  EXPECT_EQ(out.pod.spec.containers[0].liveness_probe->period_seconds, 2147483647);
}

TEST(ParseManifest, WrongTypesGiveKubectlStyleErrors) {
  ParseOutput typed = Parse(R"(apiVersion: v1
kind: Pod
metadata:
  name: p
  labels: {version: 1, app: web}
  annotations: [a]
spec:
  hostNetwork: "true"
  terminationGracePeriodSeconds: "30"
  containers:
    - name: c
      image: 7
      command: sleep 10
      args: [1, two]
      stdin: yes
      securityContext: [privileged]
  volumes: {name: v}
)");
  EXPECT_THAT(
      ErrorLines(typed),
      UnorderedElementsAre(
          "metadata.labels[version]: Invalid value: 1: must be a string",
          "metadata.annotations: Invalid value: [\"a\"]: must be an object of strings",
          "spec.hostNetwork: Invalid value: \"true\": must be a boolean",
          "spec.terminationGracePeriodSeconds: Invalid value: \"30\": must be an integer",
          "spec.containers[0].image: Invalid value: 7: must be a string",
          "spec.containers[0].command: Invalid value: \"sleep 10\": must be a list",
          "spec.containers[0].args[0]: Invalid value: 1: must be a string",
          "spec.containers[0].stdin: Invalid value: \"yes\": must be a boolean",
          "spec.containers[0].securityContext: Invalid value: [\"privileged\"]: must be an object",
          "spec.volumes: Invalid value: {\"name\":\"v\"}: must be a list"));
  // What was well-typed is still decoded.
  EXPECT_EQ(typed.pod.metadata.labels.at("app"), "web");
  EXPECT_EQ(typed.pod.spec.containers[0].args.at(1), "two");
}

TEST(ParseManifest, ErrorValuesAreAbbreviated) {
  ParseOutput out = Parse(
      PodYaml("  hostname:\n    long: " + std::string(100, 'x') + "\n  containers: [{name: c}]\n"));
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_EQ(out.errors[0].value.size(), 64u);
  EXPECT_THAT(out.errors[0].value, testing::EndsWith("..."));
}

TEST(ParseManifest, UnknownFieldsWarnWithTheirPath) {
  ParseOutput out = Parse(R"(apiVersion: v1
kind: Pod
extra: 1
metadata:
  name: p
  colour: blue
spec:
  containerz: []
  containers:
    - name: c
      foo: bar
      livenessProbe: {exec: {command: [x], shell: sh}, periodSecond: 5}
      resources: {limit: {cpu: 1}}
)");
  EXPECT_THAT(ErrorLines(out), IsEmpty());
  EXPECT_THAT(WarningLines(out),
              UnorderedElementsAre("extra: unknown field", "metadata.colour: unknown field",
                                   "spec.containerz: unknown field",
                                   "spec.containers[0].foo: unknown field",
                                   "spec.containers[0].livenessProbe.exec.shell: unknown field",
                                   "spec.containers[0].livenessProbe.periodSecond: unknown field",
                                   "spec.containers[0].resources.limit: unknown field"));
}

TEST(ParseManifest, KnownButUnsupportedFieldsWarnWithTheReason) {
  ParseOutput out = Parse(R"(apiVersion: v1
kind: Pod
metadata:
  name: p
  creationTimestamp: null
spec:
  nodeSelector: {disk: ssd}
  tolerations: [{key: k, operator: Exists}]
  affinity: {}
  serviceAccountName: web
  dnsPolicy: ClusterFirst
  priorityClassName: high
  schedulerName: default-scheduler
  containers:
    - name: c
      envFrom: [{configMapRef: {name: cm}}]
      securityContext: {seLinuxOptions: {level: "s0"}}
status:
  phase: Running
)");
  EXPECT_THAT(ErrorLines(out), IsEmpty());
  const std::string scheduler = "ignored: podvisor runs a single pod without a scheduler";
  EXPECT_THAT(
      WarningLines(out),
      UnorderedElementsAre(
          "metadata.creationTimestamp: ignored: set by the API server, not by a manifest",
          "spec.nodeSelector: " + scheduler, "spec.tolerations: " + scheduler,
          "spec.affinity: " + scheduler, "spec.priorityClassName: " + scheduler,
          "spec.schedulerName: " + scheduler,
          "spec.serviceAccountName: ignored: podvisor has no API server (no service accounts, "
          "secrets or services)",
          "spec.dnsPolicy: ignored: podvisor does not manage the pod's DNS",
          "spec.containers[0].envFrom: ignored: podvisor has no ConfigMaps or Secrets to read "
          "variables from",
          "spec.containers[0].securityContext.seLinuxOptions: ignored: not supported by podvisor",
          "status: ignored: the status is computed by podvisor"));
}

TEST(ParseManifest, ApiVersionAndKindAreRequired) {
  ParseOutput out = Parse("metadata: {name: p}\nspec: {containers: [{name: c}]}\n");
  EXPECT_THAT(ErrorLines(out), ElementsAre("apiVersion: Required value", "kind: Required value"));
  ParseOutput nulls = Parse("apiVersion: ~\nkind:\nspec: {containers: [{name: c}]}\n");
  EXPECT_THAT(ErrorLines(nulls), ElementsAre("apiVersion: Required value", "kind: Required value"));
}

TEST(ParseManifest, ApiVersionAndKindMustBeV1Pod) {
  ParseOutput out = Parse("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: p}\nspec: {}\n");
  EXPECT_THAT(ErrorLines(out),
              ElementsAre("apiVersion: Unsupported value: \"apps/v1\": supported values: \"v1\"",
                          "kind: Unsupported value: \"Deployment\": supported values: \"Pod\""));
  EXPECT_EQ(out.errors[0].type, FieldErrorType::kUnsupported);
  ParseOutput typed = Parse("apiVersion: 1\nkind: Pod\nspec: {}\n");
  EXPECT_THAT(ErrorLines(typed), ElementsAre("apiVersion: Invalid value: 1: must be a string"));
}

TEST(ParseManifest, MissingSpecIsRequired) {
  ParseOutput out = Parse("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n");
  EXPECT_THAT(ErrorLines(out), ElementsAre("spec: Required value"));
}

TEST(ParseManifest, EveryProblemIsReportedInOneRun) {
  ParseOutput out = Parse(R"(apiVersion: v2
kind: Pod
metadata: {name: p}
spec:
  restartPolicy: Sometimes
  initContainers:
    - name: sc
      restartPolicy: Sometimes
  containers:
    - name: a
      ports: [{containerPort: x}]
      terminationMessagePolicy: Always
    - name: b
      resources: {requests: {memory: 1GB}}
      bogus: true
)");
  EXPECT_THAT(
      ErrorLines(out),
      UnorderedElementsAre(
          "apiVersion: Unsupported value: \"v2\": supported values: \"v1\"",
          "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", "
          "\"OnFailure\", \"Never\"",
          "spec.initContainers[0].restartPolicy: Unsupported value: \"Sometimes\": supported "
          "values: \"Always\"",
          "spec.containers[0].ports[0].containerPort: Invalid value: \"x\": must be an integer",
          "spec.containers[0].terminationMessagePolicy: Unsupported value: \"Always\": supported "
          "values: \"File\", \"FallbackToLogsOnError\"",
          testing::StartsWith("spec.containers[1].resources.requests[memory]: Invalid value: "
                              "\"1GB\": quantities must match")));
  EXPECT_THAT(WarningLines(out), ElementsAre("spec.containers[1].bogus: unknown field"));
  EXPECT_EQ(out.pod.spec.containers.size(), 2u);
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
  EXPECT_THAT(pod.spec.volumes[0].unsupported_sources, ElementsAre("configMap"));
  EXPECT_THAT(pod.spec.volumes[1].unsupported_sources,
              UnorderedElementsAre("secret", "persistentVolumeClaim"));
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

TEST(ParseManifest, WrongShapesNeverThrow) {
  const char* manifests[] = {
      "apiVersion: v1\nkind: Pod\nspec: []\n",
      "apiVersion: v1\nkind: Pod\nspec: {containers: {name: c}}\n",
      "apiVersion: v1\nkind: Pod\nspec: {containers: [1, x, [], null, {}]}\n",
      "apiVersion: v1\nkind: Pod\nmetadata: 5\nspec: {containers: [{lifecycle: [], env: [1]}]}\n",
      "apiVersion: [v1]\nkind: {a: b}\nspec: {volumes: [{hostPath: 1, emptyDir: [], x: y}]}\n",
      "apiVersion: v1\nkind: Pod\nspec: {containers: [{resources: {limits: [], requests: 1}}]}\n",
      "apiVersion: v1\nkind: Pod\nspec: {containers: [{livenessProbe: {httpGet: {port: {}}}}]}\n",
  };
  for (const char* text : manifests) {
    ParseOutput out = Parse(text);
    EXPECT_FALSE(out.errors.empty()) << text;
  }
}

TEST(ParseManifest, DecodePodReportsANonObjectDocument) {
  ParseOutput out = DecodePod(json::array());
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_EQ(out.errors[0].type, FieldErrorType::kTypeInvalid);
}

// Random damage to a real manifest: parsing must always come back with an
// answer (this is the fuzzer's job too; this keeps a cheap version in CI).
TEST(ParseManifest, DamagedManifestsNeverCrash) {
  const std::string yaml = ReadFile(TestData("every-field.yaml"));
  const std::string json_text = ReadFile(TestData("every-field.json"));
  std::mt19937 rng(12345);
  const std::string alphabet = "{}[]:,-&*!|>'\"#\n \t?%@`0x1e.~<\\\xff";
  for (int round = 0; round < 300; ++round) {
    for (const std::string* original : {&yaml, &json_text}) {
      std::string text = *original;
      int edits = 1 + static_cast<int>(rng() % 8);
      for (int e = 0; e < edits && !text.empty(); ++e) {
        std::size_t pos = rng() % text.size();
        switch (rng() % 4) {
          case 0:
            text[pos] = alphabet[rng() % alphabet.size()];
            break;
          case 1:
            text.erase(pos, 1 + rng() % 16);
            break;
          case 2:
            text.insert(pos, 1, alphabet[rng() % alphabet.size()]);
            break;
          default:
            text.resize(pos);
        }
      }
      for (ManifestFormat f : {ManifestFormat::kYaml, ManifestFormat::kJson}) {
        Result<ParseOutput> r = ParseManifest(text, f);
        if (r) {
          ApplyDefaults(r->pod);
          (void)ToJson(r->pod).dump();
        }
      }
    }
  }
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
// Defaults

TEST(Defaults, TerminationGracePeriodIs30WhenAbsent) {
  Pod pod = ParseClean("  containers: [{name: c}]\n");
  EXPECT_FALSE(pod.spec.termination_grace_period_seconds);
  ApplyDefaults(pod);
  EXPECT_EQ(pod.spec.termination_grace_period_seconds, 30);

  Pod zero = ParseClean("  terminationGracePeriodSeconds: 0\n  containers: [{name: c}]\n");
  ApplyDefaults(zero);
  EXPECT_EQ(zero.spec.termination_grace_period_seconds, 0);  // given, even if 0
}

TEST(Defaults, RequestsDefaultToLimitsPerResourceInEveryContainerKind) {
  Pod pod = ParseClean(R"(  initContainers:
    - name: init
      resources: {limits: {cpu: 500m, memory: 1Gi}}
    - name: sidecar
      restartPolicy: Always
      resources: {limits: {memory: 128Mi, hugepages-2Mi: 4Mi}, requests: {memory: 64Mi}}
  containers:
    - name: app
      resources: {limits: {cpu: "1", example.com/gpu: 2}, requests: {cpu: 250m}}
    - name: none
)");
  ApplyDefaults(pod);
  const ResourceRequirements& init = pod.spec.init_containers[0].resources;
  EXPECT_EQ(init.requests.cpu, Q("500m"));
  EXPECT_EQ(init.requests.memory, Q("1Gi"));
  const ResourceRequirements& sidecar = pod.spec.init_containers[1].resources;
  EXPECT_EQ(sidecar.requests.memory, Q("64Mi"));  // an explicit request stays
  EXPECT_FALSE(sidecar.requests.cpu);
  EXPECT_EQ(sidecar.requests.other.at("hugepages-2Mi"), Q("4Mi"));
  const ResourceRequirements& app = pod.spec.containers[0].resources;
  EXPECT_EQ(app.requests.cpu, Q("250m"));
  EXPECT_FALSE(app.requests.memory);
  EXPECT_EQ(app.requests.other.at("example.com/gpu"), Q("2"));
  EXPECT_TRUE(pod.spec.containers[1].resources.requests.empty());
}

TEST(Defaults, HttpGetPathAndSchemeInProbesAndHooks) {
  Pod pod = ParseClean(R"(  containers:
    - name: c
      startupProbe: {httpGet: {port: 1}}
      readinessProbe: {httpGet: {port: 2, path: "", scheme: ""}}
      livenessProbe: {httpGet: {port: 3, path: /live, scheme: HTTPS}}
      lifecycle:
        postStart: {httpGet: {port: 4}}
        preStop: {httpGet: {port: 5, scheme: ""}}
)");
  ApplyDefaults(pod);
  const Container& c = pod.spec.containers[0];
  for (const HttpGetAction* get :
       {&*c.startup_probe->handler.http_get, &*c.readiness_probe->handler.http_get,
        &*c.lifecycle->post_start->handler.http_get, &*c.lifecycle->pre_stop->handler.http_get}) {
    EXPECT_EQ(get->path, "/");
    EXPECT_EQ(get->scheme, "HTTP");
  }
  EXPECT_EQ(c.liveness_probe->handler.http_get->path, "/live");
  EXPECT_EQ(c.liveness_probe->handler.http_get->scheme, "HTTPS");
}

TEST(Defaults, NamespaceIsDefault) {
  Pod pod = Parse(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: \"\"}\n"
                "spec: {containers: [{name: c}]}\n")
                .pod;
  EXPECT_EQ(pod.metadata.namespace_name, "");
  ApplyDefaults(pod);
  EXPECT_EQ(pod.metadata.namespace_name, "default");
  EXPECT_EQ(ParseClean("  containers: [{name: c}]\n").metadata.namespace_name, "default");
}

TEST(Defaults, ProbeZeroesPortProtocolAndMessagePathTakeApiDefaults) {
  Pod pod = ParseClean(R"(  containers:
    - name: c
      ports: [{containerPort: 80, protocol: ""}]
      terminationMessagePath: ""
      livenessProbe:
        exec: {command: [x]}
        initialDelaySeconds: 0
        timeoutSeconds: 0
        periodSeconds: 0
        successThreshold: 0
        failureThreshold: 0
)");
  ApplyDefaults(pod);  // S7.1
  const Container& c = pod.spec.containers[0];
  EXPECT_EQ(c.ports[0].protocol, "TCP");
  EXPECT_EQ(c.termination_message_path, "/dev/termination-log");
  EXPECT_EQ(c.liveness_probe->initial_delay_seconds, 0);
  EXPECT_EQ(c.liveness_probe->timeout_seconds, 1);
  EXPECT_EQ(c.liveness_probe->period_seconds, 10);
  EXPECT_EQ(c.liveness_probe->success_threshold, 1);
  EXPECT_EQ(c.liveness_probe->failure_threshold, 3);
}

TEST(Defaults, ApplyingTwiceChangesNothing) {
  for (const char* name : {"every-field.yaml", "job-with-sidecars.yaml"}) {
    Pod once = ParseTestData(name);
    ApplyDefaults(once);
    Pod twice = once;
    ApplyDefaults(twice);
    EXPECT_TRUE(once == twice) << name;
  }
}

// ---------------------------------------------------------------------------
// Serialization

TEST(Serialize, RoundTripsTheTestdataManifests) {
  for (const char* name : {"every-field.yaml", "every-field.json", "job-with-sidecars.yaml"}) {
    Pod pod = ParseTestData(name);
    for (bool defaulted : {false, true}) {
      if (defaulted) ApplyDefaults(pod);
      json serialized = ToJson(pod);
      ParseOutput back = DecodePod(serialized);
      EXPECT_THAT(ErrorLines(back), IsEmpty()) << name;
      EXPECT_THAT(WarningLines(back), IsEmpty()) << name;
      EXPECT_TRUE(back.pod == pod) << name << " defaulted=" << defaulted << "\n"
                                   << serialized.dump(2) << "\n"
                                   << ToJson(back.pod).dump(2);
      // And through text, as `podvisor status -o json` | a script would.
      Result<ParseOutput> reparsed = ParseManifest(serialized.dump(), ManifestFormat::kJson);
      ASSERT_TRUE(reparsed.ok());
      EXPECT_TRUE(reparsed->pod == pod) << name;
    }
  }
}

TEST(Serialize, MinimalPodOmitsEmptyFields) {
  Pod pod = ParseClean("  containers: [{name: app, image: busybox}]\n");
  ApplyDefaults(pod);
  EXPECT_EQ(ToJson(pod), json::parse(R"({
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {
      "restartPolicy": "Always",
      "terminationGracePeriodSeconds": 30,
      "containers": [{
        "name": "app",
        "image": "busybox",
        "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File"
      }]
    }
  })"));
}

TEST(Serialize, QuantitiesInCanonicalForm) {
  Pod pod = ParseClean(R"(  containers:
    - name: c
      resources:
        limits: {cpu: 0.5, memory: 1024Mi, ephemeral-storage: "1000"}
)");
  ApplyDefaults(pod);
  json resources = ToJson(pod.spec.containers[0])["resources"];
  EXPECT_EQ(resources["limits"], json::parse(R"({"cpu": "500m", "memory": "1Gi",
                                                 "ephemeral-storage": "1k"})"));
  EXPECT_EQ(resources["requests"], resources["limits"]);
  EXPECT_EQ(ToJson(Q("128Mi")), "128Mi");
}

TEST(Serialize, ProbesShowTheirDefaultedNumbers) {
  Pod pod = ParseClean(R"(  containers:
    - name: c
      livenessProbe: {httpGet: {port: http}}
      readinessProbe: {tcpSocket: {port: 80}, initialDelaySeconds: 5}
)");
  ApplyDefaults(pod);
  json c = ToJson(pod.spec.containers[0]);
  EXPECT_EQ(c["livenessProbe"], json::parse(R"({
    "httpGet": {"path": "/", "port": "http", "scheme": "HTTP"},
    "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})"));
  EXPECT_EQ(c["readinessProbe"]["initialDelaySeconds"], 5);
  EXPECT_EQ(c["readinessProbe"]["tcpSocket"], json::parse(R"({"port": 80})"));
}

TEST(Serialize, LifecycleSecurityAndVolumes) {
  Pod pod = ParseTestData("every-field.yaml");
  json spec = ToJson(pod.spec);
  EXPECT_EQ(spec["restartPolicy"], "OnFailure");
  EXPECT_EQ(spec["volumes"][0], json::parse(R"({"name": "scratch",
      "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}})"));
  EXPECT_EQ(spec["volumes"][2], json::parse(R"({"name": "cache", "emptyDir": {}})"));
  json app = spec["containers"][0];
  EXPECT_EQ(app["lifecycle"]["preStop"], json::parse(R"j({
      "exec": {"command": ["/app/server", "shutdown", "--reason=$(STOP_REASON)"]},
      "reasonDelivery": {"env": "STOP_REASON"}})j"));
  EXPECT_EQ(app["lifecycle"]["stopSignal"], "SIGINT");
  EXPECT_EQ(app["securityContext"]["capabilities"], json::parse(R"({"add": ["NET_BIND_SERVICE"],
      "drop": ["ALL"]})"));
  EXPECT_EQ(app["terminationMessagePolicy"], "FallbackToLogsOnError");
  EXPECT_EQ(app["ports"][0], json::parse(R"({"name": "http", "containerPort": 8080,
      "hostPort": 18080, "protocol": "TCP", "hostIP": "127.0.0.1"})"));
  EXPECT_EQ(spec["initContainers"][1]["restartPolicy"], "Always");
  EXPECT_FALSE(spec.contains("hostNetwork"));  // false is omitted
  EXPECT_EQ(spec["shareProcessNamespace"], true);
}

TEST(Serialize, UnsupportedVolumeKindsAndValueFromKeepTheirKeys) {
  Pod pod = ParseClean(R"(  containers:
    - name: c
      env: [{name: N, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
  volumes: [{name: cfg, configMap: {name: x}}]
)");
  json spec = ToJson(pod.spec);
  EXPECT_EQ(spec["volumes"][0], json::parse(R"({"name": "cfg", "configMap": {}})"));
  EXPECT_EQ(spec["containers"][0]["env"][0], json::parse(R"({"name": "N", "valueFrom": {}})"));
}

TEST(ModelNames, EnumsPrintAsWords) {
  EXPECT_EQ(RestartPolicyName(RestartPolicy::kAlways), "Always");
  EXPECT_EQ(RestartPolicyName(RestartPolicy::kOnFailure), "OnFailure");
  EXPECT_EQ(RestartPolicyName(RestartPolicy::kNever), "Never");
  EXPECT_EQ(TerminationMessagePolicyName(TerminationMessagePolicy::kFile), "File");
  EXPECT_EQ(TerminationMessagePolicyName(TerminationMessagePolicy::kFallbackToLogsOnError),
            "FallbackToLogsOnError");
}

// ---------------------------------------------------------------------------
// Files and bundles

constexpr std::string_view kMinimalYaml =
    "apiVersion: v1\nkind: Pod\nmetadata: {name: from-yaml}\nspec: {containers: [{name: c}]}\n";
constexpr std::string_view kMinimalJson =
    R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "from-json"},
        "spec": {"containers": [{"name": "c"}]}})";

TEST(ParseManifestFile, BundleWithPodYaml) {
  TempDir dir;
  WriteFile(dir.path() / "pod.yaml", kMinimalYaml);
  Result<ParseOutput> r = ParseManifestFile(dir.path());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->pod.metadata.name, "from-yaml");
}

TEST(ParseManifestFile, BundleWithPodJson) {
  TempDir dir;
  WriteFile(dir.path() / "pod.json", kMinimalJson);
  Result<ParseOutput> r = ParseManifestFile(dir.path());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->pod.metadata.name, "from-json");
}

TEST(ParseManifestFile, BundleWithBothIsAnErrorNamingBoth) {
  TempDir dir;
  WriteFile(dir.path() / "pod.yaml", kMinimalYaml);
  WriteFile(dir.path() / "pod.json", kMinimalJson);
  Result<ParseOutput> r = ParseManifestFile(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), HasSubstr((dir.path() / "pod.yaml").string()));
  EXPECT_THAT(r.error().message(), HasSubstr((dir.path() / "pod.json").string()));
}

TEST(ParseManifestFile, BundleWithNeitherIsAnErrorNamingTheDirectory) {
  TempDir dir;
  Result<ParseOutput> r = ParseManifestFile(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "no pod.yaml or pod.json in bundle " + dir.path().string());
  EXPECT_EQ(r.error().code(), ENOENT);
}

TEST(ParseManifestFile, ManifestPathGivenDirectly) {
  Result<ParseOutput> r = ParseManifestFile(TestData("every-field.json"));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->pod.metadata.name, "every-field");
}

TEST(ParseManifestFile, UnknownExtensionTriesJsonThenYaml) {
  TempDir dir;
  WriteFile(dir.path() / "manifest", kMinimalYaml);
  WriteFile(dir.path() / "other.txt", kMinimalJson);
  EXPECT_EQ(ParseManifestFile(dir.path() / "manifest")->pod.metadata.name, "from-yaml");
  EXPECT_EQ(ParseManifestFile(dir.path() / "other.txt")->pod.metadata.name, "from-json");
}

TEST(ParseManifestFile, UnreadableManifestNamesThePathAndErrno) {
  TempDir dir;
  std::filesystem::create_directory(dir.path() / "pod.yaml");  // read() gives EISDIR
  Result<ParseOutput> r = ParseManifestFile(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), EISDIR);
  EXPECT_THAT(r.error().message(), HasSubstr((dir.path() / "pod.yaml").string()));

  TempDir dangling;
  std::filesystem::create_symlink(dangling.path() / "nowhere.json", dangling.path() / "pod.json");
  Result<ParseOutput> d = ParseManifestFile(dangling.path());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code(), ENOENT);
  EXPECT_THAT(d.error().message(),
              StartsWith("opening " + (dangling.path() / "pod.json").string()));
}

TEST(ParseManifestFile, LargerThan4MiBIsRefused) {
  TempDir dir;
  std::string big(kMinimalYaml);
  big += "# " + std::string(kMaxManifestBytes, 'x') + "\n";
  WriteFile(dir.path() / "pod.yaml", big);
  Result<ParseOutput> r = ParseManifestFile(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), HasSubstr("larger than 4 MiB"));
}

TEST(ParseManifestFile, SyntaxErrorsNameTheFileAndLine) {
  TempDir dir;
  WriteFile(dir.path() / "pod.yaml", "apiVersion: v1\nkind: Pod\nspec:\n  containers: [\n");
  Result<ParseOutput> r = ParseManifestFile(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message(), StartsWith((dir.path() / "pod.yaml").string() + ": line "));
}

}  // namespace
}  // namespace podvisor::pod
