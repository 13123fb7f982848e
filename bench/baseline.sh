#!/usr/bin/env bash
# The benchmarks' baseline: a shell script that runs the same pod ordering
# with runc directly, the way one would without a supervisor. Every step
# is one runc command and the next starts when the previous returned; an
# exit is noticed by asking `runc state` until it says "stopped" (a shell
# has no pidfd), and nothing overlaps.
#
#   baseline.sh start ROOT BUNDLES "INITS" "SIDECARS" "REGULARS"
#     each init: create, start, wait until stopped, delete (in order);
#     each sidecar, then each regular: create, start (in order)
#   baseline.sh stop ROOT "SIDECARS" "REGULARS"
#     every regular: kill TERM; wait until each stopped; delete;
#     then each sidecar in reverse order: kill TERM, wait, delete
#
# BUNDLES/<name>/config.json is each container's bundle; containers are
# named by their bundle. Output of the containers goes to BUNDLES/<name>.out.
set -euo pipefail
runc=${RUNC:-runc}

wait_stopped() {  # wait_stopped ROOT ID
  while :; do
    state=$("$runc" --root "$1" state "$2" 2>/dev/null || echo '"status": "stopped"')
    [[ $state == *'"status": "stopped"'* ]] && return 0
  done
}

create_start() {  # create_start ROOT BUNDLES NAME
  "$runc" --root "$1" create --bundle "$2/$3" "$3" </dev/null >"$2/$3.out" 2>&1
  "$runc" --root "$1" start "$3"
}

case ${1:-} in
  start)
    root=$2 bundles=$3
    for c in $4; do
      create_start "$root" "$bundles" "$c"
      wait_stopped "$root" "$c"
      "$runc" --root "$root" delete "$c"
    done
    for c in $5 $6; do create_start "$root" "$bundles" "$c"; done
    ;;
  stop)
    root=$2
    sidecars=($3)
    for c in $4; do "$runc" --root "$root" kill "$c" TERM; done
    for c in $4; do wait_stopped "$root" "$c"; "$runc" --root "$root" delete "$c"; done
    for ((i = ${#sidecars[@]} - 1; i >= 0; i--)); do
      c=${sidecars[i]}
      "$runc" --root "$root" kill "$c" TERM
      wait_stopped "$root" "$c"
      "$runc" --root "$root" delete "$c"
    done
    ;;
  *)
    echo "usage: baseline.sh start ROOT BUNDLES INITS SIDECARS REGULARS | stop ROOT SIDECARS REGULARS" >&2
    exit 2
    ;;
esac
