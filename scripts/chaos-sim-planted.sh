#!/usr/bin/env bash
# Proves that the simulation's services checkers bite: builds `drover-chaos` with the planted
# reconciliation bug (feature `planted-stale-service`: service actors act on their service as
# they first read it) into a separate file, runs seeded simulations with the services workload
# and counts the seeds in which the checkers (the simulated agents' inventories against the
# accepted revisions) found a violation; every seed is run twice (--replay) and must record the
# same history, violation included, both times (#37). Exits non-zero unless most seeds found it
# and every seed replayed alike.
# Usage: scripts/chaos-sim-planted.sh [seeds] [simulated seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds="${1:-10}"
seconds="${2:-12}"
target="${CARGO_TARGET_DIR:-target}"

cargo build -q -p drover-chaos --features planted-stale-service
mkdir -p "$target/planted"
cp "$target/debug/drover-chaos" "$target/planted/drover-chaos-sim"
# Put the honest harness back where the other targets look for it.
cargo build -q -p drover-chaos

out="$target/planted/report-sim-stale-service.json"
rm -f "$out"
status=0
"$target/planted/drover-chaos-sim" --simulate --seed 1 --runs "$seeds" --duration "$seconds" \
    --service-clients 2 --replay --out "$out" >"$out.log" 2>&1 || status=$?
found=$(python3 -c 'import json,sys; print(sum(1 for r in json.load(open(sys.argv[1])) if r["violations"]))' "$out" 2>/dev/null || echo none)
if [ "$found" = none ]; then
  echo "the simulation did not run as it should (exit $status); see $out.log" >&2
  exit 2
fi
differed=$(python3 -c 'import json,sys; print(sum(1 for r in json.load(open(sys.argv[1])) if r["replay_digest"] != r["digest"]))' "$out")
grep -m3 "violation:" "$out.log" | cut -c1-200 || true
echo "planted stale-service found in $found of $seeds simulated seeds; $differed replayed differently"
[ "$differed" -eq 0 ]
[ $((2 * found)) -gt "$seeds" ]
