//! The pure apply of [`PoolCommand`]s.

use std::collections::BTreeMap;

use super::config::{is_resource_name, PoolConfig};
use super::resource::{Pools, Queue, QueueEntry, Resource};
use super::{states, PoolCommand, PoolError, PoolResult, REQUEST_TTL_MS};
use crate::error::DomainError;
use crate::limits::{deadline_after, is_printable_word, MAX_DURATION_MS, MAX_POOL_QUEUES, MAX_POOL_WORD_LEN};

type Outcome = Result<PoolResult, DomainError>;

impl Pools {
    /// Applies one pool command committed at `index` with leader time `now_ms`.
    pub fn apply(&mut self, index: u64, now_ms: u64, command: &PoolCommand) -> Outcome {
        match command {
            PoolCommand::SetConfig { config } => self.set_config(config, now_ms),
            PoolCommand::Acquire {
                rtype,
                state,
                dest,
                owner,
                request_id,
                candidates,
                claim_for_ms,
                new_dynamic_name,
            } => self.acquire(
                index,
                now_ms,
                Acquire {
                    rtype,
                    state,
                    dest,
                    owner,
                    request_id: request_id.as_deref(),
                    candidates: candidates.as_deref(),
                    claim_for_ms: *claim_for_ms,
                    new_dynamic_name: new_dynamic_name.as_deref(),
                },
            ),
            PoolCommand::AcquireByState {
                state,
                dest,
                owner,
                names,
            } => self.acquire_by_state(index, now_ms, state, dest, owner, names),
            PoolCommand::Release {
                name,
                dest,
                owner,
                token,
            } => self.release(now_ms, name, dest, owner, *token),
            PoolCommand::Update {
                name,
                owner,
                state,
                user_data,
                token,
            } => self.update(now_ms, name, owner, state, user_data, *token),
            PoolCommand::Reset {
                rtype,
                state,
                dest,
                expire_ms,
                not_before_ms,
            } => Ok(self.reset(now_ms, rtype, state, dest, *expire_ms, *not_before_ms)),
            PoolCommand::ReleaseClaim { token } => self.release_claim(now_ms, token),
            PoolCommand::ExpireClaims { rtype, not_before_ms } => {
                Ok(self.expire_claims(now_ms, rtype, *not_before_ms))
            }
            PoolCommand::SyncDynamic { rtype, new_names } => Ok(self.sync_dynamic(now_ms, rtype, new_names)),
            PoolCommand::Retire { name } => self.retire(now_ms, name),
            PoolCommand::Fulfil { name } => self.fulfil(now_ms, name),
        }
    }

    fn set_config(&mut self, config: &PoolConfig, now_ms: u64) -> Outcome {
        config.validate()?;
        for entry in config.resources.iter().filter(|entry| !entry.is_dynamic()) {
            for name in &entry.names {
                if let Some(existing) = self.resources.get(name) {
                    if existing.rtype != entry.rtype {
                        return Err(DomainError::Invalid {
                            field: format!("resources (type {:?})", entry.rtype),
                            message: format!("name {name:?} already exists with type {:?}", existing.rtype),
                        });
                    }
                }
            }
        }
        for entry in config.resources.iter().filter(|entry| !entry.is_dynamic()) {
            for name in &entry.names {
                let resource = self.resources.entry(name.clone()).or_insert_with(|| Resource {
                    name: name.clone(),
                    rtype: entry.rtype.clone(),
                    state: entry.initial_state().to_string(),
                    last_update_ms: now_ms,
                    ..Resource::default()
                });
                resource.retired = false;
            }
        }
        // Static resources no longer configured: deleted when unowned, retired when owned.
        let listed = |resource: &Resource| {
            config
                .get(&resource.rtype)
                .is_some_and(|entry| !entry.is_dynamic() && entry.names.contains(&resource.name))
        };
        let removed: Vec<String> = self
            .resources
            .values()
            .filter(|r| !r.dynamic && !listed(r))
            .map(|r| r.name.clone())
            .collect();
        for name in removed {
            if let Some(resource) = self.resources.get_mut(&name) {
                if resource.owner.is_empty() {
                    self.resources.remove(&name);
                } else {
                    resource.retired = true;
                }
            }
        }
        self.config = Some(config.clone());
        Ok(PoolResult::Done)
    }

