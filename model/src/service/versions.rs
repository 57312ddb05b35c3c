//! Which state revision last changed each service, and a bounded record of removed services,
//! so that a watch can resume from a resource version: the services changed after it, and
//! those removed after it. Stamped by the state's apply after every service, placement and
//! report command that changed something, so every replica records the same revisions.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// Removed services remembered for watches; a watch from before the oldest one forgotten is
/// told to list again.
pub const REMOVALS_KEPT: usize = 1_000;

/// A removed service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removal {
    /// The state revision that removed it.
    pub revision: u64,
    /// Tenant name.
    pub tenant: String,
    /// Service name.
    pub service: String,
    /// Its uid.
    pub uid: String,
}

/// The revision an event carries when the change that records it does not know its own (a
/// delete's `DELETING`, the service's last event): [`Platform::stamp_services`] gives it the
/// change's revision. No state revision is 0.
pub const UNSTAMPED: u64 = 0;

/// The removals remembered and the newest revision forgotten.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removals {
    /// Oldest first.
    pub kept: VecDeque<Removal>,
    /// The newest revision of a removal no longer kept (0: none forgotten).
    pub forgotten_up_to: u64,
}

/// What a watch line says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WatchKind {
    /// Created (or first seen by a watch that started without a version).
    Added,
    /// Changed.
    Modified,
    /// Removed.
    Deleted,
}

/// A service as a watch shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WatchedService {
    /// Its name.
    pub name: String,
    /// Its uid.
    pub id: String,
    /// The state revision of this change.
    pub resource_version: u64,
    /// Deleted (and still removing its instances), or removed (a `DELETED` line).
    pub deleted: bool,
    /// Its accepted revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<u64>,
    /// Its revision waiting for acceptance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<u64>,
    /// Where it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<crate::cluster::ClusterRef>,
    /// Its actor's last report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconcile: Option<super::reconcile::ReconcileStatus>,
}

/// Why a watch cannot resume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooOld {
    /// The oldest version it could resume from.
    pub oldest: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::Platform;

    fn names(changes: &[(WatchKind, WatchedService)]) -> Vec<(WatchKind, String, u64)> {
        changes
            .iter()
            .map(|(k, s)| (*k, s.name.clone(), s.resource_version))
            .collect()
    }

    #[test]
    fn watches_resume_from_a_version_and_removals_are_bounded() {
        let mut platform = Platform::default();
        platform.tenants.insert("acme".into(), Default::default());
        let service = |uid: &str| crate::service::Service {
            uid: uid.into(),
            environment: crate::service::EnvironmentRef {
                account: "main".into(),
                environment: "prod".into(),
            },
            revisions: Default::default(),
            current: None,
            pending: None,
            placement: None,
            created_ms: 0,
            deleting_ms: None,
            reconcile: Default::default(),
            events: Default::default(),
            version: 0,
            created_version: 0,
            scheduling: None,
            migrating_to: None,
            moved_ms: 0,
        };
        let touched = |name: &str| vec![("acme".to_string(), name.to_string())];
        // Revision 5 creates a, 6 creates b, 7 changes a, 8 removes b.
        for (revision, name, create) in [(5, "a", true), (6, "b", true)] {
            let before = platform.service_uids(&touched(name));
            if create {
                platform
                    .tenants
                    .get_mut("acme")
                    .unwrap()
                    .services
                    .insert(name.into(), service(&format!("u-{name}")));
            }
            platform.stamp_services(revision, &touched(name), &before);
        }
        let before = platform.service_uids(&touched("a"));
        platform.stamp_services(7, &touched("a"), &before);
        let before = platform.service_uids(&touched("b"));
        platform.tenants.get_mut("acme").unwrap().services.remove("b");
        platform.stamp_services(8, &touched("b"), &before);

        use WatchKind::*;
        assert_eq!(
            names(&platform.service_changes("acme", None).unwrap()),
            [(Added, "a".into(), 7)]
        );
        assert_eq!(
            names(&platform.service_changes("acme", Some(4)).unwrap()),
            [(Added, "a".into(), 7), (Deleted, "b".into(), 8)]
        );
        assert_eq!(
            names(&platform.service_changes("acme", Some(5)).unwrap()),
            [(Modified, "a".into(), 7), (Deleted, "b".into(), 8)]
        );
        assert!(platform.service_changes("acme", Some(8)).unwrap().is_empty());
        assert!(platform.service_changes("other", Some(0)).unwrap().is_empty());

        // Past the bound the oldest removals are forgotten and older versions are refused.
        for i in 0..REMOVALS_KEPT as u64 + 5 {
            let name = format!("x{i}");
            platform
                .tenants
                .get_mut("acme")
                .unwrap()
                .services
                .insert(name.clone(), service(&name));
            let before = platform.service_uids(&touched(&name));
            platform.tenants.get_mut("acme").unwrap().services.remove(&name);
            platform.stamp_services(100 + i, &touched(&name), &before);
        }
        assert_eq!(platform.service_removals().kept.len(), REMOVALS_KEPT);
        // b (8) and x0-x4 (100-104) are forgotten: a watch may resume from 104 on.
        assert_eq!(
            platform.service_changes("acme", Some(103)),
            Err(TooOld { oldest: 104 })
        );
        assert!(platform.service_changes("acme", Some(104)).is_ok());
    }
}
