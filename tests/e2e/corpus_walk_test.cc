// Test tier 2 (TESTING.md), issue 15 point 6: `validate` never lies. Every
// valid manifest of the corpus (the parser's testdata, the examples, the
// `kubectl get pod -o yaml` manifest) is run with the fake runtime; any
// container error the spec causes (a CreateContainerError or
// RunContainerError naming a spec field, which is what `run` finds only
// when it generates a container's config) fails the test: `validate` must
// have reported it. Commands the host lacks fail in the runtime, which is
// not the spec's doing. The fake runtime runs /bin/sleep in place of
// every process (FAKE_RUNTIME_ARGS): the manifests' own commands and the
// host paths they write are never touched; hostPath volumes are moved
// into the test's directory.
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

// `podvisor validate ARGS...` (a command without --state-dir).
testing::CommandResult Validate(std::vector<std::string> args) {
  args.insert(args.begin(), {RequiredEnv("PODVISOR"), "validate"});
  return testing::RunCommand(args);
}

class CorpusWalk : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
};

std::string ReadText(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_F(CorpusWalk, EveryValidManifestRunsWithoutSpecCausedContainerErrors) {
  fs::path root = RequiredEnv("PODVISOR_SOURCE_ROOT");
  // Valid cases only: every one must pass `validate` first, checked against
  // the network `run` is given here: the harness's --network none, or
  // --network host for a manifest with a hostPort (equal to its
  // containerPort), which none refuses and cni would build a real network
  // for. (every-field.yaml is not one: its hostPort 18080 differs from its
  // containerPort, so it needs --network cni, and validate says so under
  // none and host.)
  std::vector<fs::path> corpus = {root / "src/pod/testdata/job-with-sidecars.yaml",
                                  root / "tests/e2e/testdata/kubectl-get-pod.yaml"};
  for (const auto& e : fs::directory_iterator(root / "examples")) {
    if (fs::exists(e.path() / "pod.yaml")) corpus.push_back(e.path() / "pod.yaml");
  }
  const std::regex image_re(R"(image:\s*"?([^"\s,}]+))");
  for (const fs::path& manifest : corpus) {
    SCOPED_TRACE(manifest.string());
    std::string text = ReadText(manifest);
    fs::remove_all(bundle_);
    fs::create_directories(bundle_ / "images");
    // Every image the manifest names, with an image config giving a
    // command, so a container without one is not refused for that.
    for (std::sregex_iterator it(text.begin(), text.end(), image_re), end; it != end; ++it) {
      fs::path image = bundle_ / "images" / (*it)[1].str();
      fs::create_directories(image / "rootfs");
      std::ofstream(image / "image.json") << R"({"config": {"Cmd": ["/bin/sleep", "30"]}})";
    }
    // hostPath volumes would be created on the host: point them into the
    // test's directory instead.
    text = std::regex_replace(text, std::regex(R"((hostPath:\s*\n\s+path:\s*)/)"),
                              "$1" + (dir_ / "host").string() + "/");
    text = std::regex_replace(text, std::regex(R"((hostPath:\s*\{\s*path:\s*"?)/)"),
                              "$1" + (dir_ / "host").string() + "/");
    std::ofstream(bundle_ / "pod.yaml") << text;
    const std::string network = text.find("hostPort:") != std::string::npos ? "host" : "none";
    auto validated = Validate({"--network", network, bundle_.string()});
    ASSERT_EQ(validated.exit_code, 0) << validated.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(\n  name: (\S+))")));
    pod_name_ = m[1];
    StartRun({"--grace", "1", "--backoff-initial", "100ms", "--network", network},
             {"FAKE_RUNTIME_ARGS=/bin/sleep 5"});
    // Long enough for every container to be created at least once.
    ::usleep(1'500'000);
    if (RunIsAlive()) Client({"stop", pod_name_});
    int code = WaitRun();
    EXPECT_NE(code, 2) << RunStderr();
    EXPECT_NE(code, -1) << RunStderr();
    for (const auto& event : PodEvents()) {
      std::string message = event.value("message", "");
      bool spec_caused = event.value("reason", "") == "Failed" &&
                         (message.find("spec.containers[") != std::string::npos ||
                          message.find("spec.initContainers[") != std::string::npos);
      EXPECT_FALSE(spec_caused) << event.dump();
    }
    fs::remove_all(state_dir_ / pod_name_);
  }
}

}  // namespace
}  // namespace podvisor::e2e
