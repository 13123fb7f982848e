// Instances' exec through the runtime (instances.h ExecIn): what hooks and
// probes (hooks_probes.h) run inside a container, through the handler
// runner's InstanceExec.
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/log.h"

#include "oci/spec.h"
#include "process/spawn.h"
#include "supervisor/executor/internal.h"

namespace podvisor::supervisor::executor {
namespace {

constexpr std::size_t kExecOutputMax = 10 * 1024;  // probe output kept for events

// The process of an exec: the container's own, with other arguments and
// more environment, and no terminal.
nlohmann::json ExecProcess(const nlohmann::json& container_process,
                           const std::vector<std::string>& args,
                           const std::vector<std::string>& extra_env) {
  nlohmann::json process = container_process;
  process["args"] = args;
  process["terminal"] = false;
  for (const auto& v : extra_env) process["env"].push_back(v);
  return process;
}

// S14.13: the exec's process file holds the container's environment; it
// goes when the exec could not start, when it ended, or once the runtime
// has read it.
void RemoveExecFile(const std::filesystem::path& file) {
  std::error_code ec;
  std::filesystem::remove(file, ec);
  std::filesystem::remove(std::filesystem::path(file) += ".tmp", ec);  // WriteConfigFile's
}

}  // namespace

// InstanceExec through the runtime's exec, by runtime id: a failed create
// is retried under the same instance number with a new id.
class Instances::RuntimeExec final : public InstanceExec {
 public:
  RuntimeExec(Instances& instances, std::string id) : instances_(instances), id_(std::move(id)) {}

  pid_t Start(std::string_view name, const std::vector<std::string>& args,
              const std::vector<std::string>& extra_env, std::optional<Duration> timeout,
              Done done) override {
    ContainerInstance* inst = instances_.FindById(id_);
    if (!inst) {
      instances_.pod_.loop.AddTimer(instances_.pod_.loop.Now(),
                                    [done] { done(false, "the container instance is gone"); });
      return 0;
    }
    return instances_.ExecInContainer(*inst, name, args, extra_env, timeout, done);
  }

  void Kill(pid_t pid) override { instances_.KillCall(pid); }

 private:
  Instances& instances_;
  std::string id_;
};

std::unique_ptr<InstanceExec> Instances::ExecIn(std::string_view container, int instance) {
  ContainerInstance* inst = Find(container, instance);
  return inst ? std::make_unique<RuntimeExec>(*this, inst->id) : nullptr;
}

pid_t Instances::ExecInContainer(ContainerInstance& inst, std::string_view name,
                                 const std::vector<std::string>& args,
                                 const std::vector<std::string>& extra_env,
                                 std::optional<Duration> timeout,
                                 const std::function<void(bool ok, std::string output)>& done) {
  static uint64_t seq = 0;
  auto fail_soon = [this, done](const std::string& why) {
    pod_.loop.AddTimer(pod_.loop.Now(), [done, why] { done(false, why); });
    return pid_t{0};
  };
  std::filesystem::path file =
      inst.dir / ("exec-" + std::string(name) + "-" + std::to_string(++seq) + ".json");
  auto remove_file = [file] { RemoveExecFile(file); };
  if (auto s = oci::WriteConfigFile(ExecProcess(inst.process, args, extra_env), file); !s) {
    remove_file();  // a partial write
    return fail_soon(s.error().message());
  }

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    remove_file();
    return fail_soon(Error::FromErrno("pipe2").message());
  }
  Fd out_r(fds[0]), out_w(fds[1]);
  if (auto s = inst.GivePipeToRoot(out_w.get()); !s) {
    remove_file();
    return fail_soon(s.error().message());
  }
  auto output = std::make_shared<std::string>();
  auto timed_out = std::make_shared<bool>(false);
  int read_fd = out_r.get();
  auto pipe_holder = std::make_shared<Fd>(std::move(out_r));
  auto drain = [output, read_fd] {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(read_fd, buf, sizeof buf)) > 0) {
      if (output->size() < kExecOutputMax) output->append(buf, static_cast<std::size_t>(n));
    }
  };
  (void)pod_.loop.Add(read_fd, EPOLLIN, [drain](uint32_t) { drain(); });

  oci::RuntimeCli cli = Runtime();
  auto timer = std::make_shared<loop::EventLoop::TimerId>(0);
  auto finished = [this, drain, read_fd, pipe_holder, output, timed_out, timer, file, done,
                   timeout](const process::ExitInfo& exit) {
    drain();
    pod_.loop.Remove(read_fd);
    pipe_holder->Reset();
    if (*timer) pod_.loop.CancelTimer(*timer);
    std::error_code ec;
    std::filesystem::remove(file, ec);
    if (*timed_out) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*timeout).count();
      done(false, "command timed out after " + std::to_string(ms) + "ms");
    } else {
      std::string out = TruncateMessage(*output, kExecOutputMax);
      if (!exit.success() && out.empty()) out = "command " + exit.ToString();
      done(exit.success(), out);
    }
  };
  // Hooks and probes must not write into the container log (S8.4): their
  // output goes to our pipe.
  auto spawned = SpawnRuntime(cli.Exec(inst.id, file), {}, out_w.get(), out_w.get(), finished);
  if (!spawned) {
    pod_.loop.Remove(read_fd);
    remove_file();
    return fail_soon(spawned.error().message());
  }
  ExpireExecFile(file);
  pid_t pid = *spawned;
  if (timeout) {
    *timer = pod_.loop.AddTimer(pod_.loop.Now() + *timeout, [this, pid, timed_out, timer] {
      *timer = 0;
      *timed_out = true;
      // Killing the runtime's exec ends the wait for it; the process inside
      // the container may linger until the container stops.
      KillCall(pid);
    });
  }
  return pid;
}

}  // namespace podvisor::supervisor::executor
