// What the client commands print of text a pod controls, and which
// arguments may become paths (docs/SEMANTICS.md S14.20 to S14.24): run
// against a state directory the test writes, as after a pod has ended, so
// no supervisor is needed; the bytes printed are checked.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_command.h"

namespace podvisor::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Podvisor() {
  const char* bin = std::getenv("PODVISOR");
  return bin ? bin : "podvisor";
}

// A termination message a hostile container wrote: a window title (OSC 0
// ... BEL), an erased line (CSI 2K), a carriage return that overwrites, a
// newline that forges a line, a tab, C1 CSI (U+009B) in UTF-8. (Invalid
// UTF-8 cannot reach a record: the supervisor writes JSON, replacing it.)
const std::string kHostile =
    "\x1b]0;owned\x07\x1b[2K\rReady: True\n  Ready:  True\t|\xc2\x9b"
    "31m";
const std::string kShown =
    "\\x1b]0;owned\\x07\\x1b[2K\\rReady: True\\n  Ready:  True\\t|\\u009b31m";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// No byte a terminal acts on: C0 but the newline, DEL, and C1 in UTF-8.
void ExpectNoControlBytes(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto u = static_cast<unsigned char>(text[i]);
    EXPECT_FALSE((u < 0x20 && u != '\n') || u == 0x7f) << "byte " << int{u} << " at " << i;
    if (u == 0xc2 && i + 1 < text.size()) {
      const auto next = static_cast<unsigned char>(text[i + 1]);
      EXPECT_FALSE(next >= 0x80 && next <= 0x9f) << "C1 at " << i;
    }
  }
}

class TerminalSafety : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("terminal-safety-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    state_ = dir_ / "state";
    logs_ = dir_ / "logs";
    fs::create_directories(state_ / "web");
    nlohmann::json terminated = {{"exitCode", 3},
                                 {"reason", "Error\x1b[2K\rOK\nweb 1/1 Running"},
                                 {"message", kHostile},
                                 {"startedAt", "2026-11-22T10:04:05Z"},
                                 {"finishedAt", "2026-11-22T10:04:06Z"}};
    nlohmann::json pod = {{"apiVersion", "v1"},
                          {"kind", "Pod"},
                          {"metadata",
                           {{"name", "web"},
                            {"creationTimestamp", "2026-11-22T10:04:04Z"},
                            {"annotations", {{"note", "a\x1b]0;title\x07z"}}}}},
                          {"spec", {{"containers", {{{"name", "app"}, {"image", "img"}}}}}},
                          {"status",
                           {{"phase", "Failed"},
                            {"message", "pod says\r\x1b[2K" + kHostile},
                            {"containerStatuses",
                             {{{"name", "app"},
                               {"image", "img"},
                               {"ready", false},
                               {"restartCount", 0},
                               {"state", {{"terminated", terminated}}}}}}}}};
    std::ofstream(state_ / "web" / "status.json") << pod.dump() << "\n";
    nlohmann::json event = {{"time", "2026-11-22T10:04:06.000000000Z"},
                            {"type", "Warning"},
                            {"reason", "Exited"},
                            {"object", "container/app"},
                            {"message", "Container app exited: " + kHostile}};
    events_line_ = event.dump() + "\n";
    std::ofstream(state_ / "web" / "events.jsonl") << events_line_;
  }
  void TearDown() override { fs::remove_all(dir_); }

  CommandResult Client(std::vector<std::string> args) {
    args.insert(args.begin(), Podvisor());
    args.push_back("--state-dir");
    args.push_back(state_.string());
    return RunCommand(args);
  }

  fs::path dir_, state_, logs_;
  std::string events_line_;
};

