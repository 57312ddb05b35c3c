#!/usr/bin/env bash
# Writes the secrets compose.yaml mounts, once: owner-only files (mode 600) in
# deploy/compose/secrets/. Existing files are kept, so running it again changes nothing.
set -euo pipefail
dir="$(cd "$(dirname "$0")" && pwd)/secrets"
umask 077
mkdir -p "$dir"
random_hex() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }
# cluster-secret: shared by the three nodes (at least 16 printable characters).
# jwt-key: the HS256 key of the development issuer (at least 32 bytes).
# join-token: what the control plane presents to the agent (at least 16 characters).
for spec in cluster-secret:24 jwt-key:32 join-token:24; do
  name=${spec%%:*} bytes=${spec##*:}
  if [ ! -s "$dir/$name" ]; then
    random_hex "$bytes" > "$dir/$name"
    echo "wrote $dir/$name"
  fi
  chmod 600 "$dir/$name"
done
