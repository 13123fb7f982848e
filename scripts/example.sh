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
# `podvisor run` is not built yet (the supervisor core issue): until it is,
# the example is checked end to end by the validator.
./build/podvisor validate "$bundle"
