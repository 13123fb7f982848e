// packaging/systemd/podvisor-apply.{path,service} (README "systemd"): the
// path unit starts the service when /etc/podvisor/apply.d changes, the
// service runs `podvisor apply -f` on that very directory, once, in the
// form apply takes, and both are units systemd accepts
// (`systemd-analyze verify`, when it is installed: systemd is not PID 1
// here, and verify needs none).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "run_command.h"

namespace podvisor::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr const char* kApplyDir = "/etc/podvisor/apply.d";

fs::path UnitFile(const std::string& name) {
  const char* root = std::getenv("PODVISOR_SOURCE_ROOT");
  EXPECT_NE(root, nullptr) << "run through meson (PODVISOR_SOURCE_ROOT)";
  return fs::path(root ? root : ".") / "packaging" / "systemd" / name;
}

// One section's keys; the last assignment wins, as in systemd.
std::map<std::string, std::string> Section(const std::string& unit, const std::string& section) {
  std::ifstream in(UnitFile(unit));
  EXPECT_TRUE(in) << UnitFile(unit);
  std::map<std::string, std::string> keys;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      inside = line == "[" + section + "]";
      continue;
    }
    auto eq = line.find('=');
    if (inside && eq != std::string::npos) keys[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return keys;
}

TEST(ApplyUnits, ThePathUnitWatchesTheDirectoryAndStartsTheService) {
  auto path = Section("podvisor-apply.path", "Path");
  EXPECT_EQ(path["PathChanged"], kApplyDir);
  EXPECT_EQ(path["MakeDirectory"], "yes");
  EXPECT_EQ(path["Unit"], "podvisor-apply.service");
  EXPECT_EQ(Section("podvisor-apply.path", "Install")["WantedBy"], "paths.target");
}

TEST(ApplyUnits, TheServiceAppliesThatDirectoryOnceInApplysForm) {
  auto service = Section("podvisor-apply.service", "Service");
  EXPECT_EQ(service["Type"], "oneshot");
  EXPECT_EQ(service["ExecStart"], std::string("/usr/bin/podvisor apply -f ") + kApplyDir);
  EXPECT_EQ(service["ExecStart"].find("--watch"), std::string::npos)
      << "the path unit is the watcher; a oneshot must end";
  // The pods apply starts outlive the oneshot.
  EXPECT_EQ(service["KillMode"], "process");
  auto unit = Section("podvisor-apply.service", "Unit");
  EXPECT_EQ(unit["ConditionPathIsDirectory"], kApplyDir);
  // Enabled, it applies the directory at boot too (a path unit fires on
  // changes only).
  EXPECT_EQ(Section("podvisor-apply.service", "Install")["WantedBy"], "multi-user.target");
}

TEST(ApplyUnits, SystemdAcceptsBothUnits) {
  std::string analyze;
  for (const char* candidate : {"/usr/bin/systemd-analyze", "/bin/systemd-analyze"}) {
    if (fs::exists(candidate)) {
      analyze = candidate;
      break;
    }
  }
  if (analyze.empty()) GTEST_SKIP() << "systemd-analyze not installed";
  // A copy whose ExecStart names the built podvisor: verify checks that
  // the program exists, and /usr/bin/podvisor need not.
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("podvisor-units-" + std::to_string(getpid()));
  fs::create_directories(dir);
  for (const char* name : {"podvisor-apply.path", "podvisor-apply.service"}) {
    std::ifstream in(UnitFile(name));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string from = "/usr/bin/podvisor";
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + 1)) {
      text.replace(at, from.size(), std::getenv("PODVISOR"));
    }
    std::ofstream(dir / name) << text;
  }
  CommandResult r =
      RunCommand({analyze, "verify", "--man=no", (dir / "podvisor-apply.path").string(),
                  (dir / "podvisor-apply.service").string()});
  fs::remove_all(dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "") << "a warning is a setting systemd ignores";
}

// Once `apply` is in the binary: the unit's arguments are ones it takes.
TEST(ApplyUnits, TheBinaryTakesTheServicesArguments) {
  CommandResult help = RunCommand({std::getenv("PODVISOR"), "apply", "--help"});
  if (help.exit_code != 0) GTEST_SKIP() << "this podvisor has no apply command yet";
  EXPECT_THAT(help.out + help.err, HasSubstr("-f"));
}

}  // namespace
}  // namespace podvisor::testing
