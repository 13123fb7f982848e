// Test tier 2 (docs/TESTING.md), S11 logs end to end against the fake runtime:
// rotation and retention while `podvisor logs -f` follows across
// rotations and a restart (S11.2), the files parsed the way fluent-bit's
// "cri" parser reads them, and the FallbackToLogsOnError message (S11.3).
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;

class Logs : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
};

std::string Header(const std::string& name, const std::string& restart_policy) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
         "}\nspec:\n  restartPolicy: " + restart_policy +
         "\n  terminationGracePeriodSeconds: 5\n  containers:\n";
}

// A file's text; gzip files through gzip -dc, as a shipper would read them.
std::string ReadLog(const fs::path& file) {
  if (file.extension() == ".gz") {
    auto r = testing::RunCommand({"/bin/gzip", "-dc", file.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// fluent-bit's parsers.conf [PARSER] Name cri; vector reads the same fields.
// Its trailing "(.*)$" matches any line from getline and is left out:
// libstdc++'s std::regex recurses once per character of a ".*".
void ExpectFluentBitCri(const std::string& text, const std::string& what) {
  static const std::regex cri("^([^ ]+) (stdout|stderr) ([^ ]*) ");
  static const std::regex time(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$)");
  ASSERT_FALSE(text.empty()) << what;
  EXPECT_EQ(text.back(), '\n') << what << " ends inside a record";
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, cri, std::regex_constants::match_continuous))
        << what << ": " << line;
    EXPECT_TRUE(std::regex_match(m[1].str(), time)) << what << ": " << line;
    EXPECT_TRUE(m[3] == "F" || m[3] == "P") << what << ": " << line;
  }
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST_F(Logs, S11_2_ChattyContainerRotatesWhileLogsFollowAcrossRotationsAndARestart) {
  // 1000 numbered lines in bursts, then a crash; the restart prints one
  // more line. About 100 bytes a record and 8 KiB files: a dozen rotations.
  std::string pad(60, '.');
  std::string app = ShCmd(
      "if [ -e {{DIR}}/ran ]; then echo second-instance; exit 0; fi; touch {{DIR}}/ran; sleep 1; "
      "i=0; while [ $i -lt 1000 ]; do echo \"line-$i " +
      pad +
      "\"; i=$((i+1)); "
      "if [ $((i % 25)) -eq 0 ]; then sleep 0.05; fi; done; exit 1");
  WritePod(Header("chatty", "OnFailure") + "  - {name: app, image: img, command: " + app + "}\n");
  StartRun({"--log-max-size", "8Ki", "--log-max-files", "5", "--backoff-initial", "100ms"});
  WaitUntilRunning();
  testing::CommandResult follow;
  std::thread follower([&] { follow = Client({"logs", "-f", "chatty", "app"}, true); });
  EXPECT_EQ(WaitRun(std::chrono::seconds(60)), 0) << RunStderr();
  follower.join();

  // Every line once, in order, across a dozen rotations and the restart.
  EXPECT_EQ(follow.exit_code, 0) << follow.err;
  std::vector<std::string> want;
  for (int i = 0; i < 1000; ++i) want.push_back("line-" + std::to_string(i) + " " + pad);
  want.push_back("second-instance");
  auto got = Lines(follow.out);
  EXPECT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    ASSERT_EQ(got[i], want[i]) << "logs -f line " << i << " (of " << got.size() << ")";
  }

  // Retention: instance 0 has its current file and 4 rotated ones, the
  // newest rotated plain and the older ones gzip; the restart's log is kept.
  fs::path dir = log_dir_ / "chatty" / "app";
  std::vector<std::string> rotated_plain, rotated_gz;
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  const std::regex rotated_name(R"(^0\.log\.\d{8}-\d{6}(\.\d{6})?(\.gz)?$)");
  for (const auto& n : names) {
    if (n == "0.log" || n == "1.log") continue;
    ASSERT_TRUE(std::regex_match(n, rotated_name)) << "unexpected file " << n;
    (n.size() > 3 && n.substr(n.size() - 3) == ".gz" ? rotated_gz : rotated_plain).push_back(n);
  }
  EXPECT_TRUE(names.count("0.log") && names.count("1.log"));
  EXPECT_EQ(rotated_plain.size(), 1u);
  EXPECT_EQ(rotated_gz.size(), 3u);
  if (!rotated_plain.empty()) {
    // Stamps compare, not names: ".gz" sorts after a ".NNNNNN" (S14.18).
    for (const auto& gz : rotated_gz)
      EXPECT_LT(gz.substr(0, gz.size() - 3), rotated_plain[0])
          << "the newest rotated file stays plain";
  }
  for (const auto& n : names) ExpectFluentBitCri(ReadLog(dir / n), n);

  // `logs --previous` after the end: what retention kept of instance 0, a
  // contiguous run ending with its last line.
  auto previous = Client({"logs", "chatty", "app", "--previous"}, true);
  EXPECT_EQ(previous.exit_code, 0) << previous.err;
  auto kept = Lines(previous.out);
  ASSERT_GT(kept.size(), 100u);
  ASSERT_LT(kept.size(), 1000u);
  for (std::size_t i = 0; i < kept.size(); ++i) {
    ASSERT_EQ(kept[i], want[1000 - kept.size() + i]) << "line " << i;
  }
  auto tail = Client({"logs", "chatty", "app", "--previous", "--tail", "3"}, true);
  EXPECT_EQ(tail.out, want[997] + "\n" + want[998] + "\n" + want[999] + "\n");
}

TEST_F(Logs, S11_3_FallbackToLogsOnErrorTakesTheLastLinesOfARotatedLog) {
  std::string app = ShCmd("i=0; while [ $i -lt 100 ]; do echo fail-$i; i=$((i+1)); done; exit 2");
  std::string ok = ShCmd("echo fine; exit 3");
  WritePod(
      Header("fallback", "Never") +
      "  - {name: app, image: img, terminationMessagePolicy: FallbackToLogsOnError, command: " +
      app + "}\n" +
      // Without the fallback policy a failed container's message stays empty.
      "  - {name: plain, image: img, command: " + ok + "}\n" +
      "  - {name: keeper, image: img, command: " + HelperCmd("keeper", "sleep 100000") + "}\n");
  StartRun({"--log-max-size", "1Ki"});
  auto pod = WaitForStatus(
      [](const nlohmann::json& p) {
        return StateOf(p, "app") == "terminated" && StateOf(p, "plain") == "terminated";
      },
      "app and plain terminated");
  const auto* app_status = FindContainerStatus(pod, "app");
  ASSERT_NE(app_status, nullptr);
  std::string want;
  for (int i = 20; i < 100; ++i) want += "fail-" + std::to_string(i) + "\n";
  EXPECT_EQ(app_status->at("state").at("terminated").value("message", ""), want);
  EXPECT_EQ(app_status->at("state").at("terminated").value("exitCode", 0), 2);
  const auto* plain_status = FindContainerStatus(pod, "plain");
  ASSERT_NE(plain_status, nullptr);
  EXPECT_EQ(plain_status->at("state").at("terminated").value("message", "<none>"), "<none>");
  // The log did rotate: the message spans files.
  EXPECT_GT(std::distance(fs::directory_iterator(log_dir_ / "fallback" / "app"),
                          fs::directory_iterator{}),
            1);
  auto stop = Client({"stop"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(WaitRun(), 4) << RunStderr();
}

TEST_F(Logs, BadLogOptionsAreUsageErrors) {
  WritePod(Header("badopts", "Never") + "  - {name: app, image: img, command: [\"/bin/true\"]}\n");
  EXPECT_EQ(Run({"--log-max-size", "ten"}), 2);
  EXPECT_THAT(RunStderr(), HasSubstr("--log-max-size"));
  EXPECT_EQ(Run({"--log-max-files", "1"}), 2);
  EXPECT_THAT(RunStderr(), HasSubstr("--log-max-files"));
}

}  // namespace
}  // namespace podvisor::e2e
