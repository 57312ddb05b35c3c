//! Drover's domain model: the objects the cluster stores, the [`Command`]s that change them and
//! the pure, deterministic [`State::apply`] that every node runs on the same committed log.
//!
//! Nothing here does I/O or reads a clock: the proposing node chooses wall-clock times, uids and
//! tokens and carries them inside the command, so every replica computes the same state.

mod apply;
pub mod audit;
pub mod audit_record;
pub mod cluster;
pub mod command;
mod command_decode;
pub mod derived;
pub mod egress;
pub mod error;
pub mod image_policy;
pub mod krake;
pub mod limits;
pub mod merge_patch;
pub mod object;
pub mod platform;
pub mod pod_security;
pub mod pool;
pub mod result;
pub mod scheduling;
pub mod service;
pub mod snapshot;
pub mod state;
pub mod time;
pub mod validation;

pub use command::{Command, CommandResult, Precondition, Proposal};
pub use error::DomainError;
pub use object::{
    AkkaLeaseSpec, CoordinationLeaseSpec, LeaseSpec, ObjectKey, ObjectKind, ObjectMeta, StoredObject,
};
pub use state::{Change, ChangeKind, State};
