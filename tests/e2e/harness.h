// The end-to-end harness for test tiers 2 and 3 (docs/TESTING.md): each test
// gets a temp dir holding a pod bundle, the state and log dirs and the
// timestamped event log the test helper appends to; it runs the real
// `podvisor run` as a child process, talks to it through the client
// commands a user runs, and afterwards checks that the pod left nothing
// behind (runtime state, mounts, processes, cgroups, the test's own
// descriptors).
//
// Pod manifests are written by the tests with three placeholders so the
// same text reads naturally in both tiers:
//   {{H}}    the test helper as the container sees it
//   {{LOG}}  the helper's event log as the container sees it
//   {{DIR}}  a scratch dir for marker and result files, as the container
//            sees it (tier 2: the test's temp dir; tier 3: the hostPath
//            volume mounted at /shared)
#pragma once

#include <signal.h>
#include <unistd.h>

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../cli/run_command.h"

namespace podvisor::e2e {

namespace fs = std::filesystem;
using Clock = std::chrono::system_clock;
using std::chrono::milliseconds;

// An environment variable the test binary needs (set by meson); fails the
// test and returns "" when missing.
std::string RequiredEnv(const char* name);
// The executable `program` from $PATH, then the sbin/bin directories
// (runc is in /usr/sbin, which a non-login PATH may lack); "" if absent.
std::string FindInPath(const std::string& program);

// One line of the test helper's event log: "<RFC3339 ms> NAME VERB".
struct HelperEvent {
  Clock::time_point time;
  std::string name;
  std::string verb;
  std::string Key() const { return name + " " + verb; }
};

// Milliseconds from a to b (negative when b is earlier).
long long MsBetween(Clock::time_point a, Clock::time_point b);

// The position of the first event with this key, or -1.
int IndexOf(const std::vector<HelperEvent>& events, const std::string& key);
int CountOf(const std::vector<HelperEvent>& events, const std::string& key);
std::vector<HelperEvent> EventsNamed(const std::vector<HelperEvent>& events,
                                     const std::string& name, const std::string& verb);
// "a Started, a Exiting, ..." for failure messages.
std::string Describe(const std::vector<HelperEvent>& events);

// A container command running the test helper with its event log:
// HelperCmd("app", "sleep 100") is the YAML flow sequence
// ["{{H}}", "--log", "app", "--log-file", "{{LOG}}", "sleep", "100"].
std::string HelperCmd(const std::string& name, const std::string& args);
// ["/bin/sh", "-c", SCRIPT, EXTRA...] as a YAML flow sequence (JSON quoting).
std::string ShCmd(const std::string& script, const std::vector<std::string>& extra = {});

// The settings that differ between tier 2 (fake runtime) and tier 3 (runc).
struct TierConfig {
  std::string runtime;                       // --runtime
  std::vector<std::string> extra_run_args;   // e.g. --sandbox none
  std::string helper_in_container;           // {{H}}
  bool helper_log_in_shared_volume = false;  // {{LOG}}/{{DIR}} under /shared
  bool busybox_rootfs = false;               // tier 3: a busybox image with the helper
  bool check_runc_state = false;             // leftovers: `runc list`
  std::string cgroup_parent;                 // --cgroup-parent, empty: podvisor's default
  // Commands the podvisor command line is handed to (each exec's the
  // next, so the run's pid stays podvisor's): e.g. a private mount
  // namespace and another uid for the rootless tests (S21). Absolute
  // program paths.
  std::vector<std::string> run_prefix;
  std::vector<std::string> client_prefix;
};

class E2eTest : public ::testing::Test {
 protected:
  virtual TierConfig Tier() const = 0;

  void SetUp() override;
  void TearDown() override;

  // Writes BUNDLE/pod.yaml after replacing {{H}}, {{LOG}} and {{DIR}}.
  void WritePod(const std::string& yaml_template);
  std::string Expand(const std::string& text) const;

  // Starts `podvisor run` on the bundle; `extra_env` entries ("K=V") are
  // added to its environment (and so to every runtime call it makes).
  void StartRun(const std::vector<std::string>& extra_args = {},
                const std::vector<std::string>& extra_env = {});
  // Waits for the supervisor to end and returns its exit status (-1 when
  // killed by a signal); past the timeout it is SIGKILLed and the test fails.
  int WaitRun(std::chrono::seconds timeout = std::chrono::seconds(30));
  // StartRun + WaitRun.
  int Run(const std::vector<std::string>& extra_args = {},
          const std::vector<std::string>& extra_env = {},
          std::chrono::seconds timeout = std::chrono::seconds(30));
  // Starts another `podvisor run` of `bundle` with this test's state and
  // log dirs and the tier's runtime options (a second pod of the same
  // state directory); its output goes to dir_/<name>.stderr. The caller
  // reaps it.
  pid_t SpawnOtherRun(const fs::path& bundle, const std::string& name,
                      const std::vector<std::string>& extra_args = {});
  // Another pod `name` of this state directory: its bundle dir_/bundle-NAME
  // (this test's images, pod.yaml from `yaml_template` with the
  // placeholders replaced) run by SpawnOtherRun; its pid. StopOtherPod
  // stops it and reaps it (nothing for a pid <= 0) and sets pid to -1.
  pid_t StartOtherPod(const std::string& name, const std::string& yaml_template);
  void StopOtherPod(const std::string& name, pid_t& pid);
  bool RunIsAlive();
  pid_t run_pid() const { return run_pid_; }
  std::string RunStderr() const;

