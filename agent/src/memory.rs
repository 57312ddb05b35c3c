//! What the agent holds in memory: the highest fence, the desired sets with their specs, and a
//! run record per instance. [`Memory::doc`] is everything the state files store; a [`Plan`] is
//! one desired-set change, applied first to a copy of its set that is written to disk, then to
//! memory.

use std::collections::{BTreeMap, BTreeSet};

use drover_model::cluster::agent_api::{
    EndReason, Fence, Health, InstanceId, InstanceSpec, InstanceState, InstanceStatus, Resources, SetName,
};
use drover_model::cluster::pod::PodReport;
use serde::{Deserialize, Serialize};

/// One instance's run record: what the executor last observed, and (for `exec`) which process
/// runs it, so a restarted agent can adopt that process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// Where the instance is in its life.
    pub state: InstanceState,
    /// Exit code of the last run that ended (128 + signal when killed by a signal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// How many times it was started again.
    #[serde(default)]
    pub restarts: u32,
    /// RFC 3339 start time of the current run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// What the readiness probe last said.
    pub health: Health,
    /// Process id of the current run (`exec`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Start time of that process in clock ticks since boot (field 22 of `/proc/<pid>/stat`),
    /// which tells it from a later process that reuses its pid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ticks: Option<u64>,
    /// Why the last run ended, beyond its exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<EndReason>,
    /// Runs killed at the memory limit (the instance cgroup's counter when last read).
    #[serde(default)]
    pub oom_kills: u32,
    /// The pod's address and containers (`container`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<PodReport>,
}

impl Default for Run {
    fn default() -> Self {
        Self {
            state: InstanceState::Starting,
            exit_code: None,
            restarts: 0,
            started_at: None,
            health: Health::Unknown,
            pid: None,
            start_ticks: None,
            reason: None,
            oom_kills: 0,
            pod: None,
        }
    }
}

/// One desired instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its set.
    pub set: SetName,
    /// What the control plane asked for.
    pub spec: InstanceSpec,
    /// What was observed.
    pub run: Run,
    /// Which start of this id the entry belongs to: an executor's report for an older epoch
    /// (a replaced spec still being stopped) is ignored.
    pub epoch: u64,
}

impl Entry {
    /// The entry as the API reports it.
    pub fn status(&self) -> InstanceStatus {
        InstanceStatus {
            id: self.spec.id.clone(),
            set: self.set.clone(),
            state: self.run.state,
            exit_code: self.run.exit_code,
            restarts: self.run.restarts,
            started_at: self.run.started_at.clone(),
            health: self.run.health,
            pid: self.run.pid,
            resources: self.spec.resources,
            reason: self.run.reason,
            oom_kills: self.run.oom_kills,
            pod: self.run.pod.clone(),
            usage: None,
        }
    }
}

/// Everything the state files store: the contents of the one state file of earlier agents
/// (format 1), and the state as read at start-up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Doc {
    /// Format version, [`Doc::FORMAT`].
    pub format: u32,
    /// The highest fence accepted.
    pub fence: Fence,
    /// Every desired set, its instances ordered by id.
    pub sets: BTreeMap<SetName, Vec<InstanceSpec>>,
    /// Run records by instance id.
    pub runs: BTreeMap<InstanceId, Run>,
}

impl Doc {
    /// The format this agent writes and reads.
    pub const FORMAT: u32 = 1;
}

/// Everything the agent holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memory {
    /// The highest fence accepted.
    pub fence: Fence,
    /// Members of each set.
    pub sets: BTreeMap<SetName, BTreeSet<InstanceId>>,
    /// Every desired instance.
    pub instances: BTreeMap<InstanceId, Entry>,
    /// The next entry epoch.
    pub next_epoch: u64,
    /// The requests of every desired instance, summed (kept with `instances`, so that checking
    /// a set against the capacity does not walk every instance of every other set).
    requested: Totals,
    /// Grows with every change of what the inventory shows: every change goes through
    /// [`Memory::apply`], [`Memory::run_mut`] or [`Memory::set_fence`] (see
    /// `NodeFacts::generation`).
    generation: u64,
}

/// Requests summed without overflow; saturated only when read, which gives what a saturating
/// fold over the same requests gives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Totals {
    cpu_millis: u128,
    memory_mib: u128,
}

impl Totals {
    fn add(&mut self, r: Resources) {
        self.cpu_millis += u128::from(r.cpu_millis);
        self.memory_mib += u128::from(r.memory_mib);
    }

