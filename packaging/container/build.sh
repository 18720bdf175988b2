#!/usr/bin/env bash
# Builds idemgate's container image from the dist binary, with no base image: stages
# rootfs/ (the binary, the shared libraries ldd names for it, passwd/group for user 10001,
# /etc/idemgate/idemgate.toml) and runs `podman build` on the Containerfile beside this
# script. Usage: packaging/container/build.sh [TAG] (default localhost/idemgate:VERSION).
# Set IDEMGATE_BIN to use a binary built elsewhere; otherwise it builds the Cargo profile
# IDEMGATE_PACKAGE_PROFILE names (default dist, what is shipped).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
case $target in /*) ;; *) target=$root/$target ;; esac
export CONTAINERS_CONF=${CONTAINERS_CONF:-$here/containers.conf}

bin=${IDEMGATE_BIN:-}
if [ -z "$bin" ]; then
  profile=${IDEMGATE_PACKAGE_PROFILE:-dist}
  (cd "$root" && cargo build --profile "$profile" --locked --bin idemgate)
  case $profile in dev) bin=$target/debug/idemgate ;; *) bin=$target/$profile/idemgate ;; esac
fi
version=$("$bin" --version | awk '{print $2}')
tag=${1:-localhost/idemgate:$version}

ctx=$target/container
rm -rf "$ctx"
mkdir -p "$ctx/rootfs/usr/bin" "$ctx/rootfs/etc/idemgate" "$ctx/rootfs/tmp" "$ctx/data"
chmod 1777 "$ctx/rootfs/tmp"
cp "$bin" "$ctx/rootfs/usr/bin/idemgate"
# Exactly the libraries the dynamic loader resolves for this binary (and the loader itself),
# each at the path ldd names, copied as files rather than symlinks.
ldd "$bin" | grep -o '/[^ ]*' | while read -r lib; do
  mkdir -p "$ctx/rootfs$(dirname "$lib")"
  cp -L "$lib" "$ctx/rootfs$lib"
done
printf 'root:x:0:0::/:/nonexistent\nidemgate:x:10001:10001::/var/lib/idemgate:/nonexistent\n' >"$ctx/rootfs/etc/passwd"
printf 'root:x:0:\nidemgate:x:10001:\n' >"$ctx/rootfs/etc/group"
printf 'hosts: files dns\n' >"$ctx/rootfs/etc/nsswitch.conf"
cp "$here/idemgate.toml" "$ctx/rootfs/etc/idemgate/idemgate.toml"
cp "$here/Containerfile" "$ctx/Containerfile"

podman build --quiet --format docker --tag "$tag" --file "$ctx/Containerfile" "$ctx" >/dev/null
echo "image: $tag ($(podman image inspect --format '{{.Size}}' "$tag") bytes)"
