// The handover state's reader against damaged input (issue 30): valid
// saved states with keys dropped, types changed and values replaced, a few
// thousand times from a fixed seed. RestoreState must answer each with a
// Lifecycle or an Error, never an exception or a crash, and a Lifecycle
// it accepts must survive Resume, Status, SaveState and a few events
// (run under the sanitized build, a bad index or overflow shows here).
// fuzz/lifecycle_state_fuzzer.cc does the same with any bytes.

#include <gtest/gtest.h>

#include <random>

#include "supervisor/lifecycle/test_harness.h"

namespace podvisor::supervisor::lifecycle {
namespace {

using namespace harness;
using nlohmann::json;
using pod::RestartPolicy;

pod::Pod MutationPod() {
  pod::Pod p = MakePod({C("init"), WithReadiness(WithStartupProbe(Sidecar(C("proxy"))))},
                       {WithPreStop(WithPostStart(WithReadiness(WithLiveness(C("web"))))),
                        DraftSidecar(C("mesh")), C("worker")},
                       RestartPolicy::kOnFailure, 5);
  p.spec.active_deadline_seconds = 600;
  p.job = pod::JobLimits{3};
  return p;
}

// Valid states of MutationPod at several points of its life.
std::vector<json> ValidStates() {
  std::vector<json> states;
  Harness h(MutationPod());
  h.manual_post_start = {"web"};
  states.push_back(h.lc().SaveState());  // not started
  h.Start();
  h.Advance(1s);
  h.Exit("init", 0);
  states.push_back(h.lc().SaveState());
  h.Probe("proxy", ProbeKind::kStartup, true);
  h.Probe("proxy", ProbeKind::kReadiness, true);
  states.push_back(h.lc().SaveState());  // web's postStart runs
  h.HookDone("web", HookKind::kPostStart);
  h.Probe("web", ProbeKind::kReadiness, true);
  h.Advance(2s);
  h.Exit("worker", 1);
  h.Exit("worker", 1);
  states.push_back(h.lc().SaveState());  // worker in CrashLoopBackOff
  h.Probe("web", ProbeKind::kLiveness, false);
  states.push_back(h.lc().SaveState());  // web's preStop for the kill
  h.Stop("test");
  h.Advance(1s);
  states.push_back(h.lc().SaveState());  // terminating
  h.Advance(10s);
  states.push_back(h.lc().SaveState());  // budget expired, SIGKILLs sent
  return states;
}

// Every node of `j` as a JSON pointer (the root excluded).
void Pointers(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      out.push_back(at / key);
      Pointers(value, at / key, out);
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      out.push_back(at / i);
      Pointers(j[i], at / i, out);
    }
  }
}

json RandomValue(std::mt19937_64& rng) {
  static const std::vector<json> kPool = {nullptr,
                                          true,
                                          false,
                                          0,
                                          -1,
                                          1,
                                          2,
                                          3,
                                          INT64_MAX,
                                          UINT64_MAX,
                                          INT64_MIN,
                                          int64_t{1} << 62,
                                          (int64_t{1} << 62) + 1,
                                          int64_t{1} << 31,
                                          1.5,
                                          -0.0,
                                          "",
                                          "Running",
                                          "BackOff",
                                          "Waiting",
                                          "Creating",
                                          "Created",
                                          "Starting",
                                          "Exited",
                                          "Abandoned",
                                          "Signalled",
                                          "PreStopRunning",
                                          "WaitingForTurn",
                                          "HeldForSidecarPreStops",
                                          "Killed",
                                          "readiness",
                                          "liveness",
                                          "startup",
                                          "sidecar",
                                          "init",
                                          "regular",
                                          "draft-sidecar",
                                          "None",
                                          "StopRequested",
                                          "Completed",
                                          "LivenessFailed",
                                          "PodTermination",
                                          "Failed",
                                          "Succeeded",
                                          "True",
                                          "False",
                                          "web",
                                          "\xff\xfe",
                                          json::array(),
                                          json::object(),
                                          json::array({"readiness", "liveness", "startup"}),
                                          json::array({"liveness", "liveness"}),
                                          json::object({{"exit_code", 1}, {"finished_at", 5}})};
  std::uniform_int_distribution<size_t> pick(0, kPool.size());
  const size_t i = pick(rng);
  if (i < kPool.size()) return kPool[i];
  return static_cast<int64_t>(rng() >> 2) - (int64_t{1} << 60);  // any integer
}