    fn remove(&mut self, r: Resources) {
        self.cpu_millis = self.cpu_millis.saturating_sub(u128::from(r.cpu_millis));
        self.memory_mib = self.memory_mib.saturating_sub(u128::from(r.memory_mib));
    }

    fn saturated(self) -> Resources {
        Resources {
            cpu_millis: u64::try_from(self.cpu_millis).unwrap_or(u64::MAX),
            memory_mib: u64::try_from(self.memory_mib).unwrap_or(u64::MAX),
        }
    }
}

impl Memory {
    /// Memory as loaded from the state files. The caller checked that no id is in two sets.
    pub fn from_doc(doc: Doc) -> Self {
        let mut memory = Memory {
            fence: doc.fence,
            ..Memory::default()
        };
        let mut runs = doc.runs;
        for (set, specs) in doc.sets {
            for spec in specs {
                memory
                    .sets
                    .entry(set.clone())
                    .or_default()
                    .insert(spec.id.clone());
                let run = runs.remove(&spec.id).unwrap_or_default();
                memory.next_epoch += 1;
                let entry = Entry {
                    set: set.clone(),
                    spec,
                    run,
                    epoch: memory.next_epoch,
                };
                memory.insert(entry);
            }
        }
        memory
    }

    /// Starts the generation at `start` (the agent's start time in nanoseconds, so that a
    /// restarted agent's generations do not repeat its predecessor's).
    pub fn start_generation(&mut self, start: u64) {
        self.generation = start;
    }

    /// The generation (see `NodeFacts::generation`).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Records a fence newer than the one held.
    pub fn set_fence(&mut self, fence: Fence) {
        self.fence = fence;
        self.generation = self.generation.wrapping_add(1);
    }

    /// Adds (or replaces) an instance, keeping the totals.
    fn insert(&mut self, entry: Entry) {
        self.requested.add(entry.spec.resources);
        if let Some(old) = self.instances.insert(entry.spec.id.clone(), entry) {
            self.requested.remove(old.spec.resources);
        }
    }

    /// Removes an instance, keeping the totals.
    fn remove(&mut self, id: &InstanceId) {
        if let Some(old) = self.instances.remove(id) {
            self.requested.remove(old.spec.resources);
        }
    }

    /// What the state files store.
    pub fn doc(&self) -> Doc {
        let sets = self
            .sets
            .iter()
            .map(|(set, ids)| {
                let specs = ids
                    .iter()
                    .filter_map(|id| self.instances.get(id).map(|e| e.spec.clone()))
                    .collect();
                (set.clone(), specs)
            })
            .collect();
        let runs = self
            .instances
            .iter()
            .map(|(id, e)| (id.clone(), e.run.clone()))
            .collect();
        Doc {
            format: Doc::FORMAT,
            fence: self.fence,
            sets,
            runs,
        }
    }

    /// A copy holding only `set` (and the fence and epoch counter): enough to apply a plan for
    /// that set to and write the set's file from, without copying every other set.
    pub fn only(&self, set: &SetName) -> Memory {
        let members = self.sets.get(set).cloned().unwrap_or_default();
        let mut only = Memory {
            fence: self.fence,
            next_epoch: self.next_epoch,
            ..Memory::default()
        };
        for entry in members.iter().filter_map(|id| self.instances.get(id)) {
            only.insert(entry.clone());
        }
        if !members.is_empty() {
            only.sets.insert(set.clone(), members);
        }
        only
    }

    /// The instances of `set` with their run records, ordered by id: what its file stores.
    pub fn set_instances(&self, set: &SetName) -> Vec<(InstanceSpec, Run)> {
        self.sets
            .get(set)
            .into_iter()
            .flatten()
            .filter_map(|id| self.instances.get(id))
            .map(|e| (e.spec.clone(), e.run.clone()))
            .collect()
    }

    /// The run record of `id` if it still belongs to `epoch`.
    pub fn run_mut(&mut self, id: &InstanceId, epoch: u64) -> Option<&mut Run> {
        let run = self
            .instances
            .get_mut(id)
            .filter(|e| e.epoch == epoch)
            .map(|e| &mut e.run);
        if run.is_some() {
            // Whoever asks may change it.
            self.generation = self.generation.wrapping_add(1);
        }
        run
    }

