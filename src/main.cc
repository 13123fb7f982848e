#include "cli/cli.h"
#include "process/fd_limit.h"
#ifdef PODVISOR_SHIM
#include "shim/shim_args.h"
#include "shim/shim_main.h"
#endif

int main(int argc, char** argv) {
  // S14.10: every role that supervises (run, the PID-1 init mode, the
  // containerd shim) gets its soft descriptor limit raised to the hard
  // one before anything is opened; what podvisor starts gets the original
  // soft limit back (signals/fd_limit.h). The client commands do not need
  // it, and it costs them nothing.
  podvisor::process::RaiseFdLimit();
#ifdef PODVISOR_SHIM
  // containerd-shim-podvisor-v1 is a link to this binary (docs/SHIM.md).
  if (podvisor::shim::IsShimInvocation(argc, argv)) return podvisor::shim::ShimMain(argc, argv);
#endif
  return podvisor::cli::Main(argc, argv);
}
