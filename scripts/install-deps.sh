#!/usr/bin/env bash
# Installs everything podvisor needs to build and test, from Debian's
# packages only. Idempotent: does nothing (not even `apt-get update`) when
# every package is already there. Needs root.
set -euo pipefail

packages=(
  # build
  meson ninja-build pkg-config g++ python3
  libseccomp-dev libcap-dev nlohmann-json3-dev libfmt-dev libcli11-dev
  libyaml-cpp-dev libnghttp2-dev
  # registries.conf(5) (short-name aliases), a header-only TOML reader
  libtoml11-dev
  # OCI image layouts (sha256 of blobs, gzip and zstd layers), log gzip, HTTPS probes
  libssl-dev zlib1g-dev libzstd-dev
  # tests (libarchive writes the layers the unit tests unpack)
  libgtest-dev libgmock-dev libarchive-dev
  # status -o json loaded by the official Kubernetes client (tier 2)
  python3-kubernetes
  # the fuzzer and the sanitizer build's runtimes
  clang libclang-rt-14-dev
  # real OCI runtimes and container root filesystems (tiers 3-4)
  runc crun busybox-static
  # pod networking (--network cni): the CNI plugins and the iptables that
  # portmap, firewall and bridge's ipMasq drive; iproute2 for the tests
  containernetworking-plugins iptables iproute2
  # user-mode pod networks (--network slirp4netns|pasta, S22; tier 3)
  slirp4netns passt
  # run without root (S21): newuidmap/newgidmap for the subordinate ids
  uidmap
  # bundle images shipped and imported by real tools (tier 3, runc_pack_test)
  skopeo containerd
  # registry pulls: a real registry for the tests (TLS from a test CA,
  # htpasswd auth with apache2-utils' bcrypt), skopeo as the puller
  docker-registry apache2-utils
  # tier 4: podvisor as init of a qemu VM (the kernel itself is fetched
  # with `apt-get download`, never installed)
  qemu-system-x86 cpio
  # the Debian package (packaging/) and the man page check
  dpkg-dev debhelper fakeroot man-db groff-base
  # containerd-shim-podvisor-v1: protoc and libprotobuf, containerd's and
  # gogoproto's .proto files (compiled at build time, never committed), and
  # containerd with ctr for its tier-3 tests
  protobuf-compiler libprotobuf-dev golang-github-containerd-containerd-dev
  golang-github-containerd-cgroups-dev golang-github-gogo-protobuf-dev containerd
  # benchmarks: the peers podvisor is compared with
  conmon hyperfine podman
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi
if ((EUID != 0)); then
  echo "install-deps: missing packages (${missing[*]}); run as root to install them" >&2
  exit 3
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
