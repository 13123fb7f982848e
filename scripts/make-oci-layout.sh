#!/usr/bin/env bash
# Builds an OCI image layout, as `skopeo copy docker://… oci:DIR:latest`
# writes one, from local directories: one gzip layer per directory, in
# order (a layer directory may hold whiteouts, `.wh.NAME` and
# `.wh..wh..opq`), an image config for this machine's architecture, a
# manifest and index.json with the tag "latest". No registry needed.
#
#   scripts/make-oci-layout.sh LAYOUT_DIR CONFIG_JSON LAYER_DIR...
#
# CONFIG_JSON is the config's "config" object, for example
#   '{"Entrypoint":["/bin/sh","-c"],"Cmd":["echo hi"],"Env":["A=b"]}'
# OCI_ARCH=arm64 builds the image for another architecture (the entries of
# a multi-platform index in tests/helpers/test_registry.cc).
set -euo pipefail
layout=${1:?usage: make-oci-layout.sh LAYOUT_DIR CONFIG_JSON LAYER_DIR...}
config=${2:?usage: make-oci-layout.sh LAYOUT_DIR CONFIG_JSON LAYER_DIR...}
shift 2
(($# > 0)) || { echo "make-oci-layout: no layer directories" >&2; exit 2; }
case $(uname -m) in
  x86_64) arch=amd64 ;;
  aarch64) arch=arm64 ;;
  *) arch=$(uname -m) ;;
esac
arch=${OCI_ARCH:-$arch}

mkdir -p "$layout/blobs/sha256"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# store FILE: moves FILE into blobs/ and prints "HEX SIZE".
store() {
  local hex size
  hex=$(sha256sum "$1" | cut -d' ' -f1)
  size=$(stat -c %s "$1")
  mv "$1" "$layout/blobs/sha256/$hex"
  echo "$hex $size"
}

layers="" diff_ids=""
for dir in "$@"; do
  # Numeric owners and a fixed order and mtime-free gzip header: the same
  # directory always gives the same digest.
  tar --numeric-owner --sort=name -C "$dir" -cf "$tmp/layer.tar" .
  diff_id=$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)
  gzip -n "$tmp/layer.tar"
  read -r hex size < <(store "$tmp/layer.tar.gz")
  layers+="${layers:+,}{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"sha256:$hex\",\"size\":$size}"
  diff_ids+="${diff_ids:+,}\"sha256:$diff_id\""
done

printf '{"architecture":"%s","os":"linux","config":%s,"rootfs":{"type":"layers","diff_ids":[%s]}}' \
  "$arch" "$config" "$diff_ids" >"$tmp/config.json"
read -r config_hex config_size < <(store "$tmp/config.json")

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[%s]}' \
  "$config_hex" "$config_size" "$layers" >"$tmp/manifest.json"
read -r manifest_hex manifest_size < <(store "$tmp/manifest.json")

printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"org.opencontainers.image.ref.name":"latest"}}]}' \
  "$manifest_hex" "$manifest_size" "$arch" >"$layout/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
echo "sha256:$manifest_hex"
