#!/usr/bin/env bash
# Runs podvisor's benchmarks (bench/bench.py; README "Benchmarks") and
# prints a table of medians and ratios against same-run baselines; the
# full results go to bench/results/<time>.json.
#
#   bench/run.sh            the full run (about 10 minutes on 2 cores)
#   bench/run.sh --quick    fewer repetitions, a 50-container scale run (a few minutes)
#   bench/run.sh --only start,kill   a subset: start, network, kill, memory, scale, podman,
#                                    static, client, upgrade, pull, resize, userns
#   bench/run.sh --only pull --pull-sides podman   one side of the pull case
#   bench/run.sh --only apply [--rounds N]   apply --watch's edit -> replaced pod Ready
#                                            (bench/apply.py, its own script)
#
# The podman comparison installs podman and catatonit from Debian first
# (bench/install-podman.sh) when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f build/build.ninja ]]; then
  scripts/install-deps.sh
  # clang when installed, as scripts/test.sh configures build/.
  if command -v clang++ >/dev/null; then CXX=clang++ meson setup build >/dev/null; else meson setup build >/dev/null; fi
fi
ninja -C build podvisor tests/podvisor-test-helper >/dev/null
if [[ ${1:-} == --only && ${2:-} == apply ]]; then
  exec python3 bench/apply.py "${@:3}"
fi
# The static binary of the "static" and "client" benchmarks.
scripts/build-static.sh build-static >/dev/null
if [[ " $* " != *" --only "* || " $* " == *podman* || " $* " == *pull* ]]; then
  bench/install-podman.sh >/dev/null || echo "bench: podman could not be installed; its comparison is skipped" >&2
fi
exec python3 bench/bench.py "$@"
