#include "registry/credentials.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "pod/config_objects.h"

namespace podvisor::registry {
namespace {

namespace fs = std::filesystem;

ImageName Name(std::string_view reference) {
  return *ParseImageName(reference);
}

RegistryCredential Cred(std::string key, std::string user) {
  return {.key = std::move(key), .source = "test", .username = std::move(user), .password = "pw"};
}

std::vector<std::string> Users(const std::vector<RegistryCredential>& list) {
  std::vector<std::string> users;
  for (const auto& c : list) users.push_back(c.username);
  return users;
}

TEST(CredentialKeys, NormaliseAsTheKeyring) {
  EXPECT_EQ(NormaliseCredentialKey("https://index.docker.io/v1/"), "index.docker.io");
  EXPECT_EQ(NormaliseCredentialKey("registry.example.com"), "registry.example.com");
  EXPECT_EQ(NormaliseCredentialKey("http://registry.example.com:5000/v2/team"),
            "registry.example.com:5000/team");
  EXPECT_EQ(NormaliseCredentialKey("registry.example.com/team/app"),
            "registry.example.com/team/app");
}

TEST(CredentialKeys, MatchHostGlobsPortAndPathPrefix) {
  EXPECT_TRUE(CredentialKeyMatches("registry.example.com", "registry.example.com/team/app"));
  EXPECT_TRUE(CredentialKeyMatches("*.example.com", "registry.example.com/team/app"));
  EXPECT_FALSE(CredentialKeyMatches("*.example.com", "example.com/app"));  // label count
  EXPECT_FALSE(CredentialKeyMatches("*.example.com", "a.b.example.com/app"));
  EXPECT_TRUE(CredentialKeyMatches("registry.example.com/team", "registry.example.com/team/app"));
  EXPECT_FALSE(CredentialKeyMatches("registry.example.com/team", "registry.example.com/other"));
  EXPECT_TRUE(CredentialKeyMatches("reg.example.com:5000", "reg.example.com:5000/app"));
  EXPECT_FALSE(CredentialKeyMatches("reg.example.com:5000", "reg.example.com/app"));
  EXPECT_FALSE(CredentialKeyMatches("reg.example.com", "reg.example.com:5000/app"));
  EXPECT_TRUE(CredentialKeyMatches("https://reg.example.com", "reg.example.com/app"));
}

TEST(CredentialOrder, LongestKeyFirstThenSecretOrder) {
  std::vector<RegistryCredential> all = {
      Cred("registry.example.com", "host"), Cred("registry.example.com/team", "team"),
      Cred("*.example.com", "glob"),        Cred("registry.example.com/team/app", "app"),
      Cred("other.example.org", "other"),   Cred("registry.example.com", "host2")};
  EXPECT_EQ(Users(MatchCredentials(all, Name("registry.example.com/team/app:1"))),
            (std::vector<std::string>{"app", "team", "host", "host2", "glob"}));
  EXPECT_TRUE(MatchCredentials(all, Name("quay.io/x/y")).empty());
}

TEST(CredentialOrder, DockerHubFallsBackToIndexDockerIo) {
  std::vector<RegistryCredential> all = {
      Cred(NormaliseCredentialKey("https://index.docker.io/v1/"), "hub")};
  EXPECT_EQ(Users(MatchCredentials(all, Name("nginx"))), (std::vector<std::string>{"hub"}));
  EXPECT_EQ(Users(MatchCredentials(all, Name("team/app:1"))), (std::vector<std::string>{"hub"}));
  EXPECT_TRUE(MatchCredentials(all, Name("quay.io/team/app")).empty());
  std::vector<RegistryCredential> direct = {Cred("docker.io", "direct")};
  EXPECT_EQ(Users(MatchCredentials(direct, Name("nginx"))), (std::vector<std::string>{"direct"}));
}

TEST(DockerAuths, AuthOrFieldsAndIdentityToken) {
  auto parsed =
      ParseDockerAuths(R"({"a.example.com":{"auth":")" + pod::EncodeBase64("alice:s3cret:x") +
                           R"("},"b.example.com":{"username":"bob","password":"pw"},)"
                           R"("c.example.com":{"identitytoken":"tok"}})",
                       "test");
  ASSERT_TRUE(parsed) << parsed.error().message();
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[0].username, "alice");
  EXPECT_EQ((*parsed)[0].password, "s3cret:x");
  EXPECT_EQ((*parsed)[1].username, "bob");
  EXPECT_EQ((*parsed)[2].identity_token, "tok");
  auto bad = ParseDockerAuths(R"({"a":{"auth":"!!!"}})", "src");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("src: entry \"a\": auth is not valid base64"),
            std::string::npos);
  auto no_colon =
      ParseDockerAuths(R"({"a":{"auth":")" + pod::EncodeBase64("secretvalue") + "\"}}", "src");
  ASSERT_FALSE(no_colon);
  EXPECT_EQ(no_colon.error().message().find("secretvalue"), std::string::npos);
}

