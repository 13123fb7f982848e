#!/usr/bin/env bash
# Builds the Debian package podvisor_<version>_<arch>.deb from an existing
# meson build directory: `meson install --destdir` stages what meson
# installs (the binary, podvisor(1), podvisor-bundle(5), podvisor@.service,
# podvisor-apply.path and .service, podvisor-applied@.service)
# and dpkg-deb packs it with the control files of packaging/debian/.
#
#   scripts/build-deb.sh [BUILD_DIR [OUT_DIR]]    (default: build, build/deb)
#
# Why not dpkg-buildpackage: it would configure and compile the whole tree
# again in a clean directory (minutes on two cores), where CI has just
# built and tested this very binary; packing the tested build dir takes
# seconds. The package is the same: Depends comes from dpkg-shlibdeps,
# man pages are compressed, files are owned by root (--root-owner-group).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-$build/deb}
[[ -f $build/build.ninja ]] || meson setup "$build" >/dev/null

# The unit runs /usr/bin/podvisor: stage with the Debian prefix. Changing
# the prefix regenerates build.ninja but recompiles nothing.
if [[ $(meson introspect "$build" --buildoptions | python3 -c \
      'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))') != /usr ]]; then
  meson configure "$build" -Dprefix=/usr >/dev/null
fi
ninja -C "$build" podvisor >/dev/null

version=$(meson introspect "$build" --projectinfo | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
arch=$(dpkg --print-architecture)
stage=$(mktemp -d "${TMPDIR:-/tmp}/podvisor-deb.XXXXXX")
trap 'rm -rf "$stage"' EXIT
root=$stage/root

meson install -C "$build" --no-rebuild --quiet --destdir "$root" >/dev/null
strip --strip-unneeded "$root/usr/bin/podvisor"
install -d -m 755 "$root/etc/podvisor/pods" "$root/etc/podvisor/apply.d" "$root/usr/share/doc/podvisor"
install -m 644 packaging/debian/copyright "$root/usr/share/doc/podvisor/copyright"
gzip -9n <packaging/debian/changelog >"$root/usr/share/doc/podvisor/changelog.gz"
# Debian policy: man pages gzip-compressed, without timestamps.
find "$root/usr/share/man" -type f ! -name '*.gz' -exec gzip -9n {} +

# Depends from the libraries the binary links (dpkg-shlibdeps wants a
# debian/control to read; give it one in the staging dir).
mkdir -p "$stage/debian" "$root/DEBIAN"
printf 'Source: podvisor\n\nPackage: podvisor\nArchitecture: any\n' >"$stage/debian/control"
depends=$(cd "$stage" && dpkg-shlibdeps -O root/usr/bin/podvisor 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[[ -n $depends ]] || { echo "build-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@DEPENDS@/$depends/" \
  packaging/debian/control >"$root/DEBIAN/control"
echo "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)" >>"$root/DEBIAN/control"
install -m 755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$root/DEBIAN/"

mkdir -p "$out"
deb=$out/podvisor_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