TEST_F(TerminalSafety, S14_21_EventsTableShowsTheMessageEscapedOnOneRow) {
  auto r = Client({"events"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectNoControlBytes(r.out);
  const auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_THAT(lines[1],
              HasSubstr("Warning   Exited   container/app   Container app exited: " + kShown));
  EXPECT_TRUE(lines[1].ends_with(kShown)) << lines[1];
}

TEST_F(TerminalSafety, S14_22_EventsJsonKeepsTheExactText) {
  auto r = Client({"events", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, events_line_);
}

TEST_F(TerminalSafety, S14_20_DescribeEscapesEveryValueOnItsLine) {
  auto r = Client({"describe", "web"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectNoControlBytes(r.out);
  const auto lines = Lines(r.out);
  // The forged "Ready: True" is inside the message's line, not a line.
  EXPECT_THAT(lines, ::testing::Contains("      Message:      " + kShown)) << r.out;
  EXPECT_THAT(lines, ::testing::Contains("Message:          pod says\\r\\x1b[2K" + kShown));
  EXPECT_THAT(lines, ::testing::Contains("Annotations:      note=a\\x1b]0;title\\x07z"));
  EXPECT_THAT(lines, ::testing::Contains("    Ready:          False"));
  for (const auto& line : lines) {
    EXPECT_FALSE(line.find("Ready:  True") == 2) << "a forged line: " << line;
  }
  EXPECT_THAT(r.out, HasSubstr("Container app exited: " + kShown + "\n"));
}

TEST_F(TerminalSafety, S14_22_StatusJsonAndJsonpathKeepTheExactText) {
  auto r = Client({"status", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto pod = nlohmann::json::parse(r.out);
  EXPECT_EQ(pod["status"]["containerStatuses"][0]["state"]["terminated"]["message"], kHostile);
  auto j =
      Client({"status", "-o", "jsonpath={.status.containerStatuses[0].state.terminated.message}"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_EQ(j.out, kHostile);
}

TEST_F(TerminalSafety, S14_23_LogsRefusesAContainerNameThatIsAPath) {
  // A directory beside the pod's logs, holding what looks like a log.
  fs::create_directories(logs_ / "web" / "app");
  std::ofstream(logs_ / "web" / "app" / "0.log")
      << "2026-11-22T10:04:05.000000000Z stdout F app line\n";
  fs::create_directories(dir_ / "private");
  std::ofstream(dir_ / "private" / "0.log")
      << "2026-11-22T10:04:05.000000000Z stdout F private line\n";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"logs", "web", "../../private"},
        std::vector<std::string>{"logs", "web", "-c", "../../private"}}) {
    std::vector<std::string> full = args;
    full.insert(full.end(), {"--log-dir", logs_.string()});
    auto r = Client(full);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_EQ(r.out, "");
    EXPECT_THAT(r.err, HasSubstr("container name \"../../private\": must be a DNS-1123 label"));
  }
  auto ok = Client({"logs", "web", "app", "--log-dir", logs_.string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "app line\n");
}

TEST_F(TerminalSafety, S14_23_PodNamesThatArePathsAreRefused) {
  // A pod-like directory outside the state directory.
  fs::create_directories(dir_ / "elsewhere");
  fs::copy(state_ / "web", dir_ / "elsewhere" / "web");
  fs::create_directories(logs_ / "web");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"status", "../elsewhere/web"},
        std::vector<std::string>{"describe", "../elsewhere/web"},
        std::vector<std::string>{"events", "../elsewhere/web"},
        std::vector<std::string>{"stop", "../elsewhere/web"},
        std::vector<std::string>{"rm", "../elsewhere/web"},
        std::vector<std::string>{"logs", "../elsewhere/web", "-c", "app"}}) {
    std::vector<std::string> full = args;
    if (args[0] == "rm" || args[0] == "logs")
      full.insert(full.end(), {"--log-dir", logs_.string()});
    auto r = Client(full);
    EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.out;
    EXPECT_THAT(r.err, HasSubstr("pod name \"../elsewhere/web\": must be a DNS-1123 label"))
        << args[0];
  }
  EXPECT_TRUE(fs::exists(dir_ / "elsewhere" / "web" / "status.json"));
}

TEST_F(TerminalSafety, S14_21_ListAndStatusTablesAreOneLinePerRow) {
  auto list = Client({"list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  ExpectNoControlBytes(list.out);
  EXPECT_EQ(Lines(list.out).size(), 2u) << list.out;
  auto status = Client({"status", "-o", "wide"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  ExpectNoControlBytes(status.out);
  EXPECT_EQ(Lines(status.out).size(), 5u) << status.out;
  EXPECT_THAT(status.out, HasSubstr("Terminated: Error\\x1b[2K\\rOK\\nweb 1/1 Running ("));
}

// A bundle whose container takes a Secret's value through env, envFrom
// and a $(VAR) in its args.
class OciConfigSecrets : public ::testing::Test {
 protected:
  void SetUp() override {
    bundle_ = fs::path(::testing::TempDir()) / ("oci-config-secrets-" + std::to_string(::getpid()));
    fs::remove_all(bundle_);
    fs::create_directories(bundle_ / "images" / "img" / "rootfs");
    std::ofstream(bundle_ / "pod.yaml") << R"yaml(apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: app
    image: img
    command: ["/bin/app"]
    args: ["--password=$(DB_PASSWORD)"]
    env:
    - name: DB_PASSWORD
      valueFrom: {secretKeyRef: {name: db, key: password}}
    - name: PLAIN
      value: visible
    envFrom:
    - prefix: TLS_
      secretRef: {name: tls}
---
apiVersion: v1
kind: Secret
metadata: {name: db}
stringData: {password: hunter2-db-value}
---
apiVersion: v1
kind: Secret
metadata: {name: tls}
stringData: {key: tls-key-value}
)yaml";
  }
  void TearDown() override { fs::remove_all(bundle_); }
  fs::path bundle_;
};

TEST_F(OciConfigSecrets, S14_24_SecretValuesAreRedactedEverywhereInTheConfig) {
  auto r = RunCommand({Podvisor(), "oci-config", bundle_.string(), "app", "--state-dir",
                       (bundle_ / "state").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("hunter2-db-value")));
  EXPECT_THAT(r.out, Not(HasSubstr("tls-key-value")));
  auto config = nlohmann::json::parse(r.out);
  const auto& env = config["process"]["env"];
  EXPECT_THAT(env, ::testing::Contains("DB_PASSWORD=<redacted: secret db key password>"));
  EXPECT_THAT(env, ::testing::Contains("TLS_key=<redacted: secret tls key key>"));
  EXPECT_THAT(env, ::testing::Contains("PLAIN=visible"));
  EXPECT_THAT(config["process"]["args"],
              ElementsAre("/bin/app", "--password=<redacted: secret db key password>"));
}

TEST_F(OciConfigSecrets, S14_24_ShowSecretsPrintsTheValues) {
  auto r = RunCommand({Podvisor(), "oci-config", "--show-secrets", bundle_.string(), "app",
                       "--state-dir", (bundle_ / "state").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto config = nlohmann::json::parse(r.out);
  EXPECT_THAT(config["process"]["env"], ::testing::Contains("DB_PASSWORD=hunter2-db-value"));
  EXPECT_THAT(config["process"]["args"], ElementsAre("/bin/app", "--password=hunter2-db-value"));
}

}  // namespace
}  // namespace podvisor::testing
