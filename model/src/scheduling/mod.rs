//! Scheduling services onto clusters, Krake's way (Krake 1.0.1's scheduler controller): the
//! constraint languages ([`constraints`]), metrics and their providers ([`metrics`]) and the
//! scoring function ([`score::schedule`]), all pure, so every decision is table-tested and a replay decides alike.

pub mod constraints;
mod metric_ops;
pub mod metrics;
pub mod score;

pub use constraints::{ConstraintError, LabelConstraint, MetricConstraint};
pub use score::{schedule, Candidate, Decision, Needs, STICKINESS};