    /// Sum of the requests of every desired instance, except those of `except`.
    pub fn requested(&self, except: Option<&SetName>) -> Resources {
        let mut total = self.requested;
        for entry in self.members(except) {
            total.remove(entry.spec.resources);
        }
        total.saturated()
    }

    /// The entries of `set`, ordered by id (none without a set).
    pub fn members<'a>(&'a self, set: Option<&SetName>) -> impl Iterator<Item = &'a Entry> + 'a {
        set.and_then(|set| self.sets.get(set))
            .into_iter()
            .flatten()
            .filter_map(|id| self.instances.get(id))
    }

    /// Works out what making `set` hold exactly `desired` changes (with `fence` recorded).
    pub fn plan(&self, set: &SetName, fence: Fence, desired: Vec<InstanceSpec>) -> Plan {
        let current = self.sets.get(set).cloned().unwrap_or_default();
        let wanted: BTreeSet<InstanceId> = desired.iter().map(|s| s.id.clone()).collect();
        let remove: Vec<InstanceId> = current.difference(&wanted).cloned().collect();
        let mut next_epoch = self.next_epoch;
        let mut start = Vec::new();
        let mut replace = Vec::new();
        for spec in desired {
            match self.instances.get(&spec.id) {
                Some(entry) if entry.spec == spec => {}
                Some(_) => {
                    next_epoch += 1;
                    replace.push((spec, next_epoch));
                }
                None => {
                    next_epoch += 1;
                    start.push((spec, next_epoch));
                }
            }
        }
        Plan {
            set: Some(set.clone()),
            fence,
            start,
            replace,
            remove,
        }
    }

    /// Applies `plan`.
    pub fn apply(&mut self, plan: &Plan) {
        self.generation = self.generation.wrapping_add(1);
        self.fence = plan.fence;
        let Some(set) = &plan.set else {
            return;
        };
        for id in &plan.remove {
            self.remove(id);
        }
        let mut members = self.sets.remove(set).unwrap_or_default();
        for id in &plan.remove {
            members.remove(id);
        }
        for (spec, epoch) in plan.start.iter().chain(&plan.replace) {
            members.insert(spec.id.clone());
            self.next_epoch = self.next_epoch.max(*epoch);
            self.insert(Entry {
                set: set.clone(),
                spec: spec.clone(),
                run: Run::default(),
                epoch: *epoch,
            });
        }
        if !members.is_empty() {
            self.sets.insert(set.clone(), members);
        }
    }
}

/// One desired-set change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The set (none for a plan that only records a fence).
    pub set: Option<SetName>,
    /// The fence to record (the same one when it is not newer).
    pub fence: Fence,
    /// New instances with their epochs.
    pub start: Vec<(InstanceSpec, u64)>,
    /// Instances whose spec changed (stopped, then started) with their new epochs.
    pub replace: Vec<(InstanceSpec, u64)>,
    /// Instances no longer in the set.
    pub remove: Vec<InstanceId>,
}

impl Plan {
    /// A plan that records `fence` and changes nothing else.
    pub fn fence_only(fence: Fence) -> Self {
        Self {
            set: None,
            fence,
            start: Vec::new(),
            replace: Vec::new(),
            remove: Vec::new(),
        }
    }

