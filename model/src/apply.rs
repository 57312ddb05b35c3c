//! Applying a committed proposal to the [`State`]: the pure function every replica runs on the
//! same log, with its idempotency memory, its audit record and every dialect's command.

use crate::audit_record::{describe, outcome};
use crate::command::{Command, CommandResult, Precondition, Proposal};
use crate::error::DomainError;
use crate::object::{ObjectKey, ObjectKind, ObjectMeta, StoredObject};
use crate::platform::error::PlatformError;
use crate::platform::{PlatformCommand, PlatformOp};
use crate::state::{
    Change, ChangeKind, IdempotencyRecord, State, IDEMPOTENCY_BYTES_KEPT, IDEMPOTENCY_KEYS_KEPT,
};
use crate::validation::{validate_contents, validate_name, validate_namespace};

impl State {
    /// Applies one committed proposal (or batch) of the log entry at `index`. Pure: the result
    /// and the changes depend only on `self`, `index` and `proposal`.
    pub fn apply(&mut self, index: u64, proposal: &Proposal) -> (CommandResult, Vec<Change>) {
        self.apply_observed(index, proposal, &mut |_, _, _| {})
    }

    /// [`Self::apply`], showing `observe` the state after each proposal (each of a batch's in
    /// turn) with the proposal and its result: what a view derived from the whole state (Krake's
    /// watches) needs to tell every change at its own revision. `observe` only reads.
    pub fn apply_observed(
        &mut self,
        index: u64,
        proposal: &Proposal,
        observe: &mut dyn FnMut(&State, &Proposal, &CommandResult),
    ) -> (CommandResult, Vec<Change>) {
        if let Command::Batch { proposals } = &proposal.command {
            let mut results = Vec::with_capacity(proposals.len());
            let mut changes = Vec::new();
            for inner in proposals {
                let (result, mut inner_changes) = self.apply_observed(index, inner, observe);
                results.push(result);
                changes.append(&mut inner_changes);
            }
            return (CommandResult::Batch { results }, changes);
        }
        let (result, changes) = self.apply_one(index, proposal);
        observe(self, proposal, &result);
        (result, changes)
    }

    /// Applies one proposal that is not a batch.
    fn apply_one(&mut self, index: u64, proposal: &Proposal) -> (CommandResult, Vec<Change>) {
        if let Some(key) = &proposal.idempotency_key {
            if let Some(record) = self.idempotency_records.get(key) {
                if record.request != proposal.idempotency_request {
                    let first = record.request.as_deref().unwrap_or("another request");
                    let error = DomainError::Invalid {
                        field: "Idempotency-Key".to_string(),
                        message: format!(
                            "this key was first used for {}; send a new key with a new request",
                            first.split(' ').take(2).collect::<Vec<_>>().join(" ")
                        ),
                    };
                    return (CommandResult::Refused(error), Vec::new());
                }
                return (record.result.clone(), Vec::new());
            }
        }
        // Resource versions and fencing tokens rest on every write getting a larger revision:
        // at the top of the range a write is refused rather than given the same one again.
        let Some(revision) = self.revision.checked_add(1).map(|next| next.max(index)) else {
            return (CommandResult::Refused(revision_exhausted()), Vec::new());
        };
        self.revision = revision;
        // A new leader's clock may be behind the old one's: keep the replicated clock monotonic.
        self.clock_ms = self.clock_ms.max(proposal.now_ms);
        let (result, changes) = match self.apply_command(revision, self.clock_ms, &proposal.command) {
            Ok(done) => done,
            Err(error) => (CommandResult::Refused(error), Vec::new()),
        };
        self.audit_change(revision, proposal, &result);
        // A refusal changed nothing, so it is not remembered: a retry is judged afresh (a merge
        // patch retried after a conflict must not get the same conflict forever).
        if let (Some(key), false) = (
            &proposal.idempotency_key,
            matches!(result, CommandResult::Refused(_)),
        ) {
            self.remember(key, proposal.idempotency_request.clone(), &result);
        }
        (result, changes)
    }

