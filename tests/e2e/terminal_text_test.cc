// Tier 2 (fake runtime), issue 27: a container writes a hostile
// termination message, and what the operator's terminal gets of it from
// `run`'s stderr, `events`, `describe` and `status` is checked byte by
// byte (docs/SEMANTICS.md S14.20 to S14.22); a Secret's value reaches
// none of them (S14.24).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

class TerminalText : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0, nl;
  while ((nl = text.find('\n', start)) != std::string::npos) {
    out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  if (start < text.size()) out.push_back(text.substr(start));
  return out;
}

// No byte a terminal acts on: C0 but the newline, DEL, C1 in UTF-8.
void ExpectNoControlBytes(const std::string& text, const std::string& what) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto u = static_cast<unsigned char>(text[i]);
    if ((u < 0x20 && u != '\n') || u == 0x7f ||
        (u == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
         static_cast<unsigned char>(text[i + 1]) <= 0x9f)) {
      ADD_FAILURE() << what << ": byte " << int{u} << " at " << i << " in:\n" << text;
      return;
    }
  }
}

// The container's last words, through FallbackToLogsOnError: a window
// title (OSC 0 ... BEL), CSI 2K, a carriage return, a newline, a tab and
// C1 CSI (octal 302 233 is U+009B in UTF-8).
constexpr const char* kPrintf =
    R"(printf '\033]0;owned\007\033[2K\rok\nfake row\t|\302\23331m\n'; exit 3)";
// What the message shows, escaped (S14.20).
constexpr const char* kShownFirstLine = R"(\x1b]0;owned\x07\x1b[2K\rok)";
constexpr const char* kShownQuoted = R"("\x1b]0;owned\x07\x1b[2K\rok\nfake row\t|\u009b31m\n")";

TEST_F(TerminalText, S14_20_HostileTerminationMessageIsEscapedEverywhere) {
  WritePod(
      "apiVersion: v1\nkind: Pod\n"
      "metadata:\n  name: hostile\n  annotations: {note: \"a\\e]0;title\\az\"}\n"
      "spec:\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 5\n  containers:\n"
      "  - {name: app, image: img, terminationMessagePolicy: FallbackToLogsOnError, command: " +
      ShCmd(kPrintf) + "}\n");
  ASSERT_EQ(Run(), 1) << RunStderr();

  // run's last line quotes it escaped; nothing on stderr acts on a terminal.
  ExpectNoControlBytes(RunStderr(), "run's stderr");
  EXPECT_THAT(RunStderr(), HasSubstr(std::string("container app failed: exit code 3, reason "
                                                 "Error, message ") +
                                     kShownQuoted + "\n"));

  // The exact text is kept where a program reads it.
  auto status = Status();
  ASSERT_TRUE(status.has_value());
  const auto* app = FindContainerStatus(*status, "app");
  ASSERT_NE(app, nullptr);
  EXPECT_EQ((*app)["state"]["terminated"]["message"],
            "\x1b]0;owned\x07\x1b[2K\rok\nfake row\t|\xc2\x9b"
            "31m\n");

  // events: one row per event, the message escaped.
  auto events = Client({"events"});
  ASSERT_EQ(events.exit_code, 0) << events.err;
  ExpectNoControlBytes(events.out, "events");
  const auto event_lines = Lines(events.out);
  EXPECT_EQ(event_lines.size(), PodEvents().size() + 1) << events.out;
  EXPECT_THAT(events.out, HasSubstr(std::string("reason Error: ") + kShownFirstLine));

  // describe: the message on its own line, the annotation escaped.
  auto describe = Client({"describe", "hostile"});
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  ExpectNoControlBytes(describe.out, "describe");
  EXPECT_THAT(Lines(describe.out),
              Contains(std::string("      Message:      ") +
                       R"(\x1b]0;owned\x07\x1b[2K\rok\nfake row\t|\u009b31m\n)"));
  EXPECT_THAT(Lines(describe.out), Contains(R"(Annotations:      note=a\x1b]0;title\x07z)"));

  // The status tables.
  for (const char* output : {"table", "wide"}) {
    auto table = Client({"status", "-o", output});
    ASSERT_EQ(table.exit_code, 0) << table.err;
    ExpectNoControlBytes(table.out, std::string("status -o ") + output);
    EXPECT_EQ(Lines(table.out).size(), 5u) << table.out;
  }
  auto list = Client({"list"});
  ExpectNoControlBytes(list.out, "list");
  EXPECT_EQ(Lines(list.out).size(), 2u) << list.out;
}

TEST_F(TerminalText, S14_24_SecretValueReachesNoOutput) {
  WritePod(R"yaml(apiVersion: v1
kind: Pod
metadata: {name: secretive}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: img
    command: ["/bin/sh", "-c", "exit 3", "$(DB_PASSWORD)"]
    env:
    - name: DB_PASSWORD
      valueFrom: {secretKeyRef: {name: db, key: password}}
---
apiVersion: v1
kind: Secret
metadata: {name: db}
stringData: {password: hunter2-db-value}
)yaml");
  ASSERT_EQ(Run(), 1) << RunStderr();
  const std::string value = "hunter2-db-value";
  EXPECT_THAT(RunStderr(), Not(HasSubstr(value)));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"status", "-o", "json"},
        std::vector<std::string>{"status", "-o", "yaml"},
        std::vector<std::string>{"status", "-o", "wide"}, std::vector<std::string>{"describe"},
        std::vector<std::string>{"events", "-o", "json"}}) {
    auto r = Client(args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_THAT(r.out, Not(HasSubstr(value))) << args[0];
  }
}

// A termination message is the container's bytes: invalid UTF-8 (here a
// lone 0xff, or a multi-byte character cut by the 4096-byte tail of
// S11.3) once made the supervisor's status record throw and abort `run`.
// It is kept, each invalid byte replaced by U+FFFD as a Go API server's
// JSON encoder does.
TEST_F(TerminalText, S14_22_InvalidUtf8InATerminationMessageNeverStopsTheSupervisor) {
  WritePod(
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bytes\n"
      "spec:\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 5\n  containers:\n"
      "  - {name: app, image: img, terminationMessagePolicy: FallbackToLogsOnError, command: " +
      ShCmd(R"(printf 'bad \377 end'; exit 3)") + "}\n");
  ASSERT_EQ(Run(), 1) << RunStderr();
  auto status = Status();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ((*status)["status"]["phase"], "Failed");
  const auto* app = FindContainerStatus(*status, "app");
  ASSERT_NE(app, nullptr);
  EXPECT_EQ((*app)["state"]["terminated"]["message"], "bad \xef\xbf\xbd end\n");
  EXPECT_EQ((*app)["state"]["terminated"]["exitCode"], 3);
}

}  // namespace
}  // namespace podvisor::e2e
