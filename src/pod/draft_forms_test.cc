// The two older forms podvisor's source documents describe and manifests
// still carry: the 2018–2020 sidecar draft's lifecycle.type (SEMANTICS
// S12.7: decoding, the warning, validation) and the init-container
// annotations of Kubernetes 1.3–1.5 (S13).
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pod/defaults.h"
#include "pod/pod_test_util.h"
#include "pod/serialize.h"
#include "pod/validate.h"

namespace podvisor::pod {
namespace {

using namespace test_util;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr const char* kBeta = "pod.beta.kubernetes.io/init-containers";
constexpr const char* kAlpha = "pod.alpha.kubernetes.io/init-containers";

std::vector<std::string> Validate(const ParseOutput& out) {
  Pod pod = out.pod;
  ApplyDefaults(pod);
  return Lines(ValidatePod(pod));
}

// A pod whose metadata carries ANNOTATIONS (YAML lines, indented 4) and
// whose spec is SPEC.
std::string WithAnnotations(const std::string& annotations, const std::string& spec) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n" + annotations +
         "spec:\n" + spec;
}

const char* kApp = "  containers:\n  - {name: app, image: busybox}\n";

// --- S12.7: lifecycle.type ----------------------------------------------------

TEST(DraftSidecarField, S12_7_TypeDecodesWithAWarningAndRoundTrips) {
  ParseOutput out = Parse(PodYaml(R"(  containers:
  - {name: app, image: busybox, lifecycle: {type: Standard}}
  - {name: proxy, image: busybox, lifecycle: {type: Sidecar}}
  - {name: other, image: busybox, lifecycle: {type: ""}}
)"));
  EXPECT_THAT(ErrorLines(out), IsEmpty());
  ASSERT_EQ(out.warnings.size(), 1u);
  EXPECT_EQ(out.warnings[0].field, "spec.containers[1].lifecycle.type");
  EXPECT_THAT(out.warnings[0].message, HasSubstr("2018-2020 sidecar draft"));
  EXPECT_THAT(out.warnings[0].message, HasSubstr("restartPolicy: Always (KEP-753)"));
  EXPECT_FALSE(IsDraftSidecar(out.pod.spec.containers[0]));
  EXPECT_TRUE(IsDraftSidecar(out.pod.spec.containers[1]));
  EXPECT_EQ(out.pod.spec.containers[2].lifecycle->type, LifecycleType::kStandard);
  EXPECT_EQ(ToJson(out.pod.spec.containers[1])["lifecycle"]["type"], "Sidecar");
  EXPECT_THAT(Validate(out), IsEmpty());
}

TEST(DraftSidecarField, S12_7_AnUnknownTypeIsAnError) {
  ParseOutput out = Parse(PodYaml(R"(  containers:
  - {name: app, image: busybox, lifecycle: {type: Primary}}
)"));
  EXPECT_THAT(ErrorLines(out),
              ElementsAre("spec.containers[0].lifecycle.type: Unsupported value: \"Primary\": "
                          "supported values: \"Sidecar\", \"Standard\""));
}

TEST(DraftSidecarField, S12_7_SidecarTypeOnTheInitListIsAnError) {
  ParseOutput out = Parse(PodYaml(R"(  initContainers:
  - {name: init, image: busybox, lifecycle: {type: Sidecar}}
  - {name: mesh, image: busybox, restartPolicy: Always, lifecycle: {type: Sidecar}}
  containers:
  - {name: app, image: busybox}
)"));
  EXPECT_THAT(ErrorLines(out), IsEmpty());
  EXPECT_THAT(
      Validate(out),
      ElementsAre("spec.initContainers[0].lifecycle.type: Forbidden: may not be Sidecar for "
                  "init containers; use restartPolicy: Always",
                  "spec.initContainers[0].lifecycle: Forbidden: may not be set for init "
                  "containers without restartPolicy=Always",
                  "spec.initContainers[1].lifecycle.type: Forbidden: may not be Sidecar for "
                  "init containers; use restartPolicy: Always"));
}

TEST(DraftSidecarField, S12_7_APodNeedsAStandardContainer) {
  ParseOutput out = Parse(PodYaml(R"(  containers:
  - {name: proxy, image: busybox, lifecycle: {type: Sidecar}}
)"));
  EXPECT_THAT(Validate(out), ElementsAre("spec.containers: Required value: a container without "
                                         "lifecycle.type Sidecar"));
}

// --- S13: the init-container annotations --------------------------------------

TEST(InitContainerAnnotations, S13_1_ABetaAnnotationOf14BecomesTheInitList) {
  Result<ParseOutput> r = ParseManifestFile(TestData("init-containers-annotation-1.4.yaml"));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_THAT(ErrorLines(*r), IsEmpty());
  EXPECT_THAT(WarningLines(*r),
              ElementsAre(std::string("metadata.annotations[") + kBeta +
                          "]: read as spec.initContainers: this annotation is the Kubernetes "
                          "1.3-1.5 form of init containers (S13)"));
  const Pod& pod = r->pod;
  ASSERT_EQ(pod.spec.init_containers.size(), 2u);
  EXPECT_EQ(pod.spec.init_containers[0].name, "init-myservice");
  EXPECT_EQ(pod.spec.init_containers[1].name, "init-mydb");
  EXPECT_THAT(pod.spec.init_containers[1].command,
              ElementsAre("sh", "-c", "echo waiting for mydb; sleep 1"));
  EXPECT_EQ(pod.init_containers_annotation, kBeta);
  EXPECT_THAT(Validate(*r), IsEmpty());
}

TEST(InitContainerAnnotations, S13_1_BetaWinsOverAlpha) {
  ParseOutput out = Parse(WithAnnotations(
      std::string("    ") + kAlpha + ": '[{\"name\": \"old\", \"image\": \"busybox\"}]'\n    " +
          kBeta + ": '[{\"name\": \"new\", \"image\": \"busybox\"}]'\n",
      kApp));
  EXPECT_THAT(ErrorLines(out), IsEmpty());
  ASSERT_EQ(out.pod.spec.init_containers.size(), 1u);
  EXPECT_EQ(out.pod.spec.init_containers[0].name, "new");
  EXPECT_THAT(
      WarningLines(out),
      ElementsAre(std::string("metadata.annotations[") + kBeta +
                      "]: read as spec.initContainers: "
                      "this annotation is the Kubernetes 1.3-1.5 form of init containers (S13)",
                  std::string("metadata.annotations[") + kAlpha + "]: ignored: " + kBeta +
                      " is used, as the API server of Kubernetes 1.5 did"));
}

TEST(InitContainerAnnotations, S13_1_AlphaAloneIsRead) {
  ParseOutput out = Parse(WithAnnotations(
      std::string("    ") + kAlpha + ": '[{\"name\": \"setup\", \"image\": \"busybox\"}]'\n",
      kApp));
  EXPECT_THAT(ErrorLines(out), IsEmpty());
  ASSERT_EQ(out.pod.spec.init_containers.size(), 1u);
  EXPECT_EQ(out.pod.init_containers_annotation, kAlpha);
}

TEST(InitContainerAnnotations, S13_2_ErrorsNameTheAnnotation) {
  ParseOutput out = Parse(WithAnnotations(
      std::string("    ") + kBeta + ": '[{\"name\": \"setup\", \"command\": 7, \"bogus\": 1}]'\n",
      kApp));
  const std::string at = std::string("metadata.annotations[") + kBeta + "]";
  EXPECT_THAT(ErrorLines(out), ElementsAre(at + "[0].command: Invalid value: 7: must be a list"));
  EXPECT_THAT(WarningLines(out),
              ElementsAre(at + "[0].bogus: unknown field",
                          at + ": read as spec.initContainers: this annotation is "
                               "the Kubernetes 1.3-1.5 form of init containers (S13)"));
  EXPECT_THAT(Validate(out), ElementsAre(at + "[0].image: Required value"));
}

TEST(InitContainerAnnotations, S13_2_NotAJsonArrayIsAnError) {
  {
    ParseOutput out =
        Parse(WithAnnotations(std::string("    ") + kBeta + ": '[{\"name\": '\n", kApp));
    ASSERT_EQ(out.errors.size(), 1u);
    EXPECT_THAT(out.errors[0].ToString(),
                HasSubstr(std::string("metadata.annotations[") + kBeta +
                          "]: Invalid value: must be a JSON array of containers: "));
  }
  {
    ParseOutput out =
        Parse(WithAnnotations(std::string("    ") + kBeta + ": '{\"name\": \"x\"}'\n", kApp));
    EXPECT_THAT(ErrorLines(out), ElementsAre(std::string("metadata.annotations[") + kBeta +
                                             "]: Invalid value: {\"name\":\"x\"}: must be a JSON "
                                             "array of containers"));
  }
}

TEST(InitContainerAnnotations, S13_3_NextToSpecInitContainersTheyMustAgree) {
  const std::string spec =
      "  initContainers:\n  - {name: setup, image: busybox}\n" + std::string(kApp);
  {
    // The same list (as the 1.6 API server wrote both): accepted; the
    // annotation's missing defaults do not make it different.
    ParseOutput out = Parse(WithAnnotations(
        std::string("    ") + kBeta + ": '[{\"name\": \"setup\", \"image\": \"busybox\"}]'\n",
        spec));
    EXPECT_THAT(ErrorLines(out), IsEmpty());
    EXPECT_THAT(WarningLines(out),
                ElementsAre(std::string("metadata.annotations[") + kBeta +
                            "]: ignored: the same containers as spec.initContainers"));
    EXPECT_TRUE(out.pod.init_containers_annotation.empty());
  }
  {
    ParseOutput out = Parse(WithAnnotations(
        std::string("    ") + kAlpha + ": '[{\"name\": \"other\", \"image\": \"busybox\"}]'\n    " +
            kBeta + ": '[{\"name\": \"setup\", \"image\": \"busybox\"}]'\n",
        spec));
    EXPECT_THAT(ErrorLines(out), ElementsAre(std::string("metadata.annotations[") + kAlpha +
                                             "]: Invalid value: differs from spec.initContainers; "
                                             "set only one of them"));
  }
}

}  // namespace
}  // namespace podvisor::pod
