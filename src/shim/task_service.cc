#include "shim/task_service.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>

#include <nlohmann/json.hpp>
#include "common/file_io.h"
#include "common/log.h"
#include "common/pod_dir.h"

#include "cgroups/mode.h"
#include "events_task.pb.h"
#include "loading/pod_loading.h"
#include "podvisor_version.h"
#include "process/spawn.h"
#include "shim/events_follower.h"
#include "shim/rootfs.h"
#include "shim/task_cgroup.h"
#include "shim/task_util.h"
#include "task_shim.pb.h"

namespace podvisor::shim {

namespace task = containerd::task::v2;
namespace events = containerd::events;
using TaskStatus = containerd::v1::types::Status;

namespace {

std::map<std::string, std::string> ReadAnnotations(const std::filesystem::path& config) {
  std::map<std::string, std::string> out;
  std::ifstream in(config);
  if (!in) return out;
  auto json = nlohmann::json::parse(in, nullptr, false);
  if (json.is_discarded() || !json.is_object()) return out;
  auto it = json.find("annotations");
  if (it == json.end() || !it->is_object()) return out;
  for (const auto& [key, value] : it->items()) {
    if (value.is_string()) out[key] = value.get<std::string>();
  }
  return out;
}

// The Create error containerd shows for an invalid pod: the problems as
// `podvisor validate` prints them, at most ten of them (a reply, not a
// log).
std::string InvalidPodMessage(const loading::LoadedPod& loaded) {
  if (loaded.problems.empty()) {
    std::string why = loaded.messages.empty() ? "it could not be read" : loaded.messages.back();
    return "the bundle's pod could not be loaded: " + why;
  }
  constexpr std::size_t kShown = 10;
  std::string message = "the bundle's pod is not valid: ";
  for (std::size_t i = 0; i < loaded.problems.size() && i < kShown; ++i) {
    if (i > 0) message += "; ";
    message += loaded.problems[i];
  }
  if (loaded.problems.size() > kShown) {
    message += "; and " + std::to_string(loaded.problems.size() - kShown) + " more";
  }
  return message;
}

}  // namespace

Status WriteShimRecord(const ShimPaths& paths, const ShimRecord& record) {
  nlohmann::json json = {{"pod", record.pod},
                         {"supervisorPid", record.supervisor_pid},
                         {"cgroupParent", record.cgroup_parent},
                         {"taskCgroup", record.task_cgroup}};
  // Unsynced: the record lives under containerd's /run state and names
  // processes that a reboot ends.
  return WriteFileAtomic(paths.RecordFile(), json.dump() + "\n", 0644, Durability::kUnsynced);
}

Result<ShimRecord> ReadShimRecord(const ShimPaths& paths) {
  std::ifstream in(paths.RecordFile());
  if (!in) return Error::FromErrno("reading " + paths.RecordFile().string());
  auto json = nlohmann::json::parse(in, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    return Error(paths.RecordFile().string() + ": not a JSON object");
  }
  ShimRecord record;
  // A record of the wrong types is an error, never an exception: `delete`
  // must not die of a damaged file.
  try {
    record.pod = json.value("pod", "");
    record.supervisor_pid = json.value("supervisorPid", 0);
    record.cgroup_parent = json.value("cgroupParent", "");
    record.task_cgroup = json.value("taskCgroup", "");
  } catch (const nlohmann::json::exception& e) {
    return Error(paths.RecordFile().string() + ": " + e.what());
  }
  return record;
}

TaskService::TaskService(supervisor::loop::EventLoop& loop, ShimArgs args,
                         std::filesystem::path bundle, std::function<void()> on_shutdown)
    : loop_(loop),
      args_(std::move(args)),
      paths_{std::move(bundle)},
      on_shutdown_(std::move(on_shutdown)),
      publisher_(loop, args_.publish_binary, args_.address, args_.ns) {}

TaskService::~TaskService() {
  for (auto& [id, p] : processes_) {
    if (p.pidfd.valid()) loop_.Remove(p.pidfd.get());
  }
}

void TaskService::Handle(const RpcRequest& request, const Reply& reply) {
  if (request.service != "containerd.task.v2.Task") {
    reply.Fail(RpcCode::kUnimplemented, "service " + request.service);
    return;
  }
  using Method = void (TaskService::*)(const std::string&, const Reply&);
  static const std::map<std::string, Method> kMethods = {
      {"Create", &TaskService::Create},     {"Start", &TaskService::Start},
      {"State", &TaskService::State},       {"Wait", &TaskService::Wait},
      {"Kill", &TaskService::Kill},         {"Delete", &TaskService::Delete},
      {"Exec", &TaskService::Exec},         {"Pids", &TaskService::Pids},
      {"Stats", &TaskService::Stats},       {"Connect", &TaskService::Connect},
      {"Shutdown", &TaskService::Shutdown},
  };
  // What has no meaning for a pod, and why (containerd turns
  // UNIMPLEMENTED into its ErrNotImplemented).
  static const std::map<std::string, std::string> kNotImplemented = {
      {"Pause",
       "a pod cannot be paused: podvisor supervises it, and a frozen pod "
       "would fail its own probes"},
      {"Resume", "a pod cannot be paused, so there is nothing to resume"},
      {"Checkpoint", "podvisor does not checkpoint pods"},
      {"Update", "a pod's resources are its manifest's (S10.4); they do not change while it runs"},
      {"ResizePty", "a pod has no terminal: its containers log to files (podvisor logs)"},
  };
  if (auto it = kMethods.find(request.method); it != kMethods.end()) {
    (this->*(it->second))(request.payload, reply);
    return;
  }
  if (request.method == "CloseIO") {
    // Nothing to close: the shim hands the fifos to the processes and keeps
    // no copy, so the writer's own close already reaches them.
    reply.Ok(google::protobuf::Empty());
    return;
  }
  if (auto it = kNotImplemented.find(request.method); it != kNotImplemented.end()) {
    reply.Fail(RpcCode::kUnimplemented, request.method + ": " + it->second);
    return;
  }
  reply.Fail(RpcCode::kUnimplemented, "method " + request.method);
}

TaskProcess* TaskService::Find(const std::string& id, const std::string& exec_id,
                               const Reply& reply) {
  auto it = processes_.find(exec_id);
  if (!created_ || id != args_.id || it == processes_.end()) {
    reply.Fail(RpcCode::kNotFound,
               (exec_id.empty() ? "task " + id : "exec " + exec_id) + ": not found");
    return nullptr;
  }
  return &it->second;
}

void TaskService::Create(const std::string& payload, const Reply& reply) {
  task::CreateTaskRequest req;
  if (!ParseRequest(req, payload, reply)) return;
  if (created_) {
    reply.Fail(RpcCode::kAlreadyExists, "task " + req.id() + ": already exists");
    return;
  }
  if (req.terminal()) {
    reply.Fail(RpcCode::kUnimplemented,
               "a pod has no terminal: its containers log to files; run the task without -t");
    return;
  }
  if (!req.checkpoint().empty()) {
    reply.Fail(RpcCode::kUnimplemented, "podvisor does not restore checkpoints");
    return;
  }
  std::vector<RootfsMount> mounts;
  for (const auto& m : req.rootfs()) {
    mounts.push_back({m.type(), m.source(), {m.options().begin(), m.options().end()}});
  }
  if (auto mounted = MountRootfs(mounts, paths_.Rootfs()); !mounted) {
    reply.Fail(RpcCode::kInternal, mounted.error().message());
    return;
  }
  auto fail = [&](RpcCode code, const std::string& message) {
    (void)UnmountRootfs(paths_.Rootfs());
    log::Error("create {}: {}", req.id(), message);
    reply.Fail(code, message);
  };
  std::error_code ec;
  if (!std::filesystem::exists(paths_.Rootfs() / "pod.yaml", ec) &&
      !std::filesystem::exists(paths_.Rootfs() / "pod.json", ec)) {
    fail(RpcCode::kInvalidArgument,
         "the image is not a podvisor bundle: no pod.yaml or pod.json at the root of its layer "
         "(podvisor pack makes one)");
    return;
  }
  // The pod's name, and its validity, before anything runs: `run` would
  // refuse an invalid pod too, but as an exit after Start. containerd gets
  // the problems themselves (ctr prints them); the shim's log (containerd's
  // own log) gets every line, warnings included.
  auto loaded = loading::LoadPod(paths_.Rootfs(), /*check_images=*/true);
  for (const std::string& line : loaded.messages) log::Info("task {}: {}", req.id(), line);
  if (!loaded.ok()) {
    fail(loaded.failure == loading::LoadFailure::kInvalid ? RpcCode::kInvalidArgument
                                                          : RpcCode::kFailedPrecondition,
         InvalidPodMessage(loaded));
    return;
  }
  annotations_ = ReadAnnotations(paths_.bundle / InstanceFile::kConfig);
  record_.pod = loaded.pod.metadata.name;
  // Each task its own cgroup: two tasks may run pods of one name, and
  // recovery after a SIGKILLed shim kills whatever is in the pod's cgroup.
  auto annotated = annotations_.find("podvisor.cgroup-parent");
  CgroupChoice cgroup =
      ChooseCgroup(ReadCgroupsPath(paths_.bundle / InstanceFile::kConfig),
                   cgroups::DetectCgroups().mode == cgroups::CgroupMode::kUnified,
                   annotated == annotations_.end() ? "" : annotated->second, args_.ns, args_.id);
  record_.cgroup_parent = cgroup.cgroup_parent;
  record_.task_cgroup = cgroup.task_cgroup;
  if (!cgroup.note.empty()) log::Info("task {}: {}", req.id(), cgroup.note);
  std::filesystem::create_directories(paths_.Dir(), ec);
  if (auto written = WriteShimRecord(paths_, record_); !written) {
    fail(RpcCode::kInternal, written.error().message());
    return;
  }
  TaskProcess& init = processes_[""];
  init.stdin_path = req.stdin();
  init.stdout_path = req.stdout();
  init.stderr_path = req.stderr();
  created_ = true;

  events::TaskCreate event;
  event.set_container_id(req.id());
  event.set_bundle(req.bundle());
  *event.mutable_rootfs() = req.rootfs();
  event.mutable_io()->set_stdin(req.stdin());
  event.mutable_io()->set_stdout(req.stdout());
  event.mutable_io()->set_stderr(req.stderr());
  publisher_.Publish("/tasks/create", event);
  log::Info("task {}: pod {} created from {}", req.id(), record_.pod, paths_.Rootfs().string());
  reply.Ok(task::CreateTaskResponse());
}

std::vector<std::string> TaskService::SupervisorArgv() const {
  std::error_code ec;
  std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  std::vector<std::string> argv = {self,          "run",
                                   "--state-dir", paths_.StateDir().string(),
                                   "--log-dir",   paths_.LogDir().string()};
  if (auto it = annotations_.find("podvisor.network"); it != annotations_.end()) {
    argv.insert(argv.end(), {"--network", it->second});
  }
  if (!record_.cgroup_parent.empty()) {
    argv.insert(argv.end(), {"--cgroup-parent", record_.cgroup_parent});
  }
  if (auto it = annotations_.find("podvisor.runtime"); it != annotations_.end()) {
    argv.insert(argv.end(), {"--runtime", it->second});
  }
  argv.push_back(paths_.Rootfs().string());
  return argv;
}

void TaskService::Start(const std::string& payload, const Reply& reply) {
  task::StartRequest req;
  if (!ParseRequest(req, payload, reply)) return;
  TaskProcess* process = Find(req.id(), req.exec_id(), reply);
  if (process == nullptr) return;
  if (process->state != ProcessState::kCreated) {
    reply.Fail(RpcCode::kFailedPrecondition,
               (req.exec_id().empty() ? "task " : "exec ") + req.id() + " was started already");
    return;
  }
  if (req.exec_id().empty()) {
    StartSupervisor(reply);
  } else {
    StartExec(*process, reply, loop_.Now() + std::chrono::seconds(30));
  }
}

void TaskService::StartSupervisor(const Reply& reply) {
  TaskProcess& init = processes_[""];
  auto out = OpenStdout(init.stdout_path);
  auto err = OpenStdout(init.stderr_path);
  if (!out || !err) {
    reply.Fail(RpcCode::kInternal, (!out ? out.error() : err.error()).message());
    return;
  }
  // The supervisor starts inside the task's cgroup (task_cgroup.h): it
  // moves itself in before exec, so `run` finds itself there from its
  // first line, and nothing it starts is ever outside.
  Fd task_procs;
  if (!record_.task_cgroup.empty()) {
    auto procs = CreateTaskCgroup(cgroups::DetectCgroups().v2_mount, record_.task_cgroup);
    if (!procs) {
      reply.Fail(RpcCode::kFailedPrecondition, procs.error().message());
      return;
    }
    task_procs = std::move(*procs);
  }
  const int procs_fd = task_procs.valid() ? task_procs.get() : -1;
  auto child = process::Spawn({.argv = SupervisorArgv(),
                               .cwd = paths_.bundle.string(),
                               .stdout_fd = DescriptorOrNull(*out),
                               .stderr_fd = DescriptorOrNull(*err),
                               .pre_exec = [procs_fd]() -> int {
                                 // "0" is the writing process.
                                 if (procs_fd < 0 || ::write(procs_fd, "0", 1) == 1) return 0;
                                 return errno;
                               }});
  if (!child) {
    reply.Fail(
        RpcCode::kInternal,
        "starting podvisor run" +
            (record_.task_cgroup.empty() ? "" : " in the task cgroup " + record_.task_cgroup) +
            ": " + child.error().message());
    return;
  }
  init.pid = child->pid();
  init.pidfd = child->Release();
  init.state = ProcessState::kRunning;
  record_.supervisor_pid = init.pid;
  if (auto written = WriteShimRecord(paths_, record_); !written) {
    log::Warn("{}", written.error().message());
  }
  Watch(init);
  log::Info("task {}: podvisor run of pod {} started, pid {}", args_.id, record_.pod, init.pid);
  auto follower = EventsFollower::Start(loop_, paths_.StateDir(), record_.pod,
                                        [this](const std::string& line) { OnPodEvent(line); });
  if (follower) {
    events_ = std::move(*follower);
  } else {
    // Only the live /tasks/oom depends on it; the pod's end still reports one.
    log::Warn("task {}: not following the pod's events: {}", args_.id, follower.error().message());
  }
  AwaitControlSocket(reply);
}

// Start answers once the supervisor serves its control socket (it does
// before any container is created), so that a Kill or an Exec right after
// Start reaches the pod rather than a supervisor still setting up. Checked
// on the loop's timer every 20 ms; a supervisor that ends first (an invalid
// pod, exit 2 or 3) answers Start too, and its exit follows.
void TaskService::AwaitControlSocket(const Reply& reply) {
  TaskProcess& init = processes_[""];
  std::error_code ec;
  const bool listening =
      std::filesystem::exists(PodDir(paths_.StateDir(), record_.pod).ControlSocket(), ec) &&
      AskPod(R"({"op":"summary"})").ok();
  if (!listening && init.state == ProcessState::kRunning) {
    loop_.AddTimer(loop_.Now() + std::chrono::milliseconds(20),
                   [this, reply] { AwaitControlSocket(reply); });
    return;
  }
  control_ready_ = listening;
  events::TaskStart event;
  event.set_container_id(args_.id);
  event.set_pid(static_cast<uint32_t>(init.pid));
  publisher_.Publish("/tasks/start", event);
  if (pending_stop_ && listening) StopPod(*pending_stop_);
  pending_stop_.reset();
  task::StartResponse response;
  response.set_pid(static_cast<uint32_t>(init.pid));
  reply.Ok(response);
}

void TaskService::Watch(TaskProcess& process) {
  std::string exec_id = process.exec_id;
  auto added = loop_.Add(process.pidfd.get(), EPOLLIN,
                         [this, exec_id](uint32_t) { OnProcessExit(exec_id); });
  if (!added) log::Error("watching pid {}: {}", process.pid, added.error().message());
}

void TaskService::OnProcessExit(const std::string& exec_id) {
  auto it = processes_.find(exec_id);
  if (it == processes_.end()) return;
  TaskProcess& p = it->second;
  loop_.Remove(p.pidfd.get());
  siginfo_t info{};
  if (waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(p.pidfd.get()), &info, WEXITED) !=
      0) {
    log::Error("waiting for pid {}: {}", p.pid, std::strerror(errno));
    info.si_code = CLD_KILLED;
    info.si_status = SIGKILL;
  }
  p.pidfd.Reset();
  // A signal death is 128 + signal, as containerd's shims and shells say.
  p.exit_status =
      static_cast<uint32_t>(info.si_code == CLD_EXITED ? info.si_status : 128 + info.si_status);
  Finished(p);
}

