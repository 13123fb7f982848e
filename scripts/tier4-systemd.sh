# shellcheck shell=bash disable=SC2034,SC2154
# Sourced by scripts/tier4.sh: boot "systemd", Debian's systemd as PID 1
# of the VM, so that `podvisor apply` on a systemd host (S18.10) and the
# path unit (S18.12) run against a real service manager, which the
# development hosts (systemd is not their PID 1) cannot show. The VM
# boots the initramfs with rdinit=/lib/systemd/systemd and the unit
# t4.target, whose one service runs /t4-systemd-test and reports on the
# console:
#   - `apply -f /etc/podvisor/apply.d` starts the pod as the instance
#     podvisor-applied@web.service (Type=notify: active once the pod
#     runs), its supervisor in that unit's cgroup, not in apply's;
#   - a resource-only edit resizes in place: the unit keeps its main pid;
#   - another edit replaces the pod: the unit's main pid changes, apply
#     reports the pod Ready;
#   - the path unit applies a manifest dropped into the directory;
#   - `apply --prune` of a removed manifest stops its unit (inactive with
#     result success: the pod's exit 0, or 4 = SuccessExitStatus), and
#     nothing of the pods is left.
# Uses tier4.sh's $root, $work, $podvisor and pass/fail/skip/expect.

sysd_cases=(Systemd_ApplyStartsPodAsTemplateUnit Systemd_SupervisorInTheUnitsCgroup
            Systemd_ResizeKeepsTheUnitsMainPid Systemd_ReplaceRestartsTheUnit
            Systemd_PathUnitAppliesADroppedManifest Systemd_PruneStopsTheUnitCleanly)

