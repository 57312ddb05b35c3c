#!/usr/bin/env bash
# Starts a local three-node Drover cluster on 127.0.0.1 with demo data and prints where to point
# a client. Ctrl-C stops it. With DROVER_DEMO_ONESHOT=1 it checks the cluster and exits.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/drover-target}"
bin="$CARGO_TARGET_DIR/debug/drover"
if [ -x "$bin" ]; then
  echo "demo: building drover (debug) in $CARGO_TARGET_DIR: only what changed, usually seconds"
else
  echo "demo: building drover (debug) in $CARGO_TARGET_DIR for the first time: about 8-10 minutes on a"
  echo "demo: fresh two-core machine (some 400 crates); later runs rebuild only what changed"
fi
build_started=$SECONDS
cargo build -p drover-node
# The container runtime of the third agent: a registry and a containerd of the demo's own.
cargo build -p drover-tests --bin drover-demo-runtime
runtime_bin="$CARGO_TARGET_DIR/debug/drover-demo-runtime"
echo "demo: built in $((SECONDS - build_started)) s; starting three nodes and three agents"

state=".drover-demo"
mkdir -p "$state"
# Demo nodes written by the RocksDB 10 that Drover bundled before it linked Debian's RocksDB 7.8
# cannot be opened any more; the demo's data is recreated below, so start those nodes afresh.
storage_format="rocksdb-7.8"
if [ "$(cat "$state/storage-format" 2>/dev/null)" != "$storage_format" ]; then
  if ls -d "$state"/node-*/ >/dev/null 2>&1; then
    echo "demo: the demo nodes' data predates RocksDB 7.8; starting them with empty data directories" >&2
    rm -rf "$state"/node-*/
  fi
  echo "$storage_format" > "$state/storage-format"
fi
# Secrets live in files only its owner can read (the node refuses others) and never go on a
# command line, where `ps` would show them to every local user.
umask 077
if [ ! -s "$state/secret" ]; then
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$state/secret"
fi
if [ ! -s "$state/claimer-token" ]; then
  echo demo-claimer-token > "$state/claimer-token"
