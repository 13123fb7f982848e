// podvisor-bundle(5)'s FIELD TABLE covers every field of a v1 Pod of
// Kubernetes 1.33 (the lists below, from the API reference), and the
// decoder knows every one of them: `podvisor validate` of a manifest that
// names each field (with a null value, which the decoder reads as unset)
// never answers "unknown field". A field that becomes supported, rejected
// or ignored therefore has to be placed in the table, and a field of the
// table that the decoder forgets fails here.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "run_command.h"

namespace podvisor::testing {
namespace {

namespace fs = std::filesystem;

struct ObjectFields {
  const char* yaml_path;  // where the test manifest puts them
  std::vector<const char*> fields;
};

const std::vector<ObjectFields>& PodFields() {
  static const std::vector<ObjectFields> fields = {
      {"", {"status"}},
      {"metadata",
       {"name", "generateName", "namespace", "uid", "labels", "annotations", "resourceVersion",
        "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
        "selfLink", "managedFields", "ownerReferences", "finalizers"}},
      {"spec",
       {"initContainers",
        "containers",
        "restartPolicy",
        "terminationGracePeriodSeconds",
        "activeDeadlineSeconds",
        "volumes",
        "hostNetwork",
        "hostIPC",
        "hostPID",
        "shareProcessNamespace",
        "hostUsers",
        "os",
        "hostname",
        "subdomain",
        "setHostnameAsFQDN",
        "dnsPolicy",
        "dnsConfig",
        "hostAliases",
        "overhead",
        "readinessGates",
        "securityContext",
        "serviceAccountName",
        "serviceAccount",
        "automountServiceAccountToken",
        "enableServiceLinks",
        "imagePullSecrets",
        "nodeName",
        "nodeSelector",
        "affinity",
        "tolerations",
        "schedulerName",
        "priority",
        "priorityClassName",
        "preemptionPolicy",
        "topologySpreadConstraints",
        "schedulingGates",
        "runtimeClassName",
        "resourceClaims",
        "ephemeralContainers",
        "resources"}},
      {"spec.securityContext",
       {"runAsUser", "runAsGroup", "runAsNonRoot", "supplementalGroups", "supplementalGroupsPolicy",
        "fsGroup", "fsGroupChangePolicy", "seccompProfile", "sysctls", "appArmorProfile",
        "seLinuxOptions", "seLinuxChangePolicy", "windowsOptions"}},
      {"spec.volumes[0]",
       {"name", "emptyDir", "hostPath", "configMap", "secret", "downwardAPI", "projected"}},
      {"spec.containers[0]",
       {"name",
        "image",
        "command",
        "args",
        "workingDir",
        "env",
        "envFrom",
        "ports",
        "resources",
        "volumeMounts",
        "lifecycle",
        "startupProbe",
        "readinessProbe",
        "livenessProbe",
        "securityContext",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "restartPolicy",
        "imagePullPolicy",
        "tty",
        "stdin",
        "stdinOnce",
        "volumeDevices",
        "resizePolicy"}},
      {"spec.containers[0].volumeMounts[0]",
       {"name", "mountPath", "readOnly", "subPath", "subPathExpr", "mountPropagation",
        "recursiveReadOnly"}},
      {"spec.containers[0].securityContext",
       {"runAsUser", "runAsGroup", "runAsNonRoot", "privileged", "readOnlyRootFilesystem",
        "allowPrivilegeEscalation", "capabilities", "seccompProfile", "procMount",
        "appArmorProfile", "seLinuxOptions", "windowsOptions"}},
  };
  return fields;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The manifest as JSON (YAML's subset): each object gets its fields as
// null, and the lists and objects the next level lives in.
std::string ManifestNamingEveryField() {
  auto nulls = [](const char* path) {
    std::string out;
    for (const ObjectFields& o : PodFields()) {
      if (std::string(o.yaml_path) != path) continue;
      for (const char* f : o.fields) out += std::string("\"") + f + "\": null, ";
    }
    return out;
  };
  return std::string("{") + nulls("") +
         "\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {" + nulls("metadata") +
         "\"name\": \"every\"}, \"spec\": {" + nulls("spec") + "\"securityContext\": {" +
         nulls("spec.securityContext") + "\"fsGroup\": 1}, \"volumes\": [{" +
         nulls("spec.volumes[0]") + "\"name\": \"v\", \"emptyDir\": {}}], \"containers\": [{" +
         nulls("spec.containers[0]") +
         "\"name\": \"app\", \"image\": \"busybox\", \"volumeMounts\": [{" +
         nulls("spec.containers[0].volumeMounts[0]") +
         "\"name\": \"v\", \"mountPath\": \"/v\"}], \"securityContext\": {" +
         nulls("spec.containers[0].securityContext") + "\"runAsUser\": 1}}]}}";
}

TEST(FieldTable, NamesEveryPodField) {
  const char* root = std::getenv("PODVISOR_SOURCE_ROOT");
  ASSERT_NE(root, nullptr) << "run through meson (PODVISOR_SOURCE_ROOT)";
  std::string page = ReadFile(fs::path(root) / "man" / "podvisor-bundle.5");
  std::size_t begin = page.find(".SH \"FIELD TABLE\"");
  ASSERT_NE(begin, std::string::npos) << "podvisor-bundle(5) has no FIELD TABLE";
  std::size_t end = page.find("\n.SH ", begin + 1);
  std::string table = page.substr(begin, end - begin);
  for (const ObjectFields& o : PodFields()) {
    std::string section = *o.yaml_path ? std::string(".I ") + o.yaml_path : std::string();
    for (const char* f : o.fields) {
      // As a whole word: "subPath" must not pass because "subPathExpr" is there.
      bool found = false;
      for (std::size_t at = table.find(f); at != std::string::npos; at = table.find(f, at + 1)) {
        auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
        std::size_t after = at + std::string_view(f).size();
        if ((at == 0 || !word(table[at - 1])) && (after >= table.size() || !word(table[after]))) {
          found = true;
          break;
        }
      }
      EXPECT_TRUE(found) << o.yaml_path << "." << f
                         << " is not in podvisor-bundle(5)'s FIELD TABLE";
    }
  }
}

TEST(FieldTable, TheDecoderKnowsEveryPodField) {
  const char* bin = std::getenv("PODVISOR");
  ASSERT_NE(bin, nullptr) << "run through meson (PODVISOR)";
  fs::path dir =
      fs::path(::testing::TempDir()) / ("podvisor-field-table-" + std::to_string(getpid()));
  fs::create_directories(dir / "images" / "busybox" / "rootfs" / "bin");
  std::ofstream(dir / "pod.json") << ManifestNamingEveryField();
  CommandResult r = RunCommand({bin, "validate", dir.string()});
  fs::remove_all(dir);
  // Whether it validates is not the question (null containers and the
  // like may be errors); no field may be unknown.
  EXPECT_THAT(r.out + r.err, ::testing::Not(::testing::HasSubstr("unknown field")))
      << r.out << r.err;
  EXPECT_THAT(r.out + r.err, ::testing::Not(::testing::HasSubstr("bad file")));
}

}  // namespace
}  // namespace podvisor::testing
