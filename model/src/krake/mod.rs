//! Krake's own objects (Krake 1.0.1's `krake/data/`, https://gitlab.com/rak-n-rok/krake): the metadata every Krake object
//! carries, the kinds Drover serves in Krake's dialect, its Role and RoleBinding with the RBAC
//! decision they make, and the commands that change them.
//!
//! One state, two dialects: a Krake `Metric` or `MetricsProvider` is the metric or provider a
//! tenant already keeps (the namespace is the tenant; the global kinds are the operator
//! tenant's), and its Krake metadata sits beside it in the tenant ([`meta::KrakeMeta`]), kept by
//! every write from either dialect. Only what Drover had no object for (roles and their
//! bindings) is stored here ([`store::KrakeStore`]).

pub mod app_apply;
pub mod application;
pub mod apply;
pub mod cluster;
pub mod command;
pub mod error;
pub mod hooks_due;
pub mod infrastructure;
pub mod kind;
pub mod manifest;
pub mod manifest_pod;
pub mod manifest_secret;
pub mod manifest_values;
pub mod meta;
pub mod rbac;
pub mod store;
pub mod validate;

#[cfg(test)]
mod tests;

pub use command::{HookCall, KrakeBody, KrakeChange, KrakeCommand, KrakeStored};
pub use error::KrakeError;
pub use kind::{KrakeKey, KrakeKind};
pub use meta::{KrakeMeta, MetaInput, ResourceRef, CASCADE_DELETION};
pub use rbac::{KrakeRole, KrakeRoleBinding, RoleRule, Verb};
pub use store::KrakeStore;
