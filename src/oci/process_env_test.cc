// Kubernetes command/args/env rules and $(VAR) expansion (image.h,
// process_env.h).
#include "oci/process_env.h"

#include <gtest/gtest.h>

namespace podvisor::oci {
namespace {

std::string Expand(std::string_view in) {
  EnvList env = {
      {"VAR_A", "A"}, {"VAR_B", "B"}, {"VAR_C", "C"}, {"VAR_REF", "$(VAR_A)"}, {"VAR_EMPTY", ""}};
  return ExpandVars(in, [&](std::string_view n) { return LookupEnv(env, n); });
}

// Cases from Kubernetes' third_party/forked/golang/expansion/expand_test.go.
TEST(ExpandVars, MatchesKubernetesExpansion) {
  EXPECT_EQ(Expand("$(VAR_A)"), "A");
  EXPECT_EQ(Expand("___$(VAR_B)___"), "___B___");
  EXPECT_EQ(Expand("$(VAR_A)-$(VAR_A)"), "A-A");
  EXPECT_EQ(Expand("$(VAR_A)$(VAR_B)$(VAR_C)"), "ABC");
  EXPECT_EQ(Expand("$(VAR_EMPTY)"), "");
  EXPECT_EQ(Expand("$(VAR_REF)"), "$(VAR_A)") << "expansion is not recursive";
  EXPECT_EQ(Expand("$(UNKNOWN)"), "$(UNKNOWN)") << "unknown references stay as written";
  EXPECT_EQ(Expand("$$(VAR_B)"), "$(VAR_B)") << "$$ escapes";
  EXPECT_EQ(Expand("$$$(VAR_B)"), "$B");
  EXPECT_EQ(Expand("$$$$(VAR_A)"), "$$(VAR_A)");
  EXPECT_EQ(Expand("f000-$$VAR_A"), "f000-$VAR_A");
  EXPECT_EQ(Expand("$VAR_A"), "$VAR_A") << "no parentheses: not a reference";
  EXPECT_EQ(Expand("$(VAR_A"), "$(VAR_A") << "unterminated reference copied";
  EXPECT_EQ(Expand("$()"), "$()");
  EXPECT_EQ(Expand("trailing $"), "trailing $");
  EXPECT_EQ(Expand("$(VAR_A)$"), "A$");
  EXPECT_EQ(Expand("$(VAR_A)$$"), "A$");
  EXPECT_EQ(Expand("no refs at all"), "no refs at all");
  EXPECT_EQ(Expand(""), "");
}

pod::Container Container(std::vector<std::string> command, std::vector<std::string> args) {
  pod::Container c;
  c.name = "c";
  c.image = "img";
  c.command = std::move(command);
  c.args = std::move(args);
  return c;
}

image::ImageConfig Img() {
  image::ImageConfig img;
  img.entrypoint = {"/entry"};
  img.cmd = {"default-arg"};
  img.env = {"PATH=/img/bin", "FROM_IMAGE=image-value"};
  return img;
}

TEST(ProcessArgs, NeitherCommandNorArgsRunsEntrypointPlusCmd) {
  auto args = BuildProcessArgs(Img(), Container({}, {}), {});
  ASSERT_TRUE(args);
  EXPECT_EQ(*args, (std::vector<std::string>{"/entry", "default-arg"}));
}

TEST(ProcessArgs, CommandReplacesEntrypointAndIgnoresCmd) {
  auto args = BuildProcessArgs(Img(), Container({"/bin/x"}, {}), {});
  ASSERT_TRUE(args);
  EXPECT_EQ(*args, (std::vector<std::string>{"/bin/x"}));
}

TEST(ProcessArgs, ArgsReplaceCmdKeepingEntrypoint) {
  auto args = BuildProcessArgs(Img(), Container({}, {"a", "b"}), {});
  ASSERT_TRUE(args);
  EXPECT_EQ(*args, (std::vector<std::string>{"/entry", "a", "b"}));
}

TEST(ProcessArgs, CommandAndArgsReplaceBoth) {
  auto args = BuildProcessArgs(Img(), Container({"/bin/x"}, {"y"}), {});
  ASSERT_TRUE(args);
  EXPECT_EQ(*args, (std::vector<std::string>{"/bin/x", "y"}));
}

TEST(ProcessArgs, ExpandsContainerArgsButNotImageEntrypointOrCmd) {
  image::ImageConfig img;
  img.entrypoint = {"/e", "$(X)"};
  img.cmd = {"$(X)"};
  EnvList env = {{"X", "expanded"}};
  EXPECT_EQ(*BuildProcessArgs(img, Container({}, {}), env),
            (std::vector<std::string>{"/e", "$(X)", "$(X)"}));
  EXPECT_EQ(*BuildProcessArgs(img, Container({}, {"$(X)", "$$(X)"}), env),
            (std::vector<std::string>{"/e", "$(X)", "expanded", "$(X)"}));
  EXPECT_EQ(*BuildProcessArgs(img, Container({"$(X)"}, {"-$(Y)"}), env),
            (std::vector<std::string>{"expanded", "-$(Y)"}));
}

TEST(ProcessArgs, NothingToRunIsAnError) {
  auto args = BuildProcessArgs(image::ImageConfig{}, Container({}, {}), {});
  ASSERT_FALSE(args);
  EXPECT_NE(args.error().message().find("no command"), std::string::npos);
}

TEST(ContainerEnv, ImageEnvOverlaidByContainerEnvWithHostnameAndDefaultPath) {
  EnvList own = {{"FROM_IMAGE", "overridden"}, {"NEW", "new"}};
  EnvList env = BuildContainerEnv(Img(), own, "pod-a");
  EXPECT_EQ(env, (EnvList{{"PATH", "/img/bin"},
                          {"HOSTNAME", "pod-a"},
                          {"FROM_IMAGE", "overridden"},
                          {"NEW", "new"}}));
}

TEST(ContainerEnv, DefaultPathWhenImageHasNone) {
  EnvList env = BuildContainerEnv(image::ImageConfig{}, {}, "h");
  EXPECT_EQ(LookupEnv(env, "PATH"), std::string(kDefaultPath));
  EXPECT_EQ(LookupEnv(env, "HOSTNAME"), "h");
}

TEST(WorkingDir, ContainerThenImageThenRoot) {
  image::ImageConfig img;
  pod::Container c = Container({}, {});
  EXPECT_EQ(*BuildWorkingDir(img, c), "/");
  img.working_dir = "/img";
  EXPECT_EQ(*BuildWorkingDir(img, c), "/img");
  c.working_dir = "/work";
  EXPECT_EQ(*BuildWorkingDir(img, c), "/work");
  c.working_dir = "relative";
  EXPECT_FALSE(BuildWorkingDir(img, c));
}

TEST(ImageConfigFile, ParsesTheHonouredFields) {
  auto cfg = image::ParseImageConfig(
      R"({"config": {"Entrypoint": ["/e"], "Cmd": null, "Env": ["A=1", "B=x=y"],
      "WorkingDir": "/w", "User": "1000:1000", "StopSignal": "SIGINT", "Labels": {"x": "y"}}})",
      "image.json");
  ASSERT_TRUE(cfg) << cfg.error().message();
  EXPECT_EQ(cfg->entrypoint, std::vector<std::string>{"/e"});
  EXPECT_TRUE(cfg->cmd.empty());
  EXPECT_EQ(cfg->env, (std::vector<std::string>{"A=1", "B=x=y"}));
  EXPECT_EQ(cfg->working_dir, "/w");
  EXPECT_EQ(cfg->user, "1000:1000");
  EXPECT_EQ(cfg->stop_signal, "SIGINT");
  EXPECT_TRUE(image::ParseImageConfig("{}", "f"));
}

