// The Task calls that reach into the running pod: Kill, Delete, Exec and
// the Start of an exec, Pids and Stats (task_service.h).
#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <map>
#include <set>

#include <google/protobuf/any.pb.h>
#include <nlohmann/json.hpp>
#include "common/log.h"
#include "common/pod_dir.h"

#include "cgroups/mode.h"
#include "cgroups_v2_metrics.pb.h"
#include "events_task.pb.h"
#include "process/spawn.h"
#include "shim/cleanup.h"
#include "shim/task_service.h"
#include "shim/task_util.h"
#include "supervisor/control/control_server.h"
#include "task_shim.pb.h"

namespace podvisor::shim {

namespace task = containerd::task::v2;
namespace events = containerd::events;

namespace {

uint64_t ReadNumber(const std::filesystem::path& file, const std::string& key = "") {
  std::ifstream in(file);
  std::string word;
  if (key.empty()) {
    in >> word;
    if (word == "max") return 0;
  } else {
    std::string name;
    while (in >> name >> word) {
      if (name == key) break;
      word.clear();
    }
  }
  try {
    return word.empty() ? 0 : std::stoull(word);
  } catch (const std::exception&) {
    return 0;
  }
}

// Every process below `root` in the process tree (a pod's processes are
// the supervisor's descendants: it is their subreaper), read from /proc.
std::vector<int> Descendants(int root) {
  std::multimap<int, int> children;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return {};
  while (dirent* e = readdir(dir)) {
    int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    std::getline(in, stat);
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2) {
      children.emplace(ppid, pid);
    }
  }
  closedir(dir);
  std::vector<int> out;
  std::vector<int> todo = {root};
  while (!todo.empty()) {
    int pid = todo.back();
    todo.pop_back();
    auto [begin, end] = children.equal_range(pid);
    for (auto it = begin; it != end; ++it) {
      out.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return out;
}

}  // namespace

RpcCode RpcCodeOf(supervisor::control::ControlCode code) {
  using supervisor::control::ControlCode;
  switch (code) {
    case ControlCode::kInvalidArgument:
      return RpcCode::kInvalidArgument;
    case ControlCode::kNotFound:
      return RpcCode::kNotFound;
    case ControlCode::kUnavailable:
      return RpcCode::kUnavailable;
    case ControlCode::kUnimplemented:
      return RpcCode::kUnimplemented;
    case ControlCode::kInternal:
      return RpcCode::kInternal;
    case ControlCode::kFailedPrecondition:
    case ControlCode::kPermissionDenied:
    case ControlCode::kUnknown:
      break;
  }
  return RpcCode::kFailedPrecondition;
}

Result<std::string> TaskService::AskPod(
    const std::string& request_json,
    std::optional<supervisor::control::ControlError>* refusal) const {
  if (refusal != nullptr) refusal->reset();
  auto reply = supervisor::control::ControlRequest(
      PodDir(paths_.StateDir(), record_.pod).ControlSocket(), nlohmann::json::parse(request_json),
      std::chrono::seconds(5));
  if (!reply) return reply.take_error();
  if (auto error = supervisor::control::ControlErrorOf(*reply)) {
    Error refused(error->message);
    if (refusal != nullptr) *refusal = std::move(*error);
    return refused;
  }
  return reply->dump();
}

std::string TaskService::ExecContainer() const {
  if (auto it = annotations_.find("podvisor.container"); it != annotations_.end()) {
    return it->second;
  }
  auto status = AskPod(R"({"op":"status"})");
  if (!status) return "";
  // The first container of the pod's spec; anything else in the answer
  // (it is the supervisor's, but still input) is no container.
  auto pod = nlohmann::json::parse(*status, nullptr, false);
  const auto* spec = pod.is_object() && pod.contains("spec") ? &pod["spec"] : nullptr;
  if (spec == nullptr || !spec->is_object() || !spec->contains("containers")) return "";
  const auto& containers = (*spec)["containers"];
  if (!containers.is_array() || containers.empty() || !containers[0].is_object()) return "";
  auto name = containers[0].find("name");
  return name != containers[0].end() && name->is_string() ? name->get<std::string>() : "";
}

bool TaskService::PodWasOomKilled() const {
  std::ifstream in(PodDir(paths_.StateDir(), record_.pod).EventsFile());
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(R"("reason":"OOMKilled")") != std::string::npos) return true;
  }
  return false;
}