void Mutate(json& state, std::mt19937_64& rng) {
  std::vector<json::json_pointer> nodes;
  Pointers(state, json::json_pointer(), nodes);
  if (nodes.empty()) return;
  const json::json_pointer& at = nodes[rng() % nodes.size()];
  switch (rng() % 3) {
    case 0: {  // drop it
      json& parent = state[at.parent_pointer()];
      if (parent.is_object()) {
        parent.erase(at.back());
      } else {
        parent.erase(static_cast<size_t>(std::stoul(at.back())));
      }
      return;
    }
    case 1:  // another value of any type
      state[at] = RandomValue(rng);
      return;
    default:  // a nearby integer where there is one
      if (state[at].is_number_integer()) {
        // Saturating: a value near INT64_MIN or INT64_MAX stays as it is
        // rather than overflow (UBSan's undefined behaviour).
        const int64_t value = state[at].get<int64_t>();
        const int64_t delta = static_cast<int64_t>(rng() % 21) - 10;
        int64_t nearby = value;
        if (__builtin_add_overflow(value, delta, &nearby)) nearby = value;
        state[at] = nearby;
      } else {
        state[at] = RandomValue(rng);
      }
      return;
  }
}

// Everything a restored Lifecycle is used for; none of it may throw.
void Exercise(Lifecycle& lc, MonoTime now) {
  const Now n{now, WallTime(std::chrono::seconds(1'700'000'000))};
  (void)lc.Resume(n);
  (void)pod::PodStatusToJson(lc.Status()).dump(-1, ' ', false, json::error_handler_t::replace);
  (void)lc.SaveState().dump();
  (void)lc.HooksRunning();
  for (const char* name : {"init", "proxy", "web", "mesh", "worker"}) {
    const int instance = lc.InstanceOf(name);
    (void)lc.Handle(ProbeResult{name, instance, ProbeKind::kLiveness, false, ""}, n);
    (void)lc.Handle(ContainerExited{name, instance, 1, 0, false, "", ""}, n);
    (void)lc.Handle(TimerFired{TimerId{TimerKind::kRestart, name, instance + 1}}, n);
  }
  (void)lc.Handle(StopRequested{std::nullopt, std::chrono::seconds(1)}, n);
  (void)lc.Handle(TimerFired{TimerId{TimerKind::kGraceBudget, "", 0}}, n);
  (void)lc.Status();
}

TEST(SavedStateMutation, DamagedStatesAreRefusedOrUsableNeverAnException) {
  const std::vector<json> valid = ValidStates();
  const pod::Pod pod = MutationPod();
  std::mt19937_64 rng(30);  // fixed: the same mutations every run
  int accepted = 0;
  int refused = 0;
  constexpr int kRounds = 3000;
  for (int round = 0; round < kRounds; ++round) {
    json state = valid[rng() % valid.size()];
    const int mutations = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < mutations; ++i) Mutate(state, rng);
    try {
      Result<Lifecycle> restored = Lifecycle::RestoreState(pod, {}, state);
      if (!restored.ok()) {
        ++refused;
        EXPECT_EQ(restored.error().message().rfind("handover state: ", 0), 0u)
            << restored.error().message();
        continue;
      }
      ++accepted;
      Exercise(*restored, MonoTime(std::chrono::seconds(20)));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "round " << round << ": " << e.what() << "\n" << state.dump();
      break;
    }
  }
  // Both kinds happened: the mutations reached the reader's checks, and
  // past them.
  EXPECT_GT(accepted, kRounds / 10);
  EXPECT_GT(refused, kRounds / 10);
}

}  // namespace
}  // namespace podvisor::supervisor::lifecycle
