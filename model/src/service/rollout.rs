//! Rolling a role onto a new revision with a bounded surge: a pure function of the role's
//! target instances and what the agent reports, deciding which instances the desired set holds
//! now. New instances start at most `surge` ahead of those already running; an old instance
//! leaves only when a new one runs in its place, so the role never has fewer running instances
//! than it wants while the rollout goes (no unavailability), and never more than `surge` extra.
//!
//! The surge is a quarter of the role's instances, at least one (Kubernetes' default
//! `maxSurge`); unavailability is zero (Kubernetes allows 25 %, Nomad's `max_parallel` 1 with
//! the old allocation stopped first): a rollout is slower but never shrinks a role's capacity.

use std::collections::BTreeMap;

use crate::cluster::agent_api::{InstanceId, InstanceSpec, InstanceState, InstanceStatus};

/// A role's instances to run now, one role revision at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleTarget {
    /// The set's name and the role: ids are `{prefix}r{revision}.{ordinal}`.
    pub prefix: String,
    /// The role revision instances should have.
    pub revision: u64,
    /// Every instance of the target revision, in ordinal order.
    pub target: Vec<InstanceSpec>,
    /// What an instance of an older role revision runs (to keep it unchanged while it stays).
    pub older: BTreeMap<u64, InstanceSpec>,
}

/// Extra instances a rollout may start: a quarter of `count`, at least one.
pub fn surge(count: usize) -> usize {
    count.div_ceil(4).max(1)
}

/// The role revision and ordinal an id of this role carries.
fn parse(prefix: &str, id: &InstanceId) -> Option<(u64, u32)> {
    let rest = id.as_str().strip_prefix(prefix)?.strip_prefix('r')?;
    let (revision, ordinal) = rest.split_once('.')?;
    Some((revision.parse().ok()?, ordinal.parse().ok()?))
}

/// The instances of `role` the desired set holds now, given what the agent reports of the set.
pub fn roll(role: &RoleTarget, observed: &[InstanceStatus]) -> Vec<InstanceSpec> {
    let mut old: Vec<(u64, u32, &InstanceStatus)> = observed
        .iter()
        .filter_map(|i| parse(&role.prefix, &i.id).map(|(rev, ordinal)| (rev, ordinal, i)))
        .filter(|(rev, _, _)| *rev != role.revision)
        .collect();
    if old.is_empty() {
        return role.target.clone();
    }
    let running = |id: &InstanceId| {
        observed
            .iter()
            .any(|i| i.id == *id && i.state == InstanceState::Running)
    };
    let wanted = role.target.len();
    let ready = role.target.iter().filter(|spec| running(&spec.id)).count();
    let started = wanted.min(ready + surge(wanted));
    let mut desired: Vec<InstanceSpec> = role.target.iter().take(started).cloned().collect();
    // Keep as many old instances as new ones are still missing, running ones first, then the
    // lowest ordinals; each with what it already runs.
    old.sort_by_key(|(_, ordinal, status)| (status.state != InstanceState::Running, *ordinal));
    let keep = wanted.saturating_sub(ready);
    desired.extend(old.into_iter().take(keep).filter_map(|(rev, _, status)| {
        let mut spec = role.older.get(&rev)?.clone();
        spec.id = status.id.clone();
        Some(spec)
    }));
    desired
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::fixtures::{seen, spec};

    fn role(count: u32) -> RoleTarget {
        RoleTarget {
            prefix: "acme.web.api.".into(),
            revision: 2,
            target: (0..count)
                .map(|i| spec(&format!("acme.web.api.r2.{i}"), "v2"))
                .collect(),
            older: BTreeMap::from([(1, spec("acme.web.api.r1.0", "v1"))]),
        }
    }

    fn ids(specs: &[InstanceSpec]) -> Vec<String> {
        let mut ids: Vec<String> = specs.iter().map(|s| s.id.to_string()).collect();
        ids.sort();
        ids
    }

    #[test]
    fn surges_by_a_quarter_and_never_drops_below_the_count() {
        use InstanceState::*;
        assert_eq!([surge(1), surge(4), surge(5), surge(8)], [1, 1, 2, 2]);
        let old = |n: u32| {
            (0..n)
                .map(|i| seen(&format!("acme.web.api.r1.{i}"), Running))
                .collect::<Vec<_>>()
        };
        // Nothing old: the target as it is.
        assert_eq!(ids(&roll(&role(4), &[])), ids(&role(4).target));
        // Step 1: four old running, nothing new yet: one new starts, all four old stay.
        let step1 = roll(&role(4), &old(4));
        assert_eq!(
            ids(&step1),
            [
                "acme.web.api.r1.0",
                "acme.web.api.r1.1",
                "acme.web.api.r1.2",
                "acme.web.api.r1.3",
                "acme.web.api.r2.0"
            ]
        );
        assert!(
            step1
                .iter()
                .filter(|s| s.id.as_str().contains(".r1."))
                .all(|s| s.exec.argv == ["v1"]),
            "old ones keep what they run"
        );
        // Step 2: the new one runs: one old goes, the next new starts.
        let mut observed = old(4);
        observed.push(seen("acme.web.api.r2.0", Running));
        let step2 = roll(&role(4), &observed);
        assert_eq!(step2.len(), 5);
        assert_eq!(step2.iter().filter(|s| s.id.as_str().contains(".r1.")).count(), 3);
        // A new one still starting does not let an old one go.
        let mut observed = old(4);
        observed.push(seen("acme.web.api.r2.0", Starting));
        assert_eq!(ids(&roll(&role(4), &observed)), ids(&step1));
        // All new running: the old are dropped.
        let mut observed = old(4);
        observed.extend((0..4).map(|i| seen(&format!("acme.web.api.r2.{i}"), Running)));
        assert_eq!(ids(&roll(&role(4), &observed)), ids(&role(4).target));
        // An old revision whose spec is unknown cannot be kept unchanged: it goes.
        let unknown = vec![seen("acme.web.api.r0.0", Running)];
        assert_eq!(ids(&roll(&role(1), &unknown)), ["acme.web.api.r2.0"]);
        // Another role's instances are not this role's business.
        let other = vec![seen("acme.web.db.r1.0", Running)];
        assert_eq!(ids(&roll(&role(2), &other)), ids(&role(2).target));
    }
}
