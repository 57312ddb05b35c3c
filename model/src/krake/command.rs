//! The commands that change Krake's objects: create, update (the server-merged full object),
//! and delete (marking, or `force` removing at once).

use serde::{Deserialize, Serialize};

use super::kind::KrakeKey;
use super::meta::{KrakeMeta, MetaInput};
use super::rbac::{KrakeRole, KrakeRoleBinding};
use crate::scheduling::metrics::{MetricSpec, ProviderSpec};

/// A change of one Krake object, by whom.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KrakeCommand {
    /// The caller's principal, for the audit log (authorized by the proposing node).
    pub caller: String,
    /// The object.
    pub key: KrakeKey,
    /// What changes.
    pub change: KrakeChange,
}

/// What changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "krake_op", rename_all = "snake_case")]
pub enum KrakeChange {
    /// Make the object; refused when the name is taken.
    Create {
        /// Labels, finalizers, owners.
        meta: MetaInput,
        /// The object.
        body: KrakeBody,
    },
    /// Replace what a writer sets of it (the server merged the caller's object already).
    Update {
        /// Labels, finalizers, owners.
        meta: MetaInput,
        /// The object.
        body: KrakeBody,
        /// Refuse unless the object was last modified at this time (µs): the version the
        /// caller read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        modified_us: Option<u64>,
    },
    /// Mark it deleted (adding `cascade_deletion`), or with `force` remove it at once.
    Delete {
        /// Skip the finalizers.
        #[serde(default)]
        force: bool,
    },
    /// An application's hook call or retry (`/complete`, `/shutdown`, `/retry`).
    Hook {
        /// Which.
        call: HookCall,
    },
}

/// A call an application (or its user) makes to one of its subresources (`krake.md` §6.7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "hook", rename_all = "snake_case")]
pub enum HookCall {
    /// `PUT …/complete {"token"}`: the job is done, the application is deleted.
    Complete {
        /// The token the instance was given.
        token: String,
    },
    /// `PUT …/shutdown {"token"}`: the application cleaned up; its deletion goes on.
    Shutdown {
        /// The token the instance was given.
        token: String,
    },
    /// `PUT …/retry`: a deletion whose shutdown grace passed asks the application again.
    Retry,
}

/// An object's content, by kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KrakeBody {
    /// A role's rules.
    Role(KrakeRole),
    /// A binding's users and roles.
    RoleBinding(KrakeRoleBinding),
    /// A metric (global or namespaced).
    Metric(MetricSpec),
    /// A metrics provider (global or namespaced).
    MetricsProvider(ProviderSpec),
    /// A cluster.
    Cluster(super::cluster::KrakeCluster),
    /// An application.
    Application(super::application::KrakeApplication),
    /// An infrastructure provider (global or namespaced).
    InfrastructureProvider(super::infrastructure::ImProvider),
    /// A cloud (global or namespaced).
    Cloud(super::infrastructure::OpenstackCloud),
}

/// An object after a command: its metadata and content, and whether it is gone (its last
/// finalizer removed, or forced).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KrakeStored {
    /// The object.
    pub key: KrakeKey,
    /// Its metadata.
    pub meta: KrakeMeta,
    /// Its content.
    pub body: KrakeBody,
    /// Whether it no longer exists.
    #[serde(default)]
    pub gone: bool,
}
