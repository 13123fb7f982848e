#!/bin/sh
# Runs $PODVISOR_FAKE_RUNTIME with the given arguments, retrying a `start`
# that lost the race against the container's init process.
#
# Why: fake-runtime's `create` returns as soon as it forked the init, and
# `start` opens ROOT/ID/exec.fifo with O_WRONLY|O_NONBLOCK, which fails with
# ENXIO ("container is not in created state") when the init has not opened
# the fifo for reading yet. runc's `create` only returns once its init is
# blocked on the fifo, so podvisor never sees this with a real runtime. Only
# that one message is retried; every other failure, injected faults
# included, is passed through unchanged.
real=${PODVISOR_FAKE_RUNTIME:?PODVISOR_FAKE_RUNTIME is not set}
is_start=no
for arg in "$@"; do
  [ "$arg" = start ] && is_start=yes
done
[ $is_start = yes ] || exec "$real" "$@"
tries=0
while :; do
  err=$("$real" "$@" 2>&1 >/dev/null)
  rc=$?
  [ $rc -eq 0 ] && exit 0
  case $err in
    *"is not in created state"*)
      tries=$((tries + 1))
      if [ $tries -lt 400 ]; then
        sleep 0.005
        continue
      fi
      ;;
  esac
  printf '%s\n' "$err" >&2
  exit $rc
done