    fn queue_mut(&mut self, rtype: &str, state: &str) -> &mut Queue {
        let position = self
            .queues
            .iter()
            .position(|q| q.rtype == rtype && q.state == state);
        let position = match position {
            Some(position) => position,
            None => {
                self.queues.push(Queue {
                    rtype: rtype.to_string(),
                    state: state.to_string(),
                    entries: Vec::new(),
                });
                self.queues.len() - 1
            }
        };
        &mut self.queues[position]
    }

    fn acquire(&mut self, index: u64, now_ms: u64, request: Acquire<'_>) -> Outcome {
        check_words(&[
            ("state", request.state),
            ("dest", request.dest),
            ("owner", request.owner),
        ])?;
        let claim_expires_ms = match request.claim_for_ms {
            Some(ms) => Some(deadline_after(now_ms, ms).ok_or_else(|| DomainError::Invalid {
                field: "max_time".to_string(),
                message: format!("at most {} seconds", MAX_DURATION_MS / 1000),
            })?),
            None => None,
        };
        if !self.has_type(request.rtype) {
            return Err(PoolError::TypeNotFound(request.rtype.to_string()).into());
        }
        // Drop entries whose clients stopped polling, and the queues they leave empty: a queue
        // lives only while someone waits in it, so new state names cannot grow the state.
        self.queues.retain_mut(|queue| {
            queue.entries.retain(|entry| entry.expires_ms > now_ms);
            !queue.entries.is_empty()
        });
        let waiting = |pools: &Self| {
            pools
                .queues
                .iter()
                .find(|q| q.rtype == request.rtype && q.state == request.state)
                .map_or(0, |q| q.entries.len())
        };
        // The request's place in the FIFO: upsert it when it has an id.
        let (rank, first_sighting) = match request.request_id {
            None => (waiting(self) + 1, false),
            Some(id) => {
                let known = self
                    .queues
                    .iter()
                    .any(|q| q.rtype == request.rtype && q.state == request.state);
                if !known && self.queues.len() >= MAX_POOL_QUEUES {
                    return Err(PoolError::TooManyQueues(MAX_POOL_QUEUES).into());
                }
                let expires_ms = now_ms.saturating_add(REQUEST_TTL_MS);
                let queue = self.queue_mut(request.rtype, request.state);
                match queue.entries.iter().position(|entry| entry.id == id) {
                    Some(position) => {
                        queue.entries[position].expires_ms = expires_ms;
                        (position + 1, false)
                    }
                    None => {
                        queue.entries.push(QueueEntry {
                            id: id.to_string(),
                            expires_ms,
                        });
                        (queue.entries.len(), true)
                    }
                }
            }
        };
        if first_sighting {
            self.create_on_demand(now_ms, request.rtype, request.new_dynamic_name);
        }
        let mut free: Vec<&Resource> = self
            .resources
            .values()
            .filter(|r| r.rtype == request.rtype && r.state == request.state && r.owner.is_empty())
            .filter(|r| request.candidates.is_none_or(|names| names.contains(&r.name)))
            .collect();
        // Least recently updated first; names break ties so every replica picks the same one.
        free.sort_by(|a, b| {
            a.last_update_ms
                .cmp(&b.last_update_ms)
                .then_with(|| a.name.cmp(&b.name))
        });
        let Some(chosen) = free.get(rank - 1).map(|r| r.name.clone()) else {
            let rtype = request.rtype.to_string();
            return Err(match request.request_id {
                Some(_) => PoolError::Queued {
                    rtype,
                    position: rank,
                },
                None => PoolError::NoneAvailable(rtype),
            }
            .into());
        };
        if let Some(id) = request.request_id {
            self.queues.retain_mut(|queue| {
                if queue.rtype == request.rtype && queue.state == request.state {
                    queue.entries.retain(|entry| entry.id != id);
                }
                !queue.entries.is_empty()
            });
        }
        let resource = self
            .resources
            .get_mut(&chosen)
            .ok_or_else(|| PoolError::NotFound(chosen.clone()))?;
        grant(resource, index, now_ms, request.owner, request.dest);
        resource.claim_expires_ms = claim_expires_ms;
        Ok(PoolResult::Resource(resource.clone()))
    }

