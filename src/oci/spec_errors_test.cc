// Fields config generation cannot honour are errors naming the field
// (spec.h), and a few generation rules not covered by the goldens.
#include <gtest/gtest.h>

#include "oci/spec.h"

namespace podvisor::oci {
namespace {

using nlohmann::json;

std::filesystem::path Bundle() {
  const char* dir = std::getenv("PODVISOR_OCI_TESTDATA");
  return (dir ? std::filesystem::path(dir) : std::filesystem::path("src/oci/testdata")) / "bundle";
}

class SpecErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    pod_.metadata.name = "p";
    pod::Container c;
    c.name = "c";
    c.image = "busybox";
    c.command = {"/bin/true"};
    pod_.spec.containers = {c};
    input_.bundle = Bundle();
    input_.root_path = "/r";
    input_.node_memory_bytes = 1LL << 33;
  }
  pod::Container& C() { return pod_.spec.containers[0]; }
  pod::SecurityContext& SC() {
    if (!C().security_context) C().security_context = pod::SecurityContext{};
    return *C().security_context;
  }
  Result<json> Generate() {
    auto image = image::LoadImage(Bundle(), C().image);
    EXPECT_TRUE(image) << image.error().message();
    return GenerateConfig(pod_, C(), *image, input_);
  }
  // Generation fails and the message starts with `field`.
  void ExpectError(const std::string& field, const std::string& fragment = {}) {
    auto config = Generate();
    ASSERT_FALSE(config) << "expected an error for " << field;
    EXPECT_EQ(config.error().message().rfind(field, 0), 0u) << config.error().message();
    if (!fragment.empty()) {
      EXPECT_NE(config.error().message().find(fragment), std::string::npos)
          << config.error().message();
    }
  }
  pod::Pod pod_;
  ContainerConfigInput input_;
};

TEST_F(SpecErrors, BaselineGenerates) {
  EXPECT_TRUE(Generate());
}

TEST_F(SpecErrors, TtyAndStdinCannotBeProvided) {
  C().tty = true;
  ExpectError("spec.containers[0].tty");
  C().tty = false;
  C().stdin = true;
  ExpectError("spec.containers[0].stdin");
}

// A hostPort is the pod network's (portmap's) job, not the container's
// configuration: `run` refuses it where no network can map it.
TEST_F(SpecErrors, HostPortIsNotTheContainersConcern) {
  C().ports = {{"http", 80, 8080, "TCP", ""}};
  EXPECT_TRUE(Generate());
}

TEST_F(SpecErrors, UnenforceableResourcesAreRefused) {
  C().resources.limits.other["ephemeral-storage"] = *pod::Quantity::Parse("1Gi");
  ExpectError("spec.containers[0].resources.limits[ephemeral-storage]");
  C().resources.limits.other.clear();
  C().resources.requests.other["ephemeral-storage"] = *pod::Quantity::Parse("1Gi");
  EXPECT_TRUE(Generate()) << "a request alone is a scheduling hint";
  C().resources.requests.other["example.com/gpu"] = *pod::Quantity::Parse("1");
  ExpectError("spec.containers[0].resources.requests[example.com/gpu]", "device plugin");
}

TEST_F(SpecErrors, SharedPidNamespaceNeedsItsPath) {
  pod_.spec.share_process_namespace = true;
  ExpectError("spec.shareProcessNamespace");
  input_.namespaces.pid = "/proc/1/ns/pid";
  EXPECT_TRUE(Generate());
}

TEST_F(SpecErrors, SeccompProfileChoices) {
  SC().seccomp_profile = pod::SeccompProfile{"Localhost", std::nullopt};
  ExpectError("spec.containers[0].securityContext.seccompProfile.localhostProfile");
  SC().seccomp_profile = pod::SeccompProfile{"Localhost", "../../etc/passwd"};
  ExpectError("spec.containers[0].securityContext.seccompProfile", "'..'");
  SC().seccomp_profile = pod::SeccompProfile{"Sometimes", std::nullopt};
  ExpectError("spec.containers[0].securityContext.seccompProfile.type", "Unsupported value");
  // Pod-level profile applies when the container has none.
  SC().seccomp_profile.reset();
  pod_.spec.security_context = pod::PodSecurityContext{};
  pod_.spec.security_context->seccomp_profile = pod::SeccompProfile{"Unconfined", std::nullopt};
  auto config = Generate();
  ASSERT_TRUE(config);
  EXPECT_FALSE((*config)["linux"].contains("seccomp"));
  pod_.spec.security_context->seccomp_profile.reset();
  config = Generate();
  ASSERT_TRUE(config);
  EXPECT_EQ((*config)["linux"]["seccomp"]["defaultAction"], "SCMP_ACT_ERRNO")
      << "unset = RuntimeDefault";
}

