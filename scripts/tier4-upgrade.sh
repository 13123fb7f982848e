#!/bin/sh
# Tier 4 (scripts/tier4.sh, boot "nested"): run inside the pod's privileged
# hostPID container `check` while podvisor, PID 1 of the VM, supervises
# the pod POD with crun: upgrades podvisor in place (S15.2, README
# "Upgrading podvisor") as a user of the VM would, with the binary it was
# started from (/init) in PID 1's mount namespace and the default state
# directory, and writes what it saw straight to the console (a privileged
# container has /dev/ttyS0), each line "T4U ...":
#   upgrade exit=N: OUTPUT    podvisor upgrade's status and line
#   supervisor: LINE          describe's Supervisor: line after it (pid 1)
#   pid1 exe=PATH             what PID 1 runs after it
#   containers same=yes|no before=... after=...   each container
#       instance's cgroup under the pod's and its lowest pid (its init)
#   limits same=yes|no before=... after=...       the pod cgroup's limits
#
#   /t4-upgrade.sh POD
pod=$1
say() { echo "T4U $*" >/dev/ttyS0; }
pv() { nsenter -t 1 -m -- /init "$@"; }
containers() {
  for d in /hostcg/"$pod"/*/; do
    [ -f "$d/cgroup.procs" ] || continue
    echo "$(basename "$d")=$(sort -n "$d/cgroup.procs" | head -1)"
  done | tr '\n' ' '
}
limits() {
  c=/hostcg/$pod
  echo "memory.max=$(cat "$c/memory.max") cpu.max=$(tr ' ' _ <"$c/cpu.max") cpu.weight=$(cat "$c/cpu.weight")"
}
containers_before=$(containers)
limits_before=$(limits)
out=$(pv upgrade --state-dir /run/podvisor "$pod" 2>&1)
say "upgrade exit=$?: $(echo "$out" | tr '\n' ' ')"
say "supervisor: $(pv describe --state-dir /run/podvisor "$pod" 2>&1 | sed -n 's/^Supervisor: *//p')"
say "pid1 exe=$(readlink /proc/1/exe)"
containers_after=$(containers)
limits_after=$(limits)
same() { if [ -n "$1" ] && [ "$1" = "$2" ]; then echo yes; else echo no; fi; }
say "containers same=$(same "$containers_before" "$containers_after") before=$containers_before after=$containers_after"
say "limits same=$(same "$limits_before" "$limits_after") before=$limits_before after=$limits_after"