TEST(ImageConfigFile, MalformedFileIsAnErrorNamingFileAndField) {
  auto bad_json = image::ParseImageConfig("{not json", "/b/images/x/image.json");
  ASSERT_FALSE(bad_json);
  EXPECT_EQ(bad_json.error().message(), "/b/images/x/image.json: not valid JSON");
  auto bad_type = image::ParseImageConfig(R"({"config": {"Cmd": "sh"}})", "/b/image.json");
  ASSERT_FALSE(bad_type);
  EXPECT_EQ(bad_type.error().message(), "/b/image.json: config.Cmd: must be an array of strings");
  auto bad_env = image::ParseImageConfig(R"({"config": {"Env": ["NOEQUALS"]}})", "f");
  ASSERT_FALSE(bad_env);
  EXPECT_NE(bad_env.error().message().find("config.Env[0]"), std::string::npos);
  EXPECT_FALSE(image::ParseImageConfig(R"({"config": {"StopSignal": "SIGNOPE"}})", "f"));
  EXPECT_FALSE(image::ParseImageConfig(R"([])", "f"));
}

TEST(StopSignal, LifecycleThenImageThenSigterm) {
  pod::Container c = Container({}, {});
  image::ImageConfig img;
  EXPECT_EQ(*image::EffectiveStopSignal(c, img), SIGTERM);
  img.stop_signal = "QUIT";
  EXPECT_EQ(*image::EffectiveStopSignal(c, img), SIGQUIT);
  c.lifecycle = pod::Lifecycle{};
  c.lifecycle->stop_signal = "SIGUSR1";
  EXPECT_EQ(*image::EffectiveStopSignal(c, img), SIGUSR1);
}

}  // namespace
}  // namespace podvisor::oci