std::filesystem::path TaskService::PodCgroup() const {
  cgroups::CgroupInfo cg = cgroups::DetectCgroups();
  if (cg.v2_mount.empty()) return {};
  // The whole task, supervisor included, as runc's shim reports its
  // container's cgroup.
  if (!record_.task_cgroup.empty()) return cg.v2_mount / record_.task_cgroup.substr(1);
  std::string parent = EffectiveCgroupParent(record_);
  if (parent == "self") return {};
  return cg.v2_mount / parent.substr(parent.find_first_not_of('/')) / record_.pod;
}

void TaskService::Kill(const std::string& payload, const Reply& reply) {
  task::KillRequest req;
  if (!ParseRequest(req, payload, reply)) return;
  TaskProcess* p = Find(req.id(), req.exec_id(), reply);
  if (p == nullptr) return;
  const int signo = static_cast<int>(req.signal());
  if (p->state == ProcessState::kStopped) {
    reply.Fail(RpcCode::kNotFound, "process already finished");
    return;
  }
  if (p->state == ProcessState::kCreated) {
    // Nothing runs yet: the process ends here, killed by the signal.
    p->exit_status = 128 + static_cast<uint32_t>(signo);
    reply.Ok(google::protobuf::Empty());
    Finished(*p);
    return;
  }
  if (!req.exec_id().empty() || (signo != SIGTERM && signo != SIGINT && signo != SIGKILL)) {
    // An exec's process, or a signal that means nothing to a pod (the
    // supervisor logs and ignores SIGHUP, SIGUSR1...): delivered as it is.
    if (syscall(SYS_pidfd_send_signal, p->pidfd.get(), signo, nullptr, 0) != 0) {
      reply.Fail(RpcCode::kNotFound, "process already finished");
      return;
    }
    reply.Ok(google::protobuf::Empty());
    return;
  }
  if (!control_ready_) {
    // Start has not answered yet: the supervisor is setting up and does not
    // handle signals before its loop exists. The stop waits for it.
    pending_stop_ = signo;
    reply.Ok(google::protobuf::Empty());
    return;
  }
  StopPod(signo);
  reply.Ok(google::protobuf::Empty());
}

void TaskService::StopPod(int signo) {
  TaskProcess& init = processes_[""];
  if (init.state != ProcessState::kRunning) return;
  nlohmann::json stop = {{"op", "stop"}, {"wait", false}};
  if (auto it = annotations_.find("podvisor.stop-reason"); it != annotations_.end()) {
    stop["reason"] = it->second;
  }
  if (signo == SIGKILL) stop["grace"] = 0;
  auto stopped = AskPod(stop.dump());
  if (!stopped) {
    // The control socket broke (the supervisor is ending, or hangs): its
    // SIGTERM means the same stop, without the reason.
    log::Warn("task {}: stop through the control socket: {}; sending SIGTERM", args_.id,
              stopped.error().message());
    syscall(SYS_pidfd_send_signal, init.pidfd.get(), SIGTERM, nullptr, 0);
  }
}

void TaskService::Delete(const std::string& payload, const Reply& reply) {
  task::DeleteRequest req;
  if (!ParseRequest(req, payload, reply)) return;
  TaskProcess* p = Find(req.id(), req.exec_id(), reply);
  if (p == nullptr) return;
  if (p->state == ProcessState::kRunning) {
    reply.Fail(
        RpcCode::kFailedPrecondition,
        (req.exec_id().empty() ? "task " + req.id() + ": the pod" : "exec " + req.exec_id()) +
            " is still running: kill it first");
    return;
  }
  task::DeleteResponse response;
  response.set_pid(static_cast<uint32_t>(p->pid));
  response.set_exit_status(p->exit_status);
  SetExitedAt(response.mutable_exited_at(), p->exited_at_ns);
  if (!req.exec_id().empty()) {
    processes_.erase(req.exec_id());
    reply.Ok(response);
    return;
  }
  auto cleaned = CleanupTask(paths_);
  if (!cleaned) {
    reply.Fail(RpcCode::kInternal, cleaned.error().message());
    return;
  }
  if (!cleaned->recovered.empty()) {
    log::Warn("task {}: the pod left {}", args_.id, cleaned->recovered);
  }
  deleted_ = true;
  events::TaskDelete event;
  event.set_container_id(args_.id);
  event.set_pid(static_cast<uint32_t>(p->pid));
  event.set_exit_status(p->exit_status);
  *event.mutable_exited_at() = response.exited_at();
  publisher_.Publish("/tasks/delete", event);
  reply.Ok(response);
}

