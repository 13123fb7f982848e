// The early road's reading of command lines and replies (early_client.h):
// which command lines it takes (and the request it makes of them), which
// it leaves to main, and the JSON it can read. The road itself, against a
// running supervisor, is tests/e2e/early_client_test.cc.
#include "cli/early_client.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace podvisor::cli::early {
namespace {

namespace fs = std::filesystem;

class EarlyPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/podvisor-early.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    state_ = tmpl;
  }
  void TearDown() override { fs::remove_all(state_); }

  // A pod directory as a supervisor leaves it: with `leaf` in it.
  void AddPod(const std::string& name, const std::string& leaf = "events.jsonl") {
    fs::create_directories(state_ / name);
    std::ofstream(state_ / name / leaf) << "";
  }

  // PlanRequest of "podvisor WORDS..."; the plan when it takes them.
  std::optional<Plan> Take(std::vector<std::string> words) {
    words.insert(words.begin(), "podvisor");
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    Plan plan;
    if (!PlanRequest(static_cast<int>(words.size()), argv.data(), plan)) return std::nullopt;
    return plan;
  }

  std::string Sock(const std::string& pod) const {
    return (state_ / pod / "control.sock").string();
  }

  fs::path state_;
};

std::string Request(const Plan& p) {
  return {p.request, p.request_len};
}

TEST_F(EarlyPlan, KillWithEveryWordNamesPodContainerAndSignal) {
  auto plan = Take({"kill", "web", "app", "TERM", "--state-dir", state_.string()});
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->command, Command::kKill);
  EXPECT_EQ(std::string(plan->pod), "web");
  EXPECT_EQ(std::string(plan->container), "app");
  EXPECT_EQ(std::string(plan->socket_path), Sock("web"));
  EXPECT_EQ(Request(*plan), "{\"op\":\"kill\",\"container\":\"app\",\"signal\":\"TERM\"}\n");
}

TEST_F(EarlyPlan, KillReadsTwoWordsAsTheOtherRoadsDo) {
  AddPod("web");
  // CONTAINER SIGNAL: the second word cannot be a container name.
  auto plan = Take({"kill", "app", "SIGUSR1", "--state-dir", state_.string()});
  ASSERT_TRUE(plan);
  EXPECT_EQ(std::string(plan->pod), "web");
  EXPECT_EQ(Request(*plan), "{\"op\":\"kill\",\"container\":\"app\",\"signal\":\"SIGUSR1\"}\n");
  // POD CONTAINER, and SIGKILL.
  plan = Take({"kill", "other", "app", "--state-dir", state_.string()});
  ASSERT_TRUE(plan);
  EXPECT_EQ(std::string(plan->pod), "other");
  EXPECT_EQ(Request(*plan), "{\"op\":\"kill\",\"container\":\"app\",\"signal\":\"SIGKILL\"}\n");
  plan = Take({"kill", "app", "9", "--state-dir", state_.string()});
  ASSERT_TRUE(plan);
  EXPECT_EQ(Request(*plan), "{\"op\":\"kill\",\"container\":\"app\",\"signal\":\"9\"}\n");
}

TEST_F(EarlyPlan, AnUnnamedPodIsTheOnePodDirectory) {
  AddPod("web", "status.json");
  fs::create_directories(state_ / "images");    // no socket, record or events
  std::ofstream(state_ / "notes") << "";        // not a directory
  fs::create_directories(state_ / "Bad_Name");  // not a DNS label
  std::ofstream(state_ / "Bad_Name" / "events.jsonl") << "";
  auto plan = Take({"status", "--state-dir", state_.string()});
  ASSERT_TRUE(plan);
  EXPECT_EQ(std::string(plan->pod), "web");
  EXPECT_EQ(std::string(plan->socket_path), Sock("web"));
}

