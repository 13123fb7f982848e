// ConfigMap and Secret documents (config_objects.h): the documents of one
// manifest, the bundle's config/ directory and --configmap/--secret files,
// checked as the API server checks them.
#include <unistd.h>

#include "pod/config_objects.h"
#include "pod/pod_test_util.h"

namespace podvisor::pod {
namespace {

using test_util::ErrorLines;
using test_util::Parse;
using test_util::WarningLines;
using testing::ElementsAre;
using testing::HasSubstr;
using testing::IsEmpty;
using testing::Not;

constexpr std::string_view kPod = R"(apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: app, image: busybox}]
)";

TEST(ConfigObjects, ManifestHoldsOnePodAndAnyNumberOfConfigMapsAndSecrets) {
  std::string text = std::string(R"(apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data:
  LOG_LEVEL: debug
  app.properties: |
    a=1
binaryData:
  logo.png: iVBORw==
immutable: true
---
)") + std::string(kPod) +
                     R"(---
apiVersion: v1
kind: Secret
metadata: {name: db}
type: kubernetes.io/basic-auth
data:
  username: YWRtaW4=
  password: czNjcjN0
stringData:
  password: plain-wins
)";
  ParseOutput out = Parse(text);
  EXPECT_THAT(ErrorLines(out), IsEmpty());
  EXPECT_THAT(WarningLines(out), IsEmpty());
  EXPECT_EQ(out.pod.metadata.name, "web");
  const ConfigMap* cm = FindConfigMap(out.pod.config, "app-config");
  ASSERT_NE(cm, nullptr);
  EXPECT_EQ(cm->data.at("LOG_LEVEL"), "debug");
  EXPECT_EQ(cm->data.at("app.properties"), "a=1\n");
  EXPECT_EQ(cm->binary_data.at("logo.png"), std::string("\x89PNG", 4));
  EXPECT_TRUE(cm->immutable);
  const Secret* secret = FindSecret(out.pod.config, "db");
  ASSERT_NE(secret, nullptr);
  EXPECT_EQ(secret->type, "kubernetes.io/basic-auth");
  EXPECT_EQ(secret->data.at("username"), "admin");
  EXPECT_EQ(secret->data.at("password"), "plain-wins") << "stringData is merged over data";
}

TEST(ConfigObjects, SecretTypeDefaultsToOpaque) {
  ParseOutput out = Parse(std::string(kPod) +
                          "---\napiVersion: v1\nkind: Secret\n"
                          "metadata: {name: s}\nstringData: {k: v}\n");
  EXPECT_EQ(FindSecret(out.pod.config, "s")->type, "Opaque");
}

TEST(ConfigObjects, ProblemsNameTheObjectAndNeverQuoteASecretValue) {
  std::string text = std::string(kPod) + R"(---
apiVersion: v1
kind: ConfigMap
metadata: {name: Bad_Name}
data:
  "bad key": x
  port: 8080
  dup: a
binaryData:
  dup: YQ==
  img: "not base64!"
extra: 1
---
apiVersion: v1
kind: Secret
metadata: {name: db}
data:
  password: hunter2-is-not-base64
)";
  ParseOutput out = Parse(text);
  const std::string subdomain_msg =
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
      "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
      "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
  EXPECT_THAT(
      ErrorLines(out),
      ElementsAre(
          "configmap/Bad_Name: metadata.name: Invalid value: \"Bad_Name\": " + subdomain_msg,
          "configmap/Bad_Name: data[bad key]: Invalid value: \"bad key\": a valid config key "
          "must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
          "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
          "configmap/Bad_Name: data[port]: Invalid value: 8080: must be a string (quote numbers "
          "and booleans in YAML)",
          "configmap/Bad_Name: binaryData[img]: Invalid value: \"not base64!\": not valid base64",
          "configmap/Bad_Name: data[dup]: Invalid value: \"dup\": duplicate of key present in "
          "binaryData",
          "secret/db: data[password]: Invalid value: <secret value>: not valid base64 (put plain "
          "text in stringData instead)"));
  for (const auto& line : ErrorLines(out)) EXPECT_THAT(line, Not(HasSubstr("hunter2")));
  EXPECT_THAT(WarningLines(out), ElementsAre("configmap/Bad_Name: extra: unknown field"));
}

TEST(ConfigObjects, DuplicateNamesPerKindAreAnError) {
  std::string cm = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: same}\n";
  std::string secret = "---\napiVersion: v1\nkind: Secret\nmetadata: {name: same}\n";
  ParseOutput out = Parse(std::string(kPod) + cm + secret + cm);
  EXPECT_THAT(ErrorLines(out),
              ElementsAre("configmap/same: metadata.name: Duplicate value: \"same\": a ConfigMap "
                          "of this name is already defined (again in the manifest)"));
}

