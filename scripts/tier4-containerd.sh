# shellcheck shell=bash disable=SC2034,SC2154
# Sourced by scripts/tier4.sh: boot "containerd", the shim on real cgroup
# v2 (docs/SHIM.md "The task's cgroup"), which the development hosts'
# hybrid cgroups cannot show. The VM's init is a shell that starts Debian's
# containerd, imports a packed bundle and runs it with
# `ctr run --runtime io.containerd.podvisor.v1`, then reports on the
# console:
#   - the supervisor in <task cgroup>/_supervisor and the pod's containers
#     below <task cgroup>/<pod> (the task cgroup is ctr's /default/ID);
#   - /tasks/oom published while the task still runs;
#   - `ctr task metrics` of the task cgroup;
#   - the engine's way of ending a task, cgroup.kill of its cgroup, ends
#     the whole pod, and after `ctr task delete` nothing is left;
#   - a graceful `ctr task kill` leaves nothing either.
# The shim is the default (dynamic) build of podvisor, which has it; the
# static /init of the other boots is built without (no containerd in a VM
# image). Uses tier4.sh's $root, $work, $build, $cache and pass/fail/skip.

ctrd_cases=(Containerd_SupervisorInTaskCgroupLeaf Containerd_PodNestedInTaskCgroup
            Containerd_OomPublishedWhileRunning Containerd_StatsOfTheTaskCgroup
            Containerd_CgroupKillEndsWholePod Containerd_GracefulStopLeavesNothing)

