#include "cli/cli.h"
#ifdef PODVISOR_SHIM
#include "shim/shim_args.h"
#include "shim/shim_main.h"
#endif

int main(int argc, char** argv) {
#ifdef PODVISOR_SHIM
  // containerd-shim-podvisor-v1 is a link to this binary (docs/SHIM.md).
  if (podvisor::shim::IsShimInvocation(argc, argv)) return podvisor::shim::ShimMain(argc, argv);
#endif
  return podvisor::cli::Main(argc, argv);
}
