// The fixture of the pull tests (tier 3, issue 31): a RuncE2eTest with a
// real registry of its own (tests/helpers/test_registry.h: Debian's
// docker-registry on a free 127.0.0.1 port, TLS from a test CA in
// /etc/containers/certs.d/127.0.0.1:PORT, htpasswd auth) and the test
// images. `podvisor run` and the client commands run with
// CONTAINERS_REGISTRIES_CONF naming a registries.conf of the test's own
// (no search registries; one short-name alias) and REGISTRY_AUTH_FILE an
// empty auth file unless a test gives credentials: the host's own
// configuration and credentials never count.
//
// These tests drive the CLI the issue documents (`run` pulling,
// `podvisor pull`, `images ls|prune`, the waiting reasons and events);
// until the pieces of issue 31 are merged they fail, which is expected.
#pragma once

#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../helpers/test_registry.h"
#include "harness.h"

namespace podvisor::e2e {

class RuncPull : public RuncE2eTest {
 protected:
  void SetUp() override {
    RuncE2eTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (std::string why = TestRegistry::Missing(/*tls=*/true); !why.empty()) {
      GTEST_SKIP() << why;
    }
    std::string error;
    images_ = TestImages::Get(bundle_ / "images" / "img" / "rootfs", &error);
    ASSERT_NE(images_, nullptr) << error;
    registry_ = TestRegistry::Start({}, &error);
    ASSERT_NE(registry_, nullptr) << error;
    // The test's own containers configuration, in the environment of
    // every `podvisor` it starts.
    registries_conf_ = dir_ / "registries.conf";
    std::ofstream(registries_conf_) << "unqualified-search-registries = []\n"
                                       "short-name-mode = \"enforcing\"\n"
                                       "[aliases]\n\"pvtest-app\" = \""
                                    << registry_->Ref("team/app-a") << "\"\n";
    no_auth_ = dir_ / "no-auth.json";
    std::ofstream(no_auth_) << "{}\n";
    SaveEnv("CONTAINERS_REGISTRIES_CONF", registries_conf_.string());
    SaveEnv("REGISTRY_AUTH_FILE", no_auth_.string());
  }

  void TearDown() override {
    if (registry_ && HasFailure()) {
      // The access log and the errors; its info lines repeat each request.
      std::istringstream in(registry_->Log());
      std::string log;
      for (std::string line; std::getline(in, line);) {
        if (line.rfind("127.0.0.1 - ", 0) == 0 || line.find("level=error") != std::string::npos)
          log += line.substr(0, 300) + "\n";
      }
      if (log.size() > 6000) log = "…" + log.substr(log.size() - 6000);
      std::printf("---- registry %s log (tail) ----\n%s\n", registry_->host().c_str(), log.c_str());
    }
    // Before the harness's checks: the proxy's descriptors and the
    // registry's process are the test's own, not the pod's leftovers.
    proxy_.reset();
    registry_.reset();
    for (auto it = saved_env_.rbegin(); it != saved_env_.rend(); ++it) {
      if (it->second) {
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        ::unsetenv(it->first.c_str());
      }
    }
    saved_env_.clear();
    RuncE2eTest::TearDown();
  }

  // Sets an environment variable for the rest of the test (restored at
  // TearDown): `podvisor run` and the client commands inherit it.
  void SaveEnv(const std::string& name, const std::string& value) {
    const char* old = std::getenv(name.c_str());
    saved_env_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    ::setenv(name.c_str(), value.c_str(), 1);
  }

  // Pushes a layout to this test's registry; fails the test on error.
  void Push(const LayoutImage& image, const std::string& repo_tag) {
    auto r = registry_->Push(image.layout, repo_tag);
    ASSERT_EQ(r.exit_code, 0) << "skopeo copy to " << repo_tag << ": " << r.out << r.err;
  }

  // REGISTRY_AUTH_FILE with this registry's credentials (or others).
  void UseAuthFile(const std::string& user, const std::string& password,
                   const std::string& host = "") {
    fs::path file = dir_ / "auth.json";
    std::ofstream(file) << registry_->DockerConfigJson(user, password, host);
    ::setenv("REGISTRY_AUTH_FILE", file.c_str(), 1);
  }