    /// Whether the plan starts, stops or replaces nothing.
    pub fn changes_nothing(&self) -> bool {
        self.start.is_empty() && self.replace.is_empty() && self.remove.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::spec;

    #[test]
    fn plans_start_replace_and_remove() {
        let set = SetName::parse("web").unwrap();
        let fence = Fence::new(1, 1);
        let mut memory = Memory::default();
        let plan = memory.plan(&set, fence, vec![spec("a", &["x"]), spec("b", &["x"])]);
        assert_eq!(plan.start.len(), 2);
        memory.apply(&plan);
        assert!(memory
            .plan(&set, fence, vec![spec("a", &["x"]), spec("b", &["x"])])
            .changes_nothing());
        let plan = memory.plan(&set, fence, vec![spec("a", &["y"])]);
        assert_eq!(plan.replace.len(), 1);
        assert_eq!(plan.remove, vec![InstanceId::parse("b").unwrap()]);
        memory.apply(&plan);
        assert_eq!(memory.instances.len(), 1);
        let plan = memory.plan(&set, fence, vec![]);
        memory.apply(&plan);
        assert!(memory.sets.is_empty() && memory.instances.is_empty());
    }

    /// What summing every instance's requests gives, `except` one set.
    fn summed(memory: &Memory, except: Option<&SetName>) -> Resources {
        memory
            .instances
            .values()
            .filter(|e| Some(&e.set) != except)
            .fold(Resources::default(), |sum, e| sum.plus(e.spec.resources))
    }

    #[test]
    fn the_requests_kept_are_what_summing_every_instance_gives() {
        let web = SetName::parse("web").unwrap();
        let api = SetName::parse("api").unwrap();
        let fence = Fence::new(1, 1);
        let sized = |id: &str, cpu: u64| {
            let mut s = spec(id, &["x"]);
            s.resources.cpu_millis = cpu;
            s
        };
        let mut memory = Memory::default();
        let steps = [
            (&web, vec![sized("w1", 100), sized("w2", 200)]),
            (&api, vec![sized("a1", u64::MAX), sized("a2", 5)]),
            (&web, vec![sized("w1", 300), sized("w3", 1)]),
            (&api, vec![sized("a2", 7)]),
            (&web, vec![]),
        ];
        for (set, desired) in steps {
            memory.apply(&memory.plan(set, fence, desired));
            for except in [None, Some(&web), Some(&api)] {
                assert_eq!(memory.requested(except), summed(&memory, except), "{except:?}");
            }
            let reloaded = Memory::from_doc(memory.doc());
            assert_eq!(reloaded.requested(None), summed(&memory, None));
            for set in [&web, &api] {
                let only = memory.only(set);
                assert_eq!(only.requested(None), summed(&only, None));
            }
        }
    }

    #[test]
    fn the_generation_grows_with_every_change_the_inventory_shows() {
        let web = SetName::parse("web").unwrap();
        let mut memory = Memory::default();
        memory.start_generation(1_000);
        let mut last = memory.generation();
        let mut changed = |memory: &Memory, what: &str| {
            assert!(memory.generation() > last, "{what}");
            last = memory.generation();
        };
        let plan = memory.plan(&web, Fence::new(1, 1), vec![spec("a", &["x"])]);
        memory.apply(&plan);
        changed(&memory, "a set applied");
        let epoch = memory.instances[&InstanceId::parse("a").unwrap()].epoch;
        memory
            .run_mut(&InstanceId::parse("a").unwrap(), epoch)
            .unwrap()
            .state = InstanceState::Running;
        changed(&memory, "a run record changed");
        memory.set_fence(Fence::new(2, 1));
        changed(&memory, "a newer fence");
        // Reads change nothing.
        let before = memory.generation();
        let _ = (memory.requested(None), memory.set_instances(&web), memory.doc());
        assert!(memory.run_mut(&InstanceId::parse("gone").unwrap(), 1).is_none());
        assert_eq!(memory.generation(), before);
    }

    #[test]
    fn the_doc_round_trips() {
        let set = SetName::parse("web").unwrap();
        let mut memory = Memory::default();
        memory.apply(&memory.plan(&set, Fence::new(3, 2), vec![spec("a", &["x"])]));
        let doc = memory.doc();
        assert_eq!(Memory::from_doc(doc.clone()).doc(), doc);
    }

    #[test]
    fn a_plan_applied_to_its_set_alone_gives_the_same_set_as_applied_to_everything() {
        let web = SetName::parse("web").unwrap();
        let api = SetName::parse("api").unwrap();
        let fence = Fence::new(2, 1);
        let mut memory = Memory::default();
        memory.apply(&memory.plan(&web, fence, vec![spec("w1", &["x"]), spec("w2", &["x"])]));
        memory.apply(&memory.plan(&api, fence, vec![spec("a1", &["x"])]));
        let plan = memory.plan(
            &web,
            Fence::new(3, 2),
            vec![spec("w1", &["y"]), spec("w3", &["x"])],
        );
        let mut alone = memory.only(&web);
        assert_eq!(alone.instances.len(), 2, "api is not copied");
        alone.apply(&plan);
        memory.apply(&plan);
        assert_eq!(alone.set_instances(&web), memory.set_instances(&web));
        assert_eq!(alone.next_epoch, memory.next_epoch);
        let ids: Vec<String> = memory
            .set_instances(&web)
            .iter()
            .map(|(spec, _)| spec.id.to_string())
            .collect();
        assert_eq!(ids, ["w1", "w3"]);
        assert_eq!(memory.set_instances(&api).len(), 1);
        assert!(memory.set_instances(&SetName::parse("none").unwrap()).is_empty());
    }
}
