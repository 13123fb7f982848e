// podvisor as the init of a VM image (docs/INTERFACE.md "Running as init inside
// a VM image"): PID 1 started without a subcommand, as /init of an
// initramfs or /sbin/init of a disk image.
//
//   1. mounts /proc, /sys, /dev (devtmpfs), /run, /tmp (tmpfs) and cgroup2
//      at /sys/fs/cgroup where nothing is mounted yet;
//   2. reads podvisor.bundle=PATH (default /pod), podvisor.runtime=NAME,
//      podvisor.cgroup-parent=PATH|self and podvisor.exit=reboot from
//      /proc/cmdline;
//   3. runs the pod exactly as `podvisor run` would, adding --no-pivot when
//      the root is the initramfs (pivot_root(2) cannot move the initial
//      rootfs);
//   4. prints `podvisor: pod <name> ended: phase=<phase> exit=<code>` on
//      the console, syncs, and powers off (or reboots). PID 1 must never
//      return: the kernel would panic.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace podvisor::cli {

struct InitConfig {
  std::string bundle = "/pod";
  std::string runtime;        // "" = the first of crun, runc that works
  std::string cgroup_parent;  // "" = run's default
  bool reboot = false;        // podvisor.exit=reboot; else power off
};

// The podvisor.* parameters of a kernel command line. Other parameters and
// unknown podvisor.* values are ignored (a typo must not keep a VM from
// booting); double quotes group a value with spaces, as the kernel does.
InitConfig ParseKernelCmdline(std::string_view cmdline);

// The `podvisor run` arguments init mode runs the pod with.
std::vector<std::string> InitRunArgs(const InitConfig& config, bool no_pivot);

// The phase a `podvisor run` exit status stands for: Succeeded (0),
// Failed (1); Pending for a pod that never started (2, 3).
std::string_view PhaseForExitCode(int code);

// "podvisor: pod NAME ended: phase=PHASE exit=CODE".
std::string FinalConsoleLine(std::string_view pod_name, int exit_code);

// True when this process is PID 1 and none of `args` (argv without
// argv[0]) names one of `subcommands`.
bool ShouldRunAsInit(const std::vector<std::string>& args,
                     const std::vector<std::string>& subcommands);

// Everything above, then power-off or reboot. Returns only when reboot(2)
// fails (not PID 1 of the machine), with the pod's exit status.
int RunAsInit();

}  // namespace podvisor::cli
