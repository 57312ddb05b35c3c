//! Drover's chaos harness: real clusters of `drover` processes, one loopback address each, a
//! seeded workload of reads, creates and compare-and-sets plus Boskos acquire/heartbeat/release
//! with fencing tokens, faults (SIGKILL and restart, SIGSTOP and SIGCONT, iptables partitions in
//! the harness's own network namespace, clock skew through libfaketime, membership changes), and
//! checkers over what the clients observed — linearizability per key, mutual exclusion by
//! fencing token, durability of acknowledged creates, convergence after healing — with per-fault
//! availability figures. With service clients, a services workload runs on a `sim` agent that
//! the nemesis kills and pauses too, checked against the agent's own inventory
//! ([`service_workload`]). One seed reproduces one run's choices.

pub mod checker;
pub mod config;
pub mod credentials;
pub mod faults;
pub mod history;
pub mod nemesis;
pub mod netns;
pub mod pool_workload;
pub mod report;
pub mod rng;
pub mod runner;
pub mod service_workload;
pub mod sim;
pub mod workload;
