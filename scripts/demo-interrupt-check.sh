#!/usr/bin/env bash
# Checks that Ctrl-C on `make demo` leaves nothing of the demo running: starts the demo in a
# process group of its own, waits until it says it is running and the exec agent runs its six
# instance processes, sends SIGINT to the whole group (what a terminal's Ctrl-C does), and then
# looks through /proc for any process of the demo (nodes, agents, instances, and where the
# machine runs containers the container runtime: its registries, containerd, shims and
# containers) and for the runtime's CNI bridge. CI runs it after the one-shot demo; it needs the
# demo's build (it builds nothing itself).
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/drover-target}"
state=".drover-demo"
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Processes of the demo: the drover binary started from this clone's demo (its data under
# $state), anything working under the demo's directory (the exec agent's instances), naming the
# container runtime's directory (drover-demo-runtime, its registries, containerd, the shims),
# or in a cgroup under the runtime's cgroup parent (the containers; set below once it runs).
cgroup_parent=""
demo_processes() {
  local root pid cwd args
  root="$(pwd)/$state/"
  for pid in /proc/[0-9]*; do
    cwd=$(readlink "$pid/cwd" 2>/dev/null) || continue
    args=$(tr '\0' ' ' <"$pid/cmdline" 2>/dev/null) || continue
    case "$cwd/" in "$root"*) echo "${pid#/proc/} $args"; continue ;; esac
    if [ -n "$cgroup_parent" ] && grep -qF ":$cgroup_parent/" "$pid/cgroup" 2>/dev/null; then
      echo "${pid#/proc/} $args"
      continue
    fi
    case "$args" in
      *"drover "*"--data-dir $state/"* | *"$state/runtime"*) echo "${pid#/proc/} $args" ;;
    esac
  done
}

before=$(demo_processes)
if [ -n "$before" ]; then
  echo "demo-interrupt-check: processes of the demo run already; stop them first:" >&2
  echo "$before" >&2
  exit 1
fi

# With job control on, the demo runs in a process group of its own (its id is the demo's pid),
# as `make demo` in a terminal. It starts with SIGINT and SIGQUIT at their defaults even when
# this script's caller ignores them (a background job of a non-interactive shell starts with
# them ignored, and bash cannot trap a signal that was ignored when it started): python3
# restores them and becomes the demo's bash.
set -m
python3 -c 'import os, signal
signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGQUIT, signal.SIG_DFL)
os.execvp("bash", ["bash", "scripts/demo.sh"])' >"$log" 2>&1 &
demo=$!
set +m
deadline=$((SECONDS + 300))
until grep -q 'Press Ctrl-C' "$log"; do
  if ! kill -0 "$demo" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
    echo "demo-interrupt-check: the demo did not start:" >&2
    cat "$log" >&2
    kill -TERM -- "-$demo" 2>/dev/null || true
    exit 1
  fi
  sleep 0.5
done
# The exec agent runs set hello's, service greeter's and application krake-hello's two
# processes each (over TLS, with the demo's CA).
until [ "$(curl -fsS --cacert "$state/ca.pem" -H @"$state/join-header" https://127.0.0.1:7701/v1/inventory 2>/dev/null \
    | python3 -c 'import json,sys; print(sum(1 for i in json.load(sys.stdin)["instances"] if i.get("pid")))' 2>/dev/null)" = 6 ]; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "demo-interrupt-check: the exec agent does not run six instances" >&2
    kill -INT -- "-$demo" 2>/dev/null || true
    exit 1
  fi
  sleep 0.5
done
# The container runtime's CNI bridge and cgroup parent, when it runs (the demo said why when it
# does not).
bridge=$(sed -n 's/^BRIDGE=//p' "$state/runtime/runtime.env" 2>/dev/null || true)
cgroup_parent=$(sed -n 's/^CGROUP_PARENT=//p' "$state/runtime/runtime.env" 2>/dev/null || true)
if grep -q '^demo: no containerised web server' "$log"; then
  bridge="" cgroup_parent=""
  echo "demo-interrupt-check: $(grep '^demo: no containerised web server' "$log")"
elif [ -z "$bridge" ] || [ ! -e "/sys/class/net/$bridge" ]; then
  echo "demo-interrupt-check: the demo's container runtime runs no bridge (${bridge:-none named})" >&2
  kill -INT -- "-$demo" 2>/dev/null || true
  exit 1
fi
# The web server's container runs (the demo printed its banner once it answered).
if [ -n "$cgroup_parent" ] && ! grep -qlF ":$cgroup_parent/" /proc/[0-9]*/cgroup 2>/dev/null; then
  echo "demo-interrupt-check: no container runs under the demo's cgroup parent $cgroup_parent" >&2
  kill -INT -- "-$demo" 2>/dev/null || true
  exit 1
fi
running=$(demo_processes | wc -l)
echo "demo-interrupt-check: the demo runs $running processes; sending SIGINT to its process group (Ctrl-C)"
kill -INT -- "-$demo"
stopped_by=$((SECONDS + 60))
while kill -0 "$demo" 2>/dev/null; do
  if [ "$SECONDS" -ge "$stopped_by" ]; then
    echo "demo-interrupt-check: the demo did not exit within 60 s of Ctrl-C" >&2
    exit 1
  fi
  sleep 0.2
done
wait "$demo" || true
if [ -n "$bridge" ] && [ -e "/sys/class/net/$bridge" ]; then
  echo "demo-interrupt-check: Ctrl-C left the container runtime's bridge $bridge" >&2
  exit 1
fi
left=$(demo_processes)
if [ -n "$left" ]; then
  echo "demo-interrupt-check: Ctrl-C left these processes of the demo running:" >&2
  echo "$left" >&2
  tail -5 "$log" >&2
  kill -KILL $(echo "$left" | cut -d' ' -f1) 2>/dev/null || true
  exit 1
fi
tail -2 "$log"
echo "demo-interrupt-check: Ctrl-C stopped all $running processes of the demo"
