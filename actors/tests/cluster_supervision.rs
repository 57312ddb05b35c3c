//! The clusters supervisor on a real single-node Raft: a cluster actor that crashes (its cluster
//! answers in a way that makes it panic) is started again after a backoff and counted; once
//! the cluster behaves, the actor moves it to `ONLINE` through Raft; and a cluster actor reads
//! an agent's inventory again only when the agent's generation changed. The driver here stands
//! in for the world outside (an agent), the only place a fake belongs.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure, Result};
use async_trait::async_trait;
use common::single_node;
use drover_actors::clusters::{ClusterActorsConfig, ClustersChild, Driver, DriverError, DriverFactory};
use drover_actors::{ChildSpec, LeaderGate, RestartPolicyConfig};
use drover_model::cluster::agent_api::{
    Fence, InstanceId, InstanceSpec, Inventory, LogChunk, LogQuery, NodeFacts, Resources, SetName,
};
use drover_model::cluster::{ClusterCommand, ClusterOp, ClusterRef, ClusterRegistration, ClusterState};
use drover_model::platform::{Identity, PlatformCommand, PlatformOp, UserProfile};
use drover_model::{Command, CommandResult, Proposal};
use drover_raft::RaftHandle;
use tokio_util::sync::CancellationToken;

/// A cluster whose first `crashes` probes make its actor panic; its facts and inventories carry
/// `generation` when it is set, and the inventories read are counted.
#[derive(Default)]
struct Flaky {
    probes: Arc<AtomicUsize>,
    crashes: usize,
    generation: Option<Arc<AtomicUsize>>,
    inventories: Arc<AtomicUsize>,
}

impl Flaky {
    fn generation(&self) -> Option<u64> {
        self.generation.as_ref().map(|g| g.load(Ordering::SeqCst) as u64)
    }
}

#[async_trait]
impl Driver for Flaky {
    async fn facts(&self) -> Result<NodeFacts, DriverError> {
        let probe = self.probes.fetch_add(1, Ordering::SeqCst);
        if probe < self.crashes {
            panic!("planned crash {probe}");
        }
        Ok(NodeFacts {
            agent: "flaky".into(),
            executor: "sim".into(),
            nodes: 1,
            cpus: 1,
            memory_mib: 1024,
            labels: BTreeMap::new(),
            capacity: Resources {
                cpu_millis: 1000,
                memory_mib: 1024,
            },
            free: Resources {
                cpu_millis: 1000,
                memory_mib: 1024,
            },
            pressure: None,
            used: None,
            confinement: None,
            version: "test".into(),
            generation: self.generation(),
        })
    }

    async fn inventory(&self) -> Result<Inventory, DriverError> {
        self.inventories.fetch_add(1, Ordering::SeqCst);
        Ok(Inventory {
            agent: "flaky".into(),
            fence: Fence::default(),
            instances: Vec::new(),
            generation: self.generation(),
        })
    }

    async fn raise_fence(&self, _: Fence) -> Result<Inventory, DriverError> {
        self.inventory().await
    }

    async fn apply_set(&self, _: Fence, _: &SetName, _: Vec<InstanceSpec>) -> Result<Inventory, DriverError> {
        self.inventory().await
    }

    async fn restart(&self, _: Fence, _: &InstanceId) -> Result<(), DriverError> {
        Ok(())
    }

    async fn logs(&self, _: &InstanceId, _: &LogQuery) -> Result<LogChunk, DriverError> {
        Ok(LogChunk::default())
    }
}

async fn commit(raft: &RaftHandle, command: Command) -> Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        match raft.write(Proposal::new(command.clone())).await {
            Ok(written) => match written.result {
                CommandResult::Refused(error) => bail!("refused: {error}"),
                _ => return Ok(()),
            },
            Err(error) if tokio::time::Instant::now() < deadline => {
                tracing::debug!(%error, "no leader yet");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(error) => bail!("not committed: {error}"),
        }
    }
}

fn counter(registry: &prometheus::Registry, name: &str) -> f64 {
    registry
        .gather()
        .iter()
        .find(|family| family.name() == name)
        .and_then(|family| family.get_metric().first().map(|m| m.get_counter().get_value()))
        .unwrap_or(0.0)
}

/// A single-node Raft with an operator and one registered cluster, and the clusters
/// supervisor running under the leader gate with `drivers` (probes every 50 ms).
struct World {
    _dir: tempfile::TempDir,
    raft: RaftHandle,
    cluster: ClusterRef,
    registry: prometheus::Registry,
    shutdown: CancellationToken,
    gate: LeaderGate,
}

