// The command line containerd 1.6 gives a runtime v2 shim binary, parsed
// the way Go's flag package reads it (containerd's shims use it): flags
// with one or two dashes, `-name value` or `-name=value`, booleans alone,
// then the action: `start`, `delete`, or none (serve). Unknown flags are
// errors, as in Go.
//
//   containerd-shim-podvisor-v1 -namespace NS -address ADDR
//       -publish-binary BIN -id ID [-debug] start
//   containerd-shim-podvisor-v1 -namespace NS -address ADDR
//       -publish-binary BIN -id ID -bundle DIR delete
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace podvisor::shim {

inline constexpr const char* kShimBinaryName = "containerd-shim-podvisor-v1";

struct ShimArgs {
  std::string ns;              // -namespace
  std::string id;              // -id
  std::string address;         // -address: containerd's gRPC socket
  std::string publish_binary;  // -publish-binary (default "containerd")
  std::string bundle;          // -bundle (delete; else the working directory)
  std::string socket;          // -socket (later containerds; unused)
  bool debug = false;          // -debug
  bool version = false;        // -v
  std::string action;          // "start", "delete", "" (serve)
};

Result<ShimArgs> ParseShimArgs(const std::vector<std::string>& args);

// argv[0]'s file name is the shim's and the first argument is a flag:
// podvisor's own subcommands never begin with '-', containerd's calls
// always do, so `containerd-shim-podvisor-v1 run ...` still runs a pod.
bool IsShimInvocation(int argc, char** argv);

// The socket address of a task's shim, as containerd's shims make it:
// unix:///run/containerd/s/<sha256 of ADDRESS/NS/ID>, short enough for
// sun_path whatever the id, and distinct per containerd and namespace.
std::string ShimSocketAddress(const ShimArgs& args);
// The file system path of such an address.
std::string SocketPath(const std::string& address);

}  // namespace podvisor::shim
