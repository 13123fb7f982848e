#!/usr/bin/env bash
# The README's first command: sets up a fresh machine, builds podvisor,
# gives an example bundle a busybox image and runs it with runc.
#   scripts/example.sh [EXAMPLE|all]     (default: job-with-sidecars)
# An example that does not end by itself has an executable drive.sh next
# to its pod.yaml: it runs while the pod runs (PODVISOR and STATE_DIR are
# set) and ends it, e.g. with `podvisor stop --reason`.
set -euo pipefail
cd "$(dirname "$0")/.."
choice=${1:-job-with-sidecars}
runtime=${PODVISOR_RUNTIME:-runc}

if [[ $choice == all ]]; then
  examples=()
  # Pod examples only: examples/nomad/ holds Nomad jobs, no pod.yaml.
  for d in examples/*/; do [[ -f $d/pod.yaml ]] && examples+=("$(basename "$d")"); done
else
  [[ -f examples/$choice/pod.yaml ]] || {
    echo "example.sh: no example named $choice; choose one of: all $(ls examples | tr '\n' ' ')" >&2
    exit 2
  }
  examples=("$choice")
fi

scripts/install-deps.sh
# clang when installed, as scripts/test.sh configures build/ (the two
# README commands share it; install-deps.sh installs clang).
if [[ ! -f build/build.ninja ]]; then
  if command -v clang++ >/dev/null; then CXX=clang++ meson setup build >/dev/null; else meson setup build >/dev/null; fi
fi
ninja -C build podvisor
./build/podvisor version --runtime "$runtime"

run_example() {  # run_example NAME: prints events and logs; returns run's exit status
  local bundle=examples/$1
  [[ -x $bundle/images/busybox/rootfs/bin/busybox ]] || scripts/make-rootfs.sh "$bundle/images/busybox"
  ./build/podvisor validate "$bundle"
  # State and logs go to a scratch directory so the example needs no
  # system paths; the supervisor's own log goes to stderr.
  local work status=0
  work=$(mktemp -d /tmp/podvisor-example.XXXXXX)
  echo "== running $bundle with $runtime (state and logs under $work)"
  if [[ -x $bundle/drive.sh ]]; then
    ./build/podvisor run --runtime "$runtime" --state-dir "$work/state" --log-dir "$work/log" "$bundle" &
    local pid=$!
    PODVISOR=./build/podvisor STATE_DIR=$work/state "$bundle/drive.sh" || status=$?
    wait "$pid" || status=$?
  else
    ./build/podvisor run --runtime "$runtime" --state-dir "$work/state" --log-dir "$work/log" "$bundle" || status=$?
  fi
  echo
  echo "== events of $1"
  ./build/podvisor events --state-dir "$work/state"
  for dir in "$work/log"/*/*/; do
    echo
    echo "== logs of $(basename "$dir")"
    ./build/podvisor logs --log-dir "$work/log" --state-dir "$work/state" "$(basename "$dir")"
  done
  echo
  echo "$1: podvisor run exited with $status"
  return "$status"
}

overall=0
for name in "${examples[@]}"; do
  run_example "$name" || overall=1
  echo
done
exit $overall
