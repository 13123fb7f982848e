#!/usr/bin/env bash
# The README's first command: sets up a fresh machine, builds podvisor,
# gives every example bundle a busybox image and runs it.
#   scripts/example.sh [EXAMPLE]     (default: job-with-sidecars)
set -euo pipefail
cd "$(dirname "$0")/.."
example=${1:-job-with-sidecars}

scripts/install-deps.sh
[[ -f build/build.ninja ]] || meson setup build >/dev/null
ninja -C build podvisor

bundle=examples/$example
[[ -d $bundle ]] || { echo "example.sh: no example named $example (see examples/)" >&2; exit 2; }
[[ -x $bundle/images/busybox/rootfs/bin/busybox ]] || scripts/make-rootfs.sh "$bundle/images/busybox"

./build/podvisor version
./build/podvisor validate "$bundle"

# State and logs go to a scratch directory so the example needs no system
# paths; the supervisor's own log goes to stderr.
work=$(mktemp -d /tmp/podvisor-example.XXXXXX)
echo "running $bundle (state and logs under $work)"
status=0
./build/podvisor run --state-dir "$work/state" --log-dir "$work/log" "$bundle" || status=$?

echo
echo "== events"
./build/podvisor events --state-dir "$work/state"
for dir in "$work/log"/*/*/; do
  container=$(basename "$dir")
  echo
  echo "== logs of $container"
  ./build/podvisor logs --log-dir "$work/log" "$container"
done
echo
echo "podvisor run exited with $status"
exit $status
