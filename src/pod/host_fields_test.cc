// Fields that mean something on one host (issue: "stop being ignored"):
// they decode without a warning, survive a round trip through the status
// output, and take the values the API server takes, refused with its
// messages (and podvisor's reason where podvisor refuses more).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pod/defaults.h"
#include "pod/pod_test_util.h"
#include "pod/serialize.h"
#include "pod/validate.h"

namespace podvisor::pod {
namespace {

using test_util::ErrorLines;
using test_util::Parse;
using test_util::PodYaml;
using test_util::WarningLines;
using testing::ElementsAre;
using testing::IsEmpty;

struct Checked {
  std::vector<std::string> warnings;
  std::vector<std::string> errors;
  Pod pod;
};

Checked Check(std::string_view spec) {
  ParseOutput out = Parse(PodYaml(spec));
  Checked c;
  c.warnings = WarningLines(out);
  c.errors = ErrorLines(out);
  ApplyDefaults(out.pod);
  for (const FieldError& e : ValidatePod(out.pod)) c.errors.push_back(e.ToString());
  c.pod = std::move(out.pod);
  return c;
}

constexpr std::string_view kSupported = R"(  hostUsers: true
  os: {name: linux}
  securityContext:
    fsGroup: 2000
    fsGroupChangePolicy: OnRootMismatch
    supplementalGroupsPolicy: Strict
    appArmorProfile: {type: RuntimeDefault}
  volumes: [{name: data, hostPath: {path: /srv/data}}]
  containers:
  - name: app
    image: busybox
    securityContext:
      procMount: Default
      privileged: true
      appArmorProfile: {type: Localhost, localhostProfile: k8s-example}
    volumeMounts:
    - {name: data, mountPath: /a, mountPropagation: HostToContainer}
    - {name: data, mountPath: /b, mountPropagation: Bidirectional}
    - {name: data, mountPath: /c, mountPropagation: None}
    - {name: data, mountPath: /d, readOnly: true, recursiveReadOnly: IfPossible}
)";

TEST(HostFields, SupportedValuesDecodeWithoutWarningsAndRoundTrip) {
  Checked c = Check(kSupported);
  EXPECT_THAT(c.warnings, IsEmpty());
  EXPECT_THAT(c.errors, IsEmpty());
  const PodSpec& spec = c.pod.spec;
  EXPECT_EQ(spec.host_users, true);
  EXPECT_EQ(spec.security_context->fs_group_change_policy, "OnRootMismatch");
  EXPECT_EQ(spec.security_context->supplemental_groups_policy, "Strict");
  EXPECT_EQ(spec.containers[0].security_context->proc_mount, "Default");
  EXPECT_EQ(spec.containers[0].volume_mounts[1].mount_propagation, "Bidirectional");
  EXPECT_EQ(spec.containers[0].volume_mounts[3].recursive_read_only, "IfPossible");
  EXPECT_EQ(spec.os->name, "linux");
  EXPECT_EQ(spec.containers[0].security_context->app_armor_profile,
            (AppArmorProfile{"Localhost", "k8s-example"}));

  nlohmann::json out = ToJson(c.pod);
  EXPECT_EQ(out["spec"]["hostUsers"], true);
  EXPECT_EQ(out["spec"]["os"]["name"], "linux");
  EXPECT_EQ(out["spec"]["securityContext"]["appArmorProfile"]["type"], "RuntimeDefault");
  EXPECT_EQ(out["spec"]["containers"][0]["volumeMounts"][3]["recursiveReadOnly"], "IfPossible");
  EXPECT_EQ(out["spec"]["securityContext"]["fsGroupChangePolicy"], "OnRootMismatch");
  EXPECT_EQ(out["spec"]["securityContext"]["supplementalGroupsPolicy"], "Strict");
  EXPECT_EQ(out["spec"]["containers"][0]["securityContext"]["procMount"], "Default");
  EXPECT_EQ(out["spec"]["containers"][0]["volumeMounts"][0]["mountPropagation"], "HostToContainer");
  Result<ParseOutput> again = ParseManifest(out.dump(), ManifestFormat::kJson);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->pod.spec, c.pod.spec);
}

