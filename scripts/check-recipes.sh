#!/usr/bin/env bash
# Validates the deployment recipes in deploy/ (systemd units, compose, Kubernetes) with the tools
# this machine has, and exits non-zero naming every check that failed.
#
#   scripts/check-recipes.sh [DROVER_BINARY]
#
# DROVER_BINARY (default: $CARGO_TARGET_DIR/debug/drover, CARGO_TARGET_DIR defaulting to
# ~/.cache/drover-target) stands in for /usr/local/bin/drover in the units, since
# `systemd-analyze verify` refuses a unit whose executable does not exist; any executable file
# will do for that. When it is a real drover binary, the checks that run it also run: the TOML
# example and the agent environment file are loaded by drover itself, and every flag and DROVER_*
# variable the recipes use must appear in `drover serve --help` or `drover agent --help`.
# Nothing here builds anything, starts a node, or talks to a cluster.
set -euo pipefail
cd "$(dirname "$0")/.."

bin="${1:-${CARGO_TARGET_DIR:-$HOME/.cache/drover-target}/debug/drover}"
systemd_dir=deploy/systemd
compose_dir=deploy/compose
kube_dir=deploy/kubernetes

failed=()
ok() { echo "ok    $*"; }
fail() {
  echo "FAIL  $1" >&2
  shift
  local detail line
  for detail in "$@"; do
    while IFS= read -r line; do printf '        %s\n' "$line" >&2; done <<< "$detail"
  done
  failed+=("$CHECK")
}
skip() { echo "skip  $*"; }
note() { echo "      $*"; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

have_python_yaml=no
if python3 -c 'import yaml' 2>/dev/null; then have_python_yaml=yes; fi

# --- systemd ---------------------------------------------------------------------------------

check_units_verify() {
  CHECK="systemd-analyze verify"
  if ! command -v systemd-analyze >/dev/null 2>&1; then
    fail "$CHECK: systemd-analyze is not installed"
    return
  fi
  if [ ! -x "$bin" ]; then
    fail "$CHECK: $bin is not an executable file" \
      "build drover (cargo build -p drover-node) or pass any executable as the first argument"
    return
  fi
  local bin_abs unit units=()
  bin_abs="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
  for unit in drover.service drover-agent.service; do
    if ! grep -q '^ExecStart=/usr/local/bin/drover ' "$systemd_dir/$unit"; then
      fail "$CHECK: $unit: ExecStart does not run /usr/local/bin/drover"
      return
    fi
    sed "s#/usr/local/bin/drover#$bin_abs#g" "$systemd_dir/$unit" > "$tmp/$unit"
    units+=("$tmp/$unit")
  done
  # A misspelt directive or a bad value is only a warning to systemd ("FILE:LINE: Unknown key
  # …, ignoring", "Failed to parse …, ignoring"). Plain `verify` (systemd 252) exits 0 for it
  # and non-zero only for fatal problems (no ExecStart=, an executable that does not exist, an
  # unknown section swallowing [Service]); with --recursive-errors=… it exits 1 for warnings too.
  # Not to depend on either, the check fails on a non-zero status OR on any line about our files.
  # Flags: --man=no (no man-db needed; the units have no man: Documentation=), --generators=no
  # (generators need root and describe the host, not these files), --recursive-errors=no (only
  # the named units count, not the host's units they are ordered after, such as
  # network-online.target). In a container without systemd as PID 1 (where this was written)
  # verify printed nothing and exited 0 for the good units, and does not report a User= that
  # does not exist, so there was nothing environmental to filter; lines about other units are
  # shown but ignored.
  local out rc=0
  out="$(systemd-analyze verify --man=no --generators=no --recursive-errors=no "${units[@]}" 2>&1)" || rc=$?
  local ours
  ours="$(printf '%s\n' "$out" | grep -E "^($tmp/)?drover(-agent)?\.service[:]" || true)"
  if [ "$rc" -ne 0 ] || [ -n "$ours" ]; then
    # shellcheck disable=SC2001
    fail "$CHECK (exit status $rc)" "$(printf '%s\n' "${ours:-$out}" | sed "s#$tmp/#$systemd_dir/#g")"
    return
  fi
  if [ -n "$out" ]; then
    note "systemd-analyze printed, about other units (ignored):"
    printf '%s\n' "$out" | sed 's/^/        /'
  fi
  ok "$CHECK: drover.service, drover-agent.service"
}

check_units_content() {
  CHECK="systemd unit settings"
  local unit=$systemd_dir/drover.service agent=$systemd_dir/drover-agent.service missing=() d
  # The hardening drover.service promises (deploy/README.md).
  for d in 'Type=notify' 'NotifyAccess=main' 'User=drover' 'StateDirectory=drover' 'NoNewPrivileges=yes' \
    'ProtectSystem=strict' 'ProtectHome=yes' 'PrivateTmp=yes' 'PrivateDevices=yes' \
    'ProtectKernelTunables=yes' 'ProtectKernelModules=yes' 'ProtectControlGroups=yes' \
    'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' 'RestrictNamespaces=yes' \
    'LockPersonality=yes' 'MemoryDenyWriteExecute=yes' 'SystemCallArchitectures=native' \
    'CapabilityBoundingSet=' 'ReadWritePaths=/var/lib/drover' 'LimitNOFILE=65536' \
    'Restart=on-failure' 'RestartSec=2s' \
    'ExecStart=/usr/local/bin/drover serve --config /etc/drover/drover.toml'; do
    grep -qxF "$d" "$unit" || missing+=("drover.service lacks: $d")
  done
  # drover agent has no sd_notify: Type=notify would time out (see the unit's comment).
  grep -q '^Type=notify' "$agent" && missing+=("drover-agent.service: Type=notify, which the agent does not implement")
  # The agent leaves its instances running across its own restarts, and they may JIT.
  grep -qxF 'KillMode=process' "$agent" || missing+=("drover-agent.service lacks: KillMode=process")
  grep -q '^MemoryDenyWriteExecute=' "$agent" && missing+=("drover-agent.service sets MemoryDenyWriteExecute=, which its instances inherit")
  grep -qxF 'User=drover-agent' "$agent" || missing+=("drover-agent.service lacks: User=drover-agent")
  if [ "${#missing[@]}" -gt 0 ]; then
    fail "$CHECK" "${missing[@]}"
    return
  fi
  ok "$CHECK: hardening present, Type=notify, agent KillMode=process"
}

check_units_security() {
  CHECK="systemd-analyze security"
  # The exposure score of the unit files alone (--offline), a guard against hardening being
  # dropped: drover.service scored 3.0, drover-agent.service 3.3 when written.
  if ! systemd-analyze security --help 2>/dev/null | grep -q -- '--offline'; then
    skip "$CHECK: this systemd-analyze has no --offline (systemd < 250)"
    return
  fi
  local unit threshold score rc
  for unit in drover.service:35 drover-agent.service:40; do
    threshold=${unit##*:} unit=${unit%%:*}
    cp "$systemd_dir/$unit" "$tmp/$unit"
    rc=0
    score="$(systemd-analyze security --offline=yes --threshold="$threshold" "$tmp/$unit" 2>&1)" || rc=$?
    score="$(printf '%s\n' "$score" | grep -o 'Overall exposure level for [^:]*: [0-9.]* [A-Z]*' || true)"
    if [ "$rc" -ne 0 ]; then
      fail "$CHECK: $unit is above $((threshold / 10)).$((threshold % 10))" "${score:-no score printed}"
    else
      ok "$CHECK: ${score#Overall } (limit $((threshold / 10)).$((threshold % 10)))"
    fi
  done
}

check_sysusers() {
  CHECK="systemd-sysusers"
  if ! command -v systemd-sysusers >/dev/null 2>&1; then
    skip "$CHECK: systemd-sysusers is not installed"
    return
  fi
  local root="$tmp/sysroot" out
  mkdir -p "$root/etc"
  if ! out="$(systemd-sysusers --root="$root" "$PWD/$systemd_dir/drover.sysusers" 2>&1)"; then
    fail "$CHECK: drover.sysusers" "$out"
    return
  fi
  local user
  for user in drover drover-agent; do
    if ! grep -q "^$user:" "$root/etc/passwd"; then
      fail "$CHECK: drover.sysusers does not create user $user, which a unit runs as"
      return
    fi
  done
  ok "$CHECK: drover.sysusers creates drover and drover-agent"
}

# --- the binary itself -------------------------------------------------------------------------

is_drover() { "$bin" serve --help 2>/dev/null | grep -q -- '--config'; }

check_toml_example() {
  CHECK="drover.toml.example"
  if ! is_drover; then
    skip "$CHECK: $bin is not a drover binary; the TOML example was not loaded"
    return
  fi
  # drover loads and checks the whole configuration (unknown keys, addresses, the initial
  # cluster naming this node, the secret file's mode) before it binds anything. The secret and
  # token files are stand-ins (flags override the file), the listen addresses are in TEST-NET-1
  # (192.0.2.0/24), which no host has, so a valid configuration ends in a bind error (status 1)
  # and never starts a node; an invalid one exits 2 naming the setting.
  (umask 077 && printf '0123456789abcdef0123\n' > "$tmp/secret" && printf 'check0123456789abcdef,check,operators\n' > "$tmp/tokens.csv")
  local out rc=0
  out="$(env -i PATH="$PATH" RUST_BACKTRACE=0 RUST_LIB_BACKTRACE=0 timeout 20 "$bin" serve --config "$systemd_dir/drover.toml.example" \
    --cluster-secret-file "$tmp/secret" --api-tokens-file "$tmp/tokens.csv" --data-dir "$tmp/data" \
    --api-addr 192.0.2.1:7400 --peer-addr 192.0.2.1:7500 2>&1)" || rc=$?
  if [ "$rc" -eq 1 ] && printf '%s' "$out" | grep -q '192.0.2.1:7400'; then
    ok "$CHECK: drover serve accepts it (stopped at binding the test address, as intended)"
  else
    fail "$CHECK: drover serve --config refused it (exit status $rc)" "$out"
  fi
}

check_agent_env_example() {
  CHECK="drover-agent.env.example"
  if ! is_drover; then
    skip "$CHECK: $bin is not a drover binary"
    return
  fi
  (umask 077 && printf 'join0123456789abcdef\n' > "$tmp/join-token" && printf 'key\n' > "$tmp/agent-key.pem")
  : > "$tmp/agent-cert.pem"
  local out rc=0
  # The agent reads its settings from the environment: the example's (in a clean environment),
  # with the listen address moved to TEST-NET-1 so a valid configuration stops at the bind
  # (status 2, naming --listen), and stand-in data directory, token file and TLS files.
  out="$(env -i PATH="$PATH" RUST_BACKTRACE=0 bash -c '
      set -a; . "$1"; set +a
      export DROVER_AGENT_LISTEN=192.0.2.1:7700 DROVER_AGENT_DATA_DIR="$2/agent" DROVER_AGENT_JOIN_TOKEN_FILE="$2/join-token"
      export DROVER_AGENT_TLS_CERT_FILE="$2/agent-cert.pem" DROVER_AGENT_TLS_KEY_FILE="$2/agent-key.pem"
      exec timeout 20 "$3" agent' check "$systemd_dir/drover-agent.env.example" "$tmp" "$bin" 2>&1)" || rc=$?
  if printf '%s' "$out" | grep -q 'cannot listen on 192.0.2.1:7700'; then
    ok "$CHECK: drover agent accepts it (stopped at binding the test address, as intended)"
  else
    fail "$CHECK: drover agent refused it (exit status $rc)" "$out"
  fi
}

check_flags_exist() {
  CHECK="flags and variables"
  if ! is_drover; then
    skip "$CHECK: $bin is not a drover binary; flags were not checked against its --help"
    return
  fi
  if [ "$have_python_yaml" != yes ]; then
    fail "$CHECK: python3 cannot import yaml (PyYAML)"
    return
  fi
  "$bin" serve --help > "$tmp/serve-help"
  "$bin" agent --help > "$tmp/agent-help"
  kubectl kustomize "$kube_dir" > "$tmp/kube-flags.yaml" 2>/dev/null || true
  local out
  if out="$(python3 - "$tmp/serve-help" "$tmp/agent-help" "$tmp/kube-flags.yaml" <<'PY' 2>&1
import re, sys, yaml
serve_help, agent_help = open(sys.argv[1]).read(), open(sys.argv[2]).read()
helps = {"serve": serve_help, "agent": agent_help}
flag_re = re.compile(r"^--[a-z][a-z0-9-]*")
env_re = re.compile(r"\bDROVER_[A-Z0-9_]+\b")
uses = []  # (where, subcommand, flag or variable)

def env_use(where, name):
    uses.append((where, "agent" if name.startswith("DROVER_AGENT_") else "serve", name))

compose = yaml.safe_load(open("deploy/compose/compose.yaml"))
for name, svc in compose["services"].items():
    cmd = svc.get("command") or []
    for token in cmd[1:]:
        m = flag_re.match(str(token))
        if m:
            uses.append((f"compose {name}", cmd[0], m.group(0)))
    for var in (svc.get("environment") or {}):
        env_use(f"compose {name}", var)
for unit, sub in (("drover.service", "serve"), ("drover-agent.service", "agent")):
    for line in open(f"deploy/systemd/{unit}"):
        if line.startswith("ExecStart="):
            for token in line.split()[2:]:
                m = flag_re.match(token)
                if m:
                    uses.append((unit, sub, m.group(0)))
        if line.startswith("Environment="):
            for var in env_re.findall(line):
                env_use(unit, var)
for line in open("deploy/systemd/drover-agent.env.example"):
    m = re.match(r"^#?(DROVER_[A-Z0-9_]+)=", line)
    if m:
        env_use("drover-agent.env.example", m.group(1))
for doc in yaml.safe_load_all(open(sys.argv[3])):
    if doc and doc.get("kind") == "StatefulSet":
        for c in doc["spec"]["template"]["spec"]["containers"]:
            for e in c.get("env", []):
                env_use("statefulset", e["name"])
            for var in re.findall(r"export (DROVER_[A-Z0-9_]+)=", " ".join(c.get("args", []))):
                env_use("statefulset", var)
unknown = []
for where, sub, thing in uses:
    if thing.startswith("--"):
        known = re.search(r"(^|\s)" + re.escape(thing) + r"(\s|=|$)", helps[sub], re.M)
    else:
        known = f"env: {thing}=" in helps[sub]
    if not known:
        unknown.append(f"{where}: `drover {sub}` has no {thing}")
if unknown:
    print("\n".join(unknown))
    sys.exit(1)
print(f"{len(uses)} uses, {len({u[2] for u in uses})} distinct flags and variables")
PY
)"; then
    ok "$CHECK: all appear in drover serve/agent --help ($out)"
  else
    # shellcheck disable=SC2086
    fail "$CHECK" "$out"
  fi
}

# --- compose -----------------------------------------------------------------------------------

check_compose() {
  CHECK="compose"
  local validators=() out
  # The structural check runs always: it asserts what the recipe promises, which a schema
  # validator cannot (three nodes, their initial cluster, secrets passed as files, health checks).
  if [ "$have_python_yaml" != yes ]; then
    fail "$CHECK: python3 cannot import yaml (PyYAML), so compose.yaml was not parsed"
    return
  fi
  if ! out="$(python3 - "$compose_dir/compose.yaml" <<'PY' 2>&1
import os, re, sys, yaml
path = sys.argv[1]
base = os.path.dirname(path)
doc = yaml.safe_load(open(path))
errors = []
def check(cond, message):
    if not cond:
        errors.append(message)

services = doc.get("services") or {}
secrets = doc.get("secrets") or {}
volumes = doc.get("volumes") or {}
nodes = {n: s for n, s in services.items() if (s.get("command") or [None])[0] == "serve"}
agents = {n: s for n, s in services.items() if (s.get("command") or [None])[0] == "agent"}
check(len(nodes) == 3, f"expected 3 `drover serve` services, found {sorted(nodes)}")
check(len(agents) == 1, f"expected 1 `drover agent` service, found {sorted(agents)}")

def flag(cmd, name):
    for i, token in enumerate(cmd):
        if token == name and i + 1 < len(cmd):
            return str(cmd[i + 1])
        if str(token).startswith(name + "="):
            return str(token).split("=", 1)[1]
    return None

def mounted_secret_files(name, svc):
    mounted = set()
    for s in svc.get("secrets") or []:
        source = s if isinstance(s, str) else s.get("source")
        check(source in secrets, f"{name}: secret {source} is not defined at the top level")
        mounted.add(source)
    return mounted

def file_settings(name, svc, mounted):
    env = svc.get("environment") or {}
    check(isinstance(env, dict), f"{name}: environment must be a mapping")
    for var in ("DROVER_CLUSTER_SECRET", "DROVER_JOIN_TOKEN", "DROVER_CLAIMER_AUTH_TOKEN"):
        check(var not in env, f"{name}: {var} puts a secret in the environment; use the *_FILE form")
    for var, value in env.items():
        if var.endswith("_FILE") and str(value).startswith("/run/drover/secrets/"):
            secret = str(value).rsplit("/", 1)[1]
            check(secret in mounted, f"{name}: {var} names secret {secret}, which the service does not mount")
    return env

def healthcheck(name, svc, path):
    test = " ".join(map(str, (svc.get("healthcheck") or {}).get("test") or []))
    check(path in test, f"{name}: no health check on {path} (test: {test!r})")

def build_and_image(name, svc):
    check(svc.get("image") == "drover:latest", f"{name}: image is not drover:latest")
    b = svc.get("build") or {}
    dockerfile = os.path.normpath(os.path.join(base, b.get("context", "."), b.get("dockerfile", "Dockerfile")))
    check(os.path.isfile(dockerfile), f"{name}: build dockerfile {dockerfile} does not exist")

def named_volume(name, svc, target):
    for v in svc.get("volumes") or []:
        source, _, rest = str(v).partition(":")
        if rest.split(":")[0] == target:
            check(source in volumes, f"{name}: {source} mounted at {target} is not a named volume")
            return
    errors.append(f"{name}: no volume at {target}")

initial = None
for name, svc in sorted(nodes.items()):
    cmd = [str(t) for t in svc["command"]]
    mounted = mounted_secret_files(name, svc)
    env = file_settings(name, svc, mounted)
    check("cluster-secret" in mounted, f"{name}: does not mount the cluster-secret secret")
    check(env.get("DROVER_CLUSTER_SECRET_FILE") == "/run/drover/secrets/cluster-secret",
          f"{name}: DROVER_CLUSTER_SECRET_FILE does not name the cluster secret's copy")
    healthcheck(name, svc, "/readyz")
    build_and_image(name, svc)
    named_volume(name, svc, "/var/lib/drover")
    check("/run/drover" in (svc.get("tmpfs") or []), f"{name}: /run/drover (the secrets' copies) is not a tmpfs")
    node_id = flag(cmd, "--node-id")
    cluster = dict(e.split("=", 1) for e in env.get("DROVER_INITIAL_CLUSTER", "").split(",") if e)
    initial = initial or cluster
    check(cluster == initial, f"{name}: its initial cluster differs from the other nodes'")
    check(cluster.get(node_id) == f"{name}:7500", f"{name}: node {node_id} is not listed as {name}:7500 in {cluster}")
    check(env.get("DROVER_PEER_ADDR", "").endswith(":7500"), f"{name}: peer listener is not on :7500")
check(initial is not None and sorted(initial) == ["1", "2", "3"], f"initial cluster ids are not 1, 2, 3: {initial}")

for name, svc in agents.items():
    cmd = [str(t) for t in svc["command"]]
    mounted = mounted_secret_files(name, svc)
    env = file_settings(name, svc, mounted)
    check(flag(cmd, "--executor") == "sim", f"{name}: executor is not sim")
    check("join-token" in mounted, f"{name}: does not mount the join-token secret")
    check(env.get("DROVER_AGENT_JOIN_TOKEN_FILE") == "/run/drover/secrets/join-token",
          f"{name}: DROVER_AGENT_JOIN_TOKEN_FILE does not name the join token's copy")
    healthcheck(name, svc, "/healthz")
    build_and_image(name, svc)
    named_volume(name, svc, "/var/lib/drover-agent")

for name, spec in secrets.items():
    check("file" in spec, f"secret {name} is not a file secret")
    check(str(spec.get("file", "")).startswith("./secrets/"), f"secret {name}: not under ./secrets/ (make-secrets.sh)")
    gen = open(os.path.join(base, "make-secrets.sh")).read()
    check(re.search(rf"\b{re.escape(name)}:\d+", gen), f"secret {name}: make-secrets.sh does not write it")

if errors:
    print("\n".join(errors))
    sys.exit(1)
print(f"services {', '.join(sorted(services))}; secrets {', '.join(sorted(secrets))}")
PY
)"; then
    fail "$CHECK: compose.yaml (python structural check)" "$out"
    return
  fi
  validators+=("python+PyYAML structural check ($out)")

  # The compose implementation's own validation, when one is installed. (Missing secret files
  # do not fail `config`; compose refuses them at `up`, so make-secrets.sh runs first.)
  if docker compose version >/dev/null 2>&1; then
    if ! out="$(docker compose -f "$compose_dir/compose.yaml" config -q 2>&1)"; then
      fail "$CHECK: docker compose config -q" "$out"
      return
    fi
    validators+=("docker compose config -q")
  elif command -v docker-compose >/dev/null 2>&1; then
    if ! out="$(docker-compose -f "$compose_dir/compose.yaml" config -q 2>&1)"; then
      fail "$CHECK: docker-compose config -q" "$out"
      return
    fi
    validators+=("docker-compose config -q")
  else
    note "compose: neither the docker compose plugin nor docker-compose is installed;"
    note "         compose's own schema validation did not run"
  fi
  local v
  for v in "${validators[@]}"; do ok "$CHECK: $v"; done
}