// A line of the pod's events.jsonl, as the supervisor writes it: an
// OOMKilled container is a /tasks/oom of the task, once per kill.
void TaskService::OnPodEvent(const std::string& line) {
  auto event = nlohmann::json::parse(line, nullptr, false);
  if (event.is_discarded() || !event.is_object()) return;
  auto reason = event.find("reason");
  if (reason != event.end() && reason->is_string() && *reason == "OOMKilled") PublishOom();
}

void TaskService::PublishOom() {
  events::TaskOOM oom;
  oom.set_container_id(args_.id);
  publisher_.Publish("/tasks/oom", oom);
}

void TaskService::Finished(TaskProcess& p) {
  const std::string exec_id = p.exec_id;
  p.exited_at_ns = WallNowNs();
  p.state = ProcessState::kStopped;
  if (exec_id.empty()) {
    log::Info("task {}: podvisor run of pod {} exited with {}", args_.id, record_.pod,
              p.exit_status);
    if (events_) {
      events_->Drain();
      events_.reset();
    } else if (PodWasOomKilled()) {
      // The follower could not start: one /tasks/oom at the end.
      PublishOom();
    }
  }
  events::TaskExit event;
  event.set_container_id(args_.id);
  event.set_id(exec_id.empty() ? args_.id : exec_id);
  event.set_pid(static_cast<uint32_t>(p.pid));
  event.set_exit_status(p.exit_status);
  SetExitedAt(event.mutable_exited_at(), p.exited_at_ns);
  publisher_.Publish("/tasks/exit", event);
  task::WaitResponse response;
  response.set_exit_status(p.exit_status);
  SetExitedAt(response.mutable_exited_at(), p.exited_at_ns);
  for (const auto& waiter : p.waiters) waiter.Ok(response);
  p.waiters.clear();
}