fi
# The development identity provider: tokens signed with this secret by `drover token`.
if [ ! -s "$state/jwt-secret" ]; then
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$state/jwt-secret"
fi
issuer=drover-dev
# A static API token for the demo's machines and CLI, in the operators group.
if [ ! -s "$state/token" ]; then
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$state/token"
fi
demo_token="$(cat "$state/token")"
echo "$demo_token,demo,operators" > "$state/tokens.csv"
# The join token the demo's two agents accept from the control plane.
if [ ! -s "$state/join-token" ]; then
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$state/join-token"
fi
chmod 600 "$state/secret" "$state/claimer-token" "$state/jwt-secret" "$state/token" "$state/tokens.csv" "$state/join-token"
# The API serves HTTPS with a certificate of the demo's own CA (kubectl sends tokens only over
# TLS); curl, the CLI and kubectl trust that CA through CURL_CA_BUNDLE, DROVER_CACERT and the
# kubeconfig written below. The agents serve HTTPS too, with certificates of the same CA; the
# control plane is given the CA when it registers them and trusts nothing else for them.
if [ ! -s "$state/ca.pem" ] || [ ! -s "$state/ca-key.pem" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj "/CN=drover demo CA" -keyout "$state/ca-key.pem" -out "$state/ca.pem" 2>/dev/null
  chmod 644 "$state/ca.pem"
fi
# issue NAME CN: $state/NAME-cert.pem and NAME-key.pem, a server certificate for 127.0.0.1 and
# localhost signed by the demo's CA; kept while it is not older than the CA.
issue() {
  local name=$1 cn=$2
  if [ -s "$state/$name-cert.pem" ] && [ -s "$state/$name-key.pem" ] && [ ! "$state/ca.pem" -nt "$state/$name-cert.pem" ]; then
    return
  fi
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$cn" \
    -keyout "$state/$name-key.pem" -out "$state/$name.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' \
    > "$state/$name.ext"
  openssl x509 -req -in "$state/$name.csr" -CA "$state/ca.pem" -CAkey "$state/ca-key.pem" \
    -CAcreateserial -days 825 -extfile "$state/$name.ext" -out "$state/$name-cert.pem" 2>/dev/null
  chmod 644 "$state/$name-cert.pem"
}
issue api "drover demo API"
issue agent "drover demo agents"
export CURL_CA_BUNDLE="$state/ca.pem" DROVER_CACERT="$state/ca.pem"
export DROVER_SERVER="https://127.0.0.1:7401,https://127.0.0.1:7402,https://127.0.0.1:7403"
# kubectl's configuration: the first node, the demo's CA and its static token (owner-only).
cat > "$state/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
  - name: drover-demo
    cluster:
      server: https://127.0.0.1:7401
      certificate-authority: ca.pem
users:
  - name: demo
    user:
      token: $demo_token
contexts:
  - name: drover-demo
    context: {cluster: drover-demo, user: demo}
current-context: drover-demo
KUBECONFIG
chmod 600 "$state/kubeconfig"
# curl reads the header from a file (-H @file): a token in its arguments would show in `ps`.
echo "Authorization: Bearer $demo_token" > "$state/auth-header"
echo "Authorization: $(cat "$state/claimer-token")" > "$state/claimer-header"
auth=(-H @"$state/auth-header")
export DROVER_TOKEN="$demo_token"
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
agent_pids=()
runtime_pid=""
runtime_dir="$state/runtime"
# The nodes and agents run in sessions of their own (setsid), so that a Ctrl-C in the terminal
# reaches this script alone and it stops them in order: first the exec agent's instances (an
# agent leaves its instances running when it stops, as a kubelet does, so they are asked for
# while it still answers), then the agents, then the nodes.
instance_processes() {
  # Every process whose working directory is under the exec agent's data directory: the
  # instances and anything they started, whether or not the agent still answers.
  local root pid cwd
  root="$(cd "$state" && pwd)/agent-exec/"
  for pid in /proc/[0-9]*; do
    cwd=$(readlink "$pid/cwd" 2>/dev/null) || continue
    case "$cwd/" in "$root"*) echo "${pid#/proc/}" ;; esac
  done
}
stop_instances() {
  curl -fsS -H @"$state/join-header" https://127.0.0.1:7701/v1/inventory 2>/dev/null \
    | python3 -c 'import json,sys; [print(i["pid"]) for i in json.load(sys.stdin)["instances"] if i.get("pid")]' 2>/dev/null \
    | while read -r pid; do kill -TERM -- "-$pid" 2>/dev/null || true; done
}
# The container runtime (drover-demo-runtime) removes containerd, its containers, shims,
# mounts, network and cgroups, and the registry when it gets SIGTERM, and fails naming anything
# left; it is stopped after the agents, so that none of them drives it any more.
stop_runtime() {
  local until=$((SECONDS + 60))
  [ -n "$runtime_pid" ] || return 0
  kill -TERM "$runtime_pid" 2>/dev/null || true
  while kill -0 "$runtime_pid" 2>/dev/null && [ "$SECONDS" -lt "$until" ]; do sleep 0.2; done
  if kill -0 "$runtime_pid" 2>/dev/null; then
    echo "demo: the container runtime did not stop within 60 s; see $state/runtime.log" >&2
    runtime_pid=""
    return 1
  fi
  if ! wait "$runtime_pid"; then
    echo "demo: the container runtime did not stop cleanly: $(tail -1 "$state/runtime.log")" >&2
    runtime_pid=""
    return 1
  fi
  runtime_pid=""
}
stop() {
  local status=$? left pid
  trap - EXIT INT TERM
  if [ "${#agent_pids[@]}" -gt 0 ]; then
    echo "demo: stopping the exec agent's instances, the container agent's application, the agents and the nodes" >&2
    stop_instances
    if [ -n "$runtime_pid" ]; then
      # Its pod goes with the runtime anyway; deleting the application keeps the next demo's
      # from naming this run's registry (its port changes).
      curl -s -o /dev/null --max-time 10 -X DELETE -H @"$state/admin-header" \
        https://127.0.0.1:7401/kubernetes/namespaces/demo/applications/krake-web || true
    fi
    kill "${agent_pids[@]}" 2>/dev/null || true
    wait "${agent_pids[@]}" 2>/dev/null || true
  fi
  if [ "${#pids[@]}" -gt 0 ]; then
    kill "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
  fi
  if ! stop_runtime && [ "$status" = 0 ]; then status=1; fi
  # Whatever the agent did not report (it may have been stopped by someone else first).
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    left=$(instance_processes)
    [ -z "$left" ] && break
    for pid in $left; do kill -TERM "$pid" 2>/dev/null || true; done
    sleep 0.5
  done
  for pid in $(instance_processes); do kill -KILL "$pid" 2>/dev/null || true; done
  left=$(instance_processes)
  if [ -n "$left" ]; then
    echo "demo: these instance processes are still running; stop them with: kill $left" >&2
  elif [ "${#pids[@]}" -gt 0 ]; then
    echo "demo: stopped; nothing of the demo is left running (data stays in $state/)" >&2
  fi
  exit "$status"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The container runtime, in a session of its own as the agents: its temporary files (registry
# storage, containerd's root and state) under $runtime_dir/tmp, where its fixtures also sweep
# away what a killed earlier run left. A machine that cannot run containers (not root,
# containerd missing) runs the demo without it, and says why.
runtime_value() { sed -n "s/^$1=//p" "$runtime_dir/runtime.env"; }
start_runtime() {
  local until=$((SECONDS + 120)) code
  rm -f "$runtime_dir/runtime.env"
  mkdir -p "$runtime_dir/tmp"
  TMPDIR="$(pwd)/$runtime_dir/tmp" setsid "$runtime_bin" --dir "$runtime_dir" >"$state/runtime.log" 2>&1 &
  runtime_pid=$!
  until [ -s "$runtime_dir/runtime.env" ]; do
    if ! kill -0 "$runtime_pid" 2>/dev/null; then
      code=0
      wait "$runtime_pid" || code=$?
      runtime_pid=""
      echo "demo: no containerised web server: $(tail -1 "$state/runtime.log" | sed 's/^drover-demo-runtime: //')" >&2
      # A machine that has what containers need (exit 3 is "it has not") must run it in CI.
      if [ "$code" != 3 ] && [ "${DROVER_DEMO_ONESHOT:-}" = "1" ]; then exit 1; fi
      return 0
    fi
    if [ "$SECONDS" -ge "$until" ]; then
      echo "demo: the container runtime did not start within 120 s; see $state/runtime.log" >&2
      exit 1
    fi
    sleep 0.2
  done
}
start_runtime
node_flags=()
if [ -n "$runtime_pid" ]; then
  # Tenants' pods may pull from the demo's registry (on loopback, which the egress policy
  # refuses unless allowed) and from nowhere else.
  node_flags=(--tenant-egress-allow 127.0.0.1 --image-registry-allow "$(runtime_value REGISTRY)")
fi

for id in 1 2 3; do
  setsid "$bin" serve --node-id "$id" --data-dir "$state/node-$id" \
    --api-addr "127.0.0.1:740$id" --peer-addr "127.0.0.1:750$id" \
    --initial-cluster "$cluster" --cluster-secret-file "$state/secret" \
    --pools "$state/pools.yaml" --claimer-auth-token-file "$state/claimer-token" \
    --jwt-issuer "$issuer" --jwt-key-file "$state/jwt-secret" --operators "$issuer=admin" \
    --api-tokens-file "$state/tokens.csv" \
    --api-tls-cert-file "$state/api-cert.pem" --api-tls-key-file "$state/api-key.pem" "${node_flags[@]}" \
    >"$state/node-$id.log" 2>&1 &
  pids+=("$!")
done

# Two workload clusters, one agent each: `exec` runs real processes, `sim` pretends (3 machines).
echo "Authorization: Bearer $(cat "$state/join-token")" > "$state/join-header"
# The exec agent confines each instance in a cgroup, which takes root (or a delegated cgroup);
# run by another user, the demo lets its instances run unconfined (the facts say so).
confine=()
if [ "$(id -u)" != 0 ]; then
  confine=(--allow-unconfined)
  echo "demo: not run as root, so local-exec's instances run unconfined (docs/CLUSTERS.md, Confinement)" >&2
fi
setsid "$bin" agent --name local-exec --executor exec --listen 127.0.0.1:7701 --data-dir "$state/agent-exec" \
  --tls-cert-file "$state/agent-cert.pem" --tls-key-file "$state/agent-key.pem" "${confine[@]}" \
  --join-token-file "$state/join-token" --label kind=exec >"$state/agent-exec.log" 2>&1 &
agent_pids+=("$!")
setsid "$bin" agent --name local-sim --executor sim --sim-nodes 3 --listen 127.0.0.1:7702 --data-dir "$state/agent-sim" \
  --tls-cert-file "$state/agent-cert.pem" --tls-key-file "$state/agent-key.pem" \
  --join-token-file "$state/join-token" --label kind=sim >"$state/agent-sim.log" 2>&1 &
agent_pids+=("$!")
# The third, when the runtime runs: container images through containerd's CRI. Its data goes
# with each run's runtime.
if [ -n "$runtime_pid" ]; then
  rm -rf "$state/agent-containers"
  cgroup_parent=$(runtime_value CGROUP_PARENT)
  setsid "$bin" agent --name local-containers --executor container --listen 127.0.0.1:7703 \
    --data-dir "$state/agent-containers" --container-runtime-endpoint "$(runtime_value CRI_ENDPOINT)" \
    --cgroup-parent "${cgroup_parent#/}" \
    --tls-cert-file "$state/agent-cert.pem" --tls-key-file "$state/agent-key.pem" \
    --join-token-file "$state/join-token" --label kind=container >"$state/agent-containers.log" 2>&1 &
  agent_pids+=("$!")
fi

deadline=$((SECONDS + 60))
for id in 1 2 3; do
  until curl -fsS "https://127.0.0.1:740$id/readyz" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "demo: node $id did not become ready within 60s; see $state/node-$id.log" >&2
      exit 1
    fi
    sleep 0.2
  done
done

leases="https://127.0.0.1:7402/apis/coordination.k8s.io/v1/namespaces/demo/leases"
for name in scheduler controller-manager; do
  code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$leases" "${auth[@]}" -H 'Content-Type: application/json' \
    -d "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"$name\"},\"spec\":{\"holderIdentity\":\"$name-0\",\"leaseDurationSeconds\":15}}")
  case "$code" in 201|409) ;; *) echo "demo: creating lease $name answered $code" >&2; exit 1 ;; esac
