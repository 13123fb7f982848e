#!/usr/bin/env bash
# Checks the Debian package (scripts/build-deb.sh) the way an admin meets
# it: builds it from the build dir, installs it with dpkg into a scratch
# root, checks the installed files, runs the installed podvisor, removes
# the package again and deletes the scratch root. About 20 s on a loaded
# 2-core machine (packing dominates); run by
# scripts/test.sh after the build.
#   scripts/test-deb.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/podvisor-deb-root.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
fail() { echo "package: FAILED: $*" >&2; exit 1; }

deb=$(scripts/build-deb.sh "$build" "$scratch/out")
echo "package: built $deb ($(du -h "$deb" | cut -f1))"

expected=(
  ./usr/bin/podvisor
  ./usr/share/man/man1/podvisor.1.gz
  ./usr/share/man/man5/podvisor-bundle.5.gz
  ./usr/lib/systemd/system/podvisor@.service
  ./usr/lib/systemd/system/podvisor-apply.path
  ./usr/lib/systemd/system/podvisor-apply.service
  ./usr/lib/systemd/system/podvisor-applied@.service
  ./usr/share/doc/podvisor/copyright
  ./etc/podvisor/pods/
  ./etc/podvisor/apply.d/
)
listing=$(dpkg-deb --contents "$deb" | awk '{print $1, $2, $NF}')
for f in "${expected[@]}"; do
  grep -q " $f\$" <<<"$listing" || fail "$f is not in the package"
done
grep -q '^-rwxr-xr-x root/root ./usr/bin/podvisor$' <<<"$listing" || fail "usr/bin/podvisor is not root-owned 0755"
dpkg-deb --field "$deb" Depends | grep -q 'libc6' || fail "Depends lacks the shared libraries"

# A scratch root with an empty dpkg database. The maintainer scripts run
# without chroot (the root has no /bin/sh); they see DPKG_ROOT and leave
# the host's systemd alone.
root=$scratch/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
dpkg_root() {
  dpkg --root="$root" --log=/dev/null --force-depends --force-script-chrootless \
    --force-not-root "$@"
}
# --force-depends: the scratch root has no libc; its warnings go to a log
# that is shown only when the install fails.
dpkg_root --install "$deb" >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg --install"; }
[[ $(dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Status}' podvisor) == "install ok installed" ]] ||
  fail "dpkg does not list podvisor as installed"
for f in "${expected[@]}"; do
  [[ -e $root/${f#./} ]] || fail "$f was not installed"
done
version=$("$root/usr/bin/podvisor" version) || fail "the installed podvisor does not run"
grep -q "^podvisor $(dpkg-deb --field "$deb" Version)\$" <<<"$version" ||
  fail "installed podvisor says: $version"
echo "package: installed into a scratch root; $(head -1 <<<"$version")"
grep -q '^ExecStart=/usr/bin/podvisor run --cgroup-parent=auto /etc/podvisor/pods/%i$' \
  "$root/usr/lib/systemd/system/podvisor@.service" || fail "the unit's ExecStart is wrong"
grep -q '^ExecStart=/usr/bin/podvisor apply -f /etc/podvisor/apply.d$' \
  "$root/usr/lib/systemd/system/podvisor-apply.service" || fail "podvisor-apply's ExecStart is wrong"
grep -q '^LimitNOFILE=1024:524288$' "$root/usr/lib/systemd/system/podvisor@.service" ||
  fail "the unit sets no LimitNOFILE (S14.10)"
MANWIDTH=80 man -l "$root/usr/share/man/man5/podvisor-bundle.5.gz" >/dev/null 2>&1 ||
  fail "the installed podvisor-bundle(5) does not render"

dpkg_root --purge podvisor >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg --purge"; }
[[ ! -e $root/usr/bin/podvisor ]] || fail "dpkg --purge left usr/bin/podvisor"
echo "package: removed again; scratch root deleted"