TEST_F(EarlyPlan, NoPodOrSeveralAreLeftToMain) {
  EXPECT_FALSE(Take({"status", "--state-dir", state_.string()}));
  EXPECT_FALSE(Take({"status", "--state-dir", (state_ / "missing").string()}));
  AddPod("web");
  AddPod("db", "control.sock");
  EXPECT_FALSE(Take({"status", "--state-dir", state_.string()}));
  EXPECT_FALSE(Take({"kill", "app", "--state-dir", state_.string()}));
  // Named, either is taken.
  EXPECT_TRUE(Take({"status", "db", "--state-dir", state_.string()}));
}

TEST_F(EarlyPlan, StatusAsksForTheTableOrTheWideTable) {
  auto plan = Take({"status", "web", "--state-dir", state_.string()});
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->command, Command::kStatus);
  EXPECT_EQ(Request(*plan), "{\"op\":\"status\",\"output\":\"table\"}\n");
  plan = Take({"status", "-o", "wide", "web", "--state-dir", state_.string()});
  ASSERT_TRUE(plan);
  EXPECT_EQ(Request(*plan), "{\"op\":\"status\",\"output\":\"wide\"}\n");
  plan = Take({"status", "web", "--output", "table", "--state-dir", state_.string()});
  ASSERT_TRUE(plan);
  EXPECT_EQ(Request(*plan), "{\"op\":\"status\",\"output\":\"table\"}\n");
}

TEST_F(EarlyPlan, StopOnlyWithNoWait) {
  EXPECT_FALSE(Take({"stop", "web", "--state-dir", state_.string()}));
  auto plan = Take({"stop", "web", "--no-wait", "--state-dir", state_.string()});
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->command, Command::kStop);
  EXPECT_EQ(Request(*plan), "{\"op\":\"stop\",\"wait\":false}\n");
  plan = Take({"stop", "--reason", "Decommissioned", "--grace", "2.5", "web", "--no-wait",
               "--state-dir", state_.string()});
  ASSERT_TRUE(plan);
  EXPECT_EQ(Request(*plan),
            "{\"op\":\"stop\",\"wait\":false,\"reason\":\"Decommissioned\",\"grace\":2.5}\n");
  plan = Take({"stop", "web", "--no-wait", "--grace", "0", "--state-dir", state_.string()});
  ASSERT_TRUE(plan);
  EXPECT_EQ(Request(*plan), "{\"op\":\"stop\",\"wait\":false,\"grace\":0}\n");
}

TEST_F(EarlyPlan, DefaultStateDirectoryIsRunPodvisor) {
  auto plan = Take({"kill", "web", "app", "TERM"});
  ASSERT_TRUE(plan);
  EXPECT_EQ(std::string(plan->socket_path), "/run/podvisor/web/control.sock");
  plan = Take({"kill", "web", "app", "TERM", "--state-dir", "/tmp/s/"});
  ASSERT_TRUE(plan);
  EXPECT_EQ(std::string(plan->socket_path), "/tmp/s/web/control.sock");
}

TEST_F(EarlyPlan, EverythingElseIsLeftToMain) {
  const std::string dir = state_.string();
  for (const std::vector<std::string>& words : std::initializer_list<std::vector<std::string>>{
           {},
           {"run", "bundle"},
           {"list", "--state-dir", dir},
           {"kill", "--state-dir", dir},                                // no container
           {"kill", "web", "app", "TERM", "more", "--state-dir", dir},  // a word too many
           {"kill", "web", "app", "TERM", "--state-dir=" + dir},        // joined option
           {"kill", "web", "app", "TERM", "--state-dir", dir, "--state-dir", dir},
           {"kill", "--", "web", "app", "TERM"},
           {"kill", "web", "app", "TERM", "--state-dir"},         // no value
           {"kill", "web", "app", "TERM", "--state-dir", "-x"},   // a value like an option
           {"kill", "web", "a\"pp", "TERM", "--state-dir", dir},  // escaping needed
           {"kill", "web", "app", "TÉRM", "--state-dir", dir},
           {"kill", "web", "", "TERM", "--state-dir", dir},
           {"kill", "Web", "app", "TERM", "--state-dir", dir},  // not a DNS label
           {"kill", "web", "app", "TERM", "--state-dir", ""},
           {"kill", "web", "app", "TERM", "--state-dir", std::string(120, 'd')},  // too long
           {"kill", "web", "app", "TERM", "--help"},
           {"status", "web", "-o", "json", "--state-dir", dir},
           {"status", "web", "-owide", "--state-dir", dir},
           {"status", "web", "-w", "--state-dir", dir},
           {"status", "web", "db", "--state-dir", dir},
           {"stop", "web", "--no-wait", "--no-wait", "--state-dir", dir},
           {"stop", "web", "--no-wait", "--grace", "1e3", "--state-dir", dir},
           {"stop", "web", "--no-wait", "--grace", "05", "--state-dir", dir},
           {"stop", "web", "--no-wait", "--grace", "1.", "--state-dir", dir},
           {"stop", "web", "--no-wait", "--reason", "a\\b", "--state-dir", dir},
       }) {
    std::string line;
    for (const auto& w : words) line += " " + w;
    EXPECT_FALSE(Take(words)) << "taken:" << line;
  }
}

