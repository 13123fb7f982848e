#!/usr/bin/env bash
# Builds podvisor and runs every test tier (docs/TESTING.md), then prints one
# closing line 'tests: N passed, N failed, N skipped'. This is the README's
# test command and exactly what CI runs (.ci/run).
#
#   scripts/test.sh            everything
#   FUZZ_RUNS=5000 scripts/test.sh    a shorter fuzz run
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# A fixed number of fuzz runs, not a time: the same work on a fast or a
# loaded machine (50000 runs take about 35 s at this machine's ~1400/s).
fuzz_runs=${FUZZ_RUNS:-50000}
beneath_runs=${FUZZ_BENEATH_RUNS:-3000}
jobs=$(nproc)

log() { printf '\n== %s  [%dm%02ds]\n' "$*" $((SECONDS / 60)) $((SECONDS % 60)); }

log "dependencies"
scripts/install-deps.sh

setup() {  # setup DIR [meson options...]
  local dir=$1
  shift
  if [[ -f "$dir/build.ninja" ]]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
}

run_suite() {  # run_suite DIR SUITE [meson test options...]
  local dir=$1 suite=$2
  shift 2
  meson test -C "$dir" --num-processes "$jobs" --print-errorlogs --suite "$suite" "$@"
}

status=0

have_clang=0
command -v clang++ >/dev/null && have_clang=1
# The compiler a configured build directory has ("gcc", "clang"; "" when
# none): meson cannot change it, so a directory of the other is made anew.
configured_compiler() {
  python3 -c '
import json, os, sys
commands = json.load(open(sys.argv[1]))
words = commands[0]["command"].split()[:2] if commands else []
print("clang" if any(os.path.basename(w).startswith("clang") for w in words) else "gcc")
' "$1/compile_commands.json" 2>/dev/null || true
}

# The default build with clang when installed: with its precompiled
# headers (meson.build) it compiles the tree in two thirds of g++'s time,
# measured on 2 cores (a CLI file: 8.5 s against 12.8 s). g++ still
# compiles every file of src/, warnings as errors: the static build below.
# -g1: line tables for backtraces and sanitizer reports, without the full
# debug info that costs a fifth of the compile time of every file.
main_cxx=c++ main_id=gcc
((have_clang)) && main_cxx=clang++ main_id=clang
if [[ -f build/build.ninja && $(configured_compiler build) != "$main_id" ]]; then
  echo "build/ was configured with $(configured_compiler build): made anew with $main_cxx"
  rm -rf build