TEST_F(SpecErrors, PrivilegeEscalationRulesOfTheApiServer) {
  SC().privileged = true;
  SC().allow_privilege_escalation = false;
  ExpectError("spec.containers[0].securityContext.allowPrivilegeEscalation", "privileged");
  SC().privileged = false;
  SC().capabilities = pod::Capabilities{{"SYS_ADMIN"}, {}};
  ExpectError("spec.containers[0].securityContext.allowPrivilegeEscalation", "CAP_SYS_ADMIN");
  SC().allow_privilege_escalation.reset();
  auto config = Generate();
  ASSERT_TRUE(config);
  EXPECT_EQ((*config)["process"]["noNewPrivileges"], false);
  SC().capabilities.reset();
  SC().allow_privilege_escalation = true;
  EXPECT_EQ((*Generate())["process"]["noNewPrivileges"], false);
  SC().allow_privilege_escalation.reset();
  EXPECT_EQ((*Generate())["process"]["noNewPrivileges"], true) << "podvisor's default";
}

TEST_F(SpecErrors, PrivilegedStillChecksCapabilityNames) {
  SC().privileged = true;
  SC().capabilities = pod::Capabilities{{"NOT_A_CAP"}, {}};
  ExpectError("spec.containers[0].securityContext.capabilities.add[0]");
}

TEST_F(SpecErrors, RunAsNonRootWithRootUser) {
  pod_.spec.security_context = pod::PodSecurityContext{};
  pod_.spec.security_context->run_as_non_root = true;
  ExpectError("spec.containers[0]", "runAsNonRoot");
  SC().run_as_user = 1000;
  EXPECT_TRUE(Generate()) << "the container's runAsUser satisfies the pod's runAsNonRoot";
}

TEST_F(SpecErrors, VolumeMountProblems) {
  C().volume_mounts = {{"missing", "/m", false, "", "", "", ""}};
  ExpectError("spec.containers[0].volumeMounts[0].name", "Not found");
  pod_.spec.volumes = {{"v", pod::EmptyDirVolumeSource{}, std::nullopt, {}, {}, {}, {}, {}},
                       {"cm", std::nullopt, std::nullopt, {}, {}, {}, {}, {"nfs"}}};
  C().volume_mounts = {{"v", "relative", false, "", "", "", ""}};
  ExpectError("spec.containers[0].volumeMounts[0].mountPath");
  C().volume_mounts = {{"v", "/m", false, "../up", "", "", ""}};
  ExpectError("spec.containers[0].volumeMounts[0].subPath");
  C().volume_mounts = {{"v", "/m", false, "", "", "", ""}, {"v", "/m/", false, "x", "", "", ""}};
  ExpectError("spec.containers[0]", "two mounts");
  C().volume_mounts = {{"cm", "/cfg", false, "", "", "", ""}};
  ExpectError("spec.containers[0].volumeMounts[0]", "nfs");
}

TEST_F(SpecErrors, MissingInputsAreReported) {
  input_.node_memory_bytes = 0;
  ExpectError("spec.containers[0]", "node's memory");
  input_.node_memory_bytes = 1LL << 33;
  input_.root_path.clear();
  ExpectError("spec.containers[0]", "root path");
}

TEST_F(SpecErrors, InitContainerFieldPathsAndNoCommand) {
  pod::Container init = C();
  init.name = "init";
  init.command.clear();
  pod_.spec.init_containers = {init};
  auto image = image::LoadImage(Bundle(), "busybox");
  ASSERT_TRUE(image);
  auto config = GenerateConfig(pod_, pod_.spec.init_containers[0], *image, input_);
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().message().rfind("spec.initContainers[0]: no command", 0), 0u)
      << config.error().message();
}

TEST(Hostname, PodNameCutTo63WithoutTrailingPunctuation) {
  pod::Pod p;
  p.metadata.name = std::string(62, 'a') + "-b" + std::string(10, 'c');
  EXPECT_EQ(PodHostname(p, "node"), std::string(62, 'a'));
  p.spec.hostname = "explicit";
  EXPECT_EQ(PodHostname(p, "node"), "explicit");
  p.spec.host_network = true;
  EXPECT_EQ(PodHostname(p, "node"), "node");
}

}  // namespace
}  // namespace podvisor::oci
