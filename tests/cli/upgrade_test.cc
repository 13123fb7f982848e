// `podvisor upgrade` and `handover-check` as a user and a supervisor run
// them (docs/INTERFACE.md, S15.2): what the command line refuses before it
// asks a supervisor anything, and what handover-check prints. The handover
// itself is the executor's, tested with a running pod.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_command.h"

namespace podvisor::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Podvisor() {
  const char* bin = std::getenv("PODVISOR");
  return bin ? bin : "podvisor";
}

class Upgrade : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/podvisor-upgrade.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    state_ = tmpl;
    // A pod that left events but neither a socket nor a record.
    fs::create_directories(state_ / "web");
    std::ofstream(state_ / "web" / "events.jsonl") << "";
  }
  void TearDown() override { fs::remove_all(state_); }

  CommandResult Run(std::vector<std::string> words) {
    words.insert(words.begin(), {Podvisor(), "upgrade", "--state-dir", state_.string()});
    return RunCommand(words);
  }

  fs::path state_;
};

TEST_F(Upgrade, S15_2_ABinaryThatIsNotThereIsAUsageErrorNamingTheFlag) {
  auto r = Run({"--binary", (state_ / "podvisor-2").string(), "web"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--binary"));
  EXPECT_THAT(r.err, HasSubstr("no such file"));
  EXPECT_EQ(r.out, "");
}

TEST_F(Upgrade, S15_2_ABinaryThatIsNotAnExecutableFileIsAUsageError) {
  const fs::path text = state_ / "notes";
  std::ofstream(text) << "not a program\n";
  ::chmod(text.c_str(), 0644);
  for (const fs::path& binary : {text, state_}) {
    auto r = Run({"--binary", binary.string()});
    EXPECT_EQ(r.exit_code, 2) << binary << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("--binary")) << binary;
  }
}

TEST_F(Upgrade, S15_2_ATimeoutThatIsNoDurationOrOutOfRangeIsAUsageError) {
  for (const char* timeout : {"soon", "0", "-5s", "11m", "1h"}) {
    auto r = Run({"--timeout", timeout, "web"});
    EXPECT_EQ(r.exit_code, 2) << timeout << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("--timeout")) << timeout;
  }
}

TEST_F(Upgrade, MoreThanOnePodIsAUsageError) {
  auto r = Run({"web", "api"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

// A relative --binary is resolved before anything is asked: the request
// then finds the pod not running (exit 1), not a usage error.
TEST_F(Upgrade, S15_2_APodThatDoesNotRunIsNamedWithItsPhase) {
  const fs::path relative = fs::relative(Podvisor(), fs::current_path());
  for (const std::string pod : {"web", "pod/web"}) {
    auto r = Run({"--binary", relative.string(), "--timeout", "5s", pod});
    EXPECT_EQ(r.exit_code, 1) << pod << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("pod web is not running")) << pod;
  }
  auto none = Run({"db"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_THAT(none.err, HasSubstr("no pod named db"));
}

TEST(HandoverCheck, S15_2_PrintsTheVersionAndTheFormatsItReads) {
  auto r = RunCommand({Podvisor(), "handover-check"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  ASSERT_THAT(r.out, HasSubstr("\n"));
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line";
  auto doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << r.out;
  EXPECT_TRUE(doc["version"].is_string());
  ASSERT_TRUE(doc["format"].is_number_integer());
  ASSERT_TRUE(doc["oldestFormat"].is_number_integer());
  EXPECT_GE(doc["format"].get<int>(), doc["oldestFormat"].get<int>());
  EXPECT_GE(doc["oldestFormat"].get<int>(), 1);
  // The same version `podvisor version` prints.
  auto version = RunCommand({Podvisor(), "version"});
  EXPECT_THAT(version.out, HasSubstr("podvisor " + doc["version"].get<std::string>() + "\n"));
}

TEST(HandoverCheck, IsHiddenFromHelp) {
  auto r = RunCommand({Podvisor(), "--help"});
  EXPECT_THAT(r.out, HasSubstr("  upgrade"));
  EXPECT_THAT(r.out, Not(HasSubstr("handover-check")));
}

}  // namespace
}  // namespace podvisor::testing
