#!/usr/bin/env bash
# Installs what a fresh machine lacks to build and test Drover: Debian's RocksDB library and
# headers (linked, not compiled; see .cargo/config.toml), clang and libclang (its bindings),
# protoc (the CRI client's bindings), containerd, runc, a registry, skopeo, umoci, busybox and
# the CNI plugins (the container executor and its tests),
# iptables and libfaketime (the chaos harness's partitions and clock skew), etcd (the
# benchmark's reference cluster), Prometheus (the metric-scoring and monitoring tests' real
# server), docker-compose and systemd's analyzer (the deployment recipes' validators), rustfmt and clippy, the official Kubernetes Python client used
# by the compatibility tests, schemathesis for the platform API's spec test, and Krake 1.0.1 in
# its own Python 3.9 environment (scripts/setup-krake.sh) for the Krake dialect's, and
# Verdaccio 6.8.0 (scripts/setup-verdaccio.sh) for the marketplace's. Safe to run
# again: it installs only what is missing.
set -euo pipefail

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing_debs=()
[ -e /usr/include/rocksdb/c.h ] && ls /usr/lib/*/librocksdb.so >/dev/null 2>&1 || missing_debs+=(librocksdb-dev)
command -v clang >/dev/null 2>&1 || missing_debs+=(clang)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || missing_debs+=(libclang-dev)
command -v curl >/dev/null 2>&1 || missing_debs+=(curl)
command -v make >/dev/null 2>&1 || missing_debs+=(make)
command -v iptables >/dev/null 2>&1 || missing_debs+=(iptables)
command -v unshare >/dev/null 2>&1 || missing_debs+=(util-linux)
command -v ip >/dev/null 2>&1 || missing_debs+=(iproute2)
ls /usr/lib/*/faketime/libfaketimeMT.so.1 >/dev/null 2>&1 || missing_debs+=(faketime)
command -v etcd >/dev/null 2>&1 || missing_debs+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || missing_debs+=(etcd-client)
command -v prometheus >/dev/null 2>&1 || missing_debs+=(prometheus)
command -v jq >/dev/null 2>&1 || missing_debs+=(jq)
command -v openssl >/dev/null 2>&1 || missing_debs+=(openssl)
# docker-compose validates deploy/compose (when the compose plugin is missing).
docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null 2>&1 || missing_debs+=(docker-compose)
command -v systemd-analyze >/dev/null 2>&1 || missing_debs+=(systemd)
# The CRI client's bindings are generated from the CRI's protobuf at build time (protoc).
command -v protoc >/dev/null 2>&1 || missing_debs+=(protobuf-compiler)
# The container executor's runtime and its tests' registry, image tools and network plugins.
command -v containerd >/dev/null 2>&1 || missing_debs+=(containerd)
command -v runc >/dev/null 2>&1 || missing_debs+=(runc)
command -v docker-registry >/dev/null 2>&1 || missing_debs+=(docker-registry)
command -v skopeo >/dev/null 2>&1 || missing_debs+=(skopeo)
command -v umoci >/dev/null 2>&1 || missing_debs+=(umoci)
[ -x /bin/busybox ] && busybox --list 2>/dev/null | grep -qx httpd || missing_debs+=(busybox-static)
[ -x /usr/lib/cni/bridge ] || missing_debs+=(containernetworking-plugins)
command -v htpasswd >/dev/null 2>&1 || missing_debs+=(apache2-utils)
# The web console's tests drive Debian's Chromium through its ChromeDriver.
command -v chromium >/dev/null 2>&1 || missing_debs+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing_debs+=(chromium-driver)
if [ "${#missing_debs[@]}" -gt 0 ]; then
  echo "setup: installing ${missing_debs[*]}"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing_debs[@]}" >/dev/null
fi

if command -v rustup >/dev/null 2>&1; then
  for component in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^${component}" || rustup component add "${component}"
  done
fi

if ! python3 -c 'import kubernetes' >/dev/null 2>&1; then
  echo "setup: installing the kubernetes python client"
  python3 -m pip install --quiet --disable-pip-version-check -r "$(dirname "$0")/../tests/compat/requirements.txt"
fi

if ! python3 -c 'import schemathesis' >/dev/null 2>&1; then
  echo "setup: installing schemathesis (fuzzes the platform API from its OpenAPI document)"
  python3 -m pip install --quiet --disable-pip-version-check "schemathesis==4.32.5"
fi

# Krake 1.0.1 (client library and API server) for the Krake dialect's tests.
"$(dirname "$0")/setup-krake.sh"

# Verdaccio (an npm registry) for the marketplace's tests.
command -v npm >/dev/null 2>&1 || { echo "setup: installing nodejs and npm"; as_root apt-get update -qq; DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq nodejs npm >/dev/null; }
"$(dirname "$0")/setup-verdaccio.sh"

command -v kubectl >/dev/null 2>&1 || echo "setup: warning: kubectl is not installed; the kubectl compatibility test will fail" >&2
echo "setup: ready"