# ctrd_prepare: builds $work/initrd-containerd; returns 1 (with a reason in
# $ctrd_skip) when this host lacks what it needs.
ctrd_prepare() {
  ctrd_skip=""
  local shim_podvisor=${TIER4_SHIM_PODVISOR:-$build/podvisor} tool
  for tool in containerd ctr; do
    command -v "$tool" >/dev/null || { ctrd_skip="$tool not installed (scripts/install-deps.sh)"; return 1; }
  done
  if ! grep -qa "containerd.task.v2.Task" "$shim_podvisor"; then
    ctrd_skip="$shim_podvisor was built without the shim (meson -Dshim=enabled)"
    return 1
  fi
  local r=$work/root-containerd
  cp -a "$root" "$r"
  local saved_root=$root
  root=$r
  copy_with_libs "$shim_podvisor" /usr/bin/podvisor
  ln -s podvisor "$r/usr/bin/containerd-shim-podvisor-v1"
  copy_with_libs "$(command -v containerd)" /usr/bin/containerd
  copy_with_libs "$(command -v ctr)" /usr/bin/ctr
  root=$saved_root
  mkdir -p "$r/etc/containerd" "$r/var/lib/containerd"
  cat >"$r/etc/containerd/config.toml" <<'EOF'
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "/run/containerd/containerd.sock"
EOF
  # The bundle: an app that runs until stopped, and a container that goes
  # over its memory limit once (dd's 64 MiB buffer in 32 MiB).
  local b=$work/ctrd-bundle
  mkdir -p "$b"
  cat >"$b/pod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: ctrd-t4}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: busybox
    command: [/bin/sh, -c, "trap 'exit 0' TERM; sleep 100000 & wait"]
  - name: hog
    image: busybox
    command: [/bin/dd, if=/dev/zero, of=/dev/null, bs=64M, count=1]
    resources: {limits: {memory: 32Mi}}
EOF
  scripts/make-rootfs.sh "$b/images/busybox" >/dev/null
  "$shim_podvisor" pack "$b" "$work/ctrd-layout" >/dev/null
  tar -C "$work/ctrd-layout" -cf "$r/pods/ctrd.tar" .
  cat >"$r/ctrd-init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /run; mount -t tmpfs tmpfs /tmp; mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tmpfs tmpfs /var/lib/containerd
export PATH=/usr/bin:/bin:/sbin
say() { echo "T4C $*"; }
# until CMD succeeds, at most $1 half-seconds
until_ok() { n=$1; shift; while ! "$@" >/dev/null 2>&1; do n=$((n - 1)); [ $n -le 0 ] && return 1; sleep 0.5; done; }
status_of() { ctr task ls 2>/dev/null | awk -v id="$1" '$1 == id {print $3}'; }
is_status() { [ "$(status_of "$1")" = "$2" ]; }
# processes of a pod, and mounts of the task $1
leftovers() {
  for p in /proc/[0-9]*; do tr '\0' ' ' <$p/cmdline 2>/dev/null; echo; done |
    grep -c "[p]odvisor run\|[c]run \|[s]leep 100000"
}
mounts_of() { grep -c "v2.task/default/$1[ /]" /proc/mounts; }
containerd >/tmp/containerd.log 2>&1 &
until_ok 240 ctr version || { say containerd=down; tail -20 /tmp/containerd.log; poweroff -f; }
ctr image import --base-name podvisor.test/t4 /pods/ctrd.tar >/dev/null || say import=failed
ctr events >/tmp/events.log 2>&1 &
sleep 1
run() { ctr run -d --runtime io.containerd.podvisor.v1 --annotation podvisor.network=none \
          --annotation podvisor.runtime=crun podvisor.test/t4:latest "$1" || say run "$1" failed; }

run web
until_ok 240 grep -q /tasks/oom /tmp/events.log
if grep -q /tasks/oom /tmp/events.log; then say oom_live=yes status=$(status_of web); else say oom_live=no; fi
pid=$(ctr task ls | awk '$1 == "web" {print $2}')
say supervisor=$(sed -n 's/^0:://p' /proc/$pid/cgroup)
for d in /sys/fs/cgroup/default/web/*/*/; do
  # (cgroupfs files have size 0: read, not test -s)
  [ -n "$(cat "$d/cgroup.procs")" ] && say populated=${d#/sys/fs/cgroup}
done
say metrics $(ctr task metrics web 2>&1 | awk '$1 == "pids.current" {print "pids.current=" $2}')
echo 1 >/sys/fs/cgroup/default/web/cgroup.kill
until_ok 120 is_status web STOPPED
say killed status=$(status_of web)
ctr task delete web >/dev/null; ctr container rm web >/dev/null
[ -d /sys/fs/cgroup/default/web ] && c=left || c=gone
say after-kill task_cgroup=$c leftovers=$(leftovers) mounts=$(mounts_of web)

run web2
until_ok 240 sh -c '[ -n "$(ls /sys/fs/cgroup/default/web2/ctrd-t4 2>/dev/null | grep ctrd-t4_app)" ]'
ctr task kill web2
until_ok 120 is_status web2 STOPPED
s=$(status_of web2)
ctr task delete web2 >/dev/null; ctr container rm web2 >/dev/null
[ -d /sys/fs/cgroup/default/web2 ] && c=left || c=gone
say graceful status=$s task_cgroup=$c leftovers=$(leftovers) mounts=$(mounts_of web2)
grep -E "level=(error|warning)" /tmp/containerd.log | grep -i podvisor | head -5
poweroff -f
EOF
  chmod 0755 "$r/ctrd-init"
  (cd "$r" && find . -print0 | cpio --null -o -H newc --quiet) >"$work/initrd-containerd"
  rm -rf "$r"
}

# ctrd_check CONSOLE
ctrd_check() {
  local c=$1
  expect Containerd_SupervisorInTaskCgroupLeaf "$c" "^T4C supervisor=/default/web/_supervisor$"
  expect Containerd_PodNestedInTaskCgroup "$c" "^T4C populated=/default/web/ctrd-t4/ctrd-t4_app_"
  expect Containerd_OomPublishedWhileRunning "$c" "^T4C oom_live=yes status=RUNNING$"
  local pids
  pids=$(sed -n 's/^T4C metrics pids\.current=\([0-9]*\)$/\1/p' "$c" | head -1)
  # The supervisor, its sandbox and the app at least: the task's, not a
  # container's, cgroup.
  if [[ -n $pids ]] && ((pids >= 3)); then
    pass Containerd_StatsOfTheTaskCgroup
  else
    fail Containerd_StatsOfTheTaskCgroup "pids.current '${pids:-none}' (want >= 3)"
  fi
  if grep -qx "T4C killed status=STOPPED" "$c" &&
     grep -qx "T4C after-kill task_cgroup=gone leftovers=0 mounts=0" "$c"; then
    pass Containerd_CgroupKillEndsWholePod
  else
    fail Containerd_CgroupKillEndsWholePod "$(grep -E '^T4C (killed|after-kill)' "$c" | tr '\n' ' ')"
  fi
  expect Containerd_GracefulStopLeavesNothing "$c" \
    "^T4C graceful status=STOPPED task_cgroup=gone leftovers=0 mounts=0$"
}