done
curl -s -o /dev/null -X POST "https://127.0.0.1:7403/apis/akka.io/v1/namespaces/demo/leases" "${auth[@]}" \
  -H 'Content-Type: application/json' \
  -d '{"apiVersion":"akka.io/v1","kind":"Lease","metadata":{"name":"shop-akka-sbr"},"spec":{"owner":"","version":"","time":0}}'

# Give the demo clusters credentials, as an operator would: hold, write user data, free.
until curl -fsS "${auth[@]}" "https://127.0.0.1:7401/metric?type=k8s-cluster" >/dev/null 2>&1; do
  if [ "$SECONDS" -ge "$deadline" ]; then echo "demo: the pool file was not committed" >&2; exit 1; fi
  sleep 0.2
done
for cluster_name in cluster-a cluster-b; do
  if curl -fsS "${auth[@]}" -X POST "https://127.0.0.1:7401/acquirebystate?state=free&dest=busy&owner=demo-setup&names=$cluster_name" >/dev/null 2>&1; then
    curl -fsS "${auth[@]}" -X POST "https://127.0.0.1:7401/update?name=$cluster_name&owner=demo-setup&state=busy" \
      -d "{\"kubeconfig\":\"apiVersion: v1\\nkind: Config\\n# $cluster_name\\n\",\"ip\":\"127.0.0.1\"}" >/dev/null
    curl -fsS "${auth[@]}" -X POST "https://127.0.0.1:7401/release?name=$cluster_name&dest=free&owner=demo-setup" >/dev/null
  fi