# sysd_prepare: builds $work/initrd-systemd; returns 1 (with a reason in
# $sysd_skip) when this host lacks what it needs.
sysd_prepare() {
  sysd_skip=""
  local f
  for f in /lib/systemd/systemd /lib/systemd/systemd-shutdown /bin/systemctl; do
    [[ -x $f ]] || { sysd_skip="$f missing (Debian's systemd package)"; return 1; }
  done
  local r=$work/root-systemd
  cp -a "$root" "$r"
  local saved_root=$root
  root=$r
  copy_with_libs "$podvisor" /usr/bin/podvisor
  copy_with_libs /lib/systemd/systemd /lib/systemd/systemd
  copy_with_libs /lib/systemd/systemd-shutdown /lib/systemd/systemd-shutdown
  copy_with_libs /bin/systemctl /bin/systemctl
  root=$saved_root
  rm -f "$r/init"
  # What systemd reads of the machine: no initrd-release, so the
  # initramfs is the system itself; a machine-id it may not write.
  printf 'ID=debian\nNAME="podvisor tier 4"\n' >"$r/etc/os-release"
  : >"$r/etc/machine-id"
  echo "root:x:0:" >"$r/etc/group"
  local units=$r/etc/systemd/system
  mkdir -p "$units" "$r/usr/lib/systemd/system" "$r/etc/podvisor/apply.d" "$r/t4-staged"
  install -m 0644 packaging/systemd/podvisor-applied@.service packaging/systemd/podvisor-apply.path \
    packaging/systemd/podvisor-apply.service "$units/"
  # Debian's targets (sysinit, basic, paths, shutdown, ...): the units'
  # default dependencies; what they want and the VM lacks is skipped.
  cp /lib/systemd/system/*.target "$r/usr/lib/systemd/system/"
  cat >"$units/t4.target" <<'EOF'
[Unit]
Description=podvisor tier 4
Requires=t4-test.service
After=t4-test.service
EOF
  # The units reach for network-online.target: an empty one, so that
  # After= resolves without the network stack's units.
  printf '[Unit]\nDescription=network online (tier 4)\n' >"$units/network-online.target"
  cat >"$units/t4-test.service" <<'EOF'
[Unit]
Description=podvisor tier 4 systemd checks
[Service]
Type=oneshot
ExecStart=/bin/busybox sh /t4-systemd-test
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
EOF
  # The pod: it runs until stopped; its manifest's edits are what the
  # checks apply. images/ beside the manifests, as apply wants it.
  ln -sfn /images/busybox "$r/t4-staged/busybox"
  mkdir -p "$r/etc/podvisor/apply.d/images"
  ln -sfn /images/busybox "$r/etc/podvisor/apply.d/images/busybox"
  web_manifest() {  # web_manifest MEMORY ENV
    cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: busybox
    env: [{name: EDIT, value: "$2"}]
    command: [/bin/sh, -c, "trap 'exit 0' TERM; touch /tmp/ready; sleep 100000 & wait"]
    readinessProbe: {exec: {command: [cat, /tmp/ready]}, periodSeconds: 1}
    resizePolicy: [{resourceName: memory, restartPolicy: NotRequired}]
    resources: {requests: {memory: $1}, limits: {memory: $1}}
EOF
  }
  web_manifest 64Mi one >"$r/etc/podvisor/apply.d/web.yaml"
  web_manifest 96Mi one >"$r/t4-staged/web-resized.yaml"
  web_manifest 96Mi two >"$r/t4-staged/web-replaced.yaml"
  cat >"$r/t4-staged/late.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: late}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: busybox
    command: [/bin/sh, -c, "trap 'exit 0' TERM; sleep 100000 & wait"]
EOF
  cat >"$r/t4-systemd-test" <<'EOF'
export PATH=/usr/bin:/bin:/sbin
/bin/busybox --install -s /bin 2>/dev/null
say() { echo "T4D $*"; }
# until CMD succeeds, at most $1 half-seconds
until_ok() { n=$1; shift; while ! "$@" >/dev/null 2>&1; do n=$((n - 1)); [ $n -le 0 ] && return 1; sleep 0.5; done; }
prop() { systemctl show -P "$2" "$1"; }
d=/etc/podvisor/apply.d
podvisor apply -f $d > /tmp/apply1.log 2>&1; say apply1 exit=$?
say unit active=$(systemctl is-active podvisor-applied@web.service)
pid=$(prop podvisor-applied@web.service MainPID)
cg=$(prop podvisor-applied@web.service ControlGroup)
say supervisor cgroup=$(sed -n 's/^0:://p' /proc/$pid/cgroup | sed 's|/_supervisor$||') unit=$cg
say pod $(podvisor status web -o 'jsonpath={.status.phase}' 2>&1)
cp /t4-staged/web-resized.yaml $d/web.yaml
podvisor apply -f $d > /tmp/apply2.log 2>&1; say apply2 exit=$?
pid2=$(prop podvisor-applied@web.service MainPID)
[ "$pid" = "$pid2" ] && say resize same-pid=yes || say resize same-pid=no $pid $pid2
cp /t4-staged/web-replaced.yaml $d/web.yaml
podvisor apply -f $d > /tmp/apply3.log 2>&1; say apply3 exit=$?
pid3=$(prop podvisor-applied@web.service MainPID)
[ -n "$pid3" ] && [ "$pid3" != 0 ] && [ "$pid3" != "$pid2" ] && say replace new-pid=yes || say replace new-pid=no $pid2 $pid3
say replace active=$(systemctl is-active podvisor-applied@web.service) ready=$(podvisor status web -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>&1)
systemctl start podvisor-apply.path
cp /t4-staged/late.yaml $d/.late.yaml.tmp && mv $d/.late.yaml.tmp $d/late.yaml
until_ok 240 sh -c '[ "$(systemctl is-active podvisor-applied@late.service)" = active ]'
say path late=$(systemctl is-active podvisor-applied@late.service) apply=$(prop podvisor-apply.service Result)
systemctl stop podvisor-apply.path
rm $d/late.yaml
podvisor apply --prune -f $d > /tmp/apply4.log 2>&1; say apply4 exit=$?
until_ok 120 sh -c '[ "$(systemctl is-active podvisor-applied@late.service)" != active ]'
say prune late=$(systemctl is-active podvisor-applied@late.service) result=$(prop podvisor-applied@late.service Result) status=$(prop podvisor-applied@late.service ExecMainStatus) web=$(systemctl is-active podvisor-applied@web.service)
systemctl stop podvisor-applied@web.service
left=$(for p in /proc/[0-9]*; do tr '\0' ' ' <$p/cmdline 2>/dev/null; echo; done | grep -c "[p]odvisor run\|[s]leep 100000")
say end web=$(systemctl is-active podvisor-applied@web.service) leftovers=$left mounts=$(grep -c /run/podvisor/ /proc/mounts)
for f in /tmp/apply*.log; do sed "s|^|T4D log $(basename $f): |" $f | tail -5; done
systemctl --force --force poweroff
EOF
  chmod 0755 "$r/t4-systemd-test"
  (cd "$r" && find . -print0 | cpio --null -o -H newc --quiet) >"$work/initrd-systemd"
  rm -rf "$r"
}

# sysd_check CONSOLE
sysd_check() {
  local c=$1
  if grep -qx "T4D apply1 exit=0" "$c" && grep -qx "T4D unit active=active" "$c" &&
     grep -qx "T4D pod Running" "$c"; then
    pass Systemd_ApplyStartsPodAsTemplateUnit
  else
    fail Systemd_ApplyStartsPodAsTemplateUnit "$(grep -E '^T4D (apply1|unit|pod|log apply1)' "$c" | tr '\n' ' ')"
  fi
  local line
  line=$(grep -m1 '^T4D supervisor cgroup=' "$c" || true)
  if [[ $line =~ ^T4D\ supervisor\ cgroup=(/[^ ]+)\ unit=(/[^ ]+)$ && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" &&
        ${BASH_REMATCH[2]} == */podvisor-applied@web.service ]]; then
    pass Systemd_SupervisorInTheUnitsCgroup
  else
    fail Systemd_SupervisorInTheUnitsCgroup "'${line:-no line}'"
  fi
  if grep -qx "T4D apply2 exit=0" "$c" && grep -qx "T4D resize same-pid=yes" "$c"; then
    pass Systemd_ResizeKeepsTheUnitsMainPid
  else
    fail Systemd_ResizeKeepsTheUnitsMainPid "$(grep -E '^T4D (apply2|resize|log apply2)' "$c" | tr '\n' ' ')"
  fi
  if grep -qx "T4D apply3 exit=0" "$c" && grep -qx "T4D replace new-pid=yes" "$c" &&
     grep -qx "T4D replace active=active ready=True" "$c"; then
    pass Systemd_ReplaceRestartsTheUnit
  else
    fail Systemd_ReplaceRestartsTheUnit "$(grep -E '^T4D (apply3|replace|log apply3)' "$c" | tr '\n' ' ')"
  fi
  expect Systemd_PathUnitAppliesADroppedManifest "$c" "^T4D path late=active apply=success$"
  if grep -qx "T4D apply4 exit=0" "$c" &&
     grep -qxE "T4D prune late=inactive result=success status=(0|4) web=active" "$c" &&
     grep -qx "T4D end web=inactive leftovers=0 mounts=0" "$c"; then
    pass Systemd_PruneStopsTheUnitCleanly
  else
    fail Systemd_PruneStopsTheUnitCleanly "$(grep -E '^T4D (apply4|prune|end|log apply4)' "$c" | tr '\n' ' ')"
  fi
}
