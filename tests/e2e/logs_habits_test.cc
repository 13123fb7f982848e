// Tier 2 (fake runtime), issue 16 point 5: `podvisor logs` with kubectl's
// habits — -c, --all-containers, --prefix, --since, --since-time, -p — on
// an ended pod, and kubectl's message when the container is ambiguous.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness.h"

namespace podvisor::e2e {
namespace {

using ::testing::HasSubstr;

class LogsHabits : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = RequiredEnv("PODVISOR_FAKE_RUNTIME");
    t.extra_run_args = {"--sandbox", "none", "--backoff-initial", "10ms"};
    t.helper_in_container = RequiredEnv("PODVISOR_TEST_HELPER");
    return t;
  }

  void RunTwoContainerPod() {
    WritePod(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: chat}\nspec:\n"
        "  restartPolicy: OnFailure\n  initContainers:\n"
        "  - {name: setup, image: img, command: " +
        ShCmd("echo prepared") +
        "}\n"
        "  containers:\n"
        // web fails once, then succeeds: two instances, for -p.
        "  - {name: web, image: img, command: " +
        ShCmd("if [ -e " + (scratch_ / "again").string() +
              " ]; then echo second; exit 0; fi; "
              "touch " +
              (scratch_ / "again").string() + "; echo first; exit 1") +
        "}\n"
        "  - {name: db, image: img, command: " +
        ShCmd("echo db-1; echo db-2") + "}\n");
    ASSERT_EQ(Run(), 0) << RunStderr();
  }
};

TEST_F(LogsHabits, ContainerFlagAllContainersPrefixAndPrevious) {
  RunTwoContainerPod();
  auto c = Client({"logs", "-c", "db"}, true);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.out, "db-1\ndb-2\n");
  auto with_pod = Client({"logs", "chat", "-c", "web"}, true);
  EXPECT_EQ(with_pod.out, "second\n") << with_pod.err;
  auto prev = Client({"logs", "-c", "web", "-p"}, true);
  EXPECT_EQ(prev.out, "first\n") << prev.err;

  auto all = Client({"logs", "--all-containers", "--prefix"}, true);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out,
            "[pod/chat/setup] prepared\n[pod/chat/web] second\n[pod/chat/db] db-1\n"
            "[pod/chat/db] db-2\n");
  auto tail = Client({"logs", "--all-containers", "--tail", "1"}, true);
  EXPECT_EQ(tail.out, "prepared\nsecond\ndb-2\n") << tail.err;

  // Several containers and none named: kubectl's default, the first
  // container, with its notice (S14.25); POD comes first.
  auto which = Client({"logs"}, true);
  EXPECT_EQ(which.exit_code, 0) << which.err;
  EXPECT_EQ(which.out, "second\n");
  EXPECT_THAT(which.err, HasSubstr("Defaulted container \"web\" out of: web, db, setup (init)"));
  auto by_pod = Client({"logs", "chat"}, true);
  EXPECT_EQ(by_pod.exit_code, 0) << by_pod.err;
  EXPECT_EQ(by_pod.out, "second\n");
  // The older form: a lone word naming no pod is the only pod's container.
  auto by_container = Client({"logs", "db"}, true);
  EXPECT_EQ(by_container.out, "db-1\ndb-2\n") << by_container.err;
  auto both = Client({"logs", "chat", "db"}, true);
  EXPECT_EQ(both.out, "db-1\ndb-2\n") << both.err;
}

TEST_F(LogsHabits, SinceAndSinceTimeDropOlderLines) {
  RunTwoContainerPod();
  auto recent = Client({"logs", "-c", "db", "--since", "1h"}, true);
  EXPECT_EQ(recent.out, "db-1\ndb-2\n") << recent.err;
  auto future = Client({"logs", "-c", "db", "--since-time", "2100-01-01T00:00:00Z"}, true);
  EXPECT_EQ(future.exit_code, 0) << future.err;
  EXPECT_EQ(future.out, "");
  auto past = Client({"logs", "-c", "db", "--since-time", "2000-01-01T00:00:00Z"}, true);
  EXPECT_EQ(past.out, "db-1\ndb-2\n") << past.err;
  auto bad = Client({"logs", "-c", "db", "--since-time", "yesterday"}, true);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("--since-time: not an RFC 3339 time: \"yesterday\""));
  auto both =
      Client({"logs", "-c", "db", "--since", "1h", "--since-time", "2000-01-01T00:00:00Z"}, true);
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_THAT(both.err, HasSubstr("exclude each other"));
}

}  // namespace
}  // namespace podvisor::e2e