done

# The platform: an operator, a tenant with an account, an environment and a few resources.
platform="https://127.0.0.1:7401/api/1.0-beta"
admin_token=$("$bin" token --issuer "$issuer" --key-file "$state/jwt-secret" --subject admin)
echo "Authorization: Bearer $admin_token" > "$state/admin-header"
platform_call() {
  local method=$1 path=$2 body=${3:-}
  curl -s -o /dev/null -w '%{http_code}' -X "$method" "$platform$path" \
    -H @"$state/admin-header" -H 'Content-Type: application/json' ${body:+-d "$body"}
}
for step in \
  "POST /user {\"name\":\"Demo\",\"surname\":\"Operator\"}" \
  "POST /tenant/demo {}" \
  "POST /tenant/demo/account/main {\"spec\":{\"iaas\":\"sim\",\"marks\":{\"vcpu\":{\"max\":16000}}}}" \
  "POST /tenant/demo/account/main/environment/prod {\"marks\":{\"vcpu\":{\"max\":8000},\"memory\":{\"max\":16384}},\"labels\":{\"tier\":\"prod\"}}" \
  "POST /tenant/demo/secret/db-password {\"data\":\"change-me\"}" \
  "POST /tenant/demo/port/web {\"data\":30080}" \
  "POST /tenant/demo/domain/www {\"data\":\"www.demo.drover.localhost\"}"; do
  read -r method path body <<<"$step"
  code=$(platform_call "$method" "$path" "$body")
  case "$code" in 200|409) ;; *) echo "demo: $method $path answered $code" >&2; exit 1 ;; esac
done
# The static token's machine user (the CLI's DROVER_TOKEN): a static token in group operators
# becomes a platform operator when it registers, so `drover get clusters -A` works with it.
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$platform/user" -H @"$state/auth-header" \
  -H 'Content-Type: application/json' -d '{"name":"Demo","surname":"CLI"}')
case "$code" in 200|409) ;; *) echo "demo: registering the static token's user answered $code" >&2; exit 1 ;; esac

# Register the agents as platform-wide clusters (they belong to the operator tenant), reached
# over HTTPS with the demo's CA, and pin a desired set to each. The bodies hold the join token, so
# curl reads them from owner-only files.
registered=(exec:7701:exec sim:7702:sim)
[ -z "$runtime_pid" ] || registered+=(containers:7703:container)
for agent in "${registered[@]}"; do
  IFS=: read -r name port kind <<<"$agent"
  python3 - "$port" "$kind" "$state" > "$state/register-$name.json" <<'PY'
import json, sys
port, kind, state = sys.argv[1:4]
print(json.dumps({"endpoint": f"https://127.0.0.1:{port}", "ca": open(f"{state}/ca.pem").read(),
                  "join_token": open(f"{state}/join-token").read().strip(), "labels": {"kind": kind}}))
PY
  code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$platform/tenant/operator/cluster/local-$name" \
    -H @"$state/admin-header" -H 'Content-Type: application/json' -d @"$state/register-$name.json")
  case "$code" in
    200) ;;
    # Registered by an earlier demo (perhaps over plain HTTP): point it at the agent's HTTPS.
    409) code=$(curl -s -o /dev/null -w '%{http_code}' -X PATCH "$platform/tenant/operator/cluster/local-$name" \
           -H @"$state/admin-header" -H 'Content-Type: application/json' \
           -d "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps({"endpoint": d["endpoint"], "ca": d["ca"]}))' "$state/register-$name.json")")
         [ "$code" = 200 ] || { echo "demo: pointing cluster local-$name at its HTTPS answered $code" >&2; exit 1; } ;;
    *) echo "demo: registering cluster local-$name answered $code" >&2; exit 1 ;;
  esac
