// The man pages render with man-db without a single groff warning, as
// Debian's lintian would check them (`man -l --warnings=w` is groff -ww).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "run_command.h"

namespace podvisor::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ManPage : public ::testing::TestWithParam<const char*> {};

TEST_P(ManPage, RendersWithoutWarnings) {
  if (::access("/usr/bin/man", X_OK) != 0) GTEST_SKIP() << "man-db is not installed";
  const char* root = std::getenv("PODVISOR_SOURCE_ROOT");
  ASSERT_NE(root, nullptr) << "run through meson (PODVISOR_SOURCE_ROOT)";
  fs::path page = fs::path(root) / "man" / GetParam();
  ASSERT_TRUE(fs::exists(page)) << page;
  // Warnings go to stderr; the page itself is thrown away.
  auto warnings =
      RunCommand({"/bin/sh", "-c", "MANWIDTH=80 man -l --warnings=w \"$1\" 2>&1 >/dev/null", "sh",
                  page.string()});
  EXPECT_EQ(warnings.exit_code, 0);
  EXPECT_EQ(warnings.out, "") << page;
  auto text =
      RunCommand({"/bin/sh", "-c", "MANWIDTH=80 man -l \"$1\" 2>/dev/null", "sh", page.string()});
  EXPECT_THAT(text.out, HasSubstr("SEE ALSO"));
}

INSTANTIATE_TEST_SUITE_P(Pages, ManPage, ::testing::Values("podvisor.1", "podvisor-bundle.5"),
                         [](const auto& info) {
                           return info.index == 0 ? "Podvisor1" : "PodvisorBundle5";
                         });

// Every subcommand podvisor(1) documents is in the man page, and every
// subcommand the binary has is documented.
TEST(ManPageContent, NamesEverySubcommandAndRunOption) {
  const char* root = std::getenv("PODVISOR_SOURCE_ROOT");
  ASSERT_NE(root, nullptr);
  auto page = RunCommand({"/bin/cat", (fs::path(root) / "man" / "podvisor.1").string()});
  for (const char* cmd : {"run", "status", "stop", "kill", "list", "logs", "events", "validate",
                          "oci\\-config", "version", "describe", "exec", "port\\-forward", "rm",
                          "prune", "images prune", "upgrade", "apply"}) {
    EXPECT_THAT(page.out, HasSubstr(std::string(".SS \"podvisor ") + cmd)) << cmd;
  }
  for (const char* opt :
       {"runtime", "state\\-dir", "log\\-dir", "log\\-max\\-size", "log\\-max\\-files",
        "cgroup\\-parent", "grace", "backoff\\-initial", "pod\\-pids\\-limit", "sandbox",
        "no\\-pivot", "log\\-level", "log\\-format", "configmap", "secret"}) {
    EXPECT_THAT(page.out, HasSubstr(std::string("\\-\\-") + opt)) << opt;
  }
}

}  // namespace
}  // namespace podvisor::testing
