//! A three-node in-process cluster: leader election, reads through every node, compare-and-set,
//! idempotent retries, quorum loss, metrics and the leadership-gated actor tree.

use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use drover_tests::cluster::{ClusterOptions, TestCluster};
use drover_tests::wait::eventually;
use reqwest::StatusCode;

const ELECTION: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lease_created_through_a_follower_reads_linearizably_everywhere() -> Result<()> {
    let cluster = TestCluster::start(3).await?;
    let leader = cluster.leader(ELECTION).await?;
    let follower = cluster
        .running_ids()
        .into_iter()
        .find(|id| *id != leader)
        .unwrap_or(leader);
    ensure!(follower != leader, "need a follower");

    let created = cluster.client(follower).create("default", "alpha", "n1").await?;
    ensure!(created.status == StatusCode::CREATED, "create: {created:?}");
    let version = created.resource_version().unwrap_or_default();
    ensure!(
        version.parse::<u64>()? > 0,
        "resourceVersion is a log index: {version}"
    );

    for id in cluster.running_ids() {
        let read = cluster.client(id).get("default", "alpha", "").await?;
        ensure!(read.status == StatusCode::OK, "read on node {id}: {read:?}");
        ensure!(
            read.body["spec"]["holderIdentity"] == "n1",
            "holder on node {id}: {read:?}"
        );
        ensure!(
            read.resource_version() == Some(version.clone()),
            "version on node {id}"
        );
    }
    let again = cluster.client(leader).create("default", "alpha", "n2").await?;
    ensure!(
        again.status == StatusCode::CONFLICT,
        "duplicate create: {again:?}"
    );
    ensure!(
        again.body["reason"] == "AlreadyExists",
        "Status body: {}",
        again.body
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_replaces_on_one_version_let_exactly_one_win() -> Result<()> {
    let cluster = TestCluster::start(3).await?;
    cluster.leader(ELECTION).await?;
    let created = cluster.client(1).create("default", "race", "nobody").await?;
    ensure!(created.status == StatusCode::CREATED, "create: {created:?}");
    let version = created.resource_version().unwrap_or_default();
    for round in 0..5 {
        let current = cluster
            .client(1)
            .get("default", "race", "")
            .await?
            .resource_version()
            .unwrap_or_default();
        let version = if round == 0 { version.clone() } else { current };
        let (two, three) = (cluster.client(2), cluster.client(3));
        let (a, b) = tokio::join!(
            two.replace("default", "race", "a", Some(&version)),
            three.replace("default", "race", "b", Some(&version)),
        );
        let mut statuses = [a?.status.as_u16(), b?.status.as_u16()];
        statuses.sort_unstable();
        ensure!(statuses == [200, 409], "round {round}: {statuses:?}");
    }
    let stale = cluster
        .client(1)
        .replace("default", "race", "late", Some(&version))
        .await?;
    ensure!(
        stale.status == StatusCode::CONFLICT && stale.body["reason"] == "Conflict",
        "{stale:?}"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_with_an_idempotency_key_applies_once() -> Result<()> {
    let cluster = TestCluster::start(3).await?;
    cluster.leader(ELECTION).await?;
    let client = cluster.client(2);
    let url = format!("{}/apis/akka.io/v1/namespaces/default/leases", client.base());
    let body = serde_json::json!({"apiVersion": "akka.io/v1", "kind": "Lease",
        "metadata": {"name": "sbr"}, "spec": {"owner": "", "version": "", "time": 0}});
    let first = client
        .http()
        .post(&url)
        .header("Idempotency-Key", "k-1")
        .json(&body)
        .send()
        .await?;
    ensure!(first.status() == StatusCode::CREATED, "first: {}", first.status());
    let first: serde_json::Value = first.json().await?;
    let retry = client
        .http()
        .post(&url)
        .header("Idempotency-Key", "k-1")
        .json(&body)
        .send()
        .await?;
    ensure!(
        retry.status() == StatusCode::CREATED,
        "retry answers like the first: {}",
        retry.status()
    );
    let retry: serde_json::Value = retry.json().await?;
    ensure!(
        first["metadata"]["uid"] == retry["metadata"]["uid"],
        "same object: {first} vs {retry}"
    );
    let other = client
        .http()
        .post(&url)
        .header("Idempotency-Key", "k-2")
        .json(&body)
        .send()
        .await?;
    ensure!(
        other.status() == StatusCode::CONFLICT,
        "a new key is a new write: {}",
        other.status()
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_a_quorum_writes_answer_503_in_time_and_recover() -> Result<()> {
    let mut cluster = TestCluster::start(3).await?;
    let leader = cluster.leader(ELECTION).await?;
    let created = cluster.client(leader).create("default", "q", "n1").await?;
    ensure!(created.status == StatusCode::CREATED, "{created:?}");
    let survivor = leader;
    let others: Vec<u64> = cluster
        .running_ids()
        .into_iter()
        .filter(|id| *id != survivor)
        .collect();
    for id in &others {
        cluster.stop(*id).await?;
    }
    let started = Instant::now();
    let answer = cluster
        .client(survivor)
        .replace("default", "q", "n2", None)
        .await?;
    let took = started.elapsed();
    ensure!(
        answer.status == StatusCode::SERVICE_UNAVAILABLE,
        "without quorum: {answer:?}"
    );
    ensure!(
        took < Duration::from_secs(8),
        "answered after {took:?}, request timeout is 5s"
    );
    ensure!(answer.body["reason"] == "ServiceUnavailable", "{}", answer.body);

    cluster.restart(others[0]).await?;
    let client = cluster.client(survivor);
    eventually(
        Duration::from_secs(20),
        "a write to succeed after one node returned",
        || async {
            let answer = client.replace("default", "q", "n3", None).await.ok()?;
            (answer.status == StatusCode::OK).then_some(())
        },
    )
    .await?;
    cluster.shutdown().await
}

/// A node that missed writes cannot win an election, so it must not start one: the node with
/// the full log wins the very next term, and nothing was lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_whose_log_is_behind_does_not_start_a_term_it_cannot_win() -> Result<()> {
    let mut cluster = TestCluster::start(3).await?;
    let leader = cluster.leader(ELECTION).await?;
    let others: Vec<u64> = cluster
        .running_ids()
        .into_iter()
        .filter(|id| *id != leader)
        .collect();
    let (up_to_date, lagging) = (others[0], others[1]);
    cluster.stop(lagging).await?;
    for i in 0..5 {
        let created = cluster
            .client(leader)
            .create("default", &format!("missed-{i}"), "n1")
            .await?;
        ensure!(created.status == StatusCode::CREATED, "{created:?}");
    }
    let term = cluster.node(up_to_date)?.raft.leadership().borrow().term;

    cluster.stop(leader).await?;
    // Alone, the up-to-date node finds no majority that would vote for it, and so starts no
    // term; openraft's own timer would have started one on every timeout.
    let alone = cluster.client(up_to_date);
    eventually(ELECTION, "the lone node to lose a pre-vote round", || async {
        let (_, text) = alone.get_path("/metrics").await.ok()?;
        let lost = text
            .lines()
            .find_map(|line| line.strip_prefix("drover_raft_pre_votes_total{outcome=\"lost\"} "))?;
        (lost.parse::<f64>().ok()? >= 1.0).then_some(())
    })
    .await?;
    let alone_term = cluster.node(up_to_date)?.raft.leadership().borrow().term;
    ensure!(
        alone_term == term,
        "alone, node {up_to_date} moved from term {term} to {alone_term}"
    );

    cluster.restart(lagging).await?;
    let next = cluster.leader(ELECTION).await?;
    ensure!(
        next == up_to_date,
        "node {next} leads; only node {up_to_date} has the whole log"
    );
    let next_term = cluster.node(next)?.raft.leadership().borrow().term;
    ensure!(
        next_term == term + 1,
        "the new leader's term is {next_term}, the old one's {term}: terms were spent on \
         elections nobody could win"
    );
    let read = cluster.client(lagging).get("default", "missed-4", "").await?;
    ensure!(
        read.status == StatusCode::OK,
        "read on the lagging node: {read:?}"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_peer_listener_refuses_requests_without_the_cluster_secret() -> Result<()> {
    let cluster = TestCluster::start(3).await?;
    cluster.leader(ELECTION).await?;
    let peer = cluster
        .nodes
        .get(&1)
        .map(|n| n.config.peer_addr.to_string())
        .unwrap_or_default();
    let http = reqwest::Client::new();
    let anonymous = http.get(format!("http://{peer}/raft/status")).send().await?;
    ensure!(
        anonymous.status() == StatusCode::UNAUTHORIZED,
        "no secret: {}",
        anonymous.status()
    );
    let wrong = http
        .get(format!("http://{peer}/raft/status"))
        .bearer_auth("not-the-cluster-secret")
        .send()
        .await?;
    ensure!(
        wrong.status() == StatusCode::UNAUTHORIZED,
        "wrong secret: {}",
        wrong.status()
    );
    let right = http
        .get(format!("http://{peer}/raft/status"))
        .bearer_auth(drover_tests::TEST_SECRET)
        .send()
        .await?;
    ensure!(
        right.status() == StatusCode::OK,
        "cluster secret: {}",
        right.status()
    );
    cluster.shutdown().await
}

fn metric_value(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find(|line| line.split([' ', '{']).next() == Some(name))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn metrics_parse_and_show_leader_and_commit_index() -> Result<()> {
    let cluster = TestCluster::start(3).await?;
    let leader = cluster.leader(ELECTION).await?;
    let created = cluster.client(1).create("default", "m", "n1").await?;
    ensure!(created.status == StatusCode::CREATED);
    let index: f64 = created.resource_version().unwrap_or_default().parse()?;
    for id in cluster.running_ids() {
        let client = cluster.client(id);
        ensure!(
            client.get_path("/healthz").await?.0 == StatusCode::OK,
            "healthz on {id}"
        );
        let text = eventually(Duration::from_secs(10), "metrics to show the commit", || async {
            let (_, text) = client.get_path("/metrics").await.ok()?;
            (metric_value(&text, "drover_raft_commit_index")? >= index).then_some(text)
        })
        .await?;
        for line in text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let value = line.rsplit(' ').next().unwrap_or_default();
            ensure!(value.parse::<f64>().is_ok(), "unparseable sample line {line:?}");
        }
        ensure!(
            metric_value(&text, "drover_raft_leader_id") == Some(leader as f64),
            "leader id on {id}"
        );
        let is_leader = metric_value(&text, "drover_raft_is_leader");
        ensure!(
            is_leader == Some(if id == leader { 1.0 } else { 0.0 }),
            "is_leader on {id}: {is_leader:?}"
        );
        ensure!(
            text.contains("drover_http_requests_total{"),
            "http metrics on {id}"
        );
        // Every member appended the create to its log, durably and timed.
        let appends = metric_value(&text, "drover_raft_log_append_duration_seconds_count");
        ensure!(appends >= Some(1.0), "log appends on {id}: {appends:?}");
        // Only the leader's group commit proposed it.
        let committed_writes = metric_value(&text, "drover_raft_group_commit_writes_sum");
        ensure!(
            (committed_writes >= Some(1.0)) == (id == leader),
            "group-committed writes on {id}: {committed_writes:?}"
        );
    }
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn only_the_leader_runs_the_actor_tree_and_it_moves_with_leadership() -> Result<()> {
    let mut cluster = TestCluster::start(3).await?;
    let leader = cluster.leader(ELECTION).await?;
    let runners = |cluster: &TestCluster| -> Vec<u64> {
        cluster
            .running_ids()
            .into_iter()
            .filter(|id| cluster.node(*id).is_ok_and(|n| n.gate.borrow().running))
            .collect()
    };
    eventually(
        Duration::from_secs(10),
        "the leader to start the tree",
        || async { (runners(&cluster) == vec![leader]).then_some(()) },
    )
    .await?;
    // A new cluster's first leader keeps its place: no member that started after it unseated
    // it, so the tree started once, there.
    let starts: Vec<(u64, u64)> = cluster
        .running_ids()
        .into_iter()
        .map(|id| Ok((id, cluster.node(id)?.gate.borrow().starts)))
        .collect::<Result<_>>()?;
    ensure!(
        starts.iter().all(|(id, n)| *n == u64::from(*id == leader)),
        "tree starts per node after bootstrap (leader {leader}): {starts:?}"
    );
    cluster.stop(leader).await?;
    let next = cluster.leader(ELECTION).await?;
    ensure!(next != leader, "a new leader was elected");
    eventually(
        Duration::from_secs(10),
        "the new leader to start the tree",
        || async { (runners(&cluster) == vec![next]).then_some(()) },
    )
    .await?;
    let gate = cluster.node(next)?.gate.borrow().to_owned();
    ensure!(gate.starts == 1 && gate.term > 0, "{gate:?}");
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_new_cluster_forms_without_its_first_member_which_joins_later_without_unseating_anyone(
) -> Result<()> {
    let mut cluster = TestCluster::start_with_options(
        3,
        ClusterOptions {
            absent: [1].into(),
            ..ClusterOptions::default()
        },
    )
    .await?;
    let leader = cluster.leader(ELECTION).await?;
    ensure!(leader != 1, "node 1 is not running, yet leads");
    let created = cluster.client(leader).create("default", "formed", "n2").await?;
    ensure!(created.status == StatusCode::CREATED, "create: {created:?}");
    let term = cluster.node(leader)?.gate.borrow().term;

    // Node 1 starts with an empty directory and proposes the same membership at once; the
    // leader's heartbeats outrank its candidacy, so it follows and catches up.
    cluster.restart(1).await?;
    eventually(Duration::from_secs(10), "node 1 to read the lease", || async {
        let read = cluster.client(1).get("default", "formed", "").await.ok()?;
        (read.status == StatusCode::OK).then_some(())
    })
    .await?;
    ensure!(
        cluster.leader(ELECTION).await? == leader,
        "the leader changed when node 1 joined"
    );
    let gate = cluster.node(leader)?.gate.borrow().to_owned();
    ensure!(
        gate.term == term && gate.starts == 1,
        "the leader's tree restarted: {gate:?}"
    );
    cluster.shutdown().await
}
