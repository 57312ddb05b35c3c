//! Scheduling services onto clusters, Krake's way (`../shared/docs/krake.md` §5): the
//! constraint languages ([`constraints`]) and the scoring function ([`score::schedule`]), both
//! pure, so every decision is table-tested and a replay decides alike.

pub mod constraints;
pub mod score;

pub use constraints::{ConstraintError, LabelConstraint, MetricConstraint};
pub use score::{schedule, Candidate, Decision, Needs, STICKINESS};
