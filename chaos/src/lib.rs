//! Drover's chaos harness: real clusters of `drover` processes on loopback, a seeded workload of
//! reads, creates and compare-and-sets, faults (SIGKILL and restart, SIGSTOP and SIGCONT of the
//! leader or a random node), and checkers over what the clients observed — linearizability per
//! key, durability of acknowledged creates, convergence after healing — with per-fault
//! availability figures. One seed reproduces one run's choices.

pub mod checker;
pub mod faults;
pub mod history;
pub mod report;
pub mod rng;
pub mod runner;
pub mod workload;