pod::Pod PodWithSecrets(std::vector<std::string> names) {
  pod::Pod pod;
  for (auto& n : names) pod.spec.image_pull_secrets.push_back({.name = n});
  return pod;
}

TEST(PullSecrets, BothTypesInOrderAndErrorsNameTheSecret) {
  pod::ConfigObjects objects;
  objects.secrets["json"] = {
      .name = "json",
      .type = "kubernetes.io/dockerconfigjson",
      .data = {{".dockerconfigjson",
                R"({"auths":{"r.example.com":{"username":"u1","password":"p1"}}})"}}};
  objects.secrets["cfg"] = {
      .name = "cfg",
      .type = "kubernetes.io/dockercfg",
      .data = {{".dockercfg", R"({"r.example.com":{"username":"u2","password":"p2"}})"}}};
  objects.secrets["opaque"] = {.name = "opaque", .data = {{"x", "y"}}};
  objects.secrets["broken"] = {.name = "broken",
                               .type = "kubernetes.io/dockerconfigjson",
                               .data = {{".dockerconfigjson", "{\"auths\": [\"hunter2\""}}};
  auto both = PullSecretCredentials(PodWithSecrets({"cfg", "json"}), objects);
  ASSERT_TRUE(both) << both.error().message();
  EXPECT_EQ(Users(*both), (std::vector<std::string>{"u2", "u1"}));
  EXPECT_EQ((*both)[0].source, "imagePullSecrets[0] (secret \"cfg\") .dockercfg");

  auto missing = PullSecretCredentials(PodWithSecrets({"json", "x"}), objects);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message(), "imagePullSecrets[1]: secret \"x\" not found in the bundle");
  auto opaque = PullSecretCredentials(PodWithSecrets({"opaque"}), objects);
  ASSERT_FALSE(opaque);
  EXPECT_NE(opaque.error().message().find("has type \"Opaque\""), std::string::npos);
  auto broken = PullSecretCredentials(PodWithSecrets({"broken"}), objects);
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message().find("secret \"broken\""), std::string::npos);
  EXPECT_EQ(broken.error().message().find("hunter2"), std::string::npos);

  auto json = PullCredentialsJson(PodWithSecrets({"json", "cfg"}), objects);
  ASSERT_TRUE(json);
  auto back = ParsePullCredentialsJson(*json);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, *PullSecretCredentials(PodWithSecrets({"json", "cfg"}), objects));
}

TEST(AuthFiles, FirstFileWithAMatchWins) {
  fs::path dir = fs::temp_directory_path() / ("podvisor-authfiles-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "a.json") << R"({"auths":{"quay.io":{"username":"q","password":"p"}}})";
  std::ofstream(dir / "b.json") << R"({"auths":{"r.example.com":{"username":"b","password":"p"}}})";
  std::ofstream(dir / "c.json") << R"({"auths":{"r.example.com":{"username":"c","password":"p"}}})";
  auto found =
      AuthFileCredentials({dir / "none.json", dir / "a.json", dir / "b.json", dir / "c.json"},
                          Name("r.example.com/app"));
  ASSERT_TRUE(found) << found.error().message();
  EXPECT_EQ(Users(*found), (std::vector<std::string>{"b"}));
  ::setenv("REGISTRY_AUTH_FILE", (dir / "c.json").c_str(), 1);
  EXPECT_EQ(DefaultAuthFiles(), (std::vector<fs::path>{dir / "c.json"}));
  ::unsetenv("REGISTRY_AUTH_FILE");
  fs::remove_all(dir);
}

TEST(AuthFiles, MemfdHoldsOneEntryForTheRegistry) {
  auto fd = CredentialMemfd(Cred("r.example.com/team", "u"), Name("r.example.com:5000/team/a"));
  ASSERT_TRUE(fd);
  char buf[512] = {};
  ssize_t n = ::pread(fd->get(), buf, sizeof buf - 1, 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf),
            R"({"auths":{"r.example.com:5000":{"auth":")" + pod::EncodeBase64("u:pw") + "\"}}}");
  EXPECT_EQ(CredentialSecrets(Cred("k", "u")),
            (std::vector<std::string>{"pw", pod::EncodeBase64("u:pw")}));
}

}  // namespace
}  // namespace podvisor::registry
