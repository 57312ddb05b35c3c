//! Three real `RaftHandle`s in one process over the in-process switchboard: the transport seam
//! carries elections, replication, forwarding and read batching, a cut-off leader is replaced,
//! and a member restarted from its disk catches up.

use std::collections::BTreeMap;
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
}

impl Cluster {
    async fn start() -> Result<Self> {
        let mut cluster = Cluster {
            board: Switchboard::new(),
            dirs: BTreeMap::new(),
            nodes: BTreeMap::new(),
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
        let handle = RaftHandle::start_with(options, seams, &prometheus::Registry::new()).await?;
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
