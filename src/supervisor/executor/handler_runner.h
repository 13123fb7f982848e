// HandlerRunner: runs one pod handler action (a hook's or a probe's) once,
// with a timeout, and reports (success, message) through one callback:
//
//   exec        inside the container instance, through InstanceExec (the
//               runtime's exec in the Executor, a fake in tests)
//   httpGet     through our HttpClient, from the pod's network namespace
//   grpc        one grpc.health.v1 Check through the same client (S7.1)
//   tcpSocket   a non-blocking connect by NetCheck, from the namespace
//   sleep       a timer on the loop (S14.14 clamps its seconds)
//
// What differs between hooks and probes is what the caller hands in: the
// use (a hook's or a probe's user agent and verdict on an HTTP answer,
// S7.2 and S8.2), the timeout (hooks have none) and the stop reason's
// environment variable or header (S6.2). What a hook or probe does with
// the outcome (events, the Lifecycle, the next run) is the caller's.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "pod/model.h"
#include "supervisor/loop/event_loop.h"
#include "supervisor/probes/http_client.h"
#include "supervisor/probes/net_check.h"

namespace podvisor::supervisor::executor {

// The narrow seam to run a command inside one container instance.
class InstanceExec {
 public:
  using Done = std::function<void(bool ok, std::string output)>;
  virtual ~InstanceExec() = default;
  // Runs `args`, with `extra_env` added to the container's environment;
  // `done` runs once, later, from the loop, with success (exit 0 in time)
  // and the output. `name` ("postStart", "liveness") tells the execs of an
  // instance apart. Returns the exec's pid, for Kill, or 0 when it could
  // not start (`done` is then queued with the reason).
  virtual pid_t Start(std::string_view name, const std::vector<std::string>& args,
                      const std::vector<std::string>& extra_env, std::optional<Duration> timeout,
                      Done done) = 0;
  // Kills an exec that Start returned, if it still runs.
  virtual void Kill(pid_t pid) = 0;
};

// A hook's or a probe's: the user agent of httpGet and how its answer is
// judged (a probe wants 200-399, a hook any answer).
enum class HandlerUse { kHook, kProbe };

// One run's input. `name`, `handler` and `container` are read during
// HandlerRunner::Start only, so they may point at the caller's locals.
struct HandlerCall {
  HandlerUse use = HandlerUse::kProbe;
  std::string_view name;  // as InstanceExec::Start's
  const pod::Handler* handler = nullptr;
  const pod::Container* container = nullptr;  // resolves named ports
  Duration timeout{0};                        // zero: none
  std::string netns;                          // the pod's network namespace file; "": ours
  std::unique_ptr<InstanceExec> exec;         // for an exec action
  std::vector<std::string> exec_env;          // added to an exec's environment
  std::vector<std::pair<std::string, std::string>> http_headers;  // added to httpGet's
};

struct HandlerOutcome {
  bool success = false;
  std::string message;  // the output, or why it failed
  // An httpGet probe succeeded on a redirect to another host, which the
  // kubelet records as a ProbeWarning (S7.2); `message` says which.
  bool warning = false;
};

// One handler run in flight. Destroying it cancels it: the callback never
// runs; an exec still running is left to end by itself (Abort kills it).
class HandlerRun {
 public:
  using Done = std::function<void(const HandlerOutcome&)>;
  ~HandlerRun();
  HandlerRun(const HandlerRun&) = delete;
  HandlerRun& operator=(const HandlerRun&) = delete;
  // Cancels the run and kills its exec, if one runs.
  void Abort();

 private:
  friend class HandlerRunner;
  HandlerRun(loop::EventLoop& loop, Done done) : loop_(loop), done_(std::move(done)) {}
  // Runs the callback, at most once; the caller may destroy the run in it.
  void Finish(const HandlerOutcome& outcome);
  // Finishes from the loop, never inside HandlerRunner::Start.
  void FinishSoon(HandlerOutcome outcome, Duration after = Duration::zero());

  loop::EventLoop& loop_;
  Done done_;
  std::unique_ptr<InstanceExec> exec_;
  pid_t exec_pid_ = 0;
  loop::EventLoop::TimerId timer_ = 0;  // a sleep, or an outcome known at once
  std::unique_ptr<probes::NetCheck> check_;
  std::unique_ptr<probes::HttpTransfer> http_;
  // Cleared when the run goes: the exec's callback may come later.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

class HandlerRunner {
 public:
  explicit HandlerRunner(loop::EventLoop& loop) : loop_(loop) {}
  // Its runs must be gone first: they use its HTTP client.
  ~HandlerRunner() = default;
  HandlerRunner(const HandlerRunner&) = delete;
  HandlerRunner& operator=(const HandlerRunner&) = delete;

  // Starts `call`; `done` runs once, later, from the loop (never inside
  // Start), unless the run is destroyed first.
  std::unique_ptr<HandlerRun> Start(HandlerCall call, HandlerRun::Done done);

 private:
  void StartExec(HandlerRun& run, HandlerCall& call);
  void StartHttpGet(HandlerRun& run, const HandlerCall& call);
  void StartGrpc(HandlerRun& run, const HandlerCall& call);
  void StartTcpSocket(HandlerRun& run, const HandlerCall& call);
  // The HTTP client, created on first use (a pod without HTTP probes or
  // hooks never makes one); nullptr, with the reason in `why`, when it
  // cannot be set up.
  probes::HttpClient* Http(std::string& why);

  loop::EventLoop& loop_;
  std::unique_ptr<probes::HttpClient> http_;
};

// What hooks and probes keep of an outcome's message for events and the
// Lifecycle (S8.4).
inline constexpr std::size_t kHandlerMessageMax = 1024;
std::string TruncateMessage(std::string message, std::size_t max = kHandlerMessageMax);

// The port of an httpGet/tcpSocket action: a number, or the name of one of
// the container's ports (validation made sure it exists).
int ResolvePort(const pod::IntOrString& port, const pod::Container& container);

}  // namespace podvisor::supervisor::executor