long Get(const std::string& json, const char* key, std::string* value = nullptr,
         std::size_t cap = 256) {
  std::vector<char> out(cap);
  long n = TopLevelString(json.data(), json.size(), key, out.data(), cap);
  if (value != nullptr && n >= 0) *value = std::string(out.data(), static_cast<std::size_t>(n));
  return n;
}

TEST(EarlyJson, ReadsATopLevelStringAndSkipsTheRest) {
  std::string v;
  EXPECT_EQ(Get("{\"container\":\"app\",\"signal\":\"SIGTERM\"}\n", "signal", &v), 7);
  EXPECT_EQ(v, "SIGTERM");
  const std::string pod = R"( { "apiVersion": "v1", "metadata": {"name": "web", "labels": {}},
      "status": {"phase": "Running", "containerStatuses": [{"name": "x", "ready": true,
      "restartCount": 0, "n": -1.5e+3, "z": null}, []]}, "text": "NAME\tREADY\n" } )";
  EXPECT_EQ(Get(pod, "text", &v), 11);
  EXPECT_EQ(v, "NAME\tREADY\n");
  // A nested member of the same name is not the top-level one.
  EXPECT_EQ(Get(pod, "phase"), -1);
  EXPECT_EQ(Get(pod, "name"), -1);
}

TEST(EarlyJson, DecodesEscapes) {
  std::string v;
  ASSERT_GE(Get(R"({"text":"a\"b\\c\/d\b\f\n\r\t \u0041\u00e9\u20ac\ud83d\ude00"})", "text", &v),
            0);
  EXPECT_EQ(v, "a\"b\\c/d\b\f\n\r\t A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  // UTF-8 as it came.
  ASSERT_GE(Get("{\"text\":\"caf\xc3\xa9\"}", "text", &v), 0);
  EXPECT_EQ(v, "caf\xc3\xa9");
}

TEST(EarlyJson, AbsentOtherTypesAndTooLongAreMinusOne) {
  EXPECT_EQ(Get("{\"error\":\"x\"}", "text"), -1);
  EXPECT_EQ(Get("{}", "text"), -1);
  EXPECT_EQ(Get("{\"text\":42}", "text"), -1);
  EXPECT_EQ(Get("{\"text\":{\"a\":\"b\"}}", "text"), -1);
  EXPECT_EQ(Get("{\"text\":\"abcdef\"}", "text", nullptr, 4), -1);
  EXPECT_EQ(Get("{\"text\":\"abc\"}", "text", nullptr, 4), 3);
}

TEST(EarlyJson, MalformedIsMinusTwo) {
  for (const char* bad :
       {"", "x", "[]", "{", "{\"a\"}", "{\"a\":}", "{\"a\":\"b\"", "{\"a\":\"b\",}",
        "{\"a\":\"b\"} x", "{} x", "{\"a\":\"\\x\"}", "{\"a\":\"\\ud800\"}", "{\"a\":\"\x01\"}",
        "{\"a\":[1,}", "{\"a\":\"b\" \"c\":1}"}) {
    EXPECT_EQ(Get(bad, "a"), -2) << bad;
  }
}

}  // namespace
}  // namespace podvisor::cli::early
