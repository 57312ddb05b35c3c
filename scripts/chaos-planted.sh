#!/usr/bin/env bash
# Proves that the chaos harness bites: builds `drover` with a planted bug into a separate file,
# runs seeded chaos runs against it and counts the seeds in which the checkers found a
# violation. Exits non-zero unless most seeds found it.
#   stale-read     (feature `planted-stale-read`): a leader answers linearizable reads from its
#                  own state without a quorum round; leader partitions and pauses.
#   long-lease     (feature `planted-long-lease`): a leader trusts a quorum round for ten
#                  times the followers' leader lease; the lease-skew fault (followers' clocks
#                  twice as fast, the leader cut off) and leader partitions.
#   stale-service  (feature `planted-stale-service`): service actors act on their service as
#                  they first read it; the services workload on its two agents, leader kills and
#                  pauses; the agents' inventories are the ground truth.
# Usage: scripts/chaos-planted.sh [seeds] [seconds] [stale-read|long-lease|stale-service]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds="${1:-6}"
seconds="${2:-30}"
bug="${3:-stale-read}"
target="${CARGO_TARGET_DIR:-target}"

case "$bug" in
  stale-read) faults="partition-leader,pause-leader"; workload=(--clients 8 --service-clients 0) ;;
  long-lease) faults="lease-skew,partition-leader"; workload=(--clients 12 --service-clients 0) ;;
  stale-service) faults="kill-leader,pause-leader"; workload=(--clients 2 --service-clients 2) ;;
  *) echo "unknown planted bug $bug (stale-read, long-lease or stale-service)" >&2; exit 2 ;;
esac

cargo build -q -p drover-node --features "planted-$bug"
mkdir -p "$target/planted"
cp "$target/debug/drover" "$target/planted/drover"
# Put the honest binary back where the tests look for it.
cargo build -q -p drover-node -p drover-chaos

found=0
for seed in $(seq 1 "$seeds"); do
  out="$target/planted/report-$bug-$seed.json"
  rm -f "$out"
  status=0
  DROVER_BIN="$target/planted/drover" "$target/debug/drover-chaos" --seed "$seed" --runs 1 \
      --duration "$seconds" "${workload[@]}" --faults "$faults" --out "$out" >"$out.log" 2>&1 || status=$?
  # Only a report that names a violation counts as found; any other failure (no root, no
  # iptables, a fault that could not be injected, a crash) means the harness did not run.
  violations=$(python3 -c 'import json,sys; print(sum(len(r["violations"]) for r in json.load(open(sys.argv[1]))))' "$out" 2>/dev/null || echo none)
  skipped=$(python3 -c 'import json,sys; print(sum(len(r.get("faults_skipped", [])) for r in json.load(open(sys.argv[1]))))' "$out" 2>/dev/null || echo none)
  if [ "$violations" = none ] || [ "$skipped" != 0 ]; then
    echo "seed $seed: the harness did not run as it should (exit $status, skipped faults: $skipped); see $out.log" >&2
    exit 2
  elif [ "$status" = 1 ] && [ "$violations" -gt 0 ]; then
    found=$((found + 1))
    echo "seed $seed: found: $(grep -m1 -i violation "$out.log" | cut -c1-160)"
  elif [ "$status" = 0 ] && [ "$violations" = 0 ]; then
    echo "seed $seed: no violation found"
  else
    echo "seed $seed: exit $status does not match $violations violations in the report" >&2
    exit 2
  fi
done
echo "planted $bug found in $found of $seeds seeds"
[ $((2 * found)) -gt "$seeds" ]
