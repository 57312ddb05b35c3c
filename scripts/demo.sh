#!/usr/bin/env bash
# Starts a local three-node Drover cluster on 127.0.0.1 with demo data and prints where to point
# a client. Ctrl-C stops it. With DROVER_DEMO_ONESHOT=1 it checks the cluster and exits.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/drover-target}"
cargo build --quiet -p drover-node
bin="$CARGO_TARGET_DIR/debug/drover"

state=".drover-demo"
mkdir -p "$state"
if [ ! -s "$state/secret" ]; then
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$state/secret"
fi
secret="$(cat "$state/secret")"
cluster="1=127.0.0.1:7501,2=127.0.0.1:7502,3=127.0.0.1:7503"
cat > "$state/pools.yaml" <<'YAML'
resources:
  - type: gce-project
    state: free
    names: [project-1, project-2, project-3]
  - type: k8s-cluster
    state: free
    names: [cluster-a, cluster-b]
YAML

pids=()
stop() {
  if [ "${#pids[@]}" -gt 0 ]; then
    kill "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
  fi
}
trap stop EXIT
trap 'exit 130' INT TERM

for id in 1 2 3; do
  "$bin" serve --node-id "$id" --data-dir "$state/node-$id" \
    --api-addr "127.0.0.1:740$id" --peer-addr "127.0.0.1:750$id" \
    --initial-cluster "$cluster" --cluster-secret "$secret" \
    --pools "$state/pools.yaml" --claimer-auth-token demo-claimer-token \
    >"$state/node-$id.log" 2>&1 &
  pids+=("$!")
done

deadline=$((SECONDS + 60))
for id in 1 2 3; do
  until curl -fsS "http://127.0.0.1:740$id/readyz" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "demo: node $id did not become ready within 60s; see $state/node-$id.log" >&2
      exit 1
    fi
    sleep 0.2
  done
done

leases="http://127.0.0.1:7402/apis/coordination.k8s.io/v1/namespaces/demo/leases"
for name in scheduler controller-manager; do
  code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$leases" -H 'Content-Type: application/json' \
    -d "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"$name\"},\"spec\":{\"holderIdentity\":\"$name-0\",\"leaseDurationSeconds\":15}}")
  case "$code" in 201|409) ;; *) echo "demo: creating lease $name answered $code" >&2; exit 1 ;; esac
done
curl -s -o /dev/null -X POST "http://127.0.0.1:7403/apis/akka.io/v1/namespaces/demo/leases" \
  -H 'Content-Type: application/json' \
  -d '{"apiVersion":"akka.io/v1","kind":"Lease","metadata":{"name":"shop-akka-sbr"},"spec":{"owner":"","version":"","time":0}}'

# Give the demo clusters credentials, as an operator would: hold, write user data, free.
until curl -fsS "http://127.0.0.1:7401/metric?type=k8s-cluster" >/dev/null 2>&1; do
  if [ "$SECONDS" -ge "$deadline" ]; then echo "demo: the pool file was not committed" >&2; exit 1; fi
  sleep 0.2
done
for cluster_name in cluster-a cluster-b; do
  if curl -fsS -X POST "http://127.0.0.1:7401/acquirebystate?state=free&dest=busy&owner=demo-setup&names=$cluster_name" >/dev/null 2>&1; then
    curl -fsS -X POST "http://127.0.0.1:7401/update?name=$cluster_name&owner=demo-setup&state=busy" \
      -d "{\"kubeconfig\":\"apiVersion: v1\\nkind: Config\\n# $cluster_name\\n\",\"ip\":\"127.0.0.1\"}" >/dev/null
    curl -fsS -X POST "http://127.0.0.1:7401/release?name=$cluster_name&dest=free&owner=demo-setup" >/dev/null
  fi
done

leader=$(curl -fsS http://127.0.0.1:7401/cluster | python3 -c 'import json,sys; print(json.load(sys.stdin)["leader"])')
cat <<MSG

Drover is running: three nodes on 127.0.0.1, leader is node $leader. Any node answers any request.

  node 1   api http://127.0.0.1:7401   peer 127.0.0.1:7501   log $state/node-1.log
  node 2   api http://127.0.0.1:7402   peer 127.0.0.1:7502   log $state/node-2.log
  node 3   api http://127.0.0.1:7403   peer 127.0.0.1:7503   log $state/node-3.log

Try:
  curl http://127.0.0.1:7401/cluster
  curl http://127.0.0.1:7402/apis/coordination.k8s.io/v1/namespaces/demo/leases
  curl -N 'http://127.0.0.1:7403/apis/coordination.k8s.io/v1/namespaces/demo/leases?watch=true'
  KUBECONFIG=/dev/null kubectl --server http://127.0.0.1:7401 get leases -n demo
  curl http://127.0.0.1:7401/metrics
  curl -X POST 'http://127.0.0.1:7402/acquire?type=gce-project&state=free&dest=busy&owner=me'
  curl 'http://127.0.0.1:7403/metric?type=gce-project'
  curl -X POST http://127.0.0.1:7401/lease -H 'Authorization: demo-claimer-token' -d '{"max_time": 60}'
  DROVER_SERVER=http://127.0.0.1:7401 $bin lease acquire --type gce-project --owner me -- sleep 10

MSG

if [ "${DROVER_DEMO_ONESHOT:-}" = "1" ]; then
  listed=$(curl -fsS "$leases" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
  [ "$listed" -ge 2 ] || { echo "demo: expected the demo leases, found $listed" >&2; exit 1; }
  DROVER_SERVER=http://127.0.0.1:7402 "$bin" lease acquire --type gce-project --owner demo-check --release-to free -- true
  code=$(curl -s -o /dev/null -w '%{http_code}' -X POST http://127.0.0.1:7403/lease -H 'Authorization: demo-claimer-token' -d '{"max_time": 5}')
  [ "$code" = 200 ] || { echo "demo: claiming a cluster answered $code" >&2; exit 1; }
  echo "demo: one-shot check passed; stopping"
  exit 0
fi
echo "Press Ctrl-C to stop the cluster (data stays in $state/)."
wait