TEST(ConfigObjects, DocumentsOtherThanOnePodAreSyntaxErrors) {
  auto none = ParseManifest("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
                            ManifestFormat::kYaml);
  ASSERT_FALSE(none);
  EXPECT_THAT(none.error().message(), HasSubstr("holds no Pod or workload"));
  auto two = ParseManifest(std::string(kPod) + "---\n" + std::string(kPod), ManifestFormat::kYaml);
  ASSERT_FALSE(two);
  EXPECT_EQ(two.error().message(),
            "documents 1 and 2 are both a pod or workload; podvisor runs exactly one pod (the "
            "other documents may be ConfigMaps and Secrets)");
  auto list = ParseManifest(std::string(kPod) + "---\n- a\n", ManifestFormat::kYaml);
  ASSERT_FALSE(list);
  EXPECT_EQ(list.error().message(),
            "the manifest must be a mapping (a v1 Pod object), not a list (document 2)");
}

TEST(ConfigObjects, ServicesNextToThePodAreIgnoredWithAWarning) {
  ParseOutput out = Parse(std::string(kPod) +
                          "---\napiVersion: v1\nkind: Service\n"
                          "metadata: {name: web}\n");
  EXPECT_THAT(ErrorLines(out), IsEmpty());
  EXPECT_THAT(WarningLines(out),
              ElementsAre("document 2 (Service): ignored: podvisor runs one pod and has no "
                          "Services"));
}

class ConfigFiles : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/podvisor-config-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::filesystem::create_directories((dir_ / name).parent_path());
    std::ofstream(dir_ / name) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(ConfigFiles, BundleConfigDirectoryIsReadInNameOrder) {
  Write("pod.yaml", std::string(kPod));
  Write("config/b.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {k: v}\n");
  Write("config/a.yml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n---\napiVersion: v1\n"
        "kind: ConfigMap\nmetadata: {name: two}\ndata: {x: y}\n");
  Write("config/notes.txt", "not read");
  auto out = ParseManifestFile(dir_);
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_THAT(ErrorLines(*out), IsEmpty());
  EXPECT_EQ(out->pod.config.config_maps.size(), 2u);
  EXPECT_EQ(FindSecret(out->pod.config, "s")->data.at("k"), "v");

  Write("config/c.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n");
  auto dup = ParseManifestFile(dir_);
  ASSERT_TRUE(dup);
  EXPECT_THAT(ErrorLines(*dup),
              ElementsAre("configmap/one: metadata.name: Duplicate value: \"one\": a ConfigMap of "
                          "this name is already defined (again in " +
                          (dir_ / "config/c.yaml").string() + ")"));
}

TEST_F(ConfigFiles, CommandLineFilesMustHoldTheirKind) {
  Write("cm.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n");
  ConfigObjects objects;
  FieldErrors errors;
  FieldWarnings warnings;
  Status s = ReadConfigFile(dir_ / "cm.yaml", "ConfigMap", objects, errors, warnings);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message(),
            (dir_ / "cm.yaml").string() + ": document 1 is a Secret; expected a ConfigMap");
  Write("bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [\n");
  Status syntax = ReadConfigFile(dir_ / "bad.yaml", std::nullopt, objects, errors, warnings);
  ASSERT_FALSE(syntax);
  EXPECT_THAT(syntax.error().message(), HasSubstr((dir_ / "bad.yaml").string() + ": line "));
}

TEST(Base64, DecodesAsGoStdEncoding) {
  EXPECT_EQ(DecodeBase64(""), "");
  EXPECT_EQ(DecodeBase64("YQ=="), "a");
  EXPECT_EQ(DecodeBase64("YWI="), "ab");
  EXPECT_EQ(DecodeBase64("YWJj"), "abc");
  EXPECT_EQ(DecodeBase64("YWJj\nZGVm\n"), "abcdef") << "line breaks are skipped";
  EXPECT_EQ(DecodeBase64("YWJ"), std::nullopt);
  EXPECT_EQ(DecodeBase64("Y==="), std::nullopt);
  EXPECT_EQ(DecodeBase64("YQ==YQ=="), std::nullopt);
  EXPECT_EQ(DecodeBase64("YW-j"), std::nullopt) << "not the URL alphabet";
  for (const std::string& s :
       std::vector<std::string>{"", "x", "xy", "xyz", std::string("\0\xff\x10", 3)}) {
    EXPECT_EQ(DecodeBase64(EncodeBase64(s)), s);
  }
}

}  // namespace
}  // namespace podvisor::pod
