// kubectl's way of naming a command's pod and container (pod_target.h).
#include "cli/pod_target.h"

#include <set>

#include <gtest/gtest.h>

namespace podvisor::cli {
namespace {

const std::set<std::string> kPods = {"web", "db"};
bool IsPod(const std::string& word) {
  return kPods.count(word) > 0;
}

TargetWords Read(std::vector<std::string> words, std::string flag = "") {
  auto target = ReadTargetWords(words, flag, IsPod);
  EXPECT_TRUE(target.ok()) << target.error().message();
  return target.ok() ? *target : TargetWords{};
}

TEST(PodTarget, ALoneWordIsThePodAsInKubectl) {
  TargetWords t = Read({"web"});
  EXPECT_EQ(t.pod, "web");
  EXPECT_EQ(t.container, "");
}

TEST(PodTarget, PodThenDashCNamesTheContainer) {
  TargetWords t = Read({"web"}, "app");
  EXPECT_EQ(t.pod, "web");
  EXPECT_EQ(t.container, "app");
  TargetWords only = Read({}, "app");
  EXPECT_EQ(only.pod, "");
  EXPECT_EQ(only.container, "app");
}

TEST(PodTarget, ALoneWordThatNamesNoPodIsTheOnlyPodsContainer) {
  TargetWords t = Read({"app"});
  EXPECT_EQ(t.pod, "");
  EXPECT_EQ(t.container, "app");
}

TEST(PodTarget, TwoWordsArePodAndContainer) {
  TargetWords t = Read({"db", "postgres"});
  EXPECT_EQ(t.pod, "db");
  EXPECT_EQ(t.container, "postgres");
}

TEST(PodTarget, AContainerGivenTwiceOrTooManyWordsIsAnError) {
  auto twice = ReadTargetWords({"db", "postgres"}, "other", IsPod);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message().find("both as argument and with -c"), std::string::npos);
  EXPECT_FALSE(ReadTargetWords({"a", "b", "c"}, "", IsPod).ok());
}

nlohmann::json Pod(std::vector<std::string> containers, std::vector<std::string> inits = {},
                   std::string annotation = "") {
  nlohmann::json pod = {{"metadata", {{"name", "web"}}}, {"spec", nlohmann::json::object()}};
  for (const auto& c : containers) pod["spec"]["containers"].push_back({{"name", c}});
  for (const auto& c : inits) pod["spec"]["initContainers"].push_back({{"name", c}});
  if (!annotation.empty()) {
    pod["metadata"]["annotations"][kDefaultContainerAnnotation] = annotation;
  }
  return pod;
}

TEST(PodTarget, DefaultIsTheFirstContainerWithKubectlsNotice) {
  auto chosen = DefaultContainer(Pod({"app", "sidecar"}, {"migrate"}));
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->name, "app");
  EXPECT_EQ(chosen->notice, "Defaulted container \"app\" out of: app, sidecar, migrate (init)");
}

TEST(PodTarget, ASingleContainerIsChosenSilently) {
  auto chosen = DefaultContainer(Pod({"app"}));
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->name, "app");
  EXPECT_EQ(chosen->notice, "");
}

TEST(PodTarget, TheDefaultContainerAnnotationWinsSilently) {
  auto chosen = DefaultContainer(Pod({"app", "sidecar"}, {}, "sidecar"));
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->name, "sidecar");
  EXPECT_EQ(chosen->notice, "");
}

TEST(PodTarget, AnAnnotationNamingNoContainerFallsBackToTheFirst) {
  auto chosen = DefaultContainer(Pod({"app", "sidecar"}, {}, "gone"));
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(chosen->name, "app");
  EXPECT_EQ(chosen->notice,
            "Default container name \"gone\" not found in pod web\n"
            "Defaulted container \"app\" out of: app, sidecar");
}

TEST(PodTarget, APodWithoutContainersIsAnError) {
  EXPECT_FALSE(DefaultContainer(Pod({})).ok());
}

TEST(PodTarget, S14_25_KubectlsTypeSlashNameIsThePod) {
  EXPECT_EQ(PodWord("pod/web"), "web");
  EXPECT_EQ(PodWord("pods/web"), "web");
  EXPECT_EQ(PodWord("po/web"), "web");
  EXPECT_EQ(PodWord("web"), "web");
  EXPECT_EQ(PodWord("deploy/web"), "deploy/web");  // left for S14.23 to refuse
  auto never = [](const std::string&) { return false; };
  auto one = ReadTargetWords({"pod/web"}, "", never);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->pod, "web");  // a pod, even when no such directory is there
  EXPECT_EQ(one->container, "");
  auto two = ReadTargetWords({"pod/web", "app"}, "", never);
  ASSERT_TRUE(two);
  EXPECT_EQ(two->pod, "web");
  EXPECT_EQ(two->container, "app");
}

}  // namespace
}  // namespace podvisor::cli
