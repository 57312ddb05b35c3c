//! How a new revision's deployment is made from the previous one: a whole replacement, a JSON
//! merge patch (RFC 7396) over it, new instance counts, or a copy of an earlier revision. Pure.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Deployment, RevisionType};
use crate::platform::error::PlatformError;

/// How a revision differs from its previous one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Change {
    /// A whole new deployment.
    Put {
        /// The deployment.
        deployment: Deployment,
    },
    /// A JSON merge patch over the previous deployment.
    Patch {
        /// The patch.
        patch: Value,
    },
    /// New instance counts; roles left out keep theirs.
    Scale {
        /// Instances by role.
        scale: BTreeMap<String, u32>,
    },
    /// A deployment the API built by applying a partial update bundle to the previous
    /// revision's source (a `PATCH` with a bundle).
    BundlePatch {
        /// The deployment built.
        deployment: Deployment,
    },
    /// A copy of an earlier revision's deployment.
    Rollback {
        /// The revision copied.
        target: u64,
    },
}

impl Change {
    /// The history type of the revision it makes.
    pub fn kind(&self) -> RevisionType {
        match self {
            Change::Put { .. } => RevisionType::Put,
            Change::Patch { .. } | Change::BundlePatch { .. } => RevisionType::Patch,
            Change::Scale { .. } => RevisionType::Scale,
            Change::Rollback { .. } => RevisionType::Rollback,
        }
    }
}

/// The deployment `change` makes from `previous`; `earlier` finds a revision's deployment for a
/// rollback.
pub fn revise<'a>(
    previous: &Deployment,
    change: &Change,
    earlier: impl Fn(u64) -> Option<&'a Deployment>,
) -> Result<Deployment, PlatformError> {
    let next = match change {
        Change::Put { deployment } | Change::BundlePatch { deployment } => deployment.clone(),
        Change::Patch { patch } => {
            if !patch.is_object() {
                return Err(PlatformError::invalid(
                    "body",
                    "a merge patch must be a JSON object",
                ));
            }
            let mut merged =
                serde_json::to_value(previous).map_err(|e| PlatformError::invalid("body", e.to_string()))?;
            crate::merge_patch::merge_patch(&mut merged, patch);
            serde_json::from_value(merged)
                .map_err(|e| PlatformError::invalid("body", format!("the patched deployment: {e}")))?
        }
        Change::Scale { scale } => {
            let mut next = previous.clone();
            for (role, instances) in scale {
                let spec = next.roles.get_mut(role).ok_or_else(|| {
                    PlatformError::invalid(format!("scale.{role}"), "no such role in the previous revision")
                })?;
                spec.instances = *instances;
            }
            next
        }
        Change::Rollback { target } => earlier(*target)
            .cloned()
            .ok_or_else(|| PlatformError::NotFound(format!("revision {target} not found in the history")))?,
    };
    next.validate()?;
    Ok(next)
}