check_dockerfile() {
  CHECK="Dockerfile"
  local df=$compose_dir/Dockerfile missing=() pattern
  for pattern in '^FROM rust:1-bookworm AS builder' 'librocksdb-dev' 'clang' 'libclang-dev' \
    'cargo build --release --locked -p drover-node' 'target/release/drover' \
    '^FROM debian:bookworm-slim' 'librocksdb7\.8' ' curl' \
    '^COPY --from=builder /out/drover /usr/local/bin/drover' \
    '^COPY deploy/compose/drover-entrypoint.sh '; do
    grep -qE -- "$pattern" "$df" || missing+=("no line matching: $pattern")
  done
  [ -f "$compose_dir/Dockerfile.dockerignore" ] || missing+=("no Dockerfile.dockerignore (target/ would enter the context)")
  local out
  out="$(sh -n "$compose_dir/drover-entrypoint.sh" 2>&1)" || missing+=("drover-entrypoint.sh: $out")
  out="$(bash -n "$compose_dir/make-secrets.sh" 2>&1)" || missing+=("make-secrets.sh: $out")
  [ -x "$compose_dir/drover-entrypoint.sh" ] || missing+=("drover-entrypoint.sh is not executable")
  [ -x "$compose_dir/make-secrets.sh" ] || missing+=("make-secrets.sh is not executable")
  if [ "${#missing[@]}" -gt 0 ]; then
    fail "$CHECK" "${missing[@]}"
    return
  fi
  # The runtime package must exist in Debian bookworm; this machine's apt lists are bookworm's.
  if command -v apt-cache >/dev/null 2>&1 && grep -q 'VERSION_CODENAME=bookworm' /etc/os-release 2>/dev/null; then
    if ! apt-cache show librocksdb7.8 >/dev/null 2>&1; then
      fail "$CHECK: apt-cache knows no package librocksdb7.8 (bookworm's runtime RocksDB)"
      return
    fi
    ok "$CHECK: builder and runtime stages as documented; librocksdb7.8 exists in bookworm (apt-cache)"
  else
    ok "$CHECK: builder and runtime stages as documented (package names not checked: no bookworm apt-cache)"
  fi
}

