//! The agent's operations, shared by every executor and called by the HTTP handlers: apply a
//! desired set, restart an instance, report inventory and facts (with the agent's identity),
//! set sim faults.
//!
//! Every mutation goes through one async lock, in this order: check the sender against the
//! cluster object the agent is bound to ([`crate::identity`]), validate, check the fence, record
//! a new binding, write the new state to disk, update memory, then stop and start instances. A
//! refused call changes nothing, in memory or on disk.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drover_model::cluster::agent_api::{
    DesiredSet, Fence, InstanceId, InstanceState, InstanceStatus, Inventory, NodeFacts, Resources, SetName,
    SimFaults,
};
use drover_model::cluster::identity::{AgentIdentity, IdentifiedFacts};

use crate::config::AgentConfig;
use crate::error::AgentError;
use crate::executor::{Executor, Launch};
use crate::fence::{self, Accepted};
use crate::identity::{self, Sender};
use crate::memory::{Plan, Run};
use crate::shared::Shared;
use crate::validate;

/// One agent: its settings, state and executor.
pub struct Agent {
    name: String,
    labels: BTreeMap<String, String>,
    capacity: Resources,
    shared: Arc<Shared>,
    executor: Arc<dyn Executor>,
    mutations: tokio::sync::Mutex<()>,
    faults: Mutex<SimFaults>,
    /// Its id and the cluster object it is bound to; changed under `mutations`, on disk first.
    identity: Mutex<AgentIdentity>,
    /// The instances' CPU time when the facts last measured it, and the rate derived then.
    last_usage: Mutex<Option<UsageSample>>,
}

/// One measurement of the instances' CPU time, for the rate the facts report.
#[derive(Debug, Clone, Copy)]
struct UsageSample {
    at: Instant,
    cpu_time_ms: u64,
    cpu_millis: Option<u64>,
}