    /// A new request for a dynamic type may create one resource, up to `max-count`.
    fn create_on_demand(&mut self, now_ms: u64, rtype: &str, name: Option<&str>) {
        let Some(entry) = self
            .config
            .as_ref()
            .and_then(|c| c.get(rtype))
            .filter(|e| e.is_dynamic())
            .cloned()
        else {
            return;
        };
        let Some(name) = name.filter(|n| is_resource_name(n) && !self.resources.contains_key(*n)) else {
            return;
        };
        let active = self
            .of_type(rtype)
            .filter(|r| r.state != states::TOMBSTONE)
            .count() as u32;
        if active < entry.max_count.unwrap_or(0) {
            self.resources.insert(
                name.to_string(),
                new_dynamic(name, rtype, entry.initial_state(), now_ms),
            );
        }
    }

    fn acquire_by_state(
        &mut self,
        index: u64,
        now_ms: u64,
        state: &str,
        dest: &str,
        owner: &str,
        names: &[String],
    ) -> Outcome {
        check_words(&[("state", state), ("dest", dest), ("owner", owner)])?;
        // All or nothing: check every name before changing any.
        for name in names {
            let resource = self
                .resources
                .get(name)
                .ok_or_else(|| PoolError::NotFound(name.clone()))?;
            if resource.state != state {
                return Err(PoolError::StateMismatch {
                    expected: state.to_string(),
                    current: resource.state.clone(),
                }
                .into());
            }
            if !resource.owner.is_empty() {
                return Err(PoolError::OwnerMismatch {
                    requested: owner.to_string(),
                    current: resource.owner.clone(),
                }
                .into());
            }
        }
        let mut granted = Vec::with_capacity(names.len());
        for name in names {
            if let Some(resource) = self.resources.get_mut(name) {
                grant(resource, index, now_ms, owner, dest);
                granted.push(resource.clone());
            }
        }
        Ok(PoolResult::Resources(granted))
    }

    fn owned_mut(
        &mut self,
        name: &str,
        owner: &str,
        token: Option<u64>,
    ) -> Result<&mut Resource, DomainError> {
        let resource = self
            .resources
            .get_mut(name)
            .ok_or_else(|| PoolError::NotFound(name.to_string()))?;
        if resource.owner != owner {
            return Err(PoolError::OwnerMismatch {
                requested: owner.to_string(),
                current: resource.owner.clone(),
            }
            .into());
        }
        if let Some(given) = token {
            if given != resource.token {
                return Err(PoolError::StaleToken {
                    name: name.to_string(),
                    given,
                    current: resource.token,
                }
                .into());
            }
        }
        Ok(resource)
    }

    fn release(&mut self, now_ms: u64, name: &str, dest: &str, owner: &str, token: Option<u64>) -> Outcome {
        check_words(&[("dest", dest)])?;
        let lifespan = self
            .resources
            .get(name)
            .and_then(|r| self.config.as_ref()?.get(&r.rtype).filter(|_| r.dynamic))
            .and_then(|entry| entry.lifespan_ms().ok().flatten());
        let resource = self.owned_mut(name, owner, token)?;
        resource.owner.clear();
        resource.state = dest.to_string();
        resource.last_update_ms = now_ms;
        resource.claim_expires_ms = None;
        if let Some(lifespan) = lifespan {
            // The configuration refuses lifespans past MAX_DURATION_MS; saturate all the same.
            resource.expiration_ms = Some(now_ms.saturating_add(lifespan));
        }
        if resource.retired {
            self.resources.remove(name);
        }
        Ok(PoolResult::Done)
    }

