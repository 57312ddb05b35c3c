//! History checkers: linearizability per key, durability of acknowledged creates, and
//! availability figures.

pub mod linearizable;
