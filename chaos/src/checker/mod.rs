//! History checkers: linearizability per register key and mutual exclusion of pool resources
//! by fencing token. Durability and convergence are checked by the runner against the nodes.

pub mod linearizable;
pub mod mutex;