done
hello='{"count":2,"exec":{"argv":["sh","-c","while true; do echo hello from $DROVER_INSTANCE_ID; sleep 5; done"]},"resources":{"cpu_millis":10,"memory_mib":16}}'
code=$(platform_call PUT /tenant/operator/cluster/local-exec/set/hello "$hello")
[ "$code" = 200 ] || { echo "demo: pinning set hello answered $code" >&2; exit 1; }
code=$(platform_call PUT /tenant/operator/cluster/local-sim/set/fleet \
  '{"count":50,"exec":{"argv":["web"]},"resources":{"cpu_millis":100,"memory_mib":128}}')
[ "$code" = 200 ] || { echo "demo: pinning set fleet answered $code" >&2; exit 1; }
# A service of tenant demo: its environment uses the exec cluster (and the container cluster,
# for krake-web); its services of processes say kind=exec, so the leader places them there.
usable='"operator/local-exec"'
[ -z "$runtime_pid" ] || usable="$usable,\"operator/local-containers\""
code=$(platform_call PATCH /tenant/demo/account/main/environment/prod "{\"clusters\":{\"names\":[$usable]}}")
[ "$code" = 200 ] || { echo "demo: selecting the environment's cluster answered $code" >&2; exit 1; }
greeter='{"deployment":{"roles":{"greeter":{"instances":2,"resources":{"cpu_millis":10,"memory_mib":16},"exec":{"argv":["sh","-c","while true; do echo greetings from $DROVER_INSTANCE_ID; sleep 5; done"]}}},"constraints":{"labels":["kind=exec"]}},"comment":"demo"}'
code=$(platform_call POST '/tenant/demo/service/greeter?accept=true' "$greeter")
case "$code" in 200|409) ;; *) echo "demo: creating service greeter answered $code" >&2; exit 1 ;; esac
# A Krake Application of tenant demo (Krake's namespace "demo"): a Deployment of two exec
# containers, a Drover service like greeter.
krake_app='{"api":"kubernetes","kind":"Application","metadata":{"name":"krake-hello"},"spec":{"manifest":[{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"hello"},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"main","image":"exec","command":["sh","-c","while true; do echo hello from Krake, $DROVER_INSTANCE_ID; sleep 5; done"],"resources":{"requests":{"cpu":"10m","memory":"16Mi"}}}]}}}}],"constraints":{"cluster":{"labels":["kind=exec"],"custom_resources":[],"metrics":[]},"migration":true}}}'
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST https://127.0.0.1:7401/kubernetes/namespaces/demo/applications \
  -H @"$state/admin-header" -H 'Content-Type: application/json' -d "$krake_app")
