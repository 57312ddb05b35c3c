//! Who leads, as a node sees it: published by the handle as it changes, read by the batchers
//! that send writes and reads to the leader.

use crate::typ::NodeId;

/// Who leads, as this node sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Leadership {
    /// The leader this node knows of.
    pub leader: Option<NodeId>,
    /// The current term.
    pub term: u64,
    /// Whether this node is the leader.
    pub is_self: bool,
}
