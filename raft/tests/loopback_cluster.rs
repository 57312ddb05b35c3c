//! Three real `RaftHandle`s in one process over the in-process switchboard: the transport seam
//! carries elections, replication, forwarding and read batching, a cut-off leader is replaced,
//! a cut-off leader's read lease runs out before another leader commits, and a member restarted
//! from its disk catches up.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use drover_model::{
    Command, CommandResult, CoordinationLeaseSpec, LeaseSpec, ObjectKey, ObjectKind, Proposal,
};
use drover_raft::network::loopback::Switchboard;
use drover_raft::{Consistency, NodeId, PeerNode, RaftConfig, RaftHandle, RocksDisk, Seams, StartOptions};
use tempfile::TempDir;
use tokio::time::Instant;

const IDS: [NodeId; 3] = [1, 2, 3];

fn addr(id: NodeId) -> String {
    format!("member-{id}")
}

struct Cluster {
    board: Switchboard,
    dirs: BTreeMap<NodeId, TempDir>,
    nodes: BTreeMap<NodeId, RaftHandle>,
    registries: BTreeMap<NodeId, prometheus::Registry>,
}

impl Cluster {
    async fn start() -> Result<Self> {
        let mut cluster = Cluster {
            board: Switchboard::new(),
            dirs: BTreeMap::new(),
            nodes: BTreeMap::new(),
            registries: BTreeMap::new(),
        };
        for id in IDS {
            cluster.dirs.insert(id, tempfile::tempdir()?);
            cluster.start_member(id).await?;
        }
        Ok(cluster)
    }

    async fn start_member(&mut self, id: NodeId) -> Result<()> {
        let dir = self.dirs.get(&id).context("no directory for the member")?;
        let options = StartOptions {
            id,
            node: PeerNode {
                peer_addr: addr(id),
                api_addr: String::new(),
            },
            data_dir: dir.path().join("raft"),
            config: RaftConfig::default(),
            cluster_secret: String::new(),
            initial_members: IDS.iter().map(|id| (*id, addr(*id))).collect(),
            peer_source_ip: None,
            peer_tls: None,
        };
        std::fs::create_dir_all(&options.data_dir)?;
        let seams = Seams::new(
            self.board.transport(&addr(id)),
            RocksDisk::open(&options.data_dir)?,
        );
        let registry = prometheus::Registry::new();
        let handle = RaftHandle::start_with(options, seams, &registry).await?;
        self.registries.insert(id, registry);
        self.board.attach(&addr(id), &handle);
        self.nodes.insert(id, handle);
        Ok(())
    }

    /// Stops a member as a crash would: unreachable at once, then its Raft shut down.
    async fn stop_member(&mut self, id: NodeId) -> Result<()> {
        self.board.detach(&addr(id));
        let handle = self.nodes.remove(&id).context("member not running")?;
        handle.shutdown().await;
        Ok(())
    }

    /// Read indexes `id` answered as leader from its lease, without a quorum round.
    fn lease_reads(&self, id: NodeId) -> u64 {
        self.registries.get(&id).map_or(0, |registry| {
            registry
                .gather()
                .iter()
                .filter(|family| family.name() == "drover_raft_read_indexes_total")
                .flat_map(|family| family.get_metric())
                .filter(|metric| {
                    metric
                        .get_label()
                        .iter()
                        .any(|label| label.name() == "how" && label.value() == "lease")
                })
                .map(|metric| metric.get_counter().get_value() as u64)
                .sum()
        })
    }

    fn node(&self, id: NodeId) -> Result<&RaftHandle> {
        self.nodes.get(&id).context("member not running")
    }

