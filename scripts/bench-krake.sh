#!/usr/bin/env bash
# make bench-krake: Krake 1.0.1's own API server (over its own etcd) and a three-node Drover
# cluster (release build) side by side on this machine, the same load through the same client
# (tests/compat/krake/bench.py: 8 client processes creating, updating, reading and listing
# 1,000 GlobalMetrics while a watch counts the events), once through Krake's own client library
# and once as plain JSON requests. Everything runs on 127.0.0.1 and is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

objects="${BENCH_KRAKE_OBJECTS:-1000}"
gets="${BENCH_KRAKE_GETS:-4000}"
bin="${CARGO_TARGET_DIR:-$HOME/.cache/drover-target}/release/drover"
python="${DROVER_KRAKE_VENV:-$HOME/.cache/drover/krake-venv}/bin/python"
work="$(mktemp -d)"
pids=()
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap stop EXIT

port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() {
  local url="$1" header="${2:-}"
  for _ in $(seq 150); do
    if curl -fsS ${header:+-H "$header"} "$url" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "bench-krake: $url did not answer" >&2
  exit 1
}

start_krake() {
  local dir="$work/krake-$1"
  etcd_client=$(port); etcd_peer=$(port); krake_port=$(port)
  etcd --data-dir "$dir/etcd" --listen-client-urls "http://127.0.0.1:$etcd_client" \
    --advertise-client-urls "http://127.0.0.1:$etcd_client" --listen-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" --initial-cluster "default=http://127.0.0.1:$etcd_peer" \
    >"$work/etcd-$1.log" 2>&1 &
  pids+=("$!")
  PYTHONWARNINGS=ignore "$python" tests/compat/krake/krake_server.py "$krake_port" "$etcd_client" >"$work/krake-$1.log" 2>&1 &
  pids+=("$!")
  wait_for "http://127.0.0.1:$krake_port/core/roles"
}

token="bench-krake-operator-token-0123456789"
echo "$token,bench,operators" > "$work/tokens.csv"
head -c 32 /dev/urandom | base64 > "$work/secret"
chmod 600 "$work/tokens.csv" "$work/secret"
start_drover() {
  local id
  declare -ga api peer
  for id in 1 2 3; do api[$id]=$(port); peer[$id]=$(port); done
  local cluster="1=127.0.0.1:${peer[1]},2=127.0.0.1:${peer[2]},3=127.0.0.1:${peer[3]}"
  for id in 1 2 3; do
    "$bin" serve --node-id "$id" --data-dir "$work/drover-$1-$id" --api-addr "127.0.0.1:${api[$id]}" \
      --peer-addr "127.0.0.1:${peer[$id]}" --initial-cluster "$cluster" --cluster-secret-file "$work/secret" \
      --api-tokens-file "$work/tokens.csv" >"$work/drover-$1-$id.log" 2>&1 &
    pids+=("$!")
  done
  for id in 1 2 3; do wait_for "http://127.0.0.1:${api[$id]}/readyz"; done
}

echo "bench-krake: $(date -u +%FT%TZ), $(nproc) cores, $objects objects, $gets gets, 8 clients"
# Each pass against servers of its own, started empty.
for mode in krake.client raw; do
  flag=""
  if [ "$mode" = raw ]; then flag="--raw"; fi
  start_krake "$mode"
  start_drover "$mode"
  PYTHONWARNINGS=ignore "$python" tests/compat/krake/bench.py --objects "$objects" --gets "$gets" $flag \
    --target "krake=http://127.0.0.1:$krake_port" \
    --target "drover=http://127.0.0.1:${api[2]}=$token"
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
done