void TaskService::State(const std::string& payload, const Reply& reply) {
  task::StateRequest req;
  if (!ParseRequest(req, payload, reply)) return;
  TaskProcess* p = Find(req.id(), req.exec_id(), reply);
  if (p == nullptr) return;
  task::StateResponse response;
  response.set_id(req.id());
  response.set_exec_id(req.exec_id());
  response.set_bundle(paths_.bundle.string());
  response.set_pid(static_cast<uint32_t>(p->pid));
  static const std::map<ProcessState, TaskStatus> kStatus = {
      {ProcessState::kCreated, containerd::v1::types::CREATED},
      {ProcessState::kRunning, containerd::v1::types::RUNNING},
      {ProcessState::kStopped, containerd::v1::types::STOPPED}};
  response.set_status(kStatus.at(p->state));
  response.set_stdin(p->stdin_path);
  response.set_stdout(p->stdout_path);
  response.set_stderr(p->stderr_path);
  response.set_exit_status(p->exit_status);
  if (p->state == ProcessState::kStopped) {
    SetExitedAt(response.mutable_exited_at(), p->exited_at_ns);
  }
  reply.Ok(response);
}

void TaskService::Wait(const std::string& payload, const Reply& reply) {
  task::WaitRequest req;
  if (!ParseRequest(req, payload, reply)) return;
  TaskProcess* p = Find(req.id(), req.exec_id(), reply);
  if (p == nullptr) return;
  if (p->state != ProcessState::kStopped) {
    p->waiters.push_back(reply);  // answered by OnProcessExit
    return;
  }
  task::WaitResponse response;
  response.set_exit_status(p->exit_status);
  SetExitedAt(response.mutable_exited_at(), p->exited_at_ns);
  reply.Ok(response);
}

void TaskService::Connect(const std::string& payload, const Reply& reply) {
  task::ConnectRequest req;
  if (!ParseRequest(req, payload, reply)) return;
  task::ConnectResponse response;
  response.set_shim_pid(static_cast<uint32_t>(getpid()));
  if (auto it = processes_.find(""); it != processes_.end()) {
    response.set_task_pid(static_cast<uint32_t>(it->second.pid));
  }
  response.set_version("podvisor " PODVISOR_VERSION);
  reply.Ok(response);
}

void TaskService::Shutdown(const std::string& payload, const Reply& reply) {
  task::ShutdownRequest req;
  if (!ParseRequest(req, payload, reply)) return;
  // containerd asks after every Delete; a task not deleted yet keeps its
  // shim (containerd's runc shim answers the same way).
  if (created_ && !deleted_ && !req.now()) {
    reply.Ok(google::protobuf::Empty());
    return;
  }
  reply.Ok(google::protobuf::Empty());
  on_shutdown_();
}

}  // namespace podvisor::shim
