// The Lifecycle handed over to another process (issue 30): SaveState,
// RestoreState and Resume. Each scenario drives a pod with events, takes
// its state over into a twin (through dump() and parse(), as the handover
// does), checks the twin reports the same status and re-arms the same
// timers, then feeds both the same events and expects the same answers.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "supervisor/lifecycle/test_harness.h"

namespace podvisor::supervisor::lifecycle {
namespace {

using namespace harness;
using nlohmann::json;
using pod::RestartPolicy;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

json StatusJson(const Lifecycle& lc) {
  return pod::PodStatusToJson(lc.Status());
}

// A twin of `h` in a "new process": its state through text, restored with
// the same pod and options, at the same time. Resume is left to the test.
std::unique_ptr<Harness> TakeOver(Harness& h, LifecycleOptions options = {}) {
  const std::string text = h.lc().SaveState().dump();
  Result<Lifecycle> restored =
      Lifecycle::RestoreState(h.lc().pod(), std::move(options), json::parse(text));
  EXPECT_TRUE(restored.ok()) << restored.error().message();
  auto twin = std::make_unique<Harness>(std::move(*restored), h.mono());
  twin->manual_runtime = h.manual_runtime;
  twin->manual_post_start = h.manual_post_start;
  // Nothing is lost on the way: the twin would hand over the same state.
  EXPECT_EQ(twin->lc().SaveState(), h.lc().SaveState());
  EXPECT_EQ(StatusJson(twin->lc()), StatusJson(h.lc()));
  return twin;
}

// The probes Resume restarted, as "<container>/<kind>=<resumed result>".
std::vector<std::string> ResumedProbes(const std::vector<Action>& actions) {
  std::vector<std::string> out;
  for (const Action& a : actions) {
    const auto* s = std::get_if<StartProbes>(&a);
    if (!s) continue;
    std::string r = !s->resumed_result ? "none" : *s->resumed_result ? "success" : "failure";
    out.push_back(s->container + "/" + std::string(ProbeKindName(s->kind)) + "=" + r);
  }
  return out;
}

// Both harnesses have answered alike so far and report the same.
void ExpectSame(Harness& a, Harness& b) {
  EXPECT_EQ(a.Take(), b.Take());
  EXPECT_EQ(a.TakeEvents(), b.TakeEvents());
  EXPECT_EQ(a.Timers(), b.Timers());
  EXPECT_EQ(StatusJson(a.lc()), StatusJson(b.lc()));
  EXPECT_EQ(a.lc().SaveState(), b.lc().SaveState());
  a.TakeAll();
  b.TakeAll();
}

// Runs `step` on both, then compares.
template <typename F>
void Both(Harness& a, Harness& b, F step) {
  step(a);
  step(b);
  ExpectSame(a, b);
}

void Drain(Harness& h) {
  h.Take();
  h.TakeEvents();
  h.TakeAll();
}

TEST(SavedState, RunningPodWithSidecarAndReadyProbesCarriesOn) {
  Harness h(MakePod({WithReadiness(Sidecar(C("proxy")))},
                    {WithReadiness(WithLiveness(C("web"))), C("worker")}));
  h.Start();
  h.Probe("proxy", ProbeKind::kReadiness, true);
  h.Advance(3s);
  h.Probe("web", ProbeKind::kReadiness, true);
  ASSERT_TRUE(h.lc().Status().container_statuses[0].ready);
  Drain(h);

  auto twin = TakeOver(h);
  twin->Resume();
  EXPECT_THAT(ResumedProbes(twin->TakeAll()),
              UnorderedElementsAre("proxy/readiness=success", "web/readiness=success",
                                   "web/liveness=success"));
  EXPECT_THAT(twin->Take(), ElementsAre("3s StartProbes(proxy#0, readiness, resumed=success)",
                                        "3s StartProbes(web#0, readiness, resumed=success)",
                                        "3s StartProbes(web#0, liveness, resumed=success)"));
  EXPECT_EQ(twin->Timers(), h.Timers());
  EXPECT_EQ(StatusJson(twin->lc()), StatusJson(h.lc()));
  twin->TakeEvents();

  Both(h, *twin, [](Harness& x) {
    x.Advance(5s);
    x.Probe("web", ProbeKind::kReadiness, false);
  });
  EXPECT_FALSE(twin->lc().Status().container_statuses[0].ready);
  Both(h, *twin, [](Harness& x) { x.ExitBySignal("worker", 9); });
  Both(h, *twin, [](Harness& x) { x.Probe("web", ProbeKind::kLiveness, false); });
  Both(h, *twin, [](Harness& x) { x.Stop("maintenance", 5s); });
  Both(h, *twin, [](Harness& x) { x.Advance(10s); });
  Both(h, *twin, [](Harness& x) {
    x.Exit("web", 137, 9);
    x.Exit("worker", 0);
  });
  Both(h, *twin, [](Harness& x) { x.Exit("proxy", 143, 15); });
  EXPECT_TRUE(twin->lc().Ended());
}

TEST(SavedState, CrashLoopBackOffKeepsItsTimerAndItsBackoff) {
  Harness h(MakePod({}, {C("app")}));
  h.Start();
  h.Advance(1s);
  h.Exit("app", 1);  // S4.1: first restart immediate
  h.Advance(1s);
  h.Exit("app", 1);  // then 10 s
  h.Advance(2s);
  ASSERT_EQ(h.lc().StateOf("app"), RunState::kBackOff);
  Drain(h);

  auto twin = TakeOver(h);
  EXPECT_EQ(twin->lc().Status().container_statuses[0].state.waiting->reason, "CrashLoopBackOff");
  twin->Resume();
  EXPECT_THAT(twin->Timers(), ElementsAre("Restart(app#2) 12s"));
  EXPECT_EQ(twin->Timers(), h.Timers());
  twin->Take();

  Both(h, *twin, [](Harness& x) { x.Advance(9s); });  // the restart at 12 s
  EXPECT_EQ(twin->lc().StateOf("app"), RunState::kRunning);
  Both(h, *twin, [](Harness& x) {
    x.Advance(1s);
    x.Exit("app", 2);
  });
  // The sequence goes on: 20 s now, not the first restart's 0 s.
  EXPECT_THAT(twin->Timers(), ElementsAre("Restart(app#3) 34s"));
  EXPECT_EQ(twin->lc().Status().container_statuses[0].restart_count, 2);
  Both(h, *twin, [](Harness& x) { x.Advance(25s); });
  EXPECT_EQ(twin->Instance("app"), 3);
}

TEST(SavedState, TerminatingPodEndsTheDeadPreStopAndKeepsItsSigkill) {
  Harness h(MakePod({}, {WithPreStop(C("db")), C("app")}, RestartPolicy::kAlways, 30));
  h.Start();
  h.Advance(2s);
  h.Stop("upgrade-test");
  ASSERT_EQ(h.lc().StopStepOf("db"), StopStep::kPreStop);
  ASSERT_EQ(h.lc().StopStepOf("app"), StopStep::kSignalled);
  ASSERT_TRUE(h.lc().HooksRunning());
  h.Advance(1s);
  Drain(h);

  auto twin = TakeOver(h);
  twin->Resume();
  // The preStop died with the old supervisor: the stop goes on at once.
  const std::vector<std::string> resumed = twin->Take();
  EXPECT_THAT(resumed, ElementsAre("3s Signal(db#0, SIGTERM)"));
  EXPECT_FALSE(twin->lc().HooksRunning());
  EXPECT_THAT(twin->Timers(),
              UnorderedElementsAre("GraceBudget 32s", "Sigkill(app#0) 32s", "Sigkill(db#0) 32s"));
  // The old one, told its hook ended then, is where the twin is.
  h.HookDone("db", HookKind::kPreStop);
  EXPECT_EQ(h.Take(), resumed);
  ExpectSame(h, *twin);

  Both(h, *twin, [](Harness& x) { x.Exit("db", 0); });
  Both(h, *twin, [](Harness& x) { x.Advance(30s); });  // SIGKILL for app
  Both(h, *twin, [](Harness& x) { x.Exit("app", 137, 9); });
  EXPECT_TRUE(twin->lc().Ended());
}

TEST(SavedState, InitSequenceMidwayCarriesOn) {
  Harness h(MakePod({C("i1"), C("i2"), C("i3")}, {WithPostStart(C("app"))}));
  h.manual_post_start = {"app"};
  h.Start();
  h.Advance(1s);
  h.Exit("i1", 0);
  ASSERT_EQ(h.lc().StateOf("i2"), RunState::kRunning);
  ASSERT_EQ(h.lc().StateOf("i3"), RunState::kCreated);  // ahead of its turn
  Drain(h);

  auto twin = TakeOver(h);
  twin->Resume();
  EXPECT_THAT(twin->TakeAll(), IsEmpty());
  EXPECT_EQ(StatusJson(twin->lc())["phase"], "Pending");

  Both(h, *twin, [](Harness& x) {
    x.Advance(1s);
    x.Exit("i2", 0);
  });
  EXPECT_EQ(twin->lc().StateOf("i3"), RunState::kRunning);
  Both(h, *twin, [](Harness& x) { x.Exit("i3", 0); });
  EXPECT_EQ(twin->lc().StateOf("app"), RunState::kRunning);
  EXPECT_TRUE(twin->lc().HooksRunning());  // app's postStart

  // Taken over again while app's postStart runs: it counts as done.
  Drain(h);
  auto third = TakeOver(*twin);
  third->Resume();
  EXPECT_FALSE(third->lc().HooksRunning());
  EXPECT_TRUE(third->lc().Status().container_statuses[0].ready);
  twin->HookDone("app", HookKind::kPostStart);
  ExpectSame(*twin, *third);
}

TEST(SavedState, JobPodKeepsItsDeadlineAndBackoffLimit) {
  pod::Pod p = MakePod({}, {C("work")}, RestartPolicy::kOnFailure);
  p.job = pod::JobLimits{1};
  p.spec.active_deadline_seconds = 100;
  Harness h(p);
  h.Start();
  h.Advance(4s);
  h.Exit("work", 3);  // restart 1: allowed by backoffLimit 1
  h.Advance(1s);
  Drain(h);

  auto twin = TakeOver(h);
  twin->Resume();
  EXPECT_THAT(twin->Timers(), ElementsAre("ActiveDeadline 100s"));
  EXPECT_EQ(twin->Timers(), h.Timers());
  twin->TakeAll();
  Both(h, *twin, [](Harness& x) { x.Exit("work", 3); });  // over the limit
  EXPECT_EQ(StatusJson(twin->lc())["reason"], "BackoffLimitExceeded");
  EXPECT_TRUE(twin->lc().Ended());
}

TEST(SavedState, AnActiveDeadlineFiresInTheTwin) {
  pod::Pod p = MakePod({}, {C("work")}, RestartPolicy::kNever, 2);
  p.spec.active_deadline_seconds = 10;
  Harness h(p);
  h.Start();
  h.Advance(4s);
  Drain(h);
  auto twin = TakeOver(h);
  twin->Resume();
  twin->TakeAll();
  Both(h, *twin, [](Harness& x) { x.Advance(7s); });
  EXPECT_EQ(StatusJson(twin->lc())["reason"], "DeadlineExceeded");
}

TEST(SavedState, ArbitraryBytesInMessagesSurviveDump) {
  Harness h(MakePod({}, {C("app")}, RestartPolicy::kNever));
  h.Start();
  h.Feed(ContainerExited{"app", 0, 1, 0, false, "bad \xff\xfe bytes \xc3", ""});
  const json state = h.lc().SaveState();
  std::string text;
  ASSERT_NO_THROW(text = state.dump());
  Result<Lifecycle> restored = Lifecycle::RestoreState(h.lc().pod(), {}, json::parse(text));
  ASSERT_TRUE(restored.ok()) << restored.error().message();
  const std::string message = restored->Status().container_statuses[0].state.terminated->message;
  EXPECT_EQ(message, "bad \xef\xbf\xbd\xef\xbf\xbd bytes \xef\xbf\xbd");
}

TEST(SavedState, HooksRunningSeesPostStartAndPreStop) {
  Harness h(MakePod({}, {WithPostStart(WithPreStop(C("app")))}));
  h.manual_post_start = {"app"};
  EXPECT_FALSE(h.lc().HooksRunning());
  h.Start();
  EXPECT_TRUE(h.lc().HooksRunning());
  h.HookDone("app", HookKind::kPostStart);
  EXPECT_FALSE(h.lc().HooksRunning());
  h.Stop();
  EXPECT_TRUE(h.lc().HooksRunning());
}

// ---- Refusals ----------------------------------------------------------------

class SavedStateErrors : public ::testing::Test {
 protected:
  SavedStateErrors() : h_(MakePod({Sidecar(C("proxy"))}, {WithReadiness(C("web"))})) {
    h_.Start();
    state_ = h_.lc().SaveState();
  }
  std::string Refusal(const json& state) {
    Result<Lifecycle> r = Lifecycle::RestoreState(h_.lc().pod(), {}, state);
    return r.ok() ? "accepted" : r.error().message();
  }
  Harness h_;
  json state_;
};

TEST_F(SavedStateErrors, NewerFormat) {
  state_["format"] = kLifecycleStateFormat + 1;
  EXPECT_EQ(Refusal(state_), "handover state: format: 2 is newer than this reader's 1");
  state_.erase("format");
  EXPECT_EQ(Refusal(state_), "handover state: format: missing");
}

TEST_F(SavedStateErrors, UnknownEnumNames) {
  json s = state_;
  s["containers"]["web"]["state"] = "Foo";
  EXPECT_EQ(Refusal(s), "handover state: containers[web].state: unknown value \"Foo\"");
  s = state_;
  s["termination"]["cause"] = 2;
  EXPECT_EQ(Refusal(s), "handover state: termination.cause: not a string");
  s = state_;
  s["containers"]["proxy"]["probes_active"] = {"readiness"};
  EXPECT_EQ(Refusal(s),
            "handover state: containers[proxy].probes_active[0]: the container has no readiness "
            "probe");
  s = state_;
  s["conditions"]["Ready"]["status"] = "Maybe";
  EXPECT_THAT(Refusal(s), HasSubstr("conditions[Ready].status: unknown value \"Maybe\""));
}

TEST_F(SavedStateErrors, ContainersMustMatchThePod) {
  json s = state_;
  s["containers"]["ghost"] = s["containers"]["web"];
  EXPECT_EQ(Refusal(s), "handover state: containers[ghost]: the pod has no such container");
  s = state_;
  s["containers"].erase("web");
  EXPECT_EQ(Refusal(s), "handover state: containers[web]: missing");
  s = state_;
  s["containers"]["proxy"]["role"] = "init";
  EXPECT_EQ(Refusal(s),
            "handover state: containers[proxy].role: \"init\" but the pod's is \"sidecar\"");
}

TEST_F(SavedStateErrors, WrongTypesAndRanges) {
  json s = state_;
  s["containers"]["web"]["instance"] = "1";
  EXPECT_EQ(Refusal(s), "handover state: containers[web].instance: not an integer");
  s = state_;
  s["containers"]["web"]["instance"] = -1;
  EXPECT_THAT(Refusal(s), HasSubstr("containers[web].instance: out of range"));
  s = state_;
  s["pod_start"] = 5;
  EXPECT_EQ(Refusal(s), "handover state: pod_start: not an object");
  s = state_;
  s["containers"]["web"]["terminated"] = {{"finished_at", 1.5}};
  EXPECT_EQ(Refusal(s), "handover state: containers[web].terminated.finished_at: not an integer");
  EXPECT_EQ(Refusal(json::array()), "handover state: not an object");
}

TEST_F(SavedStateErrors, UnknownKeysIgnoredMissingOnesDefault) {
  json s = state_;
  s["from_the_future"] = {1, 2};
  s["containers"]["web"]["also_new"] = true;
  EXPECT_EQ(Refusal(s), "accepted");
  s["containers"]["web"].erase("container_id");
  s.erase("conditions");
  EXPECT_EQ(Refusal(s), "accepted");
}

}  // namespace
}  // namespace podvisor::supervisor::lifecycle