    fn remember(&mut self, key: &str, request: Option<String>, result: &CommandResult) {
        // The encoded size is the same on every replica: the result is.
        let bytes = serde_json::to_vec(result).map_or(usize::MAX, |encoded| encoded.len());
        if bytes > IDEMPOTENCY_BYTES_KEPT {
            return;
        }
        let record = IdempotencyRecord {
            request,
            result: result.clone(),
            bytes,
        };
        self.idempotency_records.insert(key.to_string(), record);
        self.idempotency_keys.push_back(key.to_string());
        self.idempotency_bytes += bytes;
        while self.idempotency_keys.len() > IDEMPOTENCY_KEYS_KEPT
            || self.idempotency_bytes > IDEMPOTENCY_BYTES_KEPT
        {
            let Some(oldest) = self.idempotency_keys.pop_front() else {
                break;
            };
            if let Some(gone) = self.idempotency_records.remove(&oldest) {
                self.idempotency_bytes = self.idempotency_bytes.saturating_sub(gone.bytes);
            }
        }
    }

    /// Records a user's change in the audit log: one the command says who made (platform
    /// changes), or one proposed with a principal (the other dialects); the leader's own
    /// changes carry neither.
    fn audit_change(&mut self, revision: u64, proposal: &Proposal, result: &CommandResult) {
        let Some(described) = describe(&proposal.command) else {
            return;
        };
        let Some(principal) = described.caller.or_else(|| proposal.principal.clone()) else {
            return;
        };
        self.audit.record(crate::audit::AuditEntry {
            revision,
            time: crate::time::rfc3339_ms(self.clock_ms),
            principal,
            dialect: described.dialect.to_string(),
            verb: described.verb,
            object: described.object,
            result: outcome(result),
        });
    }

    /// Runs Krake's cascading deletion after a write that may have let it go on (a service gone
    /// from a cluster in deletion), and forgets the applications among `services` whose service
    /// is gone; nothing to do, and cheap, when no Krake object waits.
    fn collect_krake(&mut self, revision: u64, now_ms: u64, services: &[(String, String)]) {
        let mut objects = crate::krake::apply::KrakeObjects::new(&mut self.platform, &mut self.krake);
        objects.forget_gone_applications(services);
        objects.collect_pending(now_ms);
        let (touched, before) = objects.touched();
        self.platform.stamp_services(revision, &touched, &before);
    }