case "$code" in 200|409) ;; *) echo "demo: creating Krake application krake-hello answered $code" >&2; exit 1 ;; esac
# A Krake Application of container images, when the runtime runs: one busybox httpd pulled from
# the demo's registry by local-containers, and a Service, whose status.services.web is a
# running pod's address (docs/KRAKE.md). It is made afresh on every run (the registry's port
# changes): an earlier run's, if one was left, is replaced.
containers_msg=""
if [ -n "$runtime_pid" ]; then
  image=$(runtime_value IMAGE)
  krake_web=$(python3 - "$image" <<'PY'
import json, sys
deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
              "spec": {"replicas": 1, "template": {"spec": {
                  "terminationGracePeriodSeconds": 2,
                  "containers": [{"name": "web", "image": sys.argv[1], "ports": [{"containerPort": 8080}],
                                  "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}}
service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
           "spec": {"ports": [{"port": 80, "targetPort": 8080}]}}
print(json.dumps({"api": "kubernetes", "kind": "Application", "metadata": {"name": "krake-web"},
                  "spec": {"manifest": [deployment, service],
                           "constraints": {"cluster": {"labels": ["kind=container"], "custom_resources": [],
                                                       "metrics": []}, "migration": True}}}))
PY
)
  web_app=https://127.0.0.1:7401/kubernetes/namespaces/demo/applications/krake-web
  code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$web_app" -H @"$state/admin-header")
  until code=$(curl -s -o /dev/null -w '%{http_code}' -X POST https://127.0.0.1:7401/kubernetes/namespaces/demo/applications \
      -H @"$state/admin-header" -H 'Content-Type: application/json' -d "$krake_web") && [ "$code" != 409 ]; do
    if [ "$SECONDS" -ge "$((deadline + 60))" ]; then echo "demo: an earlier krake-web is still being deleted" >&2; exit 1; fi
    sleep 0.5
  done
  [ "$code" = 200 ] || { echo "demo: creating Krake application krake-web answered $code" >&2; exit 1; }
  # Where it answers, once its pod runs: the command prints it, the loop waits for it.
  web_address_cmd="curl -s -H @$state/admin-header $web_app | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"status\"][\"services\"][\"web\"])'"
  web_page=""
  web_until=$((SECONDS + 120))
  while [ "$SECONDS" -lt "$web_until" ]; do
    web_address=$(eval "$web_address_cmd" 2>/dev/null) || web_address=""
    if [ -n "$web_address" ] && web_page=$(curl -fsS --max-time 2 "http://$web_address/" 2>/dev/null); then break; fi
    web_page=""
    sleep 0.5
  done
  if [ -n "$web_page" ]; then
    web_now="  curl http://$web_address/     # answers now: $(echo "$web_page" | head -1 | cut -c1-60)…"
  else
    web_now="  (its pod does not answer yet: see $state/agent-containers.log and $state/runtime.log)"
  fi
  containers_msg="
A third agent, local-containers (https://127.0.0.1:7703, log $state/agent-containers.log), runs
container images through containerd's CRI (docs/CLUSTERS.md, The container executor) on a
containerd and a registry of the demo's own (log $state/runtime.log). The Krake application
krake-web is a Deployment of $image (busybox httpd on port 8080) and a Service; its
status.services.web is the running pod's address, which answers from this machine:
$web_now
  curl http://\$($web_address_cmd)/
  ctr -a $(runtime_value SOCKET) -n k8s.io containers ls
"
else
  containers_msg="
No third agent: this machine cannot run containers (see $state/runtime.log), so the demo runs
no containerised web server.
"
fi

leader=$(curl -fsS https://127.0.0.1:7401/cluster | python3 -c 'import json,sys; print(json.load(sys.stdin)["leader"])')
cat <<MSG

Drover is running: three nodes on 127.0.0.1, leader is node $leader. Any node answers any request.

  node 1   api https://127.0.0.1:7401   peer 127.0.0.1:7501   log $state/node-1.log
  node 2   api https://127.0.0.1:7402   peer 127.0.0.1:7502   log $state/node-2.log
  node 3   api https://127.0.0.1:7403   peer 127.0.0.1:7503   log $state/node-3.log

The API serves HTTPS with a certificate of the demo's own CA, $state/ca.pem: curl trusts it
through CURL_CA_BUNDLE, the CLI through DROVER_CACERT, kubectl through $state/kubeconfig.
Every call but probes, metrics and /platform needs a credential. The demo's static token (group
operators) is in $state/token; curl reads it from a header file (-H @file), so it never shows in
the process list, and the CLI from DROVER_TOKEN:

  export CURL_CA_BUNDLE=$state/ca.pem DROVER_CACERT=$state/ca.pem
  export DROVER_SERVER=https://127.0.0.1:7401,https://127.0.0.1:7402,https://127.0.0.1:7403
  export DROVER_TOKEN=\$(cat $state/token)
  kubectl --kubeconfig $state/kubeconfig get leases -A
  curl https://127.0.0.1:7401/cluster
  $bin cluster status        # every member; exit 1 when degraded
  curl -H @$state/auth-header https://127.0.0.1:7402/apis/coordination.k8s.io/v1/namespaces/demo/leases
  curl -N -H @$state/auth-header 'https://127.0.0.1:7403/apis/coordination.k8s.io/v1/namespaces/demo/leases?watch=true'
  curl https://127.0.0.1:7401/metrics
  curl -H @$state/auth-header -X POST 'https://127.0.0.1:7402/acquire?type=gce-project&state=free&dest=busy&owner=me'
  curl -H @$state/auth-header 'https://127.0.0.1:7403/metric?type=gce-project'
  curl -X POST https://127.0.0.1:7401/lease -H @$state/claimer-header -d '{"max_time": 60}'
  $bin lease acquire --type gce-project --owner me -- sleep 10
  $bin get leases -A -o wide
  $bin get pools
  $bin get resources
  $bin get tenants -A
  $bin get clusters -A
  $bin get services --tenant demo -o wide
  $bin get services -A

The web console, on every node: https://127.0.0.1:7401/ui/ (and :7402, :7403). Trust
$state/ca.pem in the browser (or accept its warning for the demo), then sign in with a token:
the demo's operator token (cat $state/token) sees everything; alice's (below) sees her tenants.

The platform API (Axebow 1.0-beta), browsable at https://127.0.0.1:7401/docs/ :
  curl https://127.0.0.1:7401/api/1.0-beta/platform
  (umask 077; echo "Authorization: Bearer \$($bin token --issuer $issuer --key-file $state/jwt-secret --subject alice)" > alice-header)
  curl -H @alice-header -H 'Content-Type: application/json' \\
       -d '{"name":"Alice","surname":"Example"}' https://127.0.0.1:7402/api/1.0-beta/user
  curl -H @alice-header -X POST https://127.0.0.1:7403/api/1.0-beta/tenant/alice-team
  curl -H @alice-header https://127.0.0.1:7401/api/1.0-beta/tenant/alice-team
  (the operator "admin" owns tenant "demo": --subject admin)

Two workload clusters, each a drover agent (docs/CLUSTERS.md): local-exec runs set "hello" and
the demo tenant's service "greeter" (2 real processes each, each in a cgroup of its own, held to
what it requested; the inventory shows what each uses), local-sim pretends to run set "fleet"
(50 instances on 3 simulated machines):
  agent local-exec https://127.0.0.1:7701   log $state/agent-exec.log   data $state/agent-exec/
  agent local-sim  https://127.0.0.1:7702   log $state/agent-sim.log    data $state/agent-sim/
  curl -H @$state/admin-header https://127.0.0.1:7402/api/1.0-beta/cluster
  curl -H @$state/admin-header https://127.0.0.1:7403/api/1.0-beta/tenant/operator/cluster/local-exec/inventory
  curl -H @$state/admin-header 'https://127.0.0.1:7401/api/1.0-beta/tenant/operator/cluster/local-exec/instance/hello.main.r1.0/logs?tail=5'
  curl -H @$state/join-header https://127.0.0.1:7701/v1/inventory     (the agent's own truth, over TLS)
  curl -H @$state/admin-header https://127.0.0.1:7402/api/1.0-beta/tenant/demo/service/greeter/history
  curl -H @$state/admin-header -H 'Content-Type: application/json' -X PATCH -d '{"scale":{"greeter":3}}' \
       'https://127.0.0.1:7403/api/1.0-beta/tenant/demo/service/greeter/revision/1/scale?accept=true'

Krake's API (docs/KRAKE.md), on every node, over the same state: the platform-wide clusters are
Krake Clusters of namespace "operator", a tenant's metrics its namespace's Metrics, its services
made through Krake its Applications (krake-hello runs 2 processes on local-exec):
  curl -H @$state/auth-header https://127.0.0.1:7401/me
  curl -H @$state/auth-header https://127.0.0.1:7402/kubernetes/clusters
  curl -H @$state/auth-header https://127.0.0.1:7403/core/globalmetrics
  curl -H @$state/admin-header https://127.0.0.1:7401/kubernetes/namespaces/demo/applications/krake-hello
  curl -N -H @$state/admin-header 'https://127.0.0.1:7402/kubernetes/namespaces/demo/applications?watch'
$containers_msg
MSG

if [ "${DROVER_DEMO_ONESHOT:-}" = "1" ]; then
  listed=$(curl -fsS "${auth[@]}" "$leases" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
  [ "$listed" -ge 2 ] || { echo "demo: expected the demo leases, found $listed" >&2; exit 1; }
  code=$(curl -s -o /dev/null -w '%{http_code}' "$leases")
  [ "$code" = 401 ] || { echo "demo: an anonymous lease list answered $code" >&2; exit 1; }
  DROVER_SERVER=https://127.0.0.1:7402 "$bin" lease acquire --type gce-project --owner demo-check --release-to free -- true
  code=$(curl -s -o /dev/null -w '%{http_code}' -X POST https://127.0.0.1:7403/lease -H @"$state/claimer-header" -d '{"max_time": 5}')
  [ "$code" = 200 ] || { echo "demo: claiming a cluster answered $code" >&2; exit 1; }
  tenant=$(curl -fsS -H @"$state/admin-header" https://127.0.0.1:7403/api/1.0-beta/tenant/demo)
  echo "$tenant" | python3 -c 'import json,sys; d=json.load(sys.stdin)["data"]; assert d["resources"]["secret"] == ["db-password"], d' \
    || { echo "demo: the demo tenant is not as created: $tenant" >&2; exit 1; }
  code=$(curl -s -o /dev/null -w '%{http_code}' https://127.0.0.1:7402/api/1.0-beta/tenant/demo)
  [ "$code" = 401 ] || { echo "demo: an anonymous tenant read answered $code" >&2; exit 1; }
  curl -fsS -D - -o /dev/null https://127.0.0.1:7403/ui/ | grep -qi "^content-security-policy: default-src 'none'" \
    || { echo "demo: the console at /ui/ is not served with its policy" >&2; exit 1; }
  # The agents run what was pinned and deployed: six real processes (set hello, service greeter,
  # Krake application krake-hello), fifty simulated instances.
  until [ "$(curl -fsS -H @"$state/admin-header" "$platform/tenant/operator/cluster/local-exec" 2>/dev/null \
      | python3 -c 'import json,sys; s=json.load(sys.stdin)["data"]["status"]; print(s["state"], s["instances"]["running"])' 2>/dev/null)" = "ONLINE 6" ]; do
    if [ "$SECONDS" -ge "$((deadline + 60))" ]; then echo "demo: cluster local-exec is not ONLINE with 6 instances" >&2; exit 1; fi
    sleep 0.2
  done
  for pid in $(curl -fsS -H @"$state/join-header" https://127.0.0.1:7701/v1/inventory \
      | python3 -c 'import json,sys; [print(i["pid"]) for i in json.load(sys.stdin)["instances"]]'); do
    tr '\0' '\n' < "/proc/$pid/environ" | grep -qE '^DROVER_INSTANCE_ID=(hello\.main|demo\.greeter\.greeter|demo\.krake-hello\.hello)\.r1\.' \
      || { echo "demo: process $pid is not an instance of set hello, service greeter or application krake-hello" >&2; exit 1; }
  done
  until [ "$(curl -fsS -H @"$state/admin-header" "$platform/tenant/operator/cluster/local-sim" 2>/dev/null \
      | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["status"]["instances"]["running"])' 2>/dev/null)" = 50 ]; do
    if [ "$SECONDS" -ge "$((deadline + 60))" ]; then echo "demo: cluster local-sim does not run 50 instances" >&2; exit 1; fi
    sleep 0.2
  done
  if [ -n "$runtime_pid" ]; then
    # The containerised web server answers at the address Krake reports, and containerd runs it.
    [ -n "$web_page" ] || { echo "demo: krake-web's status.services.web did not answer within 120 s" >&2; exit 1; }
    web_page=$(curl -fsS --max-time 5 "http://$(eval "$web_address_cmd")/") \
      || { echo "demo: krake-web's status.services.web does not answer" >&2; exit 1; }
    echo "$web_page" | grep -q "the Drover demo's container" \
      || { echo "demo: krake-web answered something else: $web_page" >&2; exit 1; }
    ctr -a "$(runtime_value SOCKET)" -n k8s.io containers ls | grep -qF "$(runtime_value IMAGE)" \
      || { echo "demo: containerd runs no container of $(runtime_value IMAGE)" >&2; exit 1; }
    echo "demo: krake-web answers at $web_address and runs in containerd — ok"
  fi
  logs=$(curl -fsS -H @"$state/admin-header" "$platform/tenant/operator/cluster/local-exec/instance/hello.main.r1.0/logs?tail=5")
  echo "$logs" | grep -q 'hello from hello.main.r1.0' || { echo "demo: instance logs are not readable: $logs" >&2; exit 1; }
  for pid in "${pids[@]}" "${agent_pids[@]}"; do
    if tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -e "$(cat "$state/secret")" -e "$demo_token" -e "$(cat "$state/claimer-token")" -e "$(cat "$state/join-token")"; then
      echo "demo: a secret is on node process $pid's command line" >&2; exit 1
    fi
  done
  if command -v kubectl >/dev/null 2>&1; then
    # kubectl's first call discovers the API groups (several requests): on a loaded machine it
    # may time out once, so it is given a deadline rather than a single try.
    kubectl_until=$((SECONDS + 60))
    until listed=$(kubectl --kubeconfig "$state/kubeconfig" get leases -A 2>&1) && echo "$listed" | grep -q 'demo'; do
      if [ "$SECONDS" -ge "$kubectl_until" ]; then
        echo "demo: kubectl --kubeconfig $state/kubeconfig get leases -A does not list the demo leases:" >&2
        echo "$listed" >&2
        exit 1
      fi
      sleep 1
    done
  fi
  "$bin" cluster status -o json >/dev/null || { echo "demo: drover cluster status over HTTPS failed" >&2; exit 1; }
  # The CLI lines printed above, with DROVER_TOKEN as printed: every kind answers, and the
  # tables show what the objects hold.
  cli_check() {
    # On a terminal, as a user types it (`script` gives it one): tables, not JSON.
    local expect=$1 out
    shift
    out=$(script -qec "$(printf '%q ' "$bin" "$@")" /dev/null 2>&1 | tr -d '\r') \
      || { echo "demo: drover $* failed: $out" >&2; exit 1; }
    echo "$out" | grep -qE "$expect" || { echo "demo: drover $* does not show /$expect/:" >&2; echo "$out" >&2; exit 1; }
    echo "demo: drover $* — ok"
  }
  until "$bin" get services --tenant demo -o json 2>/dev/null \
      | python3 -c 'import json,sys; d=json.load(sys.stdin)["data"]; sys.exit(0)' >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$((deadline + 60))" ]; then echo "demo: drover get services does not answer" >&2; exit 1; fi
    sleep 0.2
  done
  cli_check 'demo +scheduler' get leases -A -o wide
  cli_check 'gce-project' get pools
  cli_check 'cluster-a' get resources
  cli_check 'demo' get tenants -A
  cli_check 'operator +local-exec +ONLINE' get clusters -A
  cli_check 'local-sim' get clusters --tenant operator
  until "$bin" get services --tenant demo -o table 2>/dev/null | grep -qE '^greeter +RUNNING +local-exec +1 +2/2'; do
    if [ "$SECONDS" -ge "$((deadline + 90))" ]; then
      echo "demo: service greeter is not RUNNING revision 1 on local-exec in the table:" >&2
      "$bin" get services --tenant demo -o table >&2 || true
      exit 1
    fi
    sleep 0.2
  done
  cli_check '^greeter +RUNNING +local-exec +1 +2/2' get services --tenant demo -o wide
  cli_check '^greeter ' get service greeter --tenant demo -o wide
  cli_check '^demo +greeter +RUNNING' get services -A
  # -o yaml as a YAML 1.1 reader (PyYAML) reads it: times stay strings, as kubectl quotes them.
  "$bin" get lease scheduler -n demo -o yaml | python3 -c '
import sys, yaml
d = yaml.safe_load(sys.stdin)
t = d["metadata"]["creationTimestamp"]
assert isinstance(t, str), "creationTimestamp read back as %r" % (t,)' \
    || { echo "demo: drover get lease scheduler -n demo -o yaml does not read back as it was" >&2; exit 1; }
  echo "demo: drover get lease scheduler -n demo -o yaml — read back by PyYAML with its times as strings"
  echo "demo: one-shot check passed; stopping"
  exit 0
fi
echo "Press Ctrl-C to stop the cluster (data stays in $state/)."
wait
