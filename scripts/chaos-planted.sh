#!/usr/bin/env bash
# Proves that the chaos harness bites: builds `drover` with the planted stale-read bug (feature
# `planted-stale-read`) into a separate file, runs seeded chaos runs against it with
# leader partitions and pauses, and counts the seeds in which the checkers found a violation.
# Exits non-zero unless most seeds found it. Usage: scripts/chaos-planted.sh [seeds] [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds="${1:-6}"
seconds="${2:-30}"
target="${CARGO_TARGET_DIR:-target}"

cargo build -q -p drover-node --features planted-stale-read
mkdir -p "$target/planted"
cp "$target/debug/drover" "$target/planted/drover"
# Put the honest binary back where the tests look for it.
cargo build -q -p drover-node -p drover-chaos

found=0
for seed in $(seq 1 "$seeds"); do
  out="$target/planted/report-$seed.json"
  if DROVER_BIN="$target/planted/drover" "$target/debug/drover-chaos" --seed "$seed" --runs 1 \
      --duration "$seconds" --clients 8 --faults partition-leader,pause-leader --out "$out" >"$out.log" 2>&1; then
    echo "seed $seed: no violation found"
  else
    found=$((found + 1))
    echo "seed $seed: found: $(grep -m1 VIOLATION "$out.log" | cut -c1-160)"
  fi
done
echo "planted stale read found in $found of $seeds seeds"
[ $((2 * found)) -gt "$seeds" ]