    /// The leader every one of `members` names, once they agree on one of themselves.
    async fn agreed_leader(&self, members: &[NodeId], newer_than_term: u64) -> Result<(NodeId, u64)> {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let views: Vec<_> = members
                .iter()
                .map(|id| self.node(*id).map(|node| *node.leadership().borrow()))
                .collect::<Result<_>>()?;
            if let Some(leader) = views[0].leader {
                let term = views[0].term;
                if members.contains(&leader)
                    && term > newer_than_term
                    && views
                        .iter()
                        .all(|view| view.leader == Some(leader) && view.term == term)
                {
                    return Ok((leader, term));
                }
            }
            if Instant::now() > deadline {
                bail!("members {members:?} did not agree on a leader: {views:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn shutdown(mut self) {
        let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
        for id in ids {
            let _ = self.stop_member(id).await;
        }
    }
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(ObjectKind::CoordinationLease, "default", name)
}

fn create(name: &str) -> Proposal {
    Proposal::new(Command::Create {
        key: key(name),
        spec: LeaseSpec::Coordination(CoordinationLeaseSpec {
            holder_identity: Some(format!("holder-of-{name}")),
            ..CoordinationLeaseSpec::default()
        }),
        labels: BTreeMap::new(),
        annotations: BTreeMap::new(),
        uid: format!("uid-{name}"),
        created_at: "2026-11-25T00:00:00Z".into(),
    })
}

/// Waits until `node`'s own replica holds the object `name`.
async fn replicated(node: &RaftHandle, name: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !node.local_read(|state| state.get(&key(name)).is_some()) {
        if Instant::now() > deadline {
            bail!("member {} never applied {name}", node.id());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_through_a_follower_are_forwarded_replicated_and_read_linearizably() -> Result<()> {
    let cluster = Cluster::start().await?;
    let (leader, _) = cluster.agreed_leader(&IDS, 0).await?;
    let followers: Vec<NodeId> = IDS.into_iter().filter(|id| *id != leader).collect();

    let written = cluster.node(followers[0])?.write(create("forwarded")).await?;
    assert!(
        matches!(written.result, CommandResult::Stored(_)),
        "{:?}",
        written.result
    );
    // The other follower's linearizable read asks the leader for a read index first.
    let (seen, _) = cluster
        .node(followers[1])?
        .read(Consistency::Linearizable, |state| {
            state.get(&key("forwarded")).cloned()
        })
        .await?;
    let seen = seen.context("a linearizable read after the acknowledgement missed the write")?;
    assert_eq!(seen.meta.uid, "uid-forwarded");
    for id in IDS {
        replicated(cluster.node(id)?, "forwarded").await?;
    }
    cluster.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_leader_is_replaced_and_catches_up_after_healing() -> Result<()> {
    let cluster = Cluster::start().await?;
    let (old, old_term) = cluster.agreed_leader(&IDS, 0).await?;
    let rest: Vec<NodeId> = IDS.into_iter().filter(|id| *id != old).collect();
    let others: Vec<String> = rest.iter().map(|id| addr(*id)).collect();
    let others: Vec<&str> = others.iter().map(String::as_str).collect();
    cluster.board.isolate(&addr(old), &others);

    let (new, new_term) = cluster.agreed_leader(&rest, old_term).await?;
    assert_ne!(new, old);
    assert!(new_term > old_term);
    cluster.node(rest[0])?.write(create("after-the-cut")).await?;
    // The cut-off leader cannot commit anything.
    let stranded = cluster.node(old)?.write(create("stranded")).await;
    assert!(
        stranded.is_err(),
        "a leader without a majority acknowledged {stranded:?}"
    );

    cluster.board.heal();
    replicated(cluster.node(old)?, "after-the-cut").await?;
    let (leader, _) = cluster.agreed_leader(&IDS, old_term).await?;
    assert_ne!(leader, old, "the healed old leader took over again");
    for id in IDS {
        let stranded = cluster
            .node(id)?
            .local_read(|state| state.get(&key("stranded")).is_some());
        assert!(
            !stranded,
            "member {id} applied the write its leader never committed"
        );
    }
    cluster.shutdown().await;
    Ok(())
}

/// One linearizable read of the object `name` on `node`: when it started, and whether it saw it
/// (`None` when the read failed or did not finish within a second).
async fn timed_read(node: &RaftHandle, name: &str) -> (Instant, Option<bool>) {
    let started = Instant::now();
    let read = node.read(Consistency::Linearizable, |state| state.get(&key(name)).is_some());
    match tokio::time::timeout(Duration::from_secs(1), read).await {
        Ok(Ok((seen, _))) => (started, Some(seen)),
        _ => (started, None),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_leader_stops_answering_reads_before_another_leader_commits() -> Result<()> {
    let cluster = Cluster::start().await?;
    let (old, old_term) = cluster.agreed_leader(&IDS, 0).await?;
    // Reads on the leader under a steady load are answered from its lease.
    for _ in 0..200 {
        let (_, seen) = timed_read(cluster.node(old)?, "after-the-cut").await;
        assert_eq!(seen, Some(false), "a linearizable read on the leader failed");
    }
    assert!(
        cluster.lease_reads(old) > 0,
        "no read was answered from the leader's lease"
    );

    let rest: Vec<NodeId> = IDS.into_iter().filter(|id| *id != old).collect();
    let others: Vec<String> = rest.iter().map(|id| addr(*id)).collect();
    let others: Vec<&str> = others.iter().map(String::as_str).collect();
    // Readers keep asking the cut-off leader while the others elect a leader and write, until
    // each has finished two reads started after the write was acknowledged.
    let stop = Arc::new(AtomicBool::new(false));
    let acknowledged = Arc::new(OnceLock::<Instant>::new());
    let finished_after = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let node = cluster.node(old).cloned();
            let (stop, acknowledged, finished_after) =
                (stop.clone(), acknowledged.clone(), finished_after.clone());
            tokio::spawn(async move {
                let mut reads = Vec::new();
                let Ok(node) = node else { return reads };
                while !stop.load(Ordering::Relaxed) {
                    let read = timed_read(&node, "after-the-cut").await;
                    if acknowledged.get().is_some_and(|at| read.0 >= *at) {
                        finished_after.fetch_add(1, Ordering::Relaxed);
                    }
                    reads.push(read);
                    // Paced: the members share this runtime, and reads answered at once from
                    // the lease would otherwise starve the election the test waits for.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                reads
            })
        })
        .collect();
    cluster.board.isolate(&addr(old), &others);
    let cut = Instant::now();

    let (new, _) = cluster.agreed_leader(&rest, old_term).await?;
    assert_ne!(new, old);
    cluster.node(new)?.write(create("after-the-cut")).await?;
    let acked = Instant::now();
    acknowledged.set(acked).ok();
    let deadline = acked + Duration::from_secs(10);
    while finished_after.load(Ordering::Relaxed) < 8 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut answered_after_cut = 0;
    let mut last_answer_after_cut = Duration::ZERO;
    for reader in readers {
        for (started, seen) in reader.await? {
            if started >= acked {
                assert_ne!(
                    seen,
                    Some(false),
                    "the cut-off leader answered a read started {:?} after another leader acknowledged a write, without it",
                    started - acked
                );
            }
            if started >= cut && seen.is_some() {
                answered_after_cut += 1;
                last_answer_after_cut = last_answer_after_cut.max(started - cut);
            }
        }
    }
    assert!(
        finished_after.load(Ordering::Relaxed) >= 8,
        "the readers did not get to read after the write"
    );
    let acknowledged = acked;
    println!(
        "the cut-off leader answered {answered_after_cut} reads after the cut, the last one started \
         {last_answer_after_cut:?} after it; the new leader's write was acknowledged {:?} after it",
        acknowledged - cut
    );
    cluster.board.heal();
    cluster.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_restarted_from_its_disk_catches_up() -> Result<()> {
    let mut cluster = Cluster::start().await?;
    let (leader, _) = cluster.agreed_leader(&IDS, 0).await?;
    let stopped = IDS.into_iter().find(|id| *id != leader).context("no follower")?;
    cluster.node(stopped)?.write(create("before")).await?;
    replicated(cluster.node(stopped)?, "before").await?;
    cluster.stop_member(stopped).await?;

    cluster.node(leader)?.write(create("while-down")).await?;
    cluster.start_member(stopped).await?;
    let restarted = cluster.node(stopped)?;
    replicated(restarted, "before").await?;
    replicated(restarted, "while-down").await?;
    cluster.shutdown().await;
    Ok(())
}
