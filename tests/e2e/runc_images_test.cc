// Test tier 3 (docs/TESTING.md), issue 7 with runc on this host: a pod whose
// image is an OCI image layout (built by scripts/make-oci-layout.sh from
// the busybox rootfs plus a layer with a whiteout) runs with the image
// config's Entrypoint, Cmd, Env and WorkingDir; a corrupt layout stops
// the run before anything starts; termination-message files (S11.3).
// Needs root; skipped otherwise.
#include <unistd.h>

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;

class RuncImages : public RuncE2eTest {
 protected:
  // BUNDLE/images/layout: the busybox rootfs with /etc/doomed as layer 1,
  // a layer 2 that deletes it by whiteout and adds /etc/added. Returns the
  // manifest digest.
  std::string MakeLayout(const std::string& config_json) {
    fs::path rootfs = bundle_ / "images" / "img" / "rootfs";
    std::ofstream(rootfs / "etc" / "doomed") << "lower layer\n";
    fs::path upper = dir_ / "layer2";
    fs::create_directories(upper / "etc");
    std::ofstream(upper / "etc" / ".wh.doomed");
    std::ofstream(upper / "etc" / "added") << "added-by-layer-2\n";
    auto r = testing::RunCommand(
        {"/bin/bash", RequiredEnv("PODVISOR_SOURCE_ROOT") + "/scripts/make-oci-layout.sh",
         (bundle_ / "images" / "layout").string(), config_json, rootfs.string(), upper.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string digest = r.out.substr(0, r.out.find('\n'));
    return digest;
  }
};

std::string Header(const std::string& name, const std::string& restart_policy) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         "}\nspec:\n  restartPolicy: " + restart_policy +
         "\n  terminationGracePeriodSeconds: 5\n"
         "  volumes: [{name: shared, hostPath: {path: \"{{HOSTDIR}}\", type: DirectoryOrCreate}}]\n"
         "  containers:\n";
}
constexpr const char* kShared = ", volumeMounts: [{name: shared, mountPath: /shared}]";

TEST_F(RuncImages, OciLayoutImageRunsWithItsConfigAndLayersApplied) {
  std::string digest = MakeLayout(
      R"({"Entrypoint":["/bin/sh","-c"],)"
      R"("Cmd":["echo \"$IMAGE_VAR $(pwd)\" > /shared/out; cat /etc/added >> /shared/out; )"
      R"(if [ -e /etc/doomed ]; then echo doomed-still-there >> /shared/out; fi"],)"
      R"("Env":["PATH=/bin","IMAGE_VAR=from-image-config"],"WorkingDir":"/tmp"})");
  ASSERT_EQ(digest.rfind("sha256:", 0), 0u) << digest;
  WritePod(Header("oci-layout", "Never") + "  - {name: app, image: layout" + kShared + "}\n");
  EXPECT_EQ(Run(), 0) << RunStderr();
  std::ifstream out(scratch_ / "out");
  std::string text((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "from-image-config /tmp\nadded-by-layer-2\n");
  // S16.1: recorded by manifest digest, its two layers stored by diff id
  // and stacked by the overlay (the whiteout took overlayfs's form).
  EXPECT_TRUE(fs::is_regular_file(state_dir_ / ".images" / "images" / "sha256" /
                                  (digest.substr(7) + ".json")));
  int layers = 0;
  for (const auto& e : fs::directory_iterator(state_dir_ / ".images" / "layers" / "sha256")) {
    if (e.is_directory()) ++layers;
  }
  EXPECT_EQ(layers, 2);
}

TEST_F(RuncImages, CorruptLayerBlobStopsTheRunNamingTheDigest) {
  MakeLayout(R"({"Cmd":["/bin/true"]})");
  // The biggest blob is the busybox layer: flip a byte in its middle.
  fs::path biggest;
  for (const auto& e : fs::directory_iterator(bundle_ / "images" / "layout" / "blobs" / "sha256")) {
    if (biggest.empty() || fs::file_size(e.path()) > fs::file_size(biggest)) biggest = e.path();
  }
  {
    std::fstream f(biggest, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(fs::file_size(biggest) / 2));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(fs::file_size(biggest) / 2));
    f.put(static_cast<char>(c ^ 0x20));
  }
  WritePod(Header("oci-corrupt", "Never") + "  - {name: app, image: layout" + kShared + "}\n");
  EXPECT_EQ(Run(), 3) << RunStderr();
  EXPECT_THAT(RunStderr(), HasSubstr("blob sha256:" + biggest.filename().string() + " is corrupt"));
  EXPECT_FALSE(fs::exists(state_dir_ / "oci-corrupt" / "runtime"));
  // S16.1: nothing published: no record, no layer directory, no scratch.
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(state_dir_ / ".images", ec)) {
    EXPECT_NE(e.path().extension(), ".json") << e.path();
    EXPECT_FALSE(e.is_directory() && e.path().parent_path().filename() == "sha256") << e.path();
  }
}

TEST_F(RuncImages, S11_3_TerminationMessageFilesBecomeTheMessage) {
  WritePod(Header("termmsg", "Never") + "  - {name: default-path, image: img, command: " +
           ShCmd("{{H}} write /dev/termination-log bye-from-default; exit 4") + kShared + "}\n" +
           "  - {name: custom-path, image: img, terminationMessagePath: /tmp/why, command: " +
           ShCmd("{{H}} write /tmp/why bye-from-custom; exit 0") + kShared + "}\n" +
           "  - {name: keeper, image: img, command: " + HelperCmd("keeper", "sleep 100000") +
           kShared + "}\n");
  StartRun();
  auto pod = WaitForStatus(
      [](const nlohmann::json& p) {
        return StateOf(p, "default-path") == "terminated" &&
               StateOf(p, "custom-path") == "terminated";
      },
      "both message writers terminated");
  for (auto [name, want] : {std::pair{"default-path", "bye-from-default"},
                            std::pair{"custom-path", "bye-from-custom"}}) {
    const auto* s = FindContainerStatus(pod, name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_EQ(s->at("state").at("terminated").value("message", ""), want) << name;
  }
  auto stop = Client({"stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(WaitRun(), 4) << RunStderr();
}

}  // namespace
}  // namespace podvisor::e2e
