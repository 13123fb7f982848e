// The events that explain a pod's end (docs/INTERFACE.md "Events"): an
// Exited event per container exit with its code, reason and termination
// message; a StopSignal event per stop signal, so the real stop order is
// visible; and no Normal PodCompleted for a pod that will be Failed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "supervisor/lifecycle/test_harness.h"

namespace podvisor::supervisor::lifecycle {
namespace {

using namespace harness;
using pod::PodPhase;
using pod::RestartPolicy;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Not;

const Publish* Find(const std::vector<Publish>& events, const std::string& reason,
                    const std::string& object) {
  for (const Publish& p : events) {
    if (p.reason == reason && p.object == object) return &p;
  }
  return nullptr;
}
// A pointer into a temporary list would dangle (ASan found one).
const Publish* Find(std::vector<Publish>&& events, const std::string& reason,
                    const std::string& object) = delete;

TEST(LifecycleEvents, FailedRegularUnderNeverIsAWarningPodFailedNotPodCompleted) {
  Harness h(MakePod({}, {C("app"), C("ok")}, RestartPolicy::kNever));
  h.Start();
  h.TakeAll();
  h.Advance(1s);
  h.Exit("ok", 0);
  h.Feed(ContainerExited{"app", 0, 3, 0, false, "disk full\nsecond line", ""});
  auto events = h.Published();
  const Publish* exited = Find(events, "Exited", "container/app");
  ASSERT_NE(exited, nullptr);
  EXPECT_EQ(exited->type, EventType::kWarning);
  // The whole message: a log tail's last line is what says why.
  EXPECT_EQ(exited->message,
            "Container app exited with code 3, reason Error: disk full\nsecond line");
  const Publish* ok = Find(events, "Exited", "container/ok");
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->type, EventType::kNormal);
  EXPECT_EQ(ok->message, "Container ok exited with code 0, reason Completed");
  EXPECT_EQ(Find(events, "PodCompleted", "pod"), nullptr);
  const Publish* failed = Find(events, "PodFailed", "pod");
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->type, EventType::kWarning);
  EXPECT_EQ(failed->message, "Regular containers failed: app (exit code 3)");
  EXPECT_EQ(h.lc().Phase(), PodPhase::kFailed);
}

TEST(LifecycleEvents, ExitedKeepsTheEndOfALongMessageWholeCharactersOnly) {
  Harness h(MakePod({}, {C("app")}, RestartPolicy::kNever));
  h.Start();
  h.TakeAll();
  h.Advance(1s);
  // 2000 bytes of two-byte characters, then the line that says why.
  std::string tail;
  for (int i = 0; i < 1000; ++i) tail += "\xc3\xa9";
  h.Feed(ContainerExited{"app", 0, 1, 0, false, tail + "\nfatal: config missing\n", ""});
  auto events = h.Published();
  const Publish* exited = Find(events, "Exited", "container/app");
  ASSERT_NE(exited, nullptr);
  const std::string prefix = "Container app exited with code 1, reason Error: ...";
  ASSERT_EQ(exited->message.rfind(prefix, 0), 0u) << exited->message;
  const std::string kept = exited->message.substr(prefix.size());
  EXPECT_LE(kept.size(), 1024u);
  EXPECT_TRUE(kept.ends_with("\nfatal: config missing"));
  EXPECT_NE(static_cast<unsigned char>(kept[0]) & 0xC0, 0x80);  // starts on a character
}

TEST(LifecycleEvents, SucceededPodStillGetsNormalPodCompleted) {
  Harness h(MakePod({}, {C("app")}, RestartPolicy::kNever));
  h.Start();
  h.TakeEvents();
  h.Advance(1s);
  h.Exit("app", 0);
  EXPECT_THAT(h.TakeEvents(), ElementsAre("1s Exited container/app", "1s PodCompleted pod"));
}

TEST(LifecycleEvents, S5_4_StopSignalEventsShowSidecarsStoppingLast) {
  Harness h(MakePod({Sidecar(C("s1")), Sidecar(C("s2"))}, {C("app")}));
  h.Start();
  h.TakeEvents();
  h.Stop();
  h.Advance(1s);
  h.ExitBySignal("app", 15);
  h.Advance(1s);
  h.ExitBySignal("s2", 15);
  h.Advance(1s);
  h.ExitBySignal("s1", 15);
  // Killing for all three at once (the kubelet's), then the signals in
  // the order they were really sent, each followed later by its exit.
  EXPECT_THAT(h.TakeEvents(), ElementsAre("0s PodStopping pod", "0s Killing container/s1",
                                          "0s Killing container/s2", "0s Killing container/app",
                                          "0s StopSignal container/app", "1s Exited container/app",
                                          "1s StopSignal container/s2", "2s Exited container/s2",
                                          "2s StopSignal container/s1", "3s Exited container/s1"));
  // Exits caused by the pod's own termination are no warning.
  for (const Publish& p : h.Published()) {
    if (p.reason == "Exited") {
      EXPECT_EQ(p.type, EventType::kNormal) << p.message;
    }
  }
}

TEST(LifecycleEvents, S5_3_SigkillAfterTheGracePeriodIsAForcedKillWarning) {
  Harness h(MakePod({}, {C("app")}));
  h.Start();
  h.TakeAll();
  h.Stop(std::nullopt, 5s);
  h.Advance(6s);
  EXPECT_THAT(h.Take(), Contains("5s Signal(app#0, SIGKILL)"));
  // Published() returns a copy: keep it alive while `forced` points into it.
  const std::vector<Publish> published = h.Published();
  const Publish* forced = Find(published, "ForcedKill", "container/app");
  ASSERT_NE(forced, nullptr);
  EXPECT_EQ(forced->type, EventType::kWarning);
  EXPECT_THAT(h.TakeEvents(), Not(Contains("0s PodCompleted pod")));
}

}  // namespace
}  // namespace podvisor::supervisor::lifecycle
