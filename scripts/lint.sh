#!/usr/bin/env bash
# The habits that keep the tree as CONTRIBUTING.md describes it:
#   1. clang-format: every C++ file as .clang-format says (--dry-run --Werror);
#   2. clang-tidy: the curated checks of .clang-tidy, no warning, over the
#      library code of src/ (tests are left out: gtest's macros trip
#      bugprone checks, and they would double the run's time);
#   3. no standard stream (std::cout, <iostream>) in src/: the static build
#      does not set them up before main (src/static_iostreams.cc);
#   4. the docs check runs as a gtest (tests/cli/docs_test.cc) with tier 1.
#
#   scripts/lint.sh [BUILD_DIR]              steps 1 to 3; BUILD_DIR has
#                                            compile_commands.json (default: build)
#   scripts/lint.sh --format-only            steps 1 and 3, no build needed
#   scripts/lint.sh --tidy-only [BUILD_DIR]  only step 2
#   scripts/lint.sh --fix-format             rewrite what clang-format would change
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t cxx_files < <(git ls-files '*.cc' '*.h' 2>/dev/null || find src tests fuzz -name '*.cc' -o -name '*.h')

if [[ ${1:-} == --fix-format ]]; then
  clang-format -i "${cxx_files[@]}"
  exit 0
fi

mode=all
case ${1:-} in
  --format-only) mode=format; shift ;;
  --tidy-only) mode=tidy; shift ;;
esac

status=0
if [[ $mode == tidy ]]; then
  :
elif clang-format --dry-run --Werror "${cxx_files[@]}"; then
  echo "lint: clang-format: ${#cxx_files[@]} files formatted"
else
  echo "lint: clang-format FAILED: run 'scripts/lint.sh --fix-format' and review the diff"
  status=1
fi
if [[ $mode != tidy ]]; then
  if streams=$(git grep -n -E 'std::(cout|cerr|clog|cin|wcout|wcerr)\b|#include <iostream>' -- src); then
    echo "lint: the standard streams are not set up in the static build (src/static_iostreams.cc); use stdio:"
    echo "$streams"
    status=1
  else
    echo "lint: no standard stream in src/"
  fi
fi
[[ $mode == format ]] && exit $status

build=${1:-build}
if [[ ! -f "$build/compile_commands.json" ]]; then
  echo "lint: no $build/compile_commands.json: run 'meson setup $build' first" >&2
  exit 2
fi
mapfile -t tidy_files < <(printf '%s\n' "${cxx_files[@]}" | grep '^src/.*\.cc$' | grep -v '_test\.cc$')
jobs=$(nproc)
# One clang-tidy per file, $jobs at a time; its output is kept per file so
# the report is not interleaved. The compile commands are g++'s, whose
# options clang may not know (-Wno-restrict for GCC 12, meson.build).
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%s\n' "${tidy_files[@]}" | xargs -P "$jobs" -I{} sh -c \
  'clang-tidy -p "$1" --quiet --extra-arg=-Wno-unknown-warning-option "$2" >"$3/$(echo "$2" | tr / _).log" 2>&1 || echo "$2" >>"$3/failed"' \
  sh "$build" {} "$out"
if [[ -s "$out/failed" ]]; then
  # Each warning once, though a header's shows up under every file including it.
  cat "$out"/*.log | grep -E '(warning|error):' | sort -u
  echo "lint: clang-tidy FAILED in $(wc -l <"$out/failed") of ${#tidy_files[@]} files"
  status=1
else
  echo "lint: clang-tidy: ${#tidy_files[@]} files, no warnings"
fi
exit $status