void TaskService::Exec(const std::string& payload, const Reply& reply) {
  task::ExecProcessRequest req;
  if (!ParseRequest(req, payload, reply)) return;
  TaskProcess* init = Find(req.id(), "", reply);
  if (init == nullptr) return;
  if (req.exec_id().empty() || processes_.count(req.exec_id()) != 0) {
    reply.Fail(RpcCode::kAlreadyExists, "exec " + req.exec_id() + ": already exists");
    return;
  }
  if (init->state != ProcessState::kRunning) {
    reply.Fail(RpcCode::kFailedPrecondition, "task " + req.id() + ": the pod is not running");
    return;
  }
  if (req.terminal()) {
    reply.Fail(RpcCode::kUnimplemented,
               "exec with a terminal: use podvisor exec -t on the host; the shim runs execs "
               "without one");
    return;
  }
  // The process is an OCI runtime-spec Process as JSON (containerd's typeurl
  // of specs.Process); only its args are used: the container's own
  // environment, user and working directory are the pod's.
  auto spec = nlohmann::json::parse(req.spec().value(), nullptr, false);
  std::vector<std::string> command;
  if (spec.is_object() && spec.contains("args") && spec["args"].is_array()) {
    for (const auto& a : spec["args"]) {
      if (a.is_string()) command.push_back(a.get<std::string>());
    }
  }
  if (command.empty()) {
    reply.Fail(RpcCode::kInvalidArgument, "exec " + req.exec_id() + ": no args in its process");
    return;
  }
  TaskProcess& p = processes_[req.exec_id()];
  p.exec_id = req.exec_id();
  p.stdin_path = req.stdin();
  p.stdout_path = req.stdout();
  p.stderr_path = req.stderr();
  p.args = std::move(command);
  events::TaskExecAdded event;
  event.set_container_id(args_.id);
  event.set_exec_id(req.exec_id());
  publisher_.Publish("/tasks/exec-added", event);
  reply.Ok(google::protobuf::Empty());
}

void TaskService::StartExec(TaskProcess& process, const Reply& reply,
                            std::chrono::steady_clock::time_point exec_deadline) {
  std::string container = ExecContainer();
  if (container.empty()) {
    reply.Fail(RpcCode::kFailedPrecondition, "exec: the pod's status names no container");
    return;
  }
  nlohmann::json request = {{"op", "exec"}, {"container", container}, {"args", process.args}};
  std::optional<supervisor::control::ControlError> refusal;
  auto answer = AskPod(request.dump(), &refusal);
  // FailedPrecondition: the container exists but is not running.
  const bool not_yet =
      refusal && refusal->code == supervisor::control::ControlCode::kFailedPrecondition;
  if (not_yet && processes_[""].state == ProcessState::kRunning && loop_.Now() < exec_deadline) {
    // The pod is up but the container not (yet): init containers first,
    // or a restart's backoff. Retried on the loop's timer, 50 ms apart.
    const std::string exec_id = process.exec_id;
    loop_.AddTimer(loop_.Now() + std::chrono::milliseconds(50),
                   [this, exec_id, reply, exec_deadline] {
                     auto it = processes_.find(exec_id);
                     if (it == processes_.end() || it->second.state != ProcessState::kCreated) {
                       reply.Fail(RpcCode::kNotFound, "exec " + exec_id + ": gone");
                       return;
                     }
                     StartExec(it->second, reply, exec_deadline);
                   });
    return;
  }
  if (!answer) {
    // The supervisor's refusal by its code; a control socket that failed
    // is a pod not in a state to exec.
    reply.Fail(refusal ? RpcCodeOf(refusal->code) : RpcCode::kFailedPrecondition,
               "exec in container " + container + ": " + answer.error().message());
    return;
  }
  auto json = nlohmann::json::parse(*answer, nullptr, false);
  std::vector<std::string> argv;
  if (json.is_object() && json.contains("argv") && json["argv"].is_array()) {
    for (const auto& a : json["argv"]) {
      if (a.is_string()) argv.push_back(a.get<std::string>());
    }
  }
  if (argv.empty()) {
    reply.Fail(RpcCode::kInternal, "exec: the supervisor's answer has no argv");
    return;
  }
  auto in = OpenStdin(process.stdin_path);
  auto out = OpenStdout(process.stdout_path);
  auto err = OpenStdout(process.stderr_path);
  if (!in || !out || !err) {
    reply.Fail(RpcCode::kInternal, (!in ? in.error() : !out ? out.error() : err.error()).message());
    return;
  }
  auto child = process::Spawn({.argv = argv,
                               .stdin_fd = DescriptorOrNull(*in),
                               .stdout_fd = DescriptorOrNull(*out),
                               .stderr_fd = DescriptorOrNull(*err)});
  if (!child) {
    reply.Fail(RpcCode::kInternal, "exec: " + child.error().message());
    return;
  }
  process.pid = child->pid();
  process.pidfd = child->Release();
  process.state = ProcessState::kRunning;
  Watch(process);
  events::TaskExecStarted event;
  event.set_container_id(args_.id);
  event.set_exec_id(process.exec_id);
  event.set_pid(static_cast<uint32_t>(process.pid));
  publisher_.Publish("/tasks/exec-started", event);
  log::Info("task {}: exec {} in container {}: pid {}", args_.id, process.exec_id, container,
            process.pid);
  task::StartResponse response;
  response.set_pid(static_cast<uint32_t>(process.pid));
  reply.Ok(response);
}