  // A Secret of type kubernetes.io/dockerconfigjson, as a YAML document.
  std::string PullSecret(const std::string& name, const std::string& user,
                         const std::string& password, const std::string& host = "") const {
    nlohmann::json doc = {
        {"apiVersion", "v1"},
        {"kind", "Secret"},
        {"metadata", {{"name", name}}},
        {"type", "kubernetes.io/dockerconfigjson"},
        {"stringData", {{".dockerconfigjson", registry_->DockerConfigJson(user, password, host)}}}};
    return doc.dump() + "\n---\n";  // JSON is YAML
  }

  // A pod whose containers are given as YAML list items (indented by 4).
  static std::string PodYaml(const std::string& name, const std::string& containers,
                             const std::string& restart_policy = "Never",
                             const std::string& extra_spec = "") {
    return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
           "}\nspec:\n  restartPolicy: " + restart_policy +
           "\n  terminationGracePeriodSeconds: 2\n" + extra_spec +
           "  volumes: [{name: shared, hostPath: {path: \"{{HOSTDIR}}\", type: "
           "DirectoryOrCreate}}]\n  containers:\n" +
           containers;
  }
  // One container item: `command` a JSON flow sequence, `policy` "" for
  // the default.
  static std::string Container(const std::string& name, const std::string& image,
                               const std::string& command, const std::string& policy = "") {
    return "  - {name: " + name + ", image: \"" + image + "\"" +
           (policy.empty() ? "" : ", imagePullPolicy: " + policy) + ", command: " + command +
           ", volumeMounts: [{name: shared, mountPath: /shared}]}\n";
  }
  // Writes the image's /app-name to {{DIR}}/out-NAME and exits 0.
  static std::string CatAppName(const std::string& name) {
    return ShCmd("cat /app-name > /shared/out-" + name);
  }

  // The store's layer directories (diff id hex), STATE/.images/layers/sha256.
  std::set<std::string> StoredLayers() const {
    std::set<std::string> out;
    std::error_code ec;
    // One directory per layer; the store's <hex>.json and <hex>.lock
    // beside each are its bookkeeping.
    for (const auto& e : fs::directory_iterator(state_dir_ / ".images" / "layers" / "sha256", ec)) {
      if (e.is_directory()) out.insert(e.path().filename().string());
    }
    return out;
  }
  static std::string Hex(const std::string& digest) { return digest.substr(digest.find(':') + 1); }

  // The pod's events with this reason (events.jsonl of the current run).
  std::vector<nlohmann::json> EventsWithReason(const std::string& reason) const {
    std::vector<nlohmann::json> out;
    for (const auto& e : PodEvents()) {
      if (e.value("reason", "") == reason) out.push_back(e);
    }
    return out;
  }

  // The waiting reason of a container ("" when not waiting).
  static std::string WaitingReason(const nlohmann::json& pod, const std::string& container) {
    const nlohmann::json* c = FindContainerStatus(pod, container);
    if (!c || !c->contains("state") || !(*c)["state"].contains("waiting")) return "";
    return (*c)["state"]["waiting"].value("reason", "");
  }
  static std::string WaitingMessage(const nlohmann::json& pod, const std::string& container) {
    const nlohmann::json* c = FindContainerStatus(pod, container);
    if (!c || !c->contains("state") || !(*c)["state"].contains("waiting")) return "";
    return (*c)["state"]["waiting"].value("message", "");
  }
  static std::string ImageId(const nlohmann::json& pod, const std::string& container) {
    const nlohmann::json* c = FindContainerStatus(pod, container);
    return c ? c->value("imageID", "") : "";
  }

  // A proxy in front of the registry, trusted with its CA.
  LoopbackProxy& StartProxy() {
    std::string error;
    proxy_ = LoopbackProxy::Start(registry_->port(), &error);
    EXPECT_NE(proxy_, nullptr) << error;
    EXPECT_TRUE(registry_->TrustPort(proxy_->port()));
    return *proxy_;
  }

  // `podvisor ARGS... --state-dir STATE` with the test's environment.
  testing::CommandResult Podvisor(std::vector<std::string> args) { return Client(std::move(args)); }

  // Stops the pod and waits for run to end; its exit status.
  int StopPod() {
    auto r = Client({"stop"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return WaitRun(std::chrono::seconds(60));
  }

  const TestImages* images_ = nullptr;
  std::unique_ptr<TestRegistry> registry_;
  std::unique_ptr<LoopbackProxy> proxy_;
  fs::path registries_conf_, no_auth_;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_env_;
};

}  // namespace podvisor::e2e
