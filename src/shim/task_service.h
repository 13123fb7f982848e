// containerd's Task service (runtime/v2/task/shim.proto) for one task that
// is one pod. The task's init process is `podvisor run` of the bundle the
// task's rootfs holds, a child of this shim: its exit code is the task's
// exit status (0 Succeeded, 1 Failed, 2/3 refused, docs/INTERFACE.md), its
// stdout and stderr (the supervisor's own log) go to the task's stdout and
// stderr. Everything else goes through the pod's control socket:
//   Kill(SIGTERM|SIGINT)  stop with the pod's grace, reason from the
//                         annotation podvisor.stop-reason
//   Kill(SIGKILL)         stop with grace 0 (every container still gets
//                         its stop signal and the 2 s floor, S5.5)
//   Exec + Start(exec)    the runtime's exec in the container named by the
//                         annotation podvisor.container (default: the
//                         pod's first container), through {"op":"exec"}
// docs/SHIM.md has the whole mapping, and what is NotImplemented and why.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/fd.h"
#include "shim/events_follower.h"
#include "shim/publisher.h"
#include "shim/shim_args.h"
#include "shim/ttrpc_server.h"
#include "supervisor/control/control_error.h"
#include "supervisor/loop/event_loop.h"

namespace podvisor::shim {

// The ttrpc status for the supervisor's refusal of a control request
// (supervisor/control/control_error.h), for containerd's errdefs. A code
// containerd has no better word for, or none (an older supervisor), is
// FailedPrecondition, what the shim answered before the codes.
RpcCode RpcCodeOf(supervisor::control::ControlCode code);

// What the shim keeps about its pod in BUNDLE/podvisor/shim.json, so that
// `delete` after a SIGKILLed shim finds the supervisor and the pod.
struct ShimRecord {
  std::string pod;            // the pod's name (its directory under state/)
  int supervisor_pid = 0;     // podvisor run, once started
  std::string cgroup_parent;  // what run was given: "self", or /podvisor/containerd/NS/ID
  std::string task_cgroup;    // the task's own cgroup (task_cgroup.h), "" when none
};

// BUNDLE/podvisor/{state,log,shim.json}
struct ShimPaths {
  std::filesystem::path bundle;
  std::filesystem::path Rootfs() const { return bundle / "rootfs"; }
  std::filesystem::path Dir() const { return bundle / "podvisor"; }
  std::filesystem::path StateDir() const { return Dir() / "state"; }
  std::filesystem::path LogDir() const { return Dir() / "log"; }
  std::filesystem::path RecordFile() const { return Dir() / "shim.json"; }
};
Status WriteShimRecord(const ShimPaths& paths, const ShimRecord& record);
Result<ShimRecord> ReadShimRecord(const ShimPaths& paths);

enum class ProcessState { kCreated, kRunning, kStopped };

struct TaskProcess {
  std::string exec_id;  // "" for the task's init (the supervisor)
  ProcessState state = ProcessState::kCreated;
  int pid = 0;
  Fd pidfd;
  uint32_t exit_status = 0;
  int64_t exited_at_ns = 0;  // wall clock, ns since the epoch
  std::string stdin_path, stdout_path, stderr_path;
  bool terminal = false;
  std::vector<std::string> args;  // an exec's command
  std::vector<Reply> waiters;
};

class TaskService {
 public:
  TaskService(supervisor::loop::EventLoop& loop, ShimArgs args, std::filesystem::path bundle,
              std::function<void()> on_shutdown);
  ~TaskService();

  void Handle(const RpcRequest& request, const Reply& reply);
  // No event is waiting to be published.
  bool idle() const { return publisher_.idle(); }

 private:
  void Create(const std::string& payload, const Reply& reply);
  void Start(const std::string& payload, const Reply& reply);
  void StartSupervisor(const Reply& reply);
  void AwaitControlSocket(const Reply& reply);
  // Waits up to `exec_deadline` for the container to run.
  void StartExec(TaskProcess& process, const Reply& reply,
                 std::chrono::steady_clock::time_point exec_deadline);
  // Kill(SIGTERM|SIGINT|SIGKILL) of the pod, through the control socket.
  void StopPod(int signo);
  void State(const std::string& payload, const Reply& reply);
  void Wait(const std::string& payload, const Reply& reply);
  void Kill(const std::string& payload, const Reply& reply);
  void Delete(const std::string& payload, const Reply& reply);
  void Exec(const std::string& payload, const Reply& reply);
  void Pids(const std::string& payload, const Reply& reply);
  void Stats(const std::string& payload, const Reply& reply);
  void Connect(const std::string& payload, const Reply& reply);
  void Shutdown(const std::string& payload, const Reply& reply);

  // The process of `exec_id` ("" = init), or a NotFound reply.
  TaskProcess* Find(const std::string& id, const std::string& exec_id, const Reply& reply);
  void Watch(TaskProcess& process);
  void OnProcessExit(const std::string& exec_id);
  // The process has ended with its exit_status: /tasks/exit, and waiters.
  void Finished(TaskProcess& process);
  // A request to the supervisor's control socket. The supervisor's refusal
  // is an Error, and its code goes to `*refusal` when given (nullopt for
  // an answer or a connection that failed).
  Result<std::string> AskPod(
      const std::string& request_json,
      std::optional<supervisor::control::ControlError>* refusal = nullptr) const;
  std::string ExecContainer() const;
  std::filesystem::path PodCgroup() const;
  // An OOMKilled event in the pod's events.jsonl.
  bool PodWasOomKilled() const;
  void OnPodEvent(const std::string& line);
  void PublishOom();
  std::vector<std::string> SupervisorArgv() const;

  supervisor::loop::EventLoop& loop_;
  ShimArgs args_;
  ShimPaths paths_;
  std::function<void()> on_shutdown_;
  Publisher publisher_;
  bool created_ = false;
  bool deleted_ = false;
  bool control_ready_ = false;       // the supervisor answered on its control socket
  std::optional<int> pending_stop_;  // a Kill that came before that
  ShimRecord record_;
  std::map<std::string, std::string> annotations_;  // of the task's OCI config.json
  std::map<std::string, TaskProcess> processes_;    // by exec id, "" = init
  std::unique_ptr<EventsFollower> events_;          // while the supervisor runs
};

}  // namespace podvisor::shim