/// Measurements closer than this reuse the rate of the one before (a rate over a few
/// milliseconds says nothing).
const MIN_RATE_WINDOW: Duration = Duration::from_millis(500);

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.name)
            .field("executor", &self.executor.kind())
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// An agent over `shared` with `executor` and `identity` (as [`crate::store::load_identity`]
    /// read it); capacity is the machine's unless configured.
    pub fn new(
        config: &AgentConfig,
        shared: Arc<Shared>,
        executor: Arc<dyn Executor>,
        identity: AgentIdentity,
    ) -> Self {
        let machine = executor.machine();
        let capacity = machine.offered(config.capacity_cpu_millis, config.capacity_memory_mib);
        let asked = (config.capacity_cpu_millis, config.capacity_memory_mib);
        if asked.0.is_some_and(|c| c > capacity.cpu_millis)
            || asked.1.is_some_and(|m| m > capacity.memory_mib)
        {
            tracing::warn!(
                cpu_millis = capacity.cpu_millis,
                memory_mib = capacity.memory_mib,
                "the configured capacity is more than the machine less the agent's reserve; offering that instead"
            );
        }
        Self {
            name: config.name.clone(),
            labels: config.labels.clone(),
            capacity,
            shared,
            executor,
            mutations: tokio::sync::Mutex::new(()),
            faults: Mutex::new(SimFaults::default()),
            identity: Mutex::new(identity),
            last_usage: Mutex::new(None),
        }
    }

    /// Hands every loaded instance to the executor (at start-up: adopts or starts them).
    pub fn launch_loaded(&self) {
        let launches: Vec<Launch> = self
            .shared
            .lock()
            .instances
            .values()
            .map(|entry| Launch {
                spec: entry.spec.clone(),
                epoch: entry.epoch,
                run: entry.run.clone(),
            })
            .collect();
        self.executor.start(launches);
    }

    fn faults(&self) -> std::sync::MutexGuard<'_, SimFaults> {
        self.faults.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Its id and the cluster object it is bound to.
    pub fn identity(&self) -> AgentIdentity {
        self.identity.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// `GET /v1/facts`: the facts, the agent's id and the cluster object it is bound to.
    pub fn identified_facts(&self) -> IdentifiedFacts {
        let identity = self.identity();
        IdentifiedFacts {
            facts: self.facts(),
            agent_id: Some(identity.agent_id),
            cluster_uid: identity.cluster_uid,
        }
    }

    /// Whether `sender` may change what this agent runs; the cluster object to bind it to
    /// first, if any. Called under the mutations lock.
    fn check_sender(&self, sender: &Sender) -> Result<Option<String>, AgentError> {
        identity::check(self.identity().cluster_uid.as_deref(), sender)
    }

    /// Binds the agent to cluster object `uid`, on disk before memory. Called under the
    /// mutations lock, once every other check of the change has passed.
    async fn bind(&self, uid: String) -> Result<(), AgentError> {
        let mut next = self.identity();
        let previous = next.cluster_uid.replace(uid.clone());
        self.shared.save_identity(next.clone()).await?;
        *self.identity.lock().unwrap_or_else(|p| p.into_inner()) = next;
        match previous {
            None => tracing::info!(cluster_uid = %uid, "bound to a cluster object"),
            Some(from) => tracing::info!(cluster_uid = %uid, %from, "taken over by a cluster object"),
        }
        Ok(())
    }

    /// Whether `id` is a desired instance.
    pub fn has_instance(&self, id: &InstanceId) -> bool {
        self.shared.lock().instances.contains_key(id)
    }

    /// Whether the `unreachable` fault is on.
    pub fn unreachable(&self) -> bool {
        self.faults().unreachable
    }

    /// Every instance (of `set`, if given), ordered by id, with the highest fence.
    pub fn inventory(&self, set: Option<&SetName>) -> Inventory {
        let memory = self.shared.lock();
        // A set's members are indexed: its inventory does not walk every instance.
        let instances = match set {
            Some(_) => memory.members(set).map(|e| e.status()).collect(),
            None => memory.instances.values().map(|e| e.status()).collect(),
        };
        Inventory {
            agent: self.name.clone(),
            fence: memory.fence,
            instances,
            generation: Some(memory.generation()),
        }
    }

    /// `inventory` with what each instance uses now, measured outside the state's lock (reading
    /// cgroups and `/proc` never holds up a change). Only the reads that show usage pay for it:
    /// the answers to changes and the control plane's probes do not.
    pub fn measured(&self, mut inventory: Inventory) -> Inventory {
        for instance in &mut inventory.instances {
            instance.usage = self.executor.usage(&instance.id, instance.pid);
        }
        inventory
    }

    /// What the instances use now, summed: the CPU rate since the last measurement (in
    /// thousandths of a CPU) and resident memory (MiB); `None` where not measured or before a
    /// second measurement.
    fn used(&self) -> Option<Resources> {
        let total = self.executor.usage_total()?;
        let now = Instant::now();
        let mut last = self.last_usage.lock().unwrap_or_else(|p| p.into_inner());
        let cpu_millis = match *last {
            Some(before) if now.duration_since(before.at) < MIN_RATE_WINDOW => {
                return before.cpu_millis.map(|cpu_millis| Resources {
                    cpu_millis,
                    memory_mib: total.memory_bytes >> 20,
                })
            }
            Some(before) => {
                let window_ms = u64::try_from(now.duration_since(before.at).as_millis())
                    .unwrap_or(u64::MAX)
                    .max(1);
                Some(
                    total
                        .cpu_time_ms
                        .saturating_sub(before.cpu_time_ms)
                        .saturating_mul(1000)
                        / window_ms,
                )
            }
            None => None,
        };
        *last = Some(UsageSample {
            at: now,
            cpu_time_ms: total.cpu_time_ms,
            cpu_millis,
        });
        cpu_millis.map(|cpu_millis| Resources {
            cpu_millis,
            memory_mib: total.memory_bytes >> 20,
        })
    }

    /// The machine, its capacity and what is free of it.
    pub fn facts(&self) -> NodeFacts {
        let machine = self.executor.machine();
        let (requested, generation) = {
            let memory = self.shared.lock();
            (memory.requested(None), memory.generation())
        };
        let pressure = self.faults().pressure.clone().or(machine.pressure);
        NodeFacts {
            agent: self.name.clone(),
            executor: self.executor.kind().to_string(),
            nodes: machine.nodes,
            cpus: machine.cpus,
            memory_mib: machine.memory_mib,
            labels: self.labels.clone(),
            capacity: self.capacity,
            free: self.capacity.minus(requested),
            pressure,
            used: self.used(),
            confinement: Some(self.executor.confinement()),
            version: env!("CARGO_PKG_VERSION").to_string(),
            generation: Some(generation),
        }
    }

    /// The Prometheus text exposition.
    pub fn metrics_text(&self) -> Result<String, AgentError> {
        let mut by_state: BTreeMap<InstanceState, usize> = BTreeMap::new();
        for entry in self.shared.lock().instances.values() {
            *by_state.entry(entry.run.state).or_default() += 1;
        }
        let mut listed = self.inventory(None);
        listed.instances.truncate(crate::metrics::MAX_INSTANCE_SERIES);
        let instances = self.measured(listed).instances;
        self.shared.metrics.render(&by_state, &instances)
    }

    fn check_fence(&self, highest: Fence, offered: Fence) -> Result<Accepted, AgentError> {
        fence::check(highest, offered).inspect_err(|_| self.shared.metrics.fenced.inc())
    }

    /// `PUT /v1/sets/{set}` from a sender that names no cluster object.
    pub async fn put_set(&self, set: SetName, desired: DesiredSet) -> Result<Inventory, AgentError> {
        self.put_set_from(&Sender::default(), set, desired).await
    }

    /// `PUT /v1/sets/{set}`: makes `set` hold exactly `desired.instances`; returns the set's
    /// inventory.
    pub async fn put_set_from(
        &self,
        sender: &Sender,
        set: SetName,
        desired: DesiredSet,
    ) -> Result<Inventory, AgentError> {
        let _serial = self.mutations.lock().await;
        let bind = self.check_sender(sender)?;
        let began = Instant::now();
        let slow = self.faults().slow_apply_ms;
        if slow > 0 {
            tokio::time::sleep(Duration::from_millis(slow)).await;
        }
        let (plan, accepted) = {
            let memory = self.shared.lock();
            validate::check(
                &memory,
                &set,
                &desired.instances,
                self.capacity,
                self.executor.kind(),
            )?;
            let accepted = self.check_fence(memory.fence, desired.fence)?;
            let fence = match accepted {
                Accepted::Same => memory.fence,
                Accepted::Newer(fence) => fence,
            };
            (memory.plan(&set, fence, desired.instances), accepted)
        };
        if plan.changes_nothing() && accepted == Accepted::Same && bind.is_none() {
            return Ok(self.inventory(Some(&set)));
        }
        if let Some(uid) = bind {
            self.bind(uid).await?;
        }
        self.shared.commit(&plan).await?;
        if let Accepted::Newer(fence) = accepted {
            tracing::info!(%fence, "accepted a newer fence");
        }
        if !plan.changes_nothing() {
            tracing::info!(
                set = %set,
                start = plan.start.len(),
                replace = plan.replace.len(),
                remove = plan.remove.len(),
                "applying a desired set"
            );
        }
        if !plan.remove.is_empty() {
            self.executor.stop(plan.remove.clone(), true).await;
        }
        if !plan.replace.is_empty() {
            let replaced = plan.replace.iter().map(|(spec, _)| spec.id.clone()).collect();
            self.executor.stop(replaced, false).await;
        }
        let launches: Vec<Launch> = plan
            .start
            .iter()
            .chain(&plan.replace)
            .map(|(spec, epoch)| Launch {
                spec: spec.clone(),
                epoch: *epoch,
                run: Run::default(),
            })
            .collect();
        if !launches.is_empty() {
            self.executor.start(launches);
        }
        self.shared
            .metrics
            .apply_seconds
            .observe(began.elapsed().as_secs_f64());
        Ok(self.inventory(Some(&set)))
    }

    /// `PUT /v1/fence`: records `offered` as the highest fence when it is newer, changing
    /// nothing else, so that a new leader can shut out the deposed one's late calls before it
    /// reads the inventory it will act on. Returns the whole inventory.
    pub async fn raise_fence(&self, offered: Fence) -> Result<Inventory, AgentError> {
        self.raise_fence_from(&Sender::default(), offered).await
    }

    /// [`Agent::raise_fence`] from `sender`, which this binds the agent to when it is the first
    /// cluster object to drive it or takes it over.
    pub async fn raise_fence_from(&self, sender: &Sender, offered: Fence) -> Result<Inventory, AgentError> {
        let _serial = self.mutations.lock().await;
        let bind = self.check_sender(sender)?;
        let accepted = {
            let memory = self.shared.lock();
            self.check_fence(memory.fence, offered)?
        };
        if let Some(uid) = bind {
            self.bind(uid).await?;
        }
        if let Accepted::Newer(fence) = accepted {
            self.shared.commit(&Plan::fence_only(fence)).await?;
            tracing::info!(%fence, "accepted a newer fence");
        }
        Ok(self.inventory(None))
    }

    /// `POST /v1/instances/{id}/restart` from a sender that names no cluster object.
    pub async fn restart(&self, id: InstanceId, offered: Fence) -> Result<InstanceStatus, AgentError> {
        self.restart_from(&Sender::default(), id, offered).await
    }

    /// `POST /v1/instances/{id}/restart`: stops `id` and starts it again.
    pub async fn restart_from(
        &self,
        sender: &Sender,
        id: InstanceId,
        offered: Fence,
    ) -> Result<InstanceStatus, AgentError> {
        let _serial = self.mutations.lock().await;
        let bind = self.check_sender(sender)?;
        let accepted = {
            let memory = self.shared.lock();
            if !memory.instances.contains_key(&id) {
                return Err(AgentError::NotFound(format!(
                    "id: no instance {id} on this agent"
                )));
            }
            self.check_fence(memory.fence, offered)?
        };
        if let Some(uid) = bind {
            self.bind(uid).await?;
        }
        if let Accepted::Newer(fence) = accepted {
            self.shared.commit(&Plan::fence_only(fence)).await?;
            tracing::info!(%fence, "accepted a newer fence");
        }
        tracing::info!(instance = %id, "restarting on request");
        self.executor.restart(id.clone()).await;
        let memory = self.shared.lock();
        memory
            .instances
            .get(&id)
            .map(|e| e.status())
            .ok_or_else(|| AgentError::NotFound(format!("id: no instance {id} on this agent")))
    }

    /// `PUT /v1/sim/faults`: sets the fault switches and crashes the named instances once.
    pub fn set_faults(&self, faults: SimFaults) -> Result<(), AgentError> {
        if self.executor.kind() != "sim" {
            return Err(AgentError::NotFound(format!(
                "faults can only be injected into a sim agent; this agent's executor is {}",
                self.executor.kind()
            )));
        }
        {
            let memory = self.shared.lock();
            if let Some(unknown) = faults.crash.iter().find(|id| !memory.instances.contains_key(*id)) {
                return Err(AgentError::NotFound(format!(
                    "crash: no instance {unknown} on this agent"
                )));
            }
        }
        if !faults.crash.is_empty() {
            self.executor.crash(faults.crash.clone())?;
        }
        *self.faults() = SimFaults {
            crash: Vec::new(),
            ..faults
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ExecutorKind;
    use crate::executor::Machine;
    use crate::layout::Layout;
    use crate::memory::Memory;
    use crate::metrics::Metrics;
    use crate::secret::JoinToken;
    use crate::testutil::spec;
    use drover_model::cluster::agent_api::InstanceSpec;
    use futures::future::BoxFuture;

    /// Records what it is asked to do.
    #[derive(Default)]
    struct Fake {
        started: Mutex<Vec<InstanceId>>,
        stopped: Mutex<Vec<InstanceId>>,
    }

    impl Executor for Fake {
        fn kind(&self) -> &'static str {
            "fake"
        }
        fn machine(&self) -> Machine {
            Machine {
                nodes: 1,
                cpus: 1,
                memory_mib: 1024,
                capacity: Resources {
                    cpu_millis: 1000,
                    memory_mib: 1024,
                },
                capacity_is_ceiling: false,
                pressure: None,
            }
        }
        fn confinement(&self) -> drover_model::cluster::agent_api::Confinement {
            drover_model::cluster::agent_api::Confinement::Simulated
        }
        fn start(&self, launches: Vec<Launch>) {
            self.started
                .lock()
                .unwrap()
                .extend(launches.into_iter().map(|l| l.spec.id));
        }
        fn stop(&self, ids: Vec<InstanceId>, _forget: bool) -> futures::future::BoxFuture<'static, ()> {
            self.stopped.lock().unwrap().extend(ids);
            Box::pin(async {})
        }
        fn restart(&self, _id: InstanceId) -> BoxFuture<'static, ()> {
            Box::pin(async {})
        }
    }

    fn agent(dir: &std::path::Path) -> (Agent, Arc<Fake>, Layout) {
        let layout = Layout::new(dir);
        crate::store::load(&layout).unwrap();
        let shared = Arc::new(Shared::new(
            Memory::default(),
            layout.clone(),
            Metrics::new().unwrap(),
        ));
        let fake = Arc::new(Fake::default());
        let token = JoinToken::new("0123456789abcdef", "test").unwrap();
        let config = AgentConfig::new(dir, ExecutorKind::Sim, token);
        let identity = crate::store::load_identity(&layout).unwrap();
        (Agent::new(&config, shared, fake.clone(), identity), fake, layout)
    }

    fn desired(term: u64, leader: u64, instances: Vec<InstanceSpec>) -> DesiredSet {
        DesiredSet {
            fence: Fence::new(term, leader),
            instances,
        }
    }

    fn web() -> SetName {
        SetName::parse("web").unwrap()
    }

    #[tokio::test]
    async fn the_same_set_twice_starts_nothing_new() {
        let dir = tempfile::tempdir().unwrap();
        let (agent, fake, _) = agent(dir.path());
        let set = vec![spec("a", &["x"]), spec("b", &["x"])];
        let first = agent.put_set(web(), desired(1, 1, set.clone())).await.unwrap();
        assert_eq!(first.instances.len(), 2);
        assert_eq!(fake.started.lock().unwrap().len(), 2);
        let again = agent.put_set(web(), desired(1, 1, set.clone())).await.unwrap();
        assert_eq!(again, first);
        assert_eq!(fake.started.lock().unwrap().len(), 2, "nothing new started");
        assert!(fake.stopped.lock().unwrap().is_empty());

        // A changed spec is stopped, then started; a dropped instance only stopped.
        let mut changed = spec("a", &["y"]);
        changed.resources.cpu_millis = 200;
        agent.put_set(web(), desired(1, 1, vec![changed])).await.unwrap();
        assert_eq!(fake.started.lock().unwrap().len(), 3);
        let mut stopped = fake.stopped.lock().unwrap().clone();
        stopped.sort();
        assert_eq!(
            stopped,
            vec![InstanceId::parse("a").unwrap(), InstanceId::parse("b").unwrap()]
        );
        assert_eq!(agent.facts().free.cpu_millis, 800);
    }

    #[tokio::test]
    async fn raising_the_fence_changes_only_the_fence_and_shuts_out_older_leaders() {
        let dir = tempfile::tempdir().unwrap();
        let (agent, fake, layout) = agent(dir.path());
        agent
            .put_set(web(), desired(5, 1, vec![spec("a", &["x"])]))
            .await
            .unwrap();
        let raised = agent.raise_fence(Fence::new(6, 2)).await.unwrap();
        assert_eq!(raised.fence, Fence::new(6, 2));
        assert_eq!(raised.instances.len(), 1, "what runs is untouched");
        assert_eq!(fake.started.lock().unwrap().len(), 1);
        assert!(fake.stopped.lock().unwrap().is_empty());
        // Recorded on disk: a restarted agent keeps refusing the deposed leader.
        assert_eq!(crate::store::load(&layout).unwrap().fence, Fence::new(6, 2));
        let e = agent.put_set(web(), desired(5, 1, vec![])).await.unwrap_err();
        assert!(e.to_string().starts_with("fenced: "), "{e}");
        assert_eq!(agent.inventory(None).instances.len(), 1);
        // The same fence again is no change; an older one is refused.
        agent.raise_fence(Fence::new(6, 2)).await.unwrap();
        assert_eq!(
            agent.raise_fence(Fence::new(5, 1)).await.unwrap_err().status(),
            409
        );
    }

    #[tokio::test]
    async fn a_fenced_call_changes_nothing_in_memory_or_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let (agent, fake, layout) = agent(dir.path());
        agent
            .put_set(web(), desired(5, 1, vec![spec("a", &["x"])]))
            .await
            .unwrap();
        let disk = (
            std::fs::read(layout.fence_file()).unwrap(),
            std::fs::read(layout.set_file(&web())).unwrap(),
        );
        let before = agent.inventory(None);
        for (term, leader) in [(4, 1), (5, 2)] {
            let e = agent
                .put_set(web(), desired(term, leader, vec![spec("b", &["x"])]))
                .await
                .unwrap_err();
            assert_eq!(e.status(), 409);
            assert!(e.to_string().starts_with("fenced: "), "{e}");
            let e = agent
                .restart(InstanceId::parse("a").unwrap(), Fence::new(term, leader))
                .await
                .unwrap_err();
            assert!(e.to_string().starts_with("fenced: "), "{e}");
        }
        assert_eq!(agent.inventory(None), before);
        let after = (
            std::fs::read(layout.fence_file()).unwrap(),
            std::fs::read(layout.set_file(&web())).unwrap(),
        );
        assert_eq!(after, disk);
        assert_eq!(fake.started.lock().unwrap().len(), 1);
        assert_eq!(agent.shared.metrics.fenced.get(), 4);

        // A newer fence is recorded on disk even when the set is unchanged.
        let inventory = agent
            .put_set(web(), desired(6, 2, vec![spec("a", &["x"])]))
            .await
            .unwrap();
        assert_eq!(inventory.fence, Fence::new(6, 2));
        let doc = crate::store::load(&layout).unwrap();
        assert_eq!(doc.fence, Fence::new(6, 2));
        assert_eq!(doc.sets[&web()].len(), 1);
    }

    #[tokio::test]
    async fn an_agent_bound_to_one_cluster_object_refuses_another_until_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let (agent, fake, layout) = agent(dir.path());
        let (a, b) = (Sender::cluster("uid-a"), Sender::cluster("uid-b"));
        let id = agent.identity().agent_id;
        assert_eq!(agent.identified_facts().agent_id, Some(id.clone()));
        assert_eq!(agent.identified_facts().cluster_uid, None);

        // The first cluster object to change anything binds the agent, on disk.
        agent
            .put_set_from(&a, web(), desired(1, 1, vec![spec("a", &["x"])]))
            .await
            .unwrap();
        assert_eq!(agent.identified_facts().cluster_uid.as_deref(), Some("uid-a"));
        let on_disk = crate::store::load_identity(&layout).unwrap();
        assert_eq!(
            (on_disk.agent_id, on_disk.cluster_uid.as_deref()),
            (id, Some("uid-a"))
        );

        // Another cluster object changes nothing, whatever its fence.
        let before = agent.inventory(None);
        let refusals = [
            agent
                .put_set_from(&b, web(), desired(1, 1, vec![]))
                .await
                .map(|_| ()),
            agent.raise_fence_from(&b, Fence::new(2, 1)).await.map(|_| ()),
            agent
                .restart_from(&b, InstanceId::parse("a").unwrap(), Fence::new(1, 1))
                .await
                .map(|_| ()),
        ];
        for refused in refusals {
            let e = refused.unwrap_err();
            assert_eq!(e.status(), 409);
            assert!(e.to_string().starts_with("bound: "), "{e}");
        }
        assert_eq!(agent.inventory(None), before);
        assert_eq!(fake.started.lock().unwrap().len(), 1);
        assert!(fake.stopped.lock().unwrap().is_empty());

        // A takeover must name the cluster object the agent is bound to.
        let wrong = Sender {
            cluster: Some("uid-b".into()),
            take_over: Some("uid-x".into()),
        };
        assert_eq!(
            agent
                .raise_fence_from(&wrong, Fence::new(1, 1))
                .await
                .unwrap_err()
                .status(),
            409
        );
        let take_over = Sender {
            take_over: Some("uid-a".into()),
            ..wrong
        };
        agent
            .raise_fence_from(&take_over, Fence::new(1, 1))
            .await
            .unwrap();
        assert_eq!(agent.identity().cluster_uid.as_deref(), Some("uid-b"));
        assert_eq!(
            crate::store::load_identity(&layout)
                .unwrap()
                .cluster_uid
                .as_deref(),
            Some("uid-b")
        );
        let e = agent
            .put_set_from(&a, web(), desired(1, 1, vec![]))
            .await
            .unwrap_err();
        assert!(e.to_string().starts_with("bound: "), "{e}");
        agent
            .put_set_from(&b, web(), desired(1, 1, vec![]))
            .await
            .unwrap();
        assert!(agent.inventory(None).instances.is_empty());

        // A control plane that names no cluster object is not told apart.
        agent
            .put_set(web(), desired(1, 1, vec![spec("a", &["x"])]))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_refused_set_applies_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (agent, fake, layout) = agent(dir.path());
        let too_big: Vec<InstanceSpec> = (0..11).map(|i| spec(&format!("i{i}"), &["x"])).collect();
        let e = agent.put_set(web(), desired(1, 1, too_big)).await.unwrap_err();
        assert_eq!(e.status(), 422);
        assert!(agent.inventory(None).instances.is_empty());
        assert!(fake.started.lock().unwrap().is_empty());
        assert!(!layout.set_file(&web()).try_exists().unwrap());
        assert!(!layout.fence_file().try_exists().unwrap());
    }
}