    fn apply_command(
        &mut self,
        index: u64,
        now_ms: u64,
        command: &Command,
    ) -> Result<(CommandResult, Vec<Change>), DomainError> {
        match command {
            Command::Platform(platform_command) => {
                self.check_namespace_free(platform_command)?;
                let result = self.platform.apply(platform_command)?;
                Ok((CommandResult::Platform(result), Vec::new()))
            }
            // Service changes stamp the services they touch with this revision, for watches.
            Command::Placement(placement) => {
                let touched = [(placement.tenant.clone(), placement.service.clone())];
                self.platform.changing_services(index, &touched, |p| {
                    Ok(((), p.apply_placement(now_ms, placement)?))
                })?;
                Ok((CommandResult::Done, Vec::new()))
            }
            Command::ServiceReport(report) => {
                let touched = [(report.tenant.clone(), report.service.clone())];
                self.platform.changing_services(index, &touched, |p| {
                    Ok(((), p.apply_service_report(index, now_ms, report)?))
                })?;
                // The end of a deleted service may let a cluster in deletion go.
                self.collect_krake(index, now_ms, &touched);
                Ok((CommandResult::Done, Vec::new()))
            }
            Command::Service(service_command) => {
                let touched = service_command.change.services();
                let outcome = self.platform.changing_services(index, &touched, |p| {
                    Ok((p.apply_service(now_ms, service_command)?, true))
                })?;
                self.collect_krake(index, now_ms, &touched);
                Ok((CommandResult::Service(outcome), Vec::new()))
            }
            Command::Krake(krake_command) => {
                let mut objects = crate::krake::apply::KrakeObjects::new(&mut self.platform, &mut self.krake);
                let stored = objects.apply(now_ms, krake_command)?;
                let (touched, before) = objects.touched();
                self.platform.stamp_services(index, &touched, &before);
                Ok((CommandResult::Krake(stored), Vec::new()))
            }
            Command::Cluster(cluster_command) => {
                self.platform.apply_cluster(now_ms, cluster_command)?;
                self.collect_krake(index, now_ms, &[]);
                Ok((CommandResult::Done, Vec::new()))
            }
            Command::Pool(pool_command) => {
                let result = self.pools.apply(index, now_ms, pool_command)?;
                Ok((CommandResult::Pool(result), Vec::new()))
            }
            Command::Create {
                key,
                spec,
                labels,
                annotations,
                uid,
                created_at,
            } => {
                check_key(key)?;
                check_spec_kind(key, spec.kind())?;
                validate_contents(key, labels, annotations, spec)?;
                if self.objects.contains_key(key) {
                    return Err(DomainError::AlreadyExists { key: key.clone() });
                }
                let object = StoredObject {
                    key: key.clone(),
                    meta: ObjectMeta {
                        uid: uid.clone(),
                        resource_version: index,
                        created_index: index,
                        creation_timestamp: created_at.clone(),
                        labels: labels.clone(),
                        annotations: annotations.clone(),
                    },
                    spec: spec.clone(),
                };
                self.objects.insert(key.clone(), object.clone());
                let change = Change {
                    index,
                    kind: ChangeKind::Added,
                    object: object.clone(),
                };
                Ok((CommandResult::Stored(object), vec![change]))
            }
            Command::Replace {
                key,
                spec,
                labels,
                annotations,
                precondition,
            } => {
                check_spec_kind(key, spec.kind())?;
                validate_contents(key, labels, annotations, spec)?;
                let existing = self
                    .objects
                    .get_mut(key)
                    .ok_or_else(|| DomainError::NotFound { key: key.clone() })?;
                check_precondition(key, &existing.meta, precondition)?;
                existing.spec = spec.clone();
                existing.meta.labels = labels.clone();
                existing.meta.annotations = annotations.clone();
                existing.meta.resource_version = index;
                let object = existing.clone();
                let change = Change {
                    index,
                    kind: ChangeKind::Modified,
                    object: object.clone(),
                };
                Ok((CommandResult::Stored(object), vec![change]))
            }
            Command::Delete { key, precondition } => {
                let existing = self
                    .objects
                    .get(key)
                    .ok_or_else(|| DomainError::NotFound { key: key.clone() })?;
                check_precondition(key, &existing.meta, precondition)?;
                let mut object = self
                    .objects
                    .remove(key)
                    .ok_or_else(|| DomainError::NotFound { key: key.clone() })?;
                // A deletion is a change too: watchers see it at this index.
                object.meta.resource_version = index;
                let change = Change {
                    index,
                    kind: ChangeKind::Deleted,
                    object: object.clone(),
                };
                Ok((CommandResult::Deleted(object), vec![change]))
            }
            Command::Restore { state } => {
                // The API refuses such a file first; every replica refuses it again, so that a
                // restore can never leave revisions, fences or time without room to grow.
                crate::snapshot::check_room(state)?;
                // Revisions and the clock never go back, whatever the snapshot's were; the
                // epoch passes both the snapshot's and this cluster's.
                let (revision, clock_ms, epoch) = (self.revision, self.clock_ms, self.epoch);
                let restored_epoch = epoch.max(state.epoch).checked_add(1);
                let Some(restored_epoch) = restored_epoch else {
                    return Err(DomainError::Invalid {
                        field: "epoch".into(),
                        message: "this cluster has been restored as often as its fence can count; restore into a new cluster".into(),
                    });
                };
                *self = (**state).clone();
                self.revision = self.revision.max(revision);
                self.clock_ms = self.clock_ms.max(clock_ms);
                self.epoch = restored_epoch;
                Ok((CommandResult::Done, Vec::new()))
            }
            Command::AuditRetention { entries } => {
                self.audit.set_retention(*entries);
                Ok((CommandResult::Done, Vec::new()))
            }
            Command::Noop => Ok((CommandResult::Done, Vec::new())),
            // Handled by `apply`; a batch inside a batch is applied the same way.
            Command::Batch { .. } => Ok((CommandResult::Done, Vec::new())),
        }
    }
}

