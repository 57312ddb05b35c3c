# Drover's everyday commands. The target directory lives outside the clone so that CI and fresh
# clones reuse one build cache.
CARGO_TARGET_DIR ?= $(HOME)/.cache/drover-target
export CARGO_TARGET_DIR

.PHONY: setup demo test test-rollout-kills lint bench bench-krake bench-failover bench-scale bench-leasing bench-clusters bench-services bench-services-scale bench-scheduling bench-containers soak chaos chaos-five chaos-sim chaos-planted chaos-sim-planted

## setup: install what a fresh machine lacks (clang, libclang, iptables, libfaketime, etcd,
## Prometheus, the Kubernetes Python client)
setup:
	scripts/setup.sh

## demo: start a local three-node cluster with demo data and print where to point a client
demo: setup
	scripts/demo.sh

## test: build and run every test (unit, storage conformance, clusters, crash, client compat)
test: setup
	cargo build -p drover-node
	cargo test --workspace

## test-rollout-kills: leader SIGKILLs in the middle of service rollouts, 25 trials (the test
## command runs 3); DROVER_TRIALS and DROVER_SEED override
test-rollout-kills: setup
	cargo build -p drover-node
	DROVER_TRIALS=$${DROVER_TRIALS:-25} cargo test -p drover-tests --test t220_rollouts_across_leader_kills -- --nocapture

## lint: formatting, clippy and the import check (no new circle between files, no shared file of
## api importing a dialect), as CI checks them
lint: setup
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	python3 scripts/import-cycles.py

## bench: Drover and a three-member etcd side by side (writes, reads, leasing, heartbeats at 1-256
## clients; etcd through its JSON gateway and, for writes and reads, its native gRPC client) and
## the 10,000-object scale figures; writes the table into docs/BENCHMARKS.md
bench: setup
	scripts/setup-bench.sh
	cargo build --release -p drover-node -p drover-bench
	$(CARGO_TARGET_DIR)/release/drover-bench compare --etcd-grpc-load $(CARGO_TARGET_DIR)/etcdgrpcload --write docs/BENCHMARKS.md
	$(CARGO_TARGET_DIR)/release/drover-bench scale --objects 10000

## bench-failover: leader SIGKILLs under the outside write probe (8 writers, 200 ms timeout,
## round-robin), 30 for Drover and 30 for etcd in one run, after 10 fault-free minutes each
## with elections counted (about 26 minutes)
bench-failover: setup
	cargo build --release -p drover-node -p drover-bench
	$(CARGO_TARGET_DIR)/release/drover-bench failover --kills 30 --quiet 600

## bench-scale: memory, disk, restart and catch-up figures with 10,000 and 1,000,000 objects
bench-scale: setup
	cargo build --release -p drover-node -p drover-bench
	$(CARGO_TARGET_DIR)/release/drover-bench scale --objects 10000,1000000

## bench-leasing: acquire+release pairs/s and latency at 1, 16 and 64 clients (release build)
bench-leasing: setup
	cargo build --release -p drover-node -p drover-bench
	$(CARGO_TARGET_DIR)/release/drover-bench leasing

## bench-containers: pod start latency of the container executor with a cached image (p50/p99
## over 100 pods, beside the Kubernetes SLO); needs root, starts its own containerd and registry
bench-containers: setup
	cargo build --release -p drover-node -p drover-bench
	$(CARGO_TARGET_DIR)/release/drover-bench containers --pods 100

## bench-clusters: how long one cluster actor takes to observe 10,000 sim instances, and its Raft
## writes per minute when nothing changes
bench-clusters: setup
	cargo build --release -p drover-node -p drover-bench
	$(CARGO_TARGET_DIR)/release/drover-bench clusters --instances 10000 --steady-secs 60

## bench-services: 200 services of three roles placed and run on three sim clusters; placements
## per second and the leader's CPU per service; then 2,000 services placed in one burst (created
## while the clusters are drained): end-to-end placements per second through Raft
bench-services: setup
	cargo build --release -p drover-node -p drover-bench
	$(CARGO_TARGET_DIR)/release/drover-bench services --services 200 --roles 3
	$(CARGO_TARGET_DIR)/release/drover-bench services --services 2000 --roles 1 --placement-burst

## bench-krake: Krake 1.0.1's own API server and a three-node Drover side by side, the same
## load through Krake's own client library and as plain JSON (8 clients: creates, full-object
## updates, gets, lists of 1,000 objects, watch events counted)
bench-krake: setup
	cargo build --release -p drover-node
	scripts/bench-krake.sh

## bench-services-scale: 1,000 then 10,000 services of ten instances (100,000 on sim agents),
## each in a fresh cluster: creates/s, placements/s, time to all running, CPU and memory per
## service on every node, Raft entries and driver calls per second while nothing changes, three
## leader failovers; then the growth from 1,000 to 10,000 as ratios
bench-services-scale: setup
	cargo build --release -p drover-node -p drover-bench
	$(CARGO_TARGET_DIR)/release/drover-bench services --services 1000,10000 --roles 1 --instances 10 --steady 30 --failovers 3

## bench-scheduling: decisions per second of the pure scheduler, 10,000 services over 100
## clusters (release build)
bench-scheduling: setup
	cargo build --release -p drover-bench
	$(CARGO_TARGET_DIR)/release/drover-bench scheduling --services 10000 --clusters 100

## soak: the hardening issue's exhaustion floods (huge objects under fresh idempotency keys,
## silent watchers, unauthenticated 1 MiB bodies, half-sent and idle sockets, new Boskos state
## names) for 5 minutes against three nodes; prints every node's RSS each minute
soak: setup
	cargo build -p drover-node -p drover-bench
	$(CARGO_TARGET_DIR)/debug/drover-bench soak --minutes 5

## chaos: the long chaos run (30 seeds of 60 s, every fault kind; about 35 minutes)
chaos: setup
	cargo build -p drover-node -p drover-chaos
	$(CARGO_TARGET_DIR)/debug/drover-chaos --seed 1 --runs 30 --duration 60 --out chaos-report.json

## chaos-five: the long chaos run on five-node clusters (30 seeds of 60 s)
chaos-five: setup
	cargo build -p drover-node -p drover-chaos
	$(CARGO_TARGET_DIR)/debug/drover-chaos --nodes 5 --seed 1 --runs 30 --duration 60 --out chaos-report-5.json

## chaos-sim: the register and services workloads and their checkers in the deterministic
## simulation (real RaftHandle and actors, simulated agents), 1,000 seeds of 15 simulated
## seconds, each run twice: a seed whose replay records another history fails like a violation
## (about an hour on two cores)
chaos-sim:
	cargo build -p drover-chaos
	$(CARGO_TARGET_DIR)/debug/drover-chaos --simulate --seed 1 --runs 1000 --duration 15 --service-clients 2 --replay --out chaos-sim-report.json

## chaos-sim-planted: prove the simulation's services checkers find service actors acting on a
## stale read in most of 10 simulated seeds, each replayed to the same history (about 4 minutes)
chaos-sim-planted:
	scripts/chaos-sim-planted.sh 10 12

## chaos-planted: prove the harness finds each planted bug in most seeds: a leader's stale read,
## a read lease longer than the election timeout allows, then service actors acting on a stale
## read of their service (about 15 minutes)
chaos-planted: setup
	scripts/chaos-planted.sh 8 25 stale-read
	scripts/chaos-planted.sh 8 25 long-lease
	scripts/chaos-planted.sh 8 25 stale-service