fi
log "build ($main_cxx, warnings as errors)"
CXX=$main_cxx setup build -Dcpp_args=-g1 -Dwerror=true
# What the tiers run on this build: everything but the test programs of
# tiers 1 and 2 alone, which run on the sanitized build (below) only.
mapfile -t main_targets < <(python3 -c '
import json, os, subprocess, sys
build = sys.argv[1]
def introspect(what):
    return json.loads(subprocess.run(["meson", "introspect", build, what], check=True,
                                     capture_output=True, text=True).stdout)
suites = {}
for t in introspect("--tests"):
    suites.setdefault(os.path.relpath(t["cmd"][0], build), set()).update(t["suite"])
sanitized_only = {exe for exe, s in suites.items() if s <= {"podvisor:unit", "podvisor:process"}}
for target in introspect("--targets"):
    if not target["build_by_default"]:
        continue
    for f in target["filename"]:
        rel = os.path.relpath(f, build)
        if rel not in sanitized_only:
            print(rel)' "$PWD/build")
ninja -C build "${main_targets[@]}"

find build build-asan -maxdepth 1 -name '*.xml' -delete 2>/dev/null || true

# The sanitizer, static and fuzz builds and clang-tidy run in the
# background at low CPU priority while the tiers below run: those mostly
# wait for processes and timers, so the idle core compiles. CI has 2 cores
# and the whole run is CPU-bound, so each has the priority of when it is
# needed: the static build first (tier 4 boots it), then the sanitized
# build (tiers 1 and 2 run on it at the end), clang-tidy and the fuzz build
# last. The tests keep their priority. Only what tiers 1 and 2 run is
# built sanitized.
(
  set -e
  if [[ -f build-asan/build.ninja && $(configured_compiler build-asan) != "$main_id" ]]; then
    rm -rf build-asan
  fi
  CXX=$main_cxx setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug -Dcpp_args=-g1 -Dwerror=true
  mapfile -t targets < <(meson introspect build-asan --tests | python3 -c '
import json, os, sys
for t in json.load(sys.stdin):
    # A test that runs a script of the source tree has nothing to build.
    rel = os.path.relpath(t["cmd"][0], sys.argv[1])
    if {"podvisor:unit", "podvisor:process"} & set(t["suite"]) and not rel.startswith(".."):
        print(rel)' "$PWD/build-asan")
  nice -n 15 ninja -C build-asan podvisor tests/fake-runtime tests/podvisor-test-helper "${targets[@]}"
) >build-background.log 2>&1 &
background_build=$!
fuzz_build=
if ((have_clang)); then
  (
    set -e
    CXX=clang++ setup build-fuzz -Dfuzz=true -Dtests=false -Dbuildtype=debugoptimized -Dwerror=true
    nice -n 19 ninja -C build-fuzz fuzz/manifest_fuzzer fuzz/layer_fuzzer fuzz/beneath_fuzzer \
      fuzz/lifecycle_state_fuzzer \
      $(ninja -C build-fuzz -t targets all 2>/dev/null | grep -o '^fuzz/ttrpc_frame_fuzzer' | head -1)
  ) >build-fuzz.log 2>&1 &
  fuzz_build=$!
fi

# clang-tidy reads build/compile_commands.json; like the sanitizer build it
# runs at the lowest priority on the core the tiers leave idle.
nice -n 19 scripts/lint.sh --tidy-only build >build/lint-tidy.log 2>&1 &
tidy_job=$!

# The static build (README "Static build"): its own objects (-Os, no debug
# info, every library from its static archive), podvisor only, at nice 10
# (its own `nice ninja`); checked before tier 4.
scripts/build-static.sh build-static >build-static.log 2>&1 &
static_job=$!

log "lint: clang-format (clang-tidy runs in the background)"
scripts/lint.sh --format-only || status=1

log "reliability: adversarial pods, runtime faults, recovery, control socket, fd leaks (~2 min)"
run_suite build reliability --no-rebuild || status=1

if ((EUID == 0)); then
  log "tier 3: podvisor run with runc and busybox bundles on this host"
  run_suite build runc --no-rebuild || status=1
else
  echo "tier 3: SKIPPED (needs root: runc creates namespaces, mounts and cgroups)"
fi
static_ok=0
log "static: one stripped, fully static podvisor (ldd, <= 9,250,000 bytes, version, validate)"
if wait "$static_job"; then
  tail -1 build-static.log
  # A smoke run of the binary itself: the CLI, and the manifest code
  # through YAML, the defaults and the validation.
  if build-static/podvisor version >/dev/null &&
    build-static/podvisor validate --no-images examples/web-behind-proxy >/dev/null; then
    echo "static: version and validate run"
    static_ok=1
  else
    echo "static: the static binary FAILED its smoke run"
    status=1
  fi
else
  tail -40 build-static.log
  echo "static: FAILED (whole log: $root/build-static.log)"
  status=1
fi

if ((EUID == 0)); then
  # The VM's /init is the static binary, one file without libraries, as
  # an embedder ships it; the default build's when the static one failed
  # above (tier 4 then says /init is not one file).
  log "tier 4: podvisor as init of a qemu VM with cgroup v2 and crun"
  if ((static_ok)); then
    TIER4_PODVISOR=build-static/podvisor scripts/tier4.sh build || status=1
  else
    scripts/tier4.sh build || status=1
  fi
else
  echo "tier 4: SKIPPED (needs root: builds an initramfs with device nodes, boots qemu)"
fi

log "package: the Debian package, installed into a scratch root and removed (~20 s)"
scripts/test-deb.sh build || status=1

log "waiting for the sanitized build"
if ! wait "$background_build"; then
  tail -40 build-background.log
  echo "the sanitized build FAILED (whole log: $root/build-background.log)"
  exit 1
fi
# Tiers 1 and 2 run once, sanitized: AddressSanitizer and
# UndefinedBehaviorSanitizer see everything the optimised run would, and
# more. The optimised podvisor runs in tiers 3 and 4 and reliability.
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
log "tier 1: unit tests under AddressSanitizer + UndefinedBehaviorSanitizer"
run_suite build-asan unit --no-rebuild || status=1
# Tier 2 runs the sanitized podvisor binary itself: the executor's code.
log "tier 2: the whole supervisor with real processes and a fake OCI runtime, sanitized"
run_suite build-asan process --no-rebuild || status=1
unset ASAN_OPTIONS UBSAN_OPTIONS

# run_fuzzer NAME TITLE RUNS MAX_LEN OK_WORDS: build-fuzz/fuzz/NAME_fuzzer
# for RUNS runs from the seeds fuzz/seeds/NAME-*, its log in
# build-fuzz/fuzz-NAME.log; a failure sets status and names the input.
run_fuzzer() {
  local name=$1 title=$2 runs=$3 max_len=$4 ok=$5
  local corpus log=build-fuzz/fuzz-$1.log
  log "fuzz: ${title}, ${runs} runs"
  corpus=$(mktemp -d)
  cp fuzz/seeds/"$name"-* "$corpus"/ 2>/dev/null || true
  if "build-fuzz/fuzz/${name}_fuzzer" -runs="$runs" -rss_limit_mb=2048 \
      -artifact_prefix=build-fuzz/ -max_len="$max_len" -print_final_stats=1 \
      "$corpus" >"$log" 2>&1; then
    echo "fuzz: ${name}: ${ok} in ${runs} runs ($(grep -m1 -o 'Done [0-9]* runs in [0-9]* second(s)' "$log"))"
  else
    tail -40 "$log"
    echo "fuzz: ${name}: FAILED (the input is in $root/build-fuzz/)"
    status=1
  fi
  rm -rf "$corpus"
}

if [[ -n $fuzz_build ]] && ! wait "$fuzz_build"; then
  tail -40 build-fuzz.log
  echo "the fuzz build FAILED (whole log: $root/build-fuzz.log)"
  exit 1
fi
if ((have_clang)); then
  log "fuzz: manifest parser and validator, ${fuzz_runs} runs"
  corpus=$(mktemp -d)
  trap 'rm -rf "$corpus"' EXIT
  cp src/pod/testdata/*.yaml src/pod/testdata/*.json fuzz/seeds/* "$corpus"/ 2>/dev/null || true
  if build-fuzz/fuzz/manifest_fuzzer -runs="$fuzz_runs" -rss_limit_mb=2048 \
      -artifact_prefix=build-fuzz/ \
      -max_len=65536 -print_final_stats=1 "$corpus" >build-fuzz/fuzz.log 2>&1; then
    echo "fuzz: no crash in ${fuzz_runs} runs ($(grep -m1 -o 'Done [0-9]* runs in [0-9]* second(s)' build-fuzz/fuzz.log))"
  else
    tail -40 build-fuzz/fuzz.log
    echo "fuzz: FAILED (the crashing input is in $root/build-fuzz/)"
    status=1
  fi
  # Paths beneath a root (S14.1): each run builds a tree on disk, so a
  # short bounded run; the property is checked on every input, not found
  # by coverage alone.
  run_fuzzer beneath "paths beneath a root" "$beneath_runs" 4096 "no failure"
  # The shim's ttrpc framing (built when the shim is, docs/SHIM.md).
  if [[ -x build-fuzz/fuzz/ttrpc_frame_fuzzer ]]; then
    log "fuzz: ttrpc framing, ${fuzz_runs} runs"
    ttrpc_corpus=$(mktemp -d)
    cp fuzz/seeds/ttrpc-* "$ttrpc_corpus"/ 2>/dev/null || true
    if build-fuzz/fuzz/ttrpc_frame_fuzzer -runs="$fuzz_runs" -rss_limit_mb=2048 \
        -artifact_prefix=build-fuzz/ -max_len=65536 -print_final_stats=1 \
        "$ttrpc_corpus" >build-fuzz/fuzz-ttrpc.log 2>&1; then
      echo "fuzz: ttrpc: no crash in ${fuzz_runs} runs ($(grep -m1 -o 'Done [0-9]* runs in [0-9]* second(s)' build-fuzz/fuzz-ttrpc.log))"
    else
      tail -40 build-fuzz/fuzz-ttrpc.log
      echo "fuzz: ttrpc: FAILED (the crashing input is in $root/build-fuzz/)"
      status=1
    fi
    rm -rf "$ttrpc_corpus"
  else
    echo "fuzz: ttrpc: SKIPPED (the shim is not in the build: see meson's message)"
  fi
  # Image layers (S14.7): every input is a tar unpacked on disk, so a tenth
  # of the runs, bounded the same way on any machine.
  run_fuzzer layer "image layers" $((fuzz_runs / 10)) 65536 "no crash or escape"
  # The handover state's reader (S15.1): any JSON restored for a fixed pod.
  run_fuzzer lifecycle_state "the handover state reader" $((fuzz_runs / 5)) 65536 "no crash"
else
  echo "fuzz: SKIPPED (clang++ not installed)"
fi

log "lint: clang-tidy"
if wait "$tidy_job"; then
  tail -1 build/lint-tidy.log
else
  cat build/lint-tidy.log
  status=1
fi

log "summary"
echo "(tiers 1 and 2 ran sanitized, build-asan; the other tiers on build)"
python3 scripts/summarize-gtest.py build build-asan || status=1
exit $status