    fn update(
        &mut self,
        now_ms: u64,
        name: &str,
        owner: &str,
        state: &str,
        user_data: &BTreeMap<String, String>,
        token: Option<u64>,
    ) -> Outcome {
        check_words(&[("state", state)])?;
        let resource = self.owned_mut(name, owner, token)?;
        if resource.state != state {
            return Err(PoolError::StateMismatch {
                expected: state.to_string(),
                current: resource.state.clone(),
            }
            .into());
        }
        for (key, value) in user_data {
            if value.is_empty() {
                resource.user_data.remove(key);
            } else {
                resource.user_data.insert(key.clone(), value.clone());
            }
        }
        resource.last_update_ms = now_ms;
        Ok(PoolResult::Resource(resource.clone()))
    }

    fn reset(
        &mut self,
        now_ms: u64,
        rtype: &str,
        state: &str,
        dest: &str,
        expire_ms: u64,
        not_before_ms: u64,
    ) -> PoolResult {
        let mut reclaimed = BTreeMap::new();
        let mut retired = Vec::new();
        for resource in self.resources.values_mut() {
            let idle_since = resource.last_update_ms.max(not_before_ms);
            let stale = now_ms.saturating_sub(idle_since) >= expire_ms;
            // Claims are not heartbeated; they end at their own expiry.
            let claimed = resource.claim_expires_ms.is_some();
            if resource.rtype == rtype
                && resource.state == state
                && !resource.owner.is_empty()
                && stale
                && !claimed
            {
                reclaimed.insert(resource.name.clone(), std::mem::take(&mut resource.owner));
                resource.state = dest.to_string();
                resource.last_update_ms = now_ms;
                resource.claim_expires_ms = None;
                if resource.retired {
                    retired.push(resource.name.clone());
                }
            }
        }
        for name in retired {
            self.resources.remove(&name);
        }
        PoolResult::Reclaimed(reclaimed)
    }

    fn release_claim(&mut self, now_ms: u64, token: &str) -> Outcome {
        let name = self
            .resources
            .values()
            .find(|r| r.owner == token && r.claim_expires_ms.is_some())
            .map(|r| r.name.clone())
            .ok_or_else(|| PoolError::ClaimNotFound(token.to_string()))?;
        self.release(now_ms, &name, states::FREE, token, None)
    }

    fn expire_claims(&mut self, now_ms: u64, rtype: &str, not_before_ms: u64) -> PoolResult {
        let mut reclaimed = BTreeMap::new();
        if now_ms < not_before_ms {
            return PoolResult::Reclaimed(reclaimed);
        }
        for resource in self.resources.values_mut() {
            if resource.rtype == rtype && resource.claim_expired(now_ms, not_before_ms) {
                reclaimed.insert(resource.name.clone(), std::mem::take(&mut resource.owner));
                resource.state = states::FREE.to_string();
                resource.claim_expires_ms = None;
                resource.last_update_ms = now_ms;
            }
        }
        PoolResult::Reclaimed(reclaimed)
    }

