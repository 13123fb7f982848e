// `podvisor validate` and `podvisor version` as a user runs them: the real
// binary, real bundle directories, exit statuses of docs/INTERFACE.md.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "run_command.h"

namespace podvisor::testing {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string Podvisor() {
  const char* bin = std::getenv("PODVISOR");
  return bin ? bin : "podvisor";
}

class ValidateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    bundle_ = fs::path(::testing::TempDir()) / ("validate-cli-" + std::to_string(getpid()));
    fs::remove_all(bundle_);
    fs::create_directories(bundle_ / "images" / "busybox" / "rootfs");
  }
  void TearDown() override { fs::remove_all(bundle_); }

  void WriteManifest(const std::string& name, const std::string& text) {
    std::ofstream(bundle_ / name) << text;
  }

  fs::path bundle_;
};

constexpr const char* kValidPod = R"(apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  initContainers:
    - name: proxy
      image: busybox
      restartPolicy: Always
      command: [nc, -lk, -p, "8080"]
  containers:
    - name: app
      image: busybox
      command: [httpd, -f]
)";

TEST_F(ValidateCli, ValidBundleExitsZero) {
  WriteManifest("pod.yaml", kValidPod);
  auto r = RunCommand({Podvisor(), "validate", bundle_.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pod/web is valid"));
  EXPECT_THAT(r.out, HasSubstr("1 sidecar"));
  EXPECT_EQ(r.err, "");
}

// What `run --network` would refuse, `validate --network` reports too.
TEST_F(ValidateCli, HostPortNeedsAPodNetwork) {
  WriteManifest("pod.yaml", R"(apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
    - name: app
      image: busybox
      command: [httpd, -f]
      ports: [{containerPort: 80, hostPort: 8080}]
)");
  auto none = RunCommand({Podvisor(), "validate", "--network", "none", bundle_.string()});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.err,
            "container app: hostPort 8080 needs a pod network: run with --network cni (or "
            "hostNetwork: true) (with --network none)\n");
  auto host = RunCommand({Podvisor(), "validate", "--network", "host", bundle_.string()});
  EXPECT_EQ(host.exit_code, 2);
  EXPECT_THAT(host.err, HasSubstr("differs from containerPort 80"));
  auto cni = RunCommand({Podvisor(), "validate", "--network", "cni", bundle_.string()});
  EXPECT_EQ(cni.exit_code, 0) << cni.err;
}

TEST_F(ValidateCli, ManifestFileUsesItsDirectoryAsTheBundle) {
  WriteManifest("pod.yaml", kValidPod);
  auto r = RunCommand({Podvisor(), "validate", (bundle_ / "pod.yaml").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(ValidateCli, EveryProblemIsListedAndExitIsTwo) {
  WriteManifest("pod.yaml", R"(apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  restartPolicy: Sometimes
  initContainers:
    - name: setup
      image: busybox
      restartPolicy: Sometimes
  containers:
    - name: setup
      image: busybox
)");
  auto r = RunCommand({Podvisor(), "validate", bundle_.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("spec.restartPolicy: Unsupported value: \"Sometimes\""));
  EXPECT_THAT(r.err, HasSubstr("spec.initContainers[0].restartPolicy: Unsupported value: "
                               "\"Sometimes\": supported values: \"Always\""));
  EXPECT_THAT(r.err, HasSubstr("spec.containers[0].name: Duplicate value: \"setup\""));
  EXPECT_EQ(r.out, "");
}

// S16.4: an image the bundle lacks is a registry image run pulls; one that
// is no valid reference either is refused, naming the container.
TEST_F(ValidateCli, ImageNotInTheBundleMustBeARegistryReference) {
  WriteManifest("pod.yaml", R"(apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
    - {name: app, image: nginx}
)");
  auto pulled = RunCommand({Podvisor(), "validate", bundle_.string()});
  EXPECT_EQ(pulled.exit_code, 0) << pulled.err;
  WriteManifest("pod.yaml", R"(apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
    - {name: app, image: "Nginx:1.25"}
)");
  auto r = RunCommand({Podvisor(), "validate", bundle_.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("spec.containers[0].image"));
  EXPECT_THAT(r.err, HasSubstr("not a registry reference"));

  auto skipped = RunCommand({Podvisor(), "validate", "--no-images", bundle_.string()});
  EXPECT_EQ(skipped.exit_code, 0) << skipped.err;
}

TEST_F(ValidateCli, ImageEscapingTheBundleIsRejected) {
  WriteManifest("pod.yaml", R"(apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
    - {name: app, image: ../../etc}
)");
  auto r = RunCommand({Podvisor(), "validate", bundle_.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("spec.containers[0].image: Invalid value: \"../../etc\""));
}

// run refuses an absolute image path whatever the images (S14.6), so
// validate --no-images, which skips only the image directories, reports it.
TEST_F(ValidateCli, S14_6_AbsoluteImageIsReportedEvenWithoutImageChecks) {
  WriteManifest("pod.yaml", R"(apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
    - {name: app, image: /opt/app}
    - {name: side, image: not-in-the-bundle}
)");
  auto r = RunCommand({Podvisor(), "validate", "--no-images", bundle_.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("spec.containers[0].image: Invalid value: \"/opt/app\": must name "
                               "a directory under BUNDLE/images, not an absolute path"));
  EXPECT_THAT(r.err, HasSubstr("1 problem")) << "a missing image directory is not checked";
}

TEST_F(ValidateCli, UnknownFieldsWarnButPass) {
  WriteManifest("pod.yaml", std::string(kValidPod) + "  frobnicate: true\n");
  auto r = RunCommand({Podvisor(), "validate", bundle_.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("Warning: "));
  EXPECT_THAT(r.err, HasSubstr("frobnicate"));
}

// S12.7: the draft form is accepted with a warning that names it.
TEST_F(ValidateCli, S12_7_DraftSidecarWarnsAndPasses) {
  WriteManifest("pod.yaml", R"(apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
    - {name: app, image: busybox, command: [httpd, -f]}
    - {name: proxy, image: busybox, command: [nc, -lk], lifecycle: {type: Sidecar}}
)");
  auto r = RunCommand({Podvisor(), "validate", bundle_.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("Warning: spec.containers[1].lifecycle.type: \"Sidecar\" is the "
                               "2018-2020 sidecar draft"));
  EXPECT_THAT(r.err, HasSubstr("KEP-753"));
}

TEST_F(ValidateCli, S12_7_SidecarTypeOnAnInitContainerExitsTwo) {
  WriteManifest("pod.yaml", R"(apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  initContainers:
    - {name: proxy, image: busybox, restartPolicy: Always, lifecycle: {type: Sidecar}}
  containers:
    - {name: app, image: busybox, lifecycle: {type: Primary}}
)");
  auto r = RunCommand({Podvisor(), "validate", bundle_.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("spec.initContainers[0].lifecycle.type: Forbidden"));
  EXPECT_THAT(r.err,
              HasSubstr("spec.containers[0].lifecycle.type: Unsupported value: \"Primary\""));
}

// S13: a 1.4-era manifest's annotation is read, warned about, and its
// errors (the image check against the bundle included) name it.
TEST_F(ValidateCli, S13_InitContainerAnnotationIsReadAndItsErrorsNameIt) {
  WriteManifest("pod.yaml", R"(apiVersion: v1
kind: Pod
metadata:
  name: web
  annotations:
    pod.beta.kubernetes.io/init-containers: '[{"name": "setup", "image": "busybox"},
                                             {"name": "migrate"}, {"name": "seed", "image": "No:pe"}]'
spec:
  containers:
    - {name: app, image: busybox}
)");
  auto r = RunCommand({Podvisor(), "validate", bundle_.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err,
              HasSubstr("Warning: metadata.annotations[pod.beta.kubernetes.io/init-containers]: "
                        "read as spec.initContainers"));
  EXPECT_THAT(r.err,
              HasSubstr("metadata.annotations[pod.beta.kubernetes.io/init-containers][1].image: "
                        "Required value"));
  EXPECT_THAT(r.err,
              HasSubstr("metadata.annotations[pod.beta.kubernetes.io/init-containers][2].image: "
                        "Invalid value"));
}

TEST_F(ValidateCli, JsonManifestsWorkToo) {
  WriteManifest("pod.json", R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},
    "spec":{"containers":[{"name":"app","image":"busybox","command":["sleep","1"]}]}})");
  auto r = RunCommand({Podvisor(), "validate", bundle_.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(ValidateCli, SyntaxErrorIsAUsageError) {
  WriteManifest("pod.yaml", "apiVersion: v1\nkind: [unclosed\n");
  auto r = RunCommand({Podvisor(), "validate", bundle_.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("line"));
}

TEST_F(ValidateCli, MissingBundleIsAHostError) {
  auto r = RunCommand({Podvisor(), "validate", (bundle_ / "absent").string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr((bundle_ / "absent").string()));
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(RunCommand({Podvisor()}).exit_code, 2);
  EXPECT_EQ(RunCommand({Podvisor(), "no-such-command"}).exit_code, 2);
  EXPECT_EQ(RunCommand({Podvisor(), "validate"}).exit_code, 2);
  auto help = RunCommand({Podvisor(), "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("validate"));
  EXPECT_EQ(RunCommand({Podvisor(), "validate", "--help"}).exit_code, 0);
}

TEST(Cli, VersionNamesRuntimeAndCgroupMode) {
  auto r = RunCommand({Podvisor(), "version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("podvisor 0.1.0"));
  EXPECT_THAT(r.out, HasSubstr("runtime: "));
  EXPECT_THAT(r.out, HasSubstr("cgroup: "));
  auto bad = RunCommand({Podvisor(), "version", "--runtime", "docker"});
  EXPECT_EQ(bad.exit_code, 0);
  EXPECT_THAT(bad.out, HasSubstr("runtime: none (--runtime: unknown runtime"));
}

}  // namespace
}  // namespace podvisor::testing