impl World {
    async fn start(drivers: DriverFactory) -> Result<Self> {
        let (dir, raft) = single_node().await?;
        let operator = Identity {
            issuer: "https://idp.test".into(),
            subject: "root".into(),
        };
        let register_user = PlatformOp::RegisterUser {
            uid: "u-root".into(),
            profile: UserProfile {
                name: "root".into(),
                ..UserProfile::default()
            },
            operator: true,
        };
        commit(
            &raft,
            Command::Platform(PlatformCommand {
                caller: operator.clone(),
                op: register_user,
            }),
        )
        .await?;
        let cluster = ClusterRef {
            tenant: "operator".into(),
            name: "flaky".into(),
        };
        let register = ClusterOp::Register {
            cluster: cluster.clone(),
            uid: "c-1".into(),
            registration: ClusterRegistration {
                ca: None,
                metrics: Vec::new(),
                endpoint: "http://127.0.0.1:9".into(),
                join_token: "a-join-token-of-some-length".into(),
                labels: BTreeMap::new(),
            },
        };
        commit(
            &raft,
            Command::Cluster(ClusterCommand::User {
                caller: operator,
                change: register,
            }),
        )
        .await?;
        let registry = prometheus::Registry::new();
        let config = ClusterActorsConfig {
            probe_interval: Duration::from_millis(50),
            sync_interval: Duration::from_millis(50),
            ..ClusterActorsConfig::default()
        };
        let child: Arc<dyn ChildSpec> = Arc::new(ClustersChild::with_drivers(
            config,
            &registry,
            drivers,
            Default::default(),
        )?);
        let shutdown = CancellationToken::new();
        let gate = LeaderGate::start(
            raft.clone(),
            vec![child],
            RestartPolicyConfig::default(),
            &registry,
            shutdown.clone(),
        )?;
        Ok(Self {
            _dir: dir,
            raft,
            cluster,
            registry,
            shutdown,
            gate,
        })
    }

    /// Waits until the cluster is `ONLINE`.
    async fn online(&self) -> Result<()> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let state = self
                .raft
                .local_read(|s| s.platform().cluster(&self.cluster).map(|c| c.status.state));
            if state == Some(ClusterState::Online) {
                return Ok(());
            }
            ensure!(
                tokio::time::Instant::now() < deadline,
                "the cluster stayed {state:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.gate.join().await;
        self.raft.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashing_cluster_actor_is_restarted_and_then_brings_its_cluster_online() -> Result<()> {
    let probes = Arc::new(AtomicUsize::new(0));
    let seen = probes.clone();
    let drivers: DriverFactory = Arc::new(move |_: &drover_model::cluster::AgentAccess| {
        Ok(Arc::new(Flaky {
            probes: seen.clone(),
            crashes: 3,
            ..Flaky::default()
        }) as Arc<dyn Driver>)
    });
    let world = World::start(drivers).await?;
    world.online().await?;
    ensure!(
        probes.load(Ordering::SeqCst) > 3,
        "three crashes, then probes that answered"
    );
    let restarts = counter(&world.registry, "drover_cluster_actor_restarts_total");
    ensure!(
        restarts >= 3.0,
        "each crash was followed by a restart: {restarts}"
    );
    // The clusters supervisor absorbed the crashes: the root never had to restart it.
    let root_failures = counter(&world.registry, "drover_actors_root_failures_total");
    ensure!(root_failures == 0.0, "the root failed {root_failures} times");
    world.stop().await;
    Ok(())
}

/// Waits until `count` exceeds `floor`.
async fn grows(count: &AtomicUsize, floor: usize, what: &str) -> Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while count.load(Ordering::SeqCst) <= floor {
        ensure!(
            tokio::time::Instant::now() < deadline,
            "{what} did not grow past {floor}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inventory_is_read_again_only_when_the_agents_generation_changed() -> Result<()> {
    let generation = Arc::new(AtomicUsize::new(7));
    let inventories = Arc::new(AtomicUsize::new(0));
    let (g, i) = (generation.clone(), inventories.clone());
    let drivers: DriverFactory = Arc::new(move |_: &drover_model::cluster::AgentAccess| {
        Ok(Arc::new(Flaky {
            generation: Some(g.clone()),
            inventories: i.clone(),
            ..Flaky::default()
        }) as Arc<dyn Driver>)
    });
    let world = World::start(drivers).await?;
    world.online().await?;
    // The term's first probe reads the inventory with the fence; then, at the same generation,
    // a dozen more probes (50 ms apart) read none.
    let read = inventories.load(Ordering::SeqCst);
    ensure!(read >= 1, "the first probe read the inventory");
    let probes_made = || {
        world
            .registry
            .gather()
            .iter()
            .find(|family| family.name() == "drover_cluster_probe_seconds")
            .and_then(|family| {
                family
                    .get_metric()
                    .first()
                    .map(|m| m.get_histogram().get_sample_count())
            })
            .unwrap_or(0)
    };
    let floor = probes_made();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while probes_made() < floor + 12 {
        ensure!(
            tokio::time::Instant::now() < deadline,
            "the actor stopped probing"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    ensure!(
        inventories.load(Ordering::SeqCst) == read,
        "{} inventories read at an unchanged generation",
        inventories.load(Ordering::SeqCst) - read
    );
    // A change on the agent: the next probe reads it.
    generation.fetch_add(1, Ordering::SeqCst);
    grows(&inventories, read, "the inventories read").await?;
    world.stop().await;
    Ok(())
}
