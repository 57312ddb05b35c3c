#!/usr/bin/env bash
# What `make bench` needs beyond `scripts/setup.sh`: etcd's own Go client load generator
# (bench/etcdgrpcload/main.go), built against Debian's packaged etcd 3.4 client sources, so that
# the comparison also measures etcd over its native gRPC API and not only its JSON gateway.
# Installs Go and those sources from Debian when missing; builds the binary into
# $CARGO_TARGET_DIR/etcdgrpcload when it is missing or older than its source. Safe to run again.
set -euo pipefail

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

here="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$here/target}"
out="$target/etcdgrpcload"
src="$here/bench/etcdgrpcload/main.go"

missing_debs=()
command -v go >/dev/null 2>&1 || missing_debs+=(golang-go)
[ -d /usr/share/gocode/src/go.etcd.io/etcd/clientv3 ] || missing_debs+=(golang-etcd-server-dev)
if [ "${#missing_debs[@]}" -gt 0 ]; then
  echo "setup-bench: installing ${missing_debs[*]}"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing_debs[@]}" >/dev/null
fi

if [ ! -x "$out" ] || [ "$src" -nt "$out" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/src/etcdgrpcload" "$target"
  cp "$src" "$work/src/etcdgrpcload/"
  (cd "$work/src/etcdgrpcload" && GO111MODULE=off GOPATH="$work:/usr/share/gocode" GOCACHE="$work/cache" go build -o "$out" .)
  echo "setup-bench: built $out"
fi
