#!/usr/bin/env bash
# Checks that the objects of a static library call nothing outside
# themselves but the C library's `_start`: the early road of the client
# commands runs before the C library has started (src/cli/early_client.h),
# when a call to memset, memcpy or strlen (IFUNCs a static program has not
# resolved yet) or to anything using errno or the thread pointer would
# crash. A compiler may emit such calls by itself (zeroing a struct,
# copying a loop); this is what catches it.
#
#   scripts/check-freestanding.sh LIBRARY.a
set -euo pipefail
lib=$1
# Undefined in one object and defined in none: what the library needs from
# outside.
symbols=$(nm --format=posix "$lib")
undefined=$(awk 'NF >= 2 && $2 == "U" {print $1}' <<<"$symbols" | sort -u)
defined=$(awk 'NF >= 2 && $2 != "U" {print $1}' <<<"$symbols" | sort -u)
undefined=$(comm -23 <(echo "$undefined") <(echo "$defined") | grep -vx -e '_start' -e '' || true)
if [[ -n "$undefined" ]]; then
  echo "check-freestanding: $lib calls outside itself:" >&2
  echo "$undefined" >&2
  exit 1
fi
echo "check-freestanding: $lib: calls nothing but _start"