TEST(HostFields, RefusedValuesNameTheFieldAndTheReason) {
  Checked c = Check(R"(  os: {name: windows}
  securityContext:
    fsGroupChangePolicy: Sometimes
    supplementalGroupsPolicy: Union
    appArmorProfile: {type: Localhost}
  volumes: [{name: data, hostPath: {path: /srv/data}}]
  containers:
  - name: app
    image: busybox
    securityContext: {procMount: Unmasked}
    volumeMounts:
    - {name: data, mountPath: /a, mountPropagation: Bidirectional}
    - {name: data, mountPath: /b, mountPropagation: hostToContainer}
    - {name: data, mountPath: /c, readOnly: true, recursiveReadOnly: Enabled}
    - {name: data, mountPath: /d, recursiveReadOnly: IfPossible}
  - name: odd
    image: busybox
    securityContext:
      procMount: Hidden
      appArmorProfile: {type: Unconfined, localhostProfile: x}
)");
  EXPECT_THAT(c.warnings, IsEmpty());
  const std::string c0 = "spec.containers[0]";
  EXPECT_THAT(
      c.errors,
      ElementsAre(
          c0 + ".volumeMounts[0].mountPropagation: Forbidden: Bidirectional mount propagation "
               "is available only to privileged containers",
          c0 + ".volumeMounts[1].mountPropagation: Unsupported value: \"hostToContainer\": "
               "supported values: \"Bidirectional\", \"HostToContainer\", \"None\"",
          c0 + ".volumeMounts[2].recursiveReadOnly: Invalid value: \"Enabled\": the OCI "
               "runtimes podvisor drives cannot make a mount recursively read-only; use "
               "IfPossible for a read-only mount whose submounts stay writable",
          c0 + ".volumeMounts[3].recursiveReadOnly: Forbidden: may only be specified when "
               "readOnly is true",
          c0 + ".securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be "
               "false to use `Unmasked`",
          "spec.containers[1].securityContext.appArmorProfile.localhostProfile: Invalid value: "
          "\"x\": can only be set when AppArmor type is Localhost",
          "spec.containers[1].securityContext.procMount: Unsupported value: \"Hidden\": "
          "supported values: \"Default\", \"Unmasked\"",
          "spec.os.name: Forbidden: podvisor runs Linux containers",
          "spec.securityContext.appArmorProfile.localhostProfile: Required value: must be set "
          "when AppArmor type is Localhost",
          "spec.securityContext.fsGroupChangePolicy: Unsupported value: \"Sometimes\": "
          "supported values: \"OnRootMismatch\", \"Always\"",
          "spec.securityContext.supplementalGroupsPolicy: Unsupported value: \"Union\": "
          "supported values: \"Merge\", \"Strict\""));
}

// S20.1, S20.2: a pod in its own user namespace, with an unmasked /proc.
TEST(HostFields, S20_1_HostUsersFalseIsAcceptedAndAllowsUnmaskedProc) {
  Checked c = Check(R"(  hostUsers: false
  containers:
  - name: app
    image: busybox
    securityContext: {procMount: Unmasked}
)");
  EXPECT_THAT(c.warnings, IsEmpty());
  EXPECT_THAT(c.errors, IsEmpty());
  EXPECT_EQ(c.pod.spec.host_users, false);
  EXPECT_EQ(c.pod.spec.containers[0].security_context->proc_mount, "Unmasked");
  nlohmann::json out = ToJson(c.pod);
  EXPECT_EQ(out["spec"]["hostUsers"], false);
}

// S20.1: the host's namespaces do not go with a user namespace, refused
// with the API server's field paths and message.
TEST(HostFields, S20_1_HostNamespacesWithHostUsersFalseAreRefused) {
  Checked c = Check(R"(  hostUsers: false
  hostNetwork: true
  hostPID: true
  hostIPC: true
  containers: [{name: app, image: busybox}]
)");
  EXPECT_THAT(c.errors, ElementsAre("spec.hostNetwork: Forbidden: when `hostUsers` is false",
                                    "spec.HostPID: Forbidden: when `hostUsers` is false",
                                    "spec.HostIPC: Forbidden: when `hostUsers` is false"));
  // The same host namespaces with hostUsers unset or true are fine here.
  EXPECT_THAT(Check(R"(  hostUsers: true
  hostNetwork: true
  hostPID: true
  hostIPC: true
  containers: [{name: app, image: busybox}]
)")
                  .errors,
              IsEmpty());
}

}  // namespace
}  // namespace podvisor::pod
