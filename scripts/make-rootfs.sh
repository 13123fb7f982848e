#!/usr/bin/env bash
# Builds a busybox root filesystem from Debian's busybox-static: one static
# binary, a symlink per applet, and the few files a container expects.
#   scripts/make-rootfs.sh DIR      (DIR/rootfs is created; DIR may exist)
set -euo pipefail
dir=${1:?usage: make-rootfs.sh IMAGE_DIR}
busybox=/bin/busybox
[[ -x $busybox ]] || { echo "make-rootfs: $busybox missing (apt-get install busybox-static)" >&2; exit 3; }
file "$busybox" 2>/dev/null | grep -q 'dynamically' && { echo "make-rootfs: $busybox is not static" >&2; exit 3; }

rootfs=$dir/rootfs
mkdir -p "$rootfs"/{bin,sbin,etc,proc,sys,dev,tmp,run,var/log,root,home}
chmod 1777 "$rootfs/tmp"
cp -f "$busybox" "$rootfs/bin/busybox"
for applet in $("$busybox" --list); do
  [[ $applet == busybox ]] && continue
  ln -sf busybox "$rootfs/bin/$applet"
done
cat >"$rootfs/etc/passwd" <<'P'
root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/:/bin/false
www:x:33:33:www:/var/www:/bin/false
nobody:x:65534:65534:nobody:/:/bin/false
P
cat >"$rootfs/etc/group" <<'G'
root:x:0:
daemon:x:1:
www:x:33:
nogroup:x:65534:
G
echo "busybox image from Debian's busybox-static ($("$busybox" | head -1))" >"$dir/README"
