// instance_steps.h: the instance's steps driven in-process through every
// order of what the world can do to it: the create call exits, the init
// exits, the runtime's fork (crun's `run --detach`) exits, the start returns
// (for `run --detach`: the pod asks for the start), and the pod stops. A
// small world answers the machine's actions as the Executor and the
// Lifecycle would, and delivers each happening once it can be seen (an
// init's exit only once it is adopted, a start's return once it runs).
#include "supervisor/executor/instance_steps.h"

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace podvisor::supervisor::executor {
namespace {

using Step = InstanceStep;
using Input = InstanceInput;
using Action = InstanceAction;

enum class Happening { kCreateCallExits, kInitExits, kForkExits, kStartReturns, kPodStops };

std::string_view HappeningName(Happening h) {
  switch (h) {
    case Happening::kCreateCallExits:
      return "create-call-exits";
    case Happening::kInitExits:
      return "init-exits";
    case Happening::kForkExits:
      return "fork-exits";
    case Happening::kStartReturns:
      return "start-returns";
    case Happening::kPodStops:
      return "pod-stops";
  }
  return "?";
}

struct Scenario {
  bool by_run = false;        // `run --detach`: kStartReturns is the pod's StartContainer
  bool create_fails = false;  // the create call exits non-zero
  bool start_fails = false;   // the start call exits non-zero
  bool delete_spawn_fails_once = false;
  bool init_dies_after_delete_exit = false;  // the reaper's order for a delete's kill
};

// The Executor and the Lifecycle around one instance, reduced to what the
// machine's actions make them do.
class World {
 public:
  explicit World(Scenario s) : s_(s) {}

  void Run(const std::vector<Happening>& order) {
    Deliver(s_.by_run ? Input::kRunSpawned : Input::kCreateSpawned);
    for (Happening h : order) {
      happened_.push_back(h);
      if (h == Happening::kInitExits) init_dead_ = true;
      if (h == Happening::kPodStops) PodStops();
      Pump();
    }
    Pump();
  }

  const InstanceState& state() const { return state_; }
  const std::vector<Action>& log() const { return log_; }
  int Count(Action a) const { return static_cast<int>(std::count(log_.begin(), log_.end(), a)); }
  // Index of the first `a` in the log, or -1.
  int IndexOf(Action a) const {
    auto it = std::find(log_.begin(), log_.end(), a);
    return it == log_.end() ? -1 : static_cast<int>(it - log_.begin());
  }
  std::string Trace() const {
    std::string out;
    for (Action a : log_) out += std::string(InstanceActionName(a)) + " ";
    return out + "| end " + std::string(InstanceStepName(state_.step));
  }

 private:
  bool Happened(Happening h) const {
    return std::find(happened_.begin(), happened_.end(), h) != happened_.end();
  }
  bool Adopted() const { return adopted_ && !state_.create_failed; }

  void Deliver(Input input) {
    InstanceTransition t = Transition(state_, input);
    state_ = t.next;
    for (Action a : t.actions) {
      log_.push_back(a);
      React(a);
    }
  }

  void React(Action a) {
    switch (a) {
      case Action::kAdoptInit:
        // The init is ours once the fork above it is gone.
        if (!Happened(Happening::kForkExits)) return Deliver(Input::kInitHeldByFork);
        adopted_ = true;
        return Deliver(Input::kInitAdopted);
      case Action::kReportCreated:
        if (stopping_) return Deliver(Input::kDeleteAsked);  // S5.8: abandoned
        if (!s_.by_run) return Deliver(Input::kStartAsked);
        return;
      case Action::kSpawnStart:
        start_running_ = true;
        return;
      case Action::kReportStarted:
        if (stopping_) init_dead_ = true;  // the pod's stop kills it
        return;
      case Action::kReportStartFailed:
      case Action::kReportExited:
        return Deliver(Input::kDeleteAsked);
      case Action::kSpawnDelete:
        if (s_.delete_spawn_fails_once && !delete_spawn_failed_) {
          delete_spawn_failed_ = true;
          return Deliver(Input::kDeleteSpawnFailed);
        }
        // `delete --force` kills what still runs; the reaper reports the
        // init and the call in either order.
        if (!s_.init_dies_after_delete_exit) init_dead_ = true;
        pending_.push_back(Input::kDeleteExited);
        return;
      case Action::kRetryDeleteLater:
        pending_.push_back(Input::kDeleteRetry);
        return;
      case Action::kFinishDelete:
        init_dead_ = true;
        return;
      default:
        return;
    }
  }

  void PodStops() {
    stopping_ = true;
    if (state_.step == Step::kCreated || state_.step == Step::kStartedByRun) {
      Deliver(Input::kDeleteAsked);
    } else if (state_.step == Step::kStarted) {
      init_dead_ = true;
    }
  }

  // Delivers whatever can be seen now, until nothing can.
  void Pump() {
    for (bool delivered = true; delivered;) delivered = DeliverOne();
  }

  bool DeliverOne() {
    if (!pending_.empty()) {
      Input next = pending_.front();
      pending_.pop_front();
      Deliver(next);
      return true;
    }
    if (Happened(Happening::kCreateCallExits) && !create_call_delivered_) {
      create_call_delivered_ = true;
      Deliver(s_.create_fails ? Input::kCreateCallFailed : Input::kCreateCallExited);
      return true;
    }
    if (Happened(Happening::kForkExits) && state_.waiting_for_fork) {
      Deliver(Input::kForkExited);
      return true;
    }
    if (init_dead_ && Adopted() && !init_exit_delivered_) {
      init_exit_delivered_ = true;
      Deliver(Input::kInitExited);
      return true;
    }
    return DeliverStart();
  }

  bool DeliverStart() {
    if (!Happened(Happening::kStartReturns) || start_delivered_) return false;
    if (s_.by_run) {
      if (state_.step != Step::kStartedByRun || stopping_) return false;
      start_delivered_ = true;
      Deliver(Input::kStartAsked);
      return true;
    }
    if (!start_running_) return false;
    start_delivered_ = true;
    start_running_ = false;
    Deliver(s_.start_fails ? Input::kStartFailed : Input::kStartReturned);
    return true;
  }

  Scenario s_;
  InstanceState state_;
  std::vector<Action> log_;
  std::vector<Happening> happened_;
  std::deque<Input> pending_;
  bool adopted_ = false;
  bool init_dead_ = false;
  bool stopping_ = false;
  bool start_running_ = false;
  bool create_call_delivered_ = false;
  bool init_exit_delivered_ = false;
  bool start_delivered_ = false;
  bool delete_spawn_failed_ = false;
};

std::string OrderName(const std::vector<Happening>& order) {
  std::string out;
  for (Happening h : order) out += std::string(HappeningName(h)) + " ";
  return out;
}

// Every order of the happenings, each order checked by `check`.
template <typename Check>
void ForEveryOrder(Scenario s, bool pod_stops, Check check) {
  std::vector<Happening> order = {Happening::kCreateCallExits, Happening::kInitExits,
                                  Happening::kForkExits, Happening::kStartReturns};
  if (pod_stops) order.push_back(Happening::kPodStops);
  std::sort(order.begin(), order.end());
  int orders = 0;
  do {
    World world(s);
    world.Run(order);
    SCOPED_TRACE(OrderName(order) + ": " + world.Trace());
    check(world);
    ++orders;
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(orders, pod_stops ? 120 : 24);
}

// What holds for every instance that ends, whatever the order.
void ExpectEndsDeletedOnce(const World& w) {
  EXPECT_EQ(w.state().step, Step::kDeleted);
  EXPECT_FALSE(w.state().NeedsDelete());
  EXPECT_EQ(w.Count(Action::kFinishDelete), 1);
  // No runtime report once the runtime let go of the container.
  int finished = w.IndexOf(Action::kFinishDelete);
  for (Action report : {Action::kReportCreated, Action::kReportCreateFailed, Action::kReportStarted,
                        Action::kReportStartFailed}) {
    int at = w.IndexOf(report);
    if (at >= 0) {
      EXPECT_LT(at, finished) << InstanceActionName(report);
    }
  }
}

void ExpectCreatedStartedExitedInOrder(const World& w, Action start_report) {
  EXPECT_EQ(w.Count(Action::kReportCreated), 1);
  EXPECT_EQ(w.Count(Action::kReportCreateFailed), 0);
  EXPECT_EQ(w.Count(start_report), 1);
  EXPECT_EQ(w.Count(Action::kReportExited), 1);
  EXPECT_LT(w.IndexOf(Action::kReportCreated), w.IndexOf(start_report));
  EXPECT_LT(w.IndexOf(start_report), w.IndexOf(Action::kReportExited));
  EXPECT_EQ(w.state().exit, ExitStep::kReported);
  ExpectEndsDeletedOnce(w);
}

TEST(InstanceStepsEveryOrder, CreateThenStartReportsCreatedStartedExitedOnce) {
  ForEveryOrder({}, false, [](const World& w) {
    ExpectCreatedStartedExitedInOrder(w, Action::kReportStarted);
    // The pod deletes an instance that ran after its exit.
    EXPECT_LT(w.IndexOf(Action::kReportExited), w.IndexOf(Action::kSpawnDelete));
  });
}

TEST(InstanceStepsEveryOrder, DetachedRunReportsStartedOnlyWhenThePodAsksThenTheExit) {
  ForEveryOrder({.by_run = true}, false, [](const World& w) {
    ExpectCreatedStartedExitedInOrder(w, Action::kReportStarted);
    EXPECT_EQ(w.Count(Action::kSpawnStart), 0);  // run started it: no start call
  });
}

TEST(InstanceStepsEveryOrder, FailedStartReportsTheFailureBeforeTheExit) {
  for (bool after : {false, true}) {
    ForEveryOrder({.start_fails = true, .init_dies_after_delete_exit = after}, false,
                  [](const World& w) {
                    ExpectCreatedStartedExitedInOrder(w, Action::kReportStartFailed);
                    EXPECT_EQ(w.Count(Action::kReportStarted), 0);
                  });
  }
}

TEST(InstanceStepsEveryOrder, FailedCreateReportsOnlyTheFailureAndDeletesWhatTheRuntimeHolds) {
  for (bool by_run : {false, true}) {
    ForEveryOrder({.by_run = by_run, .create_fails = true}, false, [](const World& w) {
      EXPECT_EQ(w.log(), (std::vector<Action>{Action::kSpawnDelete, Action::kReportCreateFailed,
                                              Action::kFinishDelete}));
      EXPECT_TRUE(w.state().create_failed);  // S14.11: its cgroup is swept
      ExpectEndsDeletedOnce(w);
    });
  }
}

TEST(InstanceStepsEveryOrder, PodStoppingAnywhereStillReportsEachOnceInOrder) {
  for (bool by_run : {false, true}) {
    for (bool after : {false, true}) {
      ForEveryOrder(
          {.by_run = by_run, .init_dies_after_delete_exit = after}, true, [](const World& w) {
            EXPECT_EQ(w.Count(Action::kReportCreated), 1);
            EXPECT_EQ(w.Count(Action::kReportExited), 1);
            EXPECT_LE(w.Count(Action::kReportStarted), 1);
            int started = w.IndexOf(Action::kReportStarted);
            EXPECT_LT(w.IndexOf(Action::kReportCreated),
                      started >= 0 ? started : w.IndexOf(Action::kReportExited));
            // A started instance's exit comes after RuntimeStarted and
            // before its delete; an abandoned one's may follow it.
            if (started >= 0) {
              EXPECT_LT(started, w.IndexOf(Action::kReportExited));
              EXPECT_LT(w.IndexOf(Action::kReportExited), w.IndexOf(Action::kFinishDelete));
            }
            ExpectEndsDeletedOnce(w);
          });
    }
  }
}

TEST(InstanceStepsEveryOrder, DeleteThatCannotBeSpawnedIsRetriedNotLost) {
  ForEveryOrder({.delete_spawn_fails_once = true}, true, [](const World& w) {
    EXPECT_EQ(w.Count(Action::kRetryDeleteLater), 1);
    EXPECT_EQ(w.Count(Action::kSpawnDelete), 2);
    ExpectEndsDeletedOnce(w);
  });
}

// Single steps, by rule.

InstanceState At(Step step, bool runtime_holds_state = true) {
  InstanceState s;
  s.step = step;
  s.runtime_holds_state = runtime_holds_state;
  return s;
}

TEST(InstanceSteps, ExitDuringStartIsHeldAndReportedAfterTheStartsReport) {
  InstanceTransition held = Transition(At(Step::kStarting), Input::kInitExited);
  EXPECT_EQ(held.next.exit, ExitStep::kHeld);
  EXPECT_TRUE(held.actions.empty());
  InstanceTransition started = Transition(held.next, Input::kStartReturned);
  EXPECT_EQ(started.next.step, Step::kStarted);
  EXPECT_EQ(started.actions, (std::vector<Action>{Action::kReportStarted, Action::kReportExited}));
}

TEST(InstanceSteps, CreatedInstancesExitIsReportedAtOnce) {
  InstanceTransition t = Transition(At(Step::kCreated), Input::kInitExited);
  EXPECT_EQ(t.actions, std::vector<Action>{Action::kReportExited});
  EXPECT_TRUE(t.next.Exited());
}

TEST(InstanceSteps, PrepareFailureFinishesAtOnceWithoutARuntimeDelete) {
  InstanceTransition t = Transition(InstanceState{}, Input::kCreateFailed);
  EXPECT_EQ(t.next.step, Step::kDeleted);
  EXPECT_EQ(t.actions, (std::vector<Action>{Action::kFinishDelete, Action::kReportCreateFailed}));
}

TEST(InstanceSteps, DeleteAskedDuringACallWaitsForItsReturn) {
  InstanceTransition asked = Transition(At(Step::kStarting), Input::kDeleteAsked);
  EXPECT_EQ(asked.next.step, Step::kStarting);
  EXPECT_TRUE(asked.actions.empty());
  InstanceTransition returned = Transition(asked.next, Input::kStartFailed);
  EXPECT_EQ(returned.next.step, Step::kDeleting);
  EXPECT_EQ(returned.actions,
            (std::vector<Action>{Action::kReportStartFailed, Action::kSpawnDelete}));
}

TEST(InstanceSteps, AbandonedDetachedRunReportsItsHeldExitThenDeletes) {
  InstanceState s = At(Step::kStartedByRun);
  s.exit = ExitStep::kHeld;
  InstanceTransition t = Transition(s, Input::kDeleteAsked);
  EXPECT_EQ(t.next.step, Step::kDeleting);
  EXPECT_EQ(t.actions, (std::vector<Action>{Action::kReportExited, Action::kSpawnDelete}));
}

TEST(InstanceSteps, StaleInputsChangeNothing) {
  for (Input input : {Input::kCreateCallExited, Input::kInitAdopted, Input::kStartReturned,
                      Input::kStartAsked, Input::kDeleteAsked, Input::kDeleteExited}) {
    InstanceTransition t = Transition(At(Step::kDeleted, false), input);
    EXPECT_EQ(t.next.step, Step::kDeleted) << InstanceInputName(input);
    EXPECT_TRUE(t.actions.empty()) << InstanceInputName(input);
  }
}

TEST(InstanceSteps, NamesEveryStep) {
  for (Step s :
       {Step::kPreparing, Step::kCreating, Step::kCreated, Step::kStartedByRun, Step::kStarting,
        Step::kStarted, Step::kStartFailed, Step::kDeleting, Step::kDeleted}) {
    EXPECT_NE(InstanceStepName(s), "?");
  }
}

}  // namespace
}  // namespace podvisor::supervisor::executor
