#include "registry/image_name.h"

#include <gtest/gtest.h>

namespace podvisor::registry {
namespace {

std::string Normalised(std::string_view reference) {
  auto name = ParseImageName(reference);
  return name ? name->ToString() : "error: " + name.error().message();
}

TEST(ImageName, NormalisesAsDockerDoes) {
  EXPECT_EQ(Normalised("nginx"), "docker.io/library/nginx:latest");
  EXPECT_EQ(Normalised("nginx:1.25"), "docker.io/library/nginx:1.25");
  EXPECT_EQ(Normalised("team/app"), "docker.io/team/app:latest");
  EXPECT_EQ(Normalised("docker.io/nginx"), "docker.io/library/nginx:latest");
  EXPECT_EQ(Normalised("index.docker.io/library/nginx:1"), "docker.io/library/nginx:1");
  EXPECT_EQ(Normalised("localhost/app"), "localhost/app:latest");
  EXPECT_EQ(Normalised("127.0.0.1:5000/team/app:v2"), "127.0.0.1:5000/team/app:v2");
  EXPECT_EQ(Normalised("registry.example.com/a/b/c"), "registry.example.com/a/b/c:latest");
  EXPECT_EQ(Normalised("[::1]:5000/app:1"), "[::1]:5000/app:1");
  const std::string hex(64, 'a');
  EXPECT_EQ(Normalised("registry.example.com/team/app@sha256:" + hex),
            "registry.example.com/team/app@sha256:" + hex);
  EXPECT_EQ(Normalised("nginx:1.25@sha256:" + hex), "docker.io/library/nginx:1.25@sha256:" + hex);
}

TEST(ImageName, ShortNameAndPullReference) {
  auto name = ParseImageName("nginx:1.25");
  ASSERT_TRUE(name);
  EXPECT_TRUE(name->short_name);
  EXPECT_EQ(name->PullReference(), "docker.io/library/nginx:1.25");
  EXPECT_EQ(name->RepoDigest("sha256:ab"), "docker.io/library/nginx@sha256:ab");
  EXPECT_FALSE(ParseImageName("docker.io/library/nginx")->short_name);
  const std::string digest = "sha256:" + std::string(64, 'b');
  EXPECT_EQ(ParseImageName("nginx:1@" + digest)->PullReference(),
            "docker.io/library/nginx@" + digest);
  EXPECT_EQ(ParseImageName("nginx")->PullReference(), "docker.io/library/nginx:latest");
}

TEST(ImageName, RejectsWithTheRule) {
  EXPECT_NE(Normalised("").find("empty image name"), std::string::npos);
  EXPECT_NE(Normalised("Nginx").find("must be lowercase"), std::string::npos);
  EXPECT_NE(Normalised("nginx:-bad").find("invalid tag"), std::string::npos);
  EXPECT_NE(Normalised("nginx@sha256:abc").find("invalid digest"), std::string::npos);
  EXPECT_NE(Normalised("a//b").find("path component"), std::string::npos);
  EXPECT_NE(Normalised("app-/x").find("path component"), std::string::npos);
  EXPECT_NE(Normalised("reg.example.com:99999999/app").find("invalid registry"), std::string::npos);
  EXPECT_NE(Normalised("nginx latest").find("space"), std::string::npos);
  EXPECT_NE(Normalised("a/" + std::string(260, 'b')).find("255"), std::string::npos);
  EXPECT_NE(Normalised(":tag").find("no repository"), std::string::npos);
}

TEST(PullPolicy, DefaultsAsTheApiServer) {
  EXPECT_EQ(DefaultPullPolicy("nginx"), PullPolicy::kAlways);
  EXPECT_EQ(DefaultPullPolicy("nginx:latest"), PullPolicy::kAlways);
  EXPECT_EQ(DefaultPullPolicy("host:5000/app"), PullPolicy::kAlways);
  EXPECT_EQ(DefaultPullPolicy("nginx:1.25"), PullPolicy::kIfNotPresent);
  EXPECT_EQ(DefaultPullPolicy("host:5000/app:1"), PullPolicy::kIfNotPresent);
  const std::string digest = "@sha256:" + std::string(64, 'c');
  EXPECT_EQ(DefaultPullPolicy("nginx" + digest), PullPolicy::kIfNotPresent);
  // The API server reads the tag even beside a digest.
  EXPECT_EQ(DefaultPullPolicy("nginx:latest" + digest), PullPolicy::kAlways);
  // A name that does not parse has no tag.
  EXPECT_EQ(DefaultPullPolicy("Bad Name"), PullPolicy::kIfNotPresent);
}

TEST(PullPolicy, NamesRoundTrip) {
  for (PullPolicy p : {PullPolicy::kAlways, PullPolicy::kIfNotPresent, PullPolicy::kNever}) {
    EXPECT_EQ(*ParsePullPolicy(PullPolicyName(p)), p);
  }
  EXPECT_NE(ParsePullPolicy("always").error().message().find("supported values"),
            std::string::npos);
}

}  // namespace
}  // namespace podvisor::registry