void TaskService::Pids(const std::string& payload, const Reply& reply) {
  task::PidsRequest req;
  if (!ParseRequest(req, payload, reply)) return;
  TaskProcess* init = Find(req.id(), "", reply);
  if (init == nullptr) return;
  task::PidsResponse response;
  if (init->state == ProcessState::kRunning) {
    response.add_processes()->set_pid(static_cast<uint32_t>(init->pid));
    for (int pid : Descendants(init->pid)) {
      response.add_processes()->set_pid(static_cast<uint32_t>(pid));
    }
  }
  reply.Ok(response);
}

void TaskService::Stats(const std::string& payload, const Reply& reply) {
  task::StatsRequest req;
  if (!ParseRequest(req, payload, reply)) return;
  if (Find(req.id(), "", reply) == nullptr) return;
  std::filesystem::path cg = PodCgroup();
  std::error_code ec;
  if (cg.empty() || !std::filesystem::is_directory(cg, ec)) {
    reply.Fail(RpcCode::kNotFound, "the pod has no cgroup v2 directory (yet) to read stats from");
    return;
  }
  io::containerd::cgroups::v2::Metrics metrics;
  metrics.mutable_pids()->set_current(ReadNumber(cg / "pids.current"));
  metrics.mutable_pids()->set_limit(ReadNumber(cg / "pids.max"));
  metrics.mutable_cpu()->set_usage_usec(ReadNumber(cg / "cpu.stat", "usage_usec"));
  metrics.mutable_cpu()->set_user_usec(ReadNumber(cg / "cpu.stat", "user_usec"));
  metrics.mutable_cpu()->set_system_usec(ReadNumber(cg / "cpu.stat", "system_usec"));
  metrics.mutable_memory()->set_usage(ReadNumber(cg / "memory.current"));
  metrics.mutable_memory()->set_usage_limit(ReadNumber(cg / "memory.max"));
  metrics.mutable_memory()->set_anon(ReadNumber(cg / "memory.stat", "anon"));
  metrics.mutable_memory()->set_file(ReadNumber(cg / "memory.stat", "file"));
  metrics.mutable_memory_events()->set_oom(ReadNumber(cg / "memory.events", "oom"));
  metrics.mutable_memory_events()->set_oom_kill(ReadNumber(cg / "memory.events", "oom_kill"));
  task::StatsResponse response;
  response.mutable_stats()->set_type_url("io.containerd.cgroups.v2.Metrics");
  response.mutable_stats()->set_value(metrics.SerializeAsString());
  reply.Ok(response);
}

}  // namespace podvisor::shim
