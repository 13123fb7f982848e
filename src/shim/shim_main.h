// containerd-shim-podvisor-v1: the podvisor binary started under that name
// by containerd (runtime type io.containerd.podvisor.v1; shim_args.h says
// how the name is recognised). docs/SHIM.md describes it.
#pragma once

namespace podvisor::shim {

// `start`: listens on the task's socket, forks the serving shim into its
// own session and prints the socket's address once it listens; the shim
// it leaves behind serves the Task service until containerd shuts it down.
// `delete`: cleans up after a shim that died (cleanup.h) and prints the
// DeleteResponse containerd reads. Returns the process's exit status.
int ShimMain(int argc, char** argv);

}  // namespace podvisor::shim
