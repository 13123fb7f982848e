#!/usr/bin/env bash
# Installs what the podman comparison of the benchmarks needs (bench/podman.py),
# from Debian: podman (4.3 in Debian 12) and catatonit, the init of its infra
# container. Bench-only, so not in scripts/install-deps.sh; nothing is
# configured here: bench/podman.py keeps podman's configuration, storage and
# state in the benchmark's own temporary directory.
set -euo pipefail
missing=()
command -v podman >/dev/null || missing+=(podman)
command -v catatonit >/dev/null || missing+=(catatonit)
((${#missing[@]} == 0)) && exit 0
[[ $(id -u) == 0 ]] || { echo "install-podman: needs root to install ${missing[*]}" >&2; exit 1; }
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