  // Client commands against this test's state dir.
  testing::CommandResult Client(std::vector<std::string> args, bool with_log_dir = false);
  // `status -o json`, or nullopt when the pod does not answer.
  std::optional<nlohmann::json> Status();
  // Polls `status -o json` every 20 ms until `pred` holds; fails the test
  // and returns the last status (or null) after the timeout.
  nlohmann::json WaitForStatus(const std::function<bool(const nlohmann::json&)>& pred,
                               const std::string& what,
                               std::chrono::milliseconds timeout = std::chrono::seconds(15));
  // Waits until the pod phase is Running and every started container is
  // running (ready regular containers and sidecars).
  nlohmann::json WaitUntilRunning();
  // Polls the helper event log until `key` appears `count` times.
  bool WaitForHelperEvent(const std::string& key, int count = 1,
                          std::chrono::milliseconds timeout = std::chrono::seconds(15));

  // The helper's event log, sorted by time (stable: file order on ties).
  std::vector<HelperEvent> HelperEvents() const;
  // events.jsonl of the pod, one object a line.
  std::vector<nlohmann::json> PodEvents() const;
  std::string ReadScratch(const std::string& name) const;  // a file in {{DIR}}, trimmed

  // Sends raw bytes to the control socket and returns the whole reply.
  std::string RawControlRequest(const std::string& bytes);

  // Paths on the host.
  fs::path dir_;        // the test's temp dir
  fs::path bundle_;     // dir_/bundle
  fs::path state_dir_;  // dir_/state
  fs::path log_dir_;    // dir_/logs
  fs::path scratch_;    // what {{DIR}} is on the host
  std::string pod_name_;

 private:
  std::vector<std::string> RunArgs() const;  // `podvisor run` and the tier's options
  void CheckNothingLeftBehind();
  fs::path EventLogOnHost() const { return scratch_ / "events.log"; }

  int test_fds_ = 0;  // this process's open descriptors at SetUp
  pid_t run_pid_ = -1;
  bool run_reaped_ = true;
  int reaped_status_ = 0;  // waitpid status once reaped
  TierConfig tier_;
};

// Status accessors over a v1 Pod JSON (null when absent).
const nlohmann::json* FindContainerStatus(const nlohmann::json& pod, const std::string& name);
std::string StateOf(const nlohmann::json& pod,
                    const std::string& container);  // waiting|running|terminated|""
std::string Phase(const nlohmann::json& pod);
std::string ConditionStatus(const nlohmann::json& pod, const std::string& type);

// Tier 3's fixture: runc, the static helper inside a busybox rootfs, runc's
// own state checked for leftovers, and a cgroup parent of the test
// process's own (the leftovers check looks for the pod's cgroup under it in
// every hierarchy, and no other test process shares it). Skips without
// root or runc.
class RuncE2eTest : public E2eTest {
 protected:
  TierConfig Tier() const override {
    TierConfig t;
    t.runtime = FindInPath("runc");
    t.helper_in_container = "/podvisor-test-helper";
    t.helper_log_in_shared_volume = true;
    t.busybox_rootfs = true;
    t.check_runc_state = true;
    t.cgroup_parent = "/podvisor-e2e-" + std::to_string(::getpid());
    return t;
  }
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (runc creates namespaces, mounts, cgroups)";
    if (FindInPath("runc").empty()) GTEST_SKIP() << "runc not installed";
    E2eTest::SetUp();
  }
};

// S15.4: the sandbox holder a SIGKILLed supervisor left keeps its pod
// adoptable; killing it too (its pid from the supervisor's state file)
// leaves the pod to recovery, as before issue 30. Returns the holder's
// pid, 0 when there was none.
inline pid_t EndKeptHolder(const std::filesystem::path& pod_state_dir) {
  std::ifstream in(pod_state_dir / "supervisor-state.json");
  auto state = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!state.is_object() || !state.contains("sandbox")) return 0;
  const pid_t pid = state["sandbox"].value("pid", 0);
  if (pid <= 0 || ::kill(pid, SIGKILL) != 0) return 0;
  for (int i = 0; i < 500 && ::kill(pid, 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pid;
}

}  // namespace podvisor::e2e