/// The refusal of a write when the revision cannot grow any more.
fn revision_exhausted() -> DomainError {
    DomainError::Invalid {
        field: "revision".into(),
        message: format!(
            "this cluster's revision has reached {}; no write can get a larger one (restore its snapshot into a new cluster)",
            u64::MAX
        ),
    }
}

impl State {
    /// A tenant's name is also a lease namespace its members may use: a user who is no operator
    /// cannot create a tenant named after a namespace that already holds lease objects, which
    /// would hand them objects that others wrote.
    fn check_namespace_free(&self, command: &PlatformCommand) -> Result<(), DomainError> {
        let PlatformOp::CreateTenant { tenant, .. } = &command.op else {
            return Ok(());
        };
        let in_use = ObjectKind::ALL
            .iter()
            .any(|kind| self.objects_of(*kind, Some(tenant)).next().is_some());
        let operator = self
            .platform
            .user_of(&command.caller)
            .is_some_and(|user| self.platform.is_operator(&user.uid));
        if in_use && !operator && self.platform.tenant(tenant).is_none() {
            return Err(PlatformError::Conflict(format!(
                "{tenant:?} is a lease namespace that already holds objects; only an operator may make it a tenant"
            ))
            .into());
        }
        Ok(())
    }
}

fn check_key(key: &ObjectKey) -> Result<(), DomainError> {
    validate_namespace(&key.namespace)?;
    validate_name(key.kind, &key.name)
}

fn check_spec_kind(key: &ObjectKey, spec_kind: ObjectKind) -> Result<(), DomainError> {
    if key.kind == spec_kind {
        Ok(())
    } else {
        Err(DomainError::Invalid {
            field: "spec".to_string(),
            message: format!("a {spec_kind} spec cannot be stored as {}", key.kind),
        })
    }
}

fn check_precondition(
    key: &ObjectKey,
    meta: &ObjectMeta,
    precondition: &Precondition,
) -> Result<(), DomainError> {
    if let Some(uid) = &precondition.uid {
        if uid != &meta.uid {
            return Err(DomainError::Conflict {
                key: key.clone(),
                message: format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    meta.uid
                ),
            });
        }
    }
    if let Some(version) = precondition.resource_version {
        if version != meta.resource_version {
            return Err(DomainError::Conflict {
                key: key.clone(),
                message: "the object has been modified; please apply your changes to the latest version and try again".to_string(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::command::{Command, Proposal};
    use crate::state::State;

    #[test]
    fn an_observer_sees_each_proposal_of_a_batch_at_its_own_revision() {
        let mut state = State::new();
        let batch = Proposal::new(Command::Batch {
            proposals: vec![Proposal::new(Command::Noop), Proposal::new(Command::Noop)],
        });
        let mut seen = Vec::new();
        state.apply_observed(5, &batch, &mut |s, p, _| {
            seen.push((s.revision(), p.command.clone()))
        });
        assert_eq!(seen, vec![(5, Command::Noop), (6, Command::Noop)]);
        // Plain `apply` gives the same state.
        let mut plain = State::new();
        plain.apply(5, &batch);
        assert_eq!(plain, state);
    }
}