    /// Boskos's dynamic-resource lifecycle for one type: expire, delete tombstones, keep
    /// `min-count`, trim above `max-count`. A type removed from the config drains (min = max = 0).
    fn sync_dynamic(&mut self, now_ms: u64, rtype: &str, new_names: &[String]) -> PoolResult {
        let entry = self.config.as_ref().and_then(|c| c.get(rtype)).cloned();
        if entry.as_ref().is_some_and(|e| !e.is_dynamic()) {
            return PoolResult::Done;
        }
        let (min, max, initial) = match &entry {
            Some(entry) => (
                entry.min_count.unwrap_or(0),
                entry.max_count.unwrap_or(0),
                entry.initial_state().to_string(),
            ),
            None => (0, 0, states::DIRTY.to_string()),
        };
        let names: Vec<String> = self
            .of_type(rtype)
            .filter(|r| r.dynamic)
            .map(|r| r.name.clone())
            .collect();
        let mut deleting = 0u32;
        for name in names {
            let Some(resource) = self.resources.get_mut(&name) else {
                continue;
            };
            if !resource.owner.is_empty() {
                continue;
            }
            if resource.state == states::TOMBSTONE {
                self.resources.remove(&name);
                continue;
            }
            if resource.state == states::TO_BE_DELETED {
                deleting += 1;
            } else if resource.expiration_ms.is_some_and(|at| at <= now_ms) {
                resource.state = states::TO_BE_DELETED.to_string();
                deleting += 1;
            }
        }
        let mut active = self.of_type(rtype).filter(|r| r.dynamic).count() as u32;
        let mut fresh = new_names.iter().filter(|n| is_resource_name(n));
        while active < min {
            let Some(name) = fresh.next() else { break };
            if self.resources.contains_key(name) {
                continue;
            }
            self.resources
                .insert(name.clone(), new_dynamic(name, rtype, &initial, now_ms));
            active += 1;
        }
        let surplus = active.saturating_sub(deleting).saturating_sub(max);
        if surplus > 0 {
            let mut idle: Vec<String> = self
                .of_type(rtype)
                .filter(|r| r.dynamic && r.owner.is_empty() && r.state != states::TO_BE_DELETED)
                .map(|r| r.name.clone())
                .collect();
            idle.sort_by(|a, b| b.cmp(a));
            for name in idle.into_iter().take(surplus as usize) {
                if let Some(resource) = self.resources.get_mut(&name) {
                    resource.state = states::TO_BE_DELETED.to_string();
                }
            }
        }
        PoolResult::Done
    }

    fn retire(&mut self, now_ms: u64, name: &str) -> Outcome {
        let resource = self
            .resources
            .get(name)
            .ok_or_else(|| PoolError::NotFound(name.to_string()))?;
        if resource.state != states::TO_BE_DELETED || !resource.owner.is_empty() {
            return Err(PoolError::StateMismatch {
                expected: states::TO_BE_DELETED.into(),
                current: resource.state.clone(),
            }
            .into());
        }
        let children: Vec<String> = resource
            .user_data
            .get(LEASED_RESOURCES)
            .and_then(|list| serde_json::from_str(list).ok())
            .unwrap_or_default();
        for child in children {
            if let Some(child) = self.resources.get_mut(&child) {
                child.owner.clear();
                child.state = states::DIRTY.to_string();
                child.last_update_ms = now_ms;
            }
        }
        if let Some(resource) = self.resources.get_mut(name) {
            resource.user_data.remove(LEASED_RESOURCES);
            resource.state = states::TOMBSTONE.to_string();
            resource.last_update_ms = now_ms;
        }
        Ok(PoolResult::Done)
    }
}

impl Pools {
    fn fulfil(&mut self, now_ms: u64, name: &str) -> Outcome {
        let parent = self
            .resources
            .get(name)
            .ok_or_else(|| PoolError::NotFound(name.to_string()))?;
        if parent.state != states::DIRTY || !parent.owner.is_empty() {
            return Err(PoolError::StateMismatch {
                expected: states::DIRTY.into(),
                current: parent.state.clone(),
            }
            .into());
        }
        let needs = self
            .config
            .as_ref()
            .and_then(|c| c.get(&parent.rtype))
            .map(|t| t.needs.clone())
            .unwrap_or_default();
        if needs.is_empty() {
            return Err(DomainError::Invalid {
                field: format!("resources (type {:?}).needs", parent.rtype),
                message: "the type needs nothing, so there is nothing to fulfil".into(),
            });
        }
        let old_children: Vec<String> = parent
            .user_data
            .get(LEASED_RESOURCES)
            .and_then(|list| serde_json::from_str(list).ok())
            .unwrap_or_default();
        // Choose every child before changing anything: all needs are met, or nothing happens.
        let mut chosen = Vec::new();
        for (rtype, count) in &needs {
            let mut free: Vec<&Resource> = self
                .resources
                .values()
                .filter(|r| &r.rtype == rtype && r.state == states::FREE && r.owner.is_empty())
                .collect();
            free.sort_by(|a, b| {
                a.last_update_ms
                    .cmp(&b.last_update_ms)
                    .then_with(|| a.name.cmp(&b.name))
            });
            if free.len() < *count as usize {
                return Err(PoolError::NoneAvailable(rtype.clone()).into());
            }
            chosen.extend(free.into_iter().take(*count as usize).map(|r| r.name.clone()));
        }
        for child in old_children {
            if let Some(child) = self.resources.get_mut(&child) {
                if child.state == name && child.owner.is_empty() {
                    child.state = states::DIRTY.to_string();
                    child.last_update_ms = now_ms;
                }
            }
        }
        for child in &chosen {
            if let Some(child) = self.resources.get_mut(child) {
                child.state = name.to_string();
                child.last_update_ms = now_ms;
            }
        }
        let list = serde_json::to_string(&chosen).map_err(|e| DomainError::Invalid {
            field: LEASED_RESOURCES.into(),
            message: e.to_string(),
        })?;
        let parent = self
            .resources
            .get_mut(name)
            .ok_or_else(|| PoolError::NotFound(name.to_string()))?;
        parent.user_data.insert(LEASED_RESOURCES.into(), list);
        parent.state = states::FREE.to_string();
        parent.last_update_ms = now_ms;
        Ok(PoolResult::Resource(parent.clone()))
    }

