// The OCI runtime command line (crun and runc share it) as data.
//
// oci/ may not spawn processes itself (signals/ is its sibling, not its
// dependency), and the supervisor must never block on a runtime call, so
// this class only builds each call's argv; the supervisor spawns it as a
// child process tracked by the event loop like any other (docs/ARCHITECTURE.md
// "Runtime calls never block the loop"). Each pod gets its own runtime
// state root (`--root`), so pods never see each other's containers.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "oci/runtime_locator.h"

namespace podvisor::oci {

struct RuntimeCommand {
  std::vector<std::string> argv;
  std::string step;  // "create", "start", ... for messages
};

struct RuntimeCliOptions {
  std::filesystem::path state_root;  // --root, per pod
  // An initramfs root cannot pivot_root (docs/TESTING.md); the runtime must then
  // be told --no-pivot.
  bool no_pivot = false;
  // Where the runtime writes its own diagnostics (--log, JSON), so they do
  // not end up in the container's stderr, which it shares on create.
  std::filesystem::path log_file;
};

class RuntimeCli {
 public:
  RuntimeCli(RuntimeBinary binary, RuntimeCliOptions options)
      : binary_(std::move(binary)), options_(std::move(options)) {}

  const RuntimeBinary& binary() const { return binary_; }
  const RuntimeCliOptions& options() const { return options_; }

  // `create --bundle B --pid-file F ID`: the container's init is left
  // waiting before exec; its stdio are the create call's own (no terminal),
  // so the caller hands create the pipes it wants the container to write.
  RuntimeCommand Create(std::string_view id, const std::filesystem::path& bundle,
                        const std::filesystem::path& pid_file) const;
  RuntimeCommand Start(std::string_view id) const;
  // `run --detach --bundle B --pid-file F ID`: create and start in one
  // call, for a container whose start would follow its create at once
  // (docs/SEMANTICS.md S1.1). Its step is "create": a failure is the
  // create's, as a create+start pair reports a missing executable.
  RuntimeCommand Run(std::string_view id, const std::filesystem::path& bundle,
                     const std::filesystem::path& pid_file) const;
  // Whether the runtime has `run --detach` with create's options. It is not
  // in the OCI runtime command line, which has create and start only, so
  // only the two runtimes podvisor is built for get it: runc and crun.
  bool HasDetachedRun() const;
  RuntimeCommand State(std::string_view id) const;
  // `delete --force ID`: also kills a container still running.
  RuntimeCommand Delete(std::string_view id) const;
  // `exec --process FILE ID`: runs a hook or probe inside the container;
  // the call's exit status is the process's.
  RuntimeCommand Exec(std::string_view id, const std::filesystem::path& process_json) const;

 private:
  std::vector<std::string> Base(std::string_view step) const;

  RuntimeBinary binary_;
  RuntimeCliOptions options_;
};

// The output of `state ID`.
struct RuntimeState {
  std::string id;
  std::string status;  // creating | created | running | stopped | paused
  int pid = 0;
};
Result<RuntimeState> ParseRuntimeState(std::string_view json_text);

// The last error the runtime wrote to its --log file (JSON lines with
// "level" and "msg", as runc and crun write them), for status messages
// like "RunContainerError: exec: \"nope\": executable file not found".
std::string LastRuntimeError(const std::filesystem::path& log_file);

}  // namespace podvisor::oci