# --- Kubernetes --------------------------------------------------------------------------------

check_kubernetes() {
  CHECK="kubernetes"
  if ! command -v kubectl >/dev/null 2>&1; then
    fail "$CHECK: kubectl is not installed (kustomize is built into it)"
    return
  fi
  local out
  if ! kubectl kustomize "$kube_dir" > "$tmp/kube.yaml" 2> "$tmp/kube.err"; then
    fail "$CHECK: kubectl kustomize $kube_dir" "$(cat "$tmp/kube.err")"
    return
  fi
  if [ "$have_python_yaml" != yes ]; then
    fail "$CHECK: python3 cannot import yaml (PyYAML), so the manifests were not parsed"
    return
  fi
  if ! out="$(python3 - "$tmp/kube.yaml" <<'PY' 2>&1
import re, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
errors = []
def check(cond, message):
    if not cond:
        errors.append(message)
def of_kind(kind):
    return [d for d in docs if d.get("kind") == kind]

# Offline schema check: every field name and scalar type against the models of the Kubernetes
# Python client (generated from the API's OpenAPI document), so a misspelt field is caught without
# an API server. Skipped when the client is not installed.
try:
    import kubernetes.client as k8s
except ImportError:
    k8s = None
    print("note: the kubernetes Python client is not installed; field names were not checked")

def model_check(value, type_name, path):
    m = re.fullmatch(r"(?:List|list)\[(.+)\]", type_name)
    if m:
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list")
            return
        for i, item in enumerate(value):
            model_check(item, m.group(1), f"{path}[{i}]")
        return
    m = re.fullmatch(r"(?:Dict|dict)[\[(]str, (.+)[\])]", type_name)
    if m:
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a mapping")
            return
        for key, item in value.items():
            model_check(item, m.group(1), f"{path}.{key}")
        return
    if type_name == "str":
        check(isinstance(value, (str, int, float)) and not isinstance(value, bool), f"{path}: expected a string, got {value!r}")
        return
    if type_name == "int":
        check(isinstance(value, int) and not isinstance(value, bool), f"{path}: expected an integer, got {value!r}")
        return
    if type_name == "bool":
        check(isinstance(value, bool), f"{path}: expected true or false, got {value!r}")
        return
    model = getattr(k8s.models, type_name, None) if k8s else None
    if model is None or not hasattr(model, "attribute_map"):
        return  # object, bytes, datetime, int-or-string: anything goes here
    if not isinstance(value, dict):
        errors.append(f"{path}: expected a {type_name} mapping")
        return
    json_to_attr = {v: k for k, v in model.attribute_map.items()}
    for key, item in value.items():
        attr = json_to_attr.get(key)
        if attr is None:
            errors.append(f"{path}: unknown field {key!r} in {type_name}")
            continue
        model_check(item, model.openapi_types[attr], f"{path}.{key}")

if k8s:
    for d in docs:
        version = d.get("apiVersion", "").split("/")[-1]
        type_name = version[:1].upper() + version[1:] + d.get("kind", "")
        if getattr(k8s.models, type_name, None) is None:
            errors.append(f"{d.get('kind')} {d.get('apiVersion')}: no such type in the Kubernetes client")
            continue
        model_check(d, type_name, f"{d['kind']}/{d.get('metadata', {}).get('name')}")

sts = of_kind("StatefulSet")
services = of_kind("Service")
pdbs = of_kind("PodDisruptionBudget")
check(len(sts) == 1, f"expected one StatefulSet, found {len(sts)}")
headless = [s for s in services if s["spec"].get("clusterIP") == "None"]
check(len(headless) == 1, f"expected one headless Service (clusterIP: None), found {len(headless)}")
check(any(s["spec"].get("clusterIP") != "None" for s in services), "no client Service (with a cluster IP)")
check(len(pdbs) == 1, f"expected one PodDisruptionBudget, found {len(pdbs)}")
if sts and headless and pdbs:
    s, h, p = sts[0], headless[0], pdbs[0]
    spec = s["spec"]
    pod = spec["template"]["spec"]
    labels = spec["template"]["metadata"].get("labels", {})
    check(spec.get("replicas") == 3, f"StatefulSet replicas is {spec.get('replicas')}, not 3")
    check(spec.get("podManagementPolicy") == "Parallel", f"podManagementPolicy is {spec.get('podManagementPolicy')}, not Parallel")
    check(spec.get("serviceName") == h["metadata"]["name"], "the StatefulSet's serviceName is not the headless Service")
    check(spec.get("volumeClaimTemplates"), "no volumeClaimTemplates for the data directories")
    selector = spec["selector"].get("matchLabels", {})
    check(all(labels.get(k) == v for k, v in selector.items()), "the StatefulSet's selector does not match its pods")
    c = pod["containers"][0]
    probe_path = lambda probe: ((c.get(probe) or {}).get("httpGet") or {}).get("path")
    check(probe_path("readinessProbe") == "/readyz", f"readiness probe path is {probe_path('readinessProbe')}, not /readyz")
    check(probe_path("livenessProbe") == "/healthz", f"liveness probe path is {probe_path('livenessProbe')}, not /healthz")
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    members = dict(e.split("=", 1) for e in (env.get("DROVER_INITIAL_CLUSTER") or "").split(",") if e)
    name, peer = s["metadata"]["name"], h["metadata"]["name"]
    want = {str(i + 1): f"{name}-{i}.{peer}:7500" for i in range(spec.get("replicas") or 0)}
    check(members == want, f"DROVER_INITIAL_CLUSTER is {members}, expected {want}")
    script = " ".join(c.get("args", []) + c.get("command", []))
    check("DROVER_NODE_ID=$((ordinal + 1))" in script, "the node id is not derived from the pod ordinal + 1")
    mounts = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
    check(mounts.get("data") == "/var/lib/drover" and env.get("DROVER_DATA_DIR", "").startswith("/var/lib/drover/"),
          "the data volume is not mounted where DROVER_DATA_DIR points")
    secret_volumes = [v["secret"]["secretName"] for v in pod.get("volumes", []) if "secret" in v]
    secrets = {d["metadata"]["name"] for d in of_kind("Secret")}
    check(secret_volumes and all(n in secrets for n in secret_volumes), f"secret volumes {secret_volumes} not all defined ({secrets})")
    check(h["spec"].get("publishNotReadyAddresses") is True, "the headless Service lacks publishNotReadyAddresses: true")
    check(any(pt.get("port") == 7500 for pt in h["spec"].get("ports", [])), "the headless Service does not expose the peer port 7500")
    for svc in services:
        check(all(labels.get(k) == v for k, v in svc["spec"].get("selector", {}).items()),
              f"Service {svc['metadata']['name']} does not select the pods")
    check(p["spec"].get("maxUnavailable") == 1, f"PodDisruptionBudget maxUnavailable is {p['spec'].get('maxUnavailable')}, not 1")
    check(all(labels.get(k) == v for k, v in p["spec"]["selector"].get("matchLabels", {}).items()), "the PDB does not select the pods")

if errors:
    print("\n".join(errors))
    sys.exit(1)
print(f"{len(docs)} objects: " + ", ".join(f"{d['kind']}/{d['metadata']['name']}" for d in docs))
PY
)"; then
    fail "$CHECK: kustomize output" "$out"
    return
  fi
  ok "$CHECK: kubectl kustomize + python check ($out)"

  # `kubectl apply --dry-run=client` still needs an API server: it maps each kind to a resource
  # through discovery (and downloads the OpenAPI document to validate). With none reachable it
  # fails with "connection refused" / "unable to recognize", which says nothing about the
  # manifests, so that case is skipped, not counted as a pass; any other failure is one.
  local rc=0
  out="$(kubectl apply --dry-run=client --request-timeout=5s -f "$tmp/kube.yaml" 2>&1)" || rc=$?
  if [ "$rc" -eq 0 ]; then
    ok "$CHECK: kubectl apply --dry-run=client (against $(kubectl config current-context 2>/dev/null || echo 'the configured API server'))"
  elif printf '%s' "$out" | grep -qE 'connection refused|unable to recognize|failed to download openapi|no such host|i/o timeout|Unable to connect to the server|couldn.t get current server API group list'; then
    skip "$CHECK: kubectl apply --dry-run=client: no API server reachable for discovery"
  else
    fail "$CHECK: kubectl apply --dry-run=client" "$out"
  fi
}

check_units_verify
check_units_content
check_units_security
check_sysusers
check_toml_example
check_agent_env_example
check_flags_exist
check_compose
check_dockerfile
check_kubernetes

if [ "${#failed[@]}" -gt 0 ]; then
  echo "check-recipes: ${#failed[@]} check(s) failed:" >&2
  printf '  - %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "check-recipes: all checks passed"