    /// Whether a [`PoolCommand::SyncDynamic`] at `now_ms` would change anything for `rtype`.
    pub fn dynamic_sync_needed(&self, rtype: &str, now_ms: u64) -> bool {
        let entry = self.config.as_ref().and_then(|c| c.get(rtype));
        if entry.is_some_and(|e| !e.is_dynamic()) {
            return false;
        }
        let (min, max) = entry.map_or((0, 0), |e| (e.min_count.unwrap_or(0), e.max_count.unwrap_or(0)));
        let dynamic: Vec<&Resource> = self.of_type(rtype).filter(|r| r.dynamic).collect();
        let unowned = |r: &&&Resource| r.owner.is_empty();
        let tombstones = dynamic
            .iter()
            .filter(unowned)
            .any(|r| r.state == states::TOMBSTONE);
        let expiring = dynamic
            .iter()
            .filter(unowned)
            .any(|r| r.state != states::TO_BE_DELETED && r.expiration_ms.is_some_and(|at| at <= now_ms));
        let active = dynamic.iter().filter(|r| r.state != states::TOMBSTONE).count() as u32;
        let deleting = dynamic
            .iter()
            .filter(|r| r.state == states::TO_BE_DELETED)
            .count() as u32;
        tombstones || expiring || active < min || active.saturating_sub(deleting) > max
    }
}

/// User-data key where Mason records a resource's children (a JSON list of names).
pub const LEASED_RESOURCES: &str = "leasedResources";

struct Acquire<'a> {
    rtype: &'a str,
    state: &'a str,
    dest: &'a str,
    owner: &'a str,
    request_id: Option<&'a str>,
    candidates: Option<&'a [String]>,
    claim_for_ms: Option<u64>,
    new_dynamic_name: Option<&'a str>,
}

fn grant(resource: &mut Resource, index: u64, now_ms: u64, owner: &str, dest: &str) {
    resource.owner = owner.to_string();
    resource.state = dest.to_string();
    resource.last_update_ms = now_ms;
    // The log index of the grant: strictly greater than any earlier grant's.
    resource.token = index;
}

fn new_dynamic(name: &str, rtype: &str, state: &str, now_ms: u64) -> Resource {
    Resource {
        name: name.to_string(),
        rtype: rtype.to_string(),
        state: state.to_string(),
        last_update_ms: now_ms,
        dynamic: true,
        ..Resource::default()
    }
}

/// Refuses a state, destination or owner with control or bidi characters, or too long: they
/// reach logs, metrics labels and other callers' screens.
fn check_words(words: &[(&str, &str)]) -> Result<(), DomainError> {
    match words.iter().find(|(_, word)| !is_printable_word(word)) {
        None => Ok(()),
        Some((field, word)) => Err(DomainError::Invalid {
            field: (*field).to_string(),
            message: format!(
                "must be at most {MAX_POOL_WORD_LEN} bytes of visible characters (no control or bidi characters); got {} bytes",
                word.len()
            ),
        }),
    }
}
