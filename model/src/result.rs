//! What applying a proposal gave: the replicated outcome every replica computes alike, and what
//! a caller is answered.

use serde::{Deserialize, Serialize};

use crate::error::DomainError;
use crate::object::StoredObject;
use crate::platform::PlatformResult;
use crate::pool::PoolResult;
use crate::service::ServiceOutcome;

/// The replicated outcome of one proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CommandResult {
    /// The object as it is after a create or replace.
    Stored(StoredObject),
    /// The object as it was before a delete.
    Deleted(StoredObject),
    /// The outcome of a pool command.
    Pool(PoolResult),
    /// The outcome of a platform command.
    Platform(PlatformResult),
    /// The outcome of a service command.
    Service(ServiceOutcome),
    /// A Krake object after its command.
    Krake(crate::krake::KrakeStored),
    /// Nothing to report.
    Done,
    /// The command was refused; nothing changed.
    Refused(DomainError),
    /// The results of a batch, in its order.
    Batch {
        /// One result per proposal.
        results: Vec<CommandResult>,
    },
}
